// Sampling a whole process from one set of events: one task-clock event per
// CPU, opened on the calling thread with inherit + inherit_thread, so that
// every thread it creates from then on (and the threads those create, but
// not forked children) is sampled into the ring of the CPU it runs on, each
// record naming its thread (PERF_SAMPLE_TID).
//
// Why: an event and a ring per thread made every thread's start and exit
// dear (two perf_event_open, a ring allocated and zeroed, an munmap with a
// TLB shootdown on every core): a thread created and joined took 30 us
// plain and ~200 us profiled, and fork_join (two threads per 3 ms) ran 17%
// slower from that alone. An inherited event costs the kernel a copy of
// the parent's at clone, nothing else (bench/floor/inherited_events.cpp:
// 38 us against 97 us per thread). The price: no thread can be signalled
// per sample or have its period changed alone, so these events serve the
// samples no signal drains (the profiler thread reads the rings).
//
// Or every CPU's time, whatever runs there (Settings::whole_cpu): one
// cpu-clock event per CPU for all processes, whose timer runs on at its
// period, not scheduled in and out with a thread. It samples the threads
// whose own event cost too much at each of their context switches
// (sampler.cpp, move_to_timer); the records of other processes are skipped.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "perf_ring.h"

namespace coz {

class CpuRings {
 public:
  struct Settings {
    uint64_t period_ns = 1'000'000;
    bool user = true;    // sample user time
    bool kernel = false; // sample kernel time (perf_event_paranoid <= 1, or CAP_PERFMON)
    unsigned data_pages = 64;
    uint32_t stack_bytes = 4096;  // user stack copied into each sample
    /// Every process on each CPU, not this one's threads (perf_event_paranoid
    /// <= 0, or CAP_PERFMON): idle time excluded, nothing inherited.
    bool whole_cpu = false;
  };

  /// Opens one event per online CPU on the calling thread, maps its ring
  /// and enables it. False, with errno set and nothing kept, when any
  /// event cannot be opened or mapped (an older kernel refuses
  /// inherit_thread: EINVAL). Descriptors are closed with the raw system
  /// call (libcoz.so interposes close).
  bool open(const Settings& settings);

  /// Stops sampling every thread (the events stay mapped: their last
  /// records can still be drained). Not after close_descriptors().
  void disable();
  /// Closes the events' descriptors: each ring's mapping keeps its event
  /// alive, so the process holds no descriptor for them (one per CPU would
  /// count against the program's limit), and nothing can act on them later.
  void close_descriptors();
  /// Unmaps the rings and closes the events.
  void close();
  /// In a forked child, which has the parent's descriptors but no mapping of
  /// its rings (perf maps are not copied): drops them without touching the
  /// events, which are still the parent's.
  void forget();

  bool active() const { return !rings_.empty(); }
  /// Whether some ring holds records not drained yet.
  bool unread() const {
    for (const auto& ring : rings_) {
      if (ring->unread_bytes() > 0) return true;
    }
    return false;
  }

  /// Calls f(const perf_event_header&) for each record of every ring,
  /// oldest first per ring. One reader at a time.
  template <typename F>
  void drain(F&& f, unsigned char* scratch, size_t scratch_size) {
    for (auto& ring : rings_) ring->drain(f, scratch, scratch_size);
  }

 private:
  std::vector<std::unique_ptr<PerfRing>> rings_;
  std::vector<int> fds_;
};

/// Whether events of Settings::whole_cpu can be opened here (one is
/// opened on CPU 0, disabled, and closed).
bool whole_cpu_events_allowed();

/// The process and the thread a sample record of these events was taken
/// in: with sample_type IP | TID | ..., the record holds u64 ip, then u32
/// pid, u32 tid.
inline int sample_record_id(const perf_event_header& h, size_t field) {
  const size_t offset = sizeof(perf_event_header) + sizeof(uint64_t) + field * sizeof(uint32_t);
  if (h.size < offset + sizeof(uint32_t)) return 0;
  uint32_t id;
  std::memcpy(&id, reinterpret_cast<const unsigned char*>(&h) + offset, sizeof id);
  return static_cast<int>(id);
}
inline int sample_record_pid(const perf_event_header& h) { return sample_record_id(h, 0); }
inline int sample_record_tid(const perf_event_header& h) { return sample_record_id(h, 1); }

}  // namespace coz
