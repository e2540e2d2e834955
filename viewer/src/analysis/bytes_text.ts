// A profile file's bytes as text, by the rule the C++ side writes JSON with
// (libcoz/json/json_string.h): valid UTF-8 is decoded as it is; each byte that
// is not part of a valid sequence is read as Latin-1 (U+0080..U+00FF). So a
// file opened here and the same file embedded by `coz plot` show the same
// names, and two paths that differ only in invalid bytes stay two paths
// (TextDecoder would make both U+FFFD).

const strict = new TextDecoder("utf-8", { fatal: true });

/** Length of the valid UTF-8 sequence at `at` (1 to 4), or 0 if none starts there. */
export function utf8SequenceLength(bytes: Uint8Array, at: number): number {
  const lead = bytes[at];
  const n = lead < 0x80 ? 1 : lead >> 5 === 0x6 ? 2 : lead >> 4 === 0xe ? 3 : lead >> 3 === 0x1e ? 4 : 0;
  if (n === 0 || at + n > bytes.length) return 0;
  let cp = n === 1 ? lead : n === 2 ? lead & 0x1f : n === 3 ? lead & 0x0f : lead & 0x07;
  for (let k = 1; k < n; k++) {
    const b = bytes[at + k];
    if ((b & 0xc0) !== 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  const minForLength = [0, 0, 0x80, 0x800, 0x10000];
  if (cp < minForLength[n] || (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff) return 0;
  return n;
}

/** The text of `bytes`: UTF-8, with any invalid byte read as Latin-1. */
export function decodeBytes(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes); // the common case, at native speed
  } catch {
    // Some bytes are not UTF-8: decode run by run.
  }
  const parts: string[] = [];
  let runStart = 0;
  let i = 0;
  while (i < bytes.length) {
    const n = utf8SequenceLength(bytes, i);
    if (n > 0) {
      i += n;
      continue;
    }
    if (i > runStart) parts.push(strict.decode(bytes.subarray(runStart, i)));
    parts.push(String.fromCharCode(bytes[i]));
    i += 1;
    runStart = i;
  }
  if (i > runStart) parts.push(strict.decode(bytes.subarray(runStart, i)));
  return parts.join("");
}
