// String order shared by the analysis modules: the C++ side sorts std::strings
// by bytes, so the viewer must sort the same way to list things in the same order.

/** std::string order (UTF-8 bytes) = code point order; plain `<` is the same for ASCII. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; ++i) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) ++i;
  }
  return a.length - b.length;
}

/** Point kinds order by their names ("latency" < "throughput"), as the C++ compares them. */
export const kindRank = (k: "throughput" | "latency") => (k === "latency" ? 0 : 1);
