// What a progress point counted during one experiment: the profiler thread
// opens a window on every point when an experiment begins, polls the
// latency points' numbers in flight while it runs, and closes the windows
// into the experiment's records when it ends (runtime/profiler.cpp).
#pragma once

#include <cstdint>

#include "experiment.h"
#include "progress_points.h"

namespace coz {

/// An experiment's effective duration: its wall time less the pauses
/// inserted during it (0 if the pauses exceed it).
inline uint64_t effective_duration(uint64_t wall_ns, uint64_t paused_ns) {
  return wall_ns > paused_ns ? wall_ns - paused_ns : 0;
}

/// Notes where the point's counts stand as an experiment begins.
void open_window(ProgressPoint& p);

/// A latency point: adds `wall_ns` (the time since the last poll) at the
/// number in flight now. Throughput points are left alone.
void poll_window(ProgressPoint& p, double wall_ns);

/// The point's record for the experiment since open_window, whose effective
/// duration is `effective_ns`; adds the visits and `wall_ns` to the point's
/// visit rate (which sizes later experiments: wall time is what the program
/// really takes).
///
/// A latency point's mean number in flight is over the effective time: the
/// time the pauses removed does not exist in the sped-up program, and a
/// pause is credited while a thread runs the selected line, so it removes
/// the requests in flight at that moment (counted at each credit, in
/// `in_flight_at_credits`), not those the polls saw on average.
PointResult close_window(ProgressPoint& p, uint64_t effective_ns, uint64_t wall_ns);

}  // namespace coz
