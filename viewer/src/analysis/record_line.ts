// Splits one profile line into a record type and its key=value fields, in
// either text form: tab-separated records or JSON Lines (Coz's and ours).
// Mirrors tools/analysis/record_line.cpp.
import { JsonMember, parseJsonObject } from "./json_object";

export interface RecordLine {
  type: string;
  fields: Array<[string, string]>;
  /** The first part of a record a failed write cut short (it ends with the
   * writer's `\tcut=write-failed`): not a record; type and fields unset. */
  cut: boolean;
}

const cutMarker = "\tcut=write-failed";

/** The value of `key`; the last one wins when a key repeats (as in C++). */
export function findField(r: RecordLine, key: string): string | undefined {
  let found: string | undefined;
  for (const [k, v] of r.fields) if (k === key) found = v;
  return found;
}

const isSpace = (c: string) => c === " " || c === "\t" || c === "\r" || c === "\n";

function trim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s[a])) ++a;
  while (b > a && isSpace(s[b - 1])) --b;
  return s.slice(a, b);
}

// Record types are words like `throughput-point`; binary garbage is reported
// instead of passing as an unknown record type.
const recordType = /^[A-Za-z0-9_-]{1,64}$/;

// Coz's JSON Lines spell the keys of the tab form with '_' for '-'
// (`selected_samples`), and its releases 0.2.4 and 0.2.5 the point types too
// (`throughput_point`); our writer follows the same rule. Turning '_' back
// into '-' lets both forms go through the same checks.
const dashes = (s: string) => s.replace(/_/g, "-");

function splitJson(line: string, out: RecordLine): string | null {
  const members: JsonMember[] = [];
  const error = parseJsonObject(line, members);
  if (error !== null) return error;
  for (const m of members) {
    // null, or an array or object (no record has one), is as good as absent.
    if (m.kind === "null" || m.kind === "nested") continue;
    out.fields.push([dashes(m.key), m.text]);
  }
  const type = findField(out, "type");
  if (type === undefined) return 'JSON record without a "type" key';
  if (!recordType.test(type)) return "not a profile record (bad type)";
  out.type = dashes(type);
  return null;
}

// Coz separates fields with tabs; a line without any tab is split on spaces
// so hand-written profiles work too.
function splitTabs(line: string, out: RecordLine): string | null {
  const sep = line.includes("\t") ? "\t" : " ";
  let first = true;
  for (const raw of line.split(sep)) {
    const field = trim(raw);
    if (field === "") continue;
    if (first) {
      if (!recordType.test(field)) return "not a profile record";
      out.type = field;
      first = false;
      continue;
    }
    const eq = field.indexOf("=");
    if (eq < 0) continue; // not key=value: ignored like an unknown key
    out.fields.push([field.slice(0, eq), field.slice(eq + 1)]);
  }
  return first ? "empty record" : null;
}

/** Returns the record, or a reason why the line is not one. */
export function splitRecordLine(line: string): RecordLine | string {
  const out: RecordLine = { type: "", fields: [], cut: false };
  // What a failed write cut short, ended by the writer's next write; in a
  // JSON line the marker is what makes it invalid, whatever the cut left.
  if (line.endsWith(cutMarker)) {
    out.cut = true;
    return out;
  }
  const t = trim(line);
  if (t.startsWith("{")) {
    const error = splitJson(t, out);
    return error === null ? out : error;
  }
  const error = splitTabs(line, out);
  if (error !== null) return error;
  out.cut = findField(out, "cut") !== undefined; // the marker, whatever followed it
  return out;
}
