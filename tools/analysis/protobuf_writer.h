// The protocol buffers wire format, the part `coz report --pprof` writes:
// varints and length-delimited fields (https://protobuf.dev/programming-guides/encoding/).
// Written by hand so the analysis library needs no protobuf compiler or runtime
// for one message type; export_pprof.cpp holds the field numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coz::analysis {

/// Appends the fields of one message, in the order they are written.
/// A nested message is built in its own writer and added with message().
class ProtobufWriter {
 public:
  /// An integer field (int64, uint64, bool: wire type 0). int64 values that
  /// are negative take ten bytes, as the format wants; pprof's are not.
  void varint(uint32_t field, uint64_t value) {
    key(field, wire_varint);
    raw_varint(value);
  }

  /// A string or bytes field (wire type 2).
  void bytes(uint32_t field, std::string_view value) {
    key(field, wire_length_delimited);
    raw_varint(value.size());
    out_.append(value);
  }

  /// A nested message field (wire type 2), written even when empty: an empty
  /// message still counts as one element of a repeated field.
  void message(uint32_t field, const ProtobufWriter& nested) { bytes(field, nested.out_); }

  /// A repeated integer field, packed (one length-delimited field of
  /// varints), as proto3 writes them; nothing when empty.
  void packed(uint32_t field, const std::vector<uint64_t>& values) {
    if (values.empty()) return;
    ProtobufWriter body;
    for (uint64_t v : values) body.raw_varint(v);
    bytes(field, body.out_);
  }

  const std::string& data() const { return out_; }

 private:
  static constexpr uint32_t wire_varint = 0;
  static constexpr uint32_t wire_length_delimited = 2;

  void key(uint32_t field, uint32_t wire_type) { raw_varint((static_cast<uint64_t>(field) << 3) | wire_type); }

  // Seven bits a byte, least significant first, the high bit set on every
  // byte but the last.
  void raw_varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }

  std::string out_;
};

}  // namespace coz::analysis
