// The frame tables of every object loaded in the process (the program, libc,
// libstdc++, the vDSO, libraries without debug info, the runtime itself),
// kept for the unwinder, and the names of the functions a walk passes
// through, for the conventional profile.
//
// Every object gets a table, not only those in scope: the walk must cross
// the out-of-scope ones to reach the in-scope line that called them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf_file.h"
#include "symbol_table.h"
#include "unwinder.h"

namespace coz {

class ObjectFrames {
 public:
  /// Adds a table for each object loaded now that has none yet: from its
  /// .eh_frame (found in memory through PT_GNU_EH_FRAME) or, failing that,
  /// the .debug_frame of its file or separate debug file (`debug_root`).
  /// The executable, which dl_iterate_phdr names "", is `main_executable`.
  /// Start-up and after dlopen only; callers serialise. Returns the number
  /// of objects added.
  size_t add_loaded(const std::string& main_executable, std::string_view debug_root);

  const FrameTables& tables() const { return tables_; }

  /// "FUNCTION [LIBRARY]" for a function entry address that a walk found
  /// (FrameTable::function_start): the demangled symbol and the object's file
  /// name, or "0xOFFSET [LIBRARY]" when no symbol has that address. Parses the
  /// object's symbol table (or its separate debug file's) on first use: not
  /// for the sampling path. Opens no file: add_loaded mapped them.
  std::string function_name(uint64_t function_start);

  /// Objects with a table, and how many had no call-frame information at all.
  size_t objects() const { return objects_.size(); }
  size_t objects_without_cfi() const { return without_cfi_; }

 private:
  struct Object {
    std::string path;
    uint64_t bias;
    const FrameTable* table;  // null: no CFI
    // Symbols, read on first function_name() (file addresses), from the
    // files add_loaded mapped: the object's, then its separate debug file
    // when the object has no .symtab.
    bool symbols_read = false;
    std::vector<std::unique_ptr<ElfFile>> files;  // own the names' storage
    std::vector<FunctionSymbol> symbols;
  };
  /// Maps the files an object's symbols come from. At add_loaded, not at
  /// the first function_name(): that runs on the profiler thread while the
  /// program runs, and each open took the lowest free descriptor number for
  /// a moment, which the program's own open then did not get (issue #14:
  /// OwnershipTest.TheProgramsOpensKeepTheirNumbersWhileTheRuntimeWorks
  /// failed 1 run in 11, 27 of its opens renumbered).
  void map_symbol_files(Object& object, ElfFile file);
  void read_symbols(Object& object);

  FrameTables tables_;
  std::vector<Object> objects_;
  std::string debug_root_;
  size_t without_cfi_ = 0;
  std::map<uint64_t, std::string> names_;  // function_name() memo
};

}  // namespace coz
