// The buckets of a latency histogram: what the runtime records per request
// and the analysis reads back (docs/analysis.md section 13). Log buckets with 32 per
// power of two, so a bucket is at most 1/32 (3.1%) of its values wide and
// a quantile read inside one is off by less than that; values under 32 ns
// have a bucket each, and from 2^45 ns (~9.8 hours) on they share the last.
// The scheme is fixed: a profile names it (`scheme=log2-32`), and a new
// one would get a new name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coz::latency {

inline constexpr std::string_view scheme_name = "log2-32";
inline constexpr uint32_t sub_buckets = 32;  // per power of two
inline constexpr int sub_bits = 5;           // log2(sub_buckets)
inline constexpr int top_octave = 44;        // the last power of two with buckets: from 2^45 ns on, the last one
inline constexpr uint32_t bucket_count = sub_buckets + (top_octave - sub_bits + 1) * sub_buckets;

/// The bucket of a latency of `ns`.
uint32_t bucket_of(uint64_t ns);
/// The smallest latency in bucket `b`, and one past its largest.
uint64_t bucket_low(uint32_t b);
uint64_t bucket_high(uint32_t b);

/// Non-empty buckets, in increasing bucket order: (bucket, requests).
using Counts = std::vector<std::pair<uint32_t, uint64_t>>;

/// "B:N,B:N,..." (empty for no requests).
std::string encode(const Counts& counts);
/// The reverse; false with `error` set for text that is not such a list,
/// a bucket out of range, or buckets out of increasing order.
bool decode(std::string_view text, Counts& counts, std::string& error);

}  // namespace coz::latency
