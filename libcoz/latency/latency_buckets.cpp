#include "latency_buckets.h"

#include <charconv>

namespace coz::latency {

uint32_t bucket_of(uint64_t ns) {
  if (ns < sub_buckets) return static_cast<uint32_t>(ns);
  const int octave = 63 - __builtin_clzll(ns);  // >= sub_bits
  if (octave > top_octave) return bucket_count - 1;
  const int shift = octave - sub_bits;
  const auto sub = static_cast<uint32_t>(ns >> shift) - sub_buckets;  // 0 to 31: the bits after the leading one
  return sub_buckets + static_cast<uint32_t>(shift) * sub_buckets + sub;
}

uint64_t bucket_low(uint32_t b) {
  if (b < sub_buckets) return b;
  const uint32_t shift = (b - sub_buckets) / sub_buckets;
  const uint64_t sub = (b - sub_buckets) % sub_buckets;
  return (sub_buckets + sub) << shift;
}

uint64_t bucket_high(uint32_t b) {
  if (b < sub_buckets) return b + 1;
  const uint32_t shift = (b - sub_buckets) / sub_buckets;
  return bucket_low(b) + (uint64_t{1} << shift);
}

std::string encode(const Counts& counts) {
  std::string out;
  for (const auto& [bucket, n] : counts) {
    if (!out.empty()) out += ',';
    out += std::to_string(bucket);
    out += ':';
    out += std::to_string(n);
  }
  return out;
}

namespace {

bool read_number(std::string_view& text, uint64_t& value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr == text.data()) return false;
  text.remove_prefix(static_cast<size_t>(ptr - text.data()));
  return true;
}

}  // namespace

bool decode(std::string_view text, Counts& counts, std::string& error) {
  counts.clear();
  int64_t previous = -1;
  while (!text.empty()) {
    uint64_t bucket = 0, n = 0;
    if (!read_number(text, bucket) || text.empty() || text.front() != ':') {
      error = "a bucket is not BUCKET:COUNT";
      return false;
    }
    text.remove_prefix(1);
    if (!read_number(text, n)) {
      error = "a bucket is not BUCKET:COUNT";
      return false;
    }
    if (bucket >= bucket_count) {
      error = "bucket " + std::to_string(bucket) + " out of range";
      return false;
    }
    if (static_cast<int64_t>(bucket) <= previous) {
      error = "buckets out of order";
      return false;
    }
    previous = static_cast<int64_t>(bucket);
    counts.emplace_back(static_cast<uint32_t>(bucket), n);
    if (text.empty()) break;
    if (text.front() != ',' || text.size() == 1) {
      error = "a bucket is not BUCKET:COUNT";
      return false;
    }
    text.remove_prefix(1);
  }
  return true;
}

}  // namespace coz::latency
