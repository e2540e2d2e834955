// The buckets of a latency histogram (`latency-histogram` records, docs/profile-format.md;
// docs/analysis.md §13). Mirrors libcoz/latency/latency_buckets.{h,cpp}: log buckets with
// 32 per power of two; values under 32 ns have a bucket each, and from 2^45 ns on
// they share the last. The scheme is fixed and named: `scheme=log2-32`.

export const latencySchemeName = "log2-32";
const subBuckets = 32; // per power of two
const subBits = 5; // log2(subBuckets)
const topOctave = 44; // the last power of two with buckets
export const latencyBucketCount = subBuckets + (topOctave - subBits + 1) * subBuckets; // 1312

/** The smallest latency in bucket `b` (ns). Exact: at most ~2^45, well inside a double's integers. */
export function latencyBucketLow(b: number): number {
  if (b < subBuckets) return b;
  const shift = Math.floor((b - subBuckets) / subBuckets);
  const sub = (b - subBuckets) % subBuckets;
  return (subBuckets + sub) * 2 ** shift;
}

/** One past the largest latency in bucket `b` (ns). */
export function latencyBucketHigh(b: number): number {
  if (b < subBuckets) return b + 1;
  const shift = Math.floor((b - subBuckets) / subBuckets);
  return latencyBucketLow(b) + 2 ** shift;
}

const u64Max = "18446744073709551615";

/** std::from_chars into a uint64_t at the start of `text`: the digits read, or null (none, or out of range). */
function readNumber(text: string, at: number): { digits: string; end: number } | null {
  let end = at;
  while (end < text.length && text[end] >= "0" && text[end] <= "9") ++end;
  if (end === at) return null;
  const digits = text.slice(at, end).replace(/^0+(?=.)/, "");
  if (digits.length > u64Max.length || (digits.length === u64Max.length && digits > u64Max)) return null;
  return { digits, end };
}

/**
 * "B:N,B:N,..." into (bucket, requests) pairs; or why the text is not such a
 * list, a bucket is out of range, or the buckets are out of increasing order
 * (the same texts as the C++ `decode`).
 */
export function decodeLatencyBuckets(text: string): Array<[number, number]> | string {
  const counts: Array<[number, number]> = [];
  const malformed = "a bucket is not BUCKET:COUNT";
  let previous = -1;
  let i = 0;
  while (i < text.length) {
    const bucket = readNumber(text, i);
    if (bucket === null || bucket.end >= text.length || text[bucket.end] !== ":") return malformed;
    const n = readNumber(text, bucket.end + 1);
    if (n === null) return malformed;
    // Compared as digits: a bucket past 2^53 must not round into range.
    const b = bucket.digits.length > 6 ? Infinity : Number(bucket.digits);
    if (b >= latencyBucketCount) return `bucket ${bucket.digits} out of range`;
    if (b <= previous) return "buckets out of order";
    previous = b;
    counts.push([b, Number(n.digits)]);
    i = n.end;
    if (i >= text.length) break;
    if (text[i] !== "," || i === text.length - 1) return malformed;
    ++i;
  }
  return counts;
}
