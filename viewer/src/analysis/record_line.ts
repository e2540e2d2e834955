// Splits one profile line into a record type and its key=value fields, in
// either text form: Coz's tab-separated records (ours too) or Coz's
// JSON-lines. Mirrors tools/analysis/record_line.cpp.

export interface RecordLine {
  type: string;
  fields: Array<[string, string]>;
}

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

class JsonLine {
  private i = 0;
  constructor(private readonly s: string) {}

  parse(out: RecordLine): string | null {
    this.ws();
    if (!this.eat("{")) return this.fail("expected '{'");
    this.ws();
    if (this.eat("}")) return this.finish();
    for (;;) {
      this.ws();
      const key = this.string();
      if (key === null) return this.fail("expected a string key");
      this.ws();
      if (!this.eat(":")) return this.fail("expected ':'");
      this.ws();
      const v = this.value();
      if (v === null) return this.fail(`bad value for key "${key}"`);
      if (v.keep) out.fields.push([key, v.text]);
      this.ws();
      if (this.eat(",")) continue;
      if (this.eat("}")) return this.finish();
      return this.fail("expected ',' or '}'");
    }
  }

  private finish(): string | null {
    this.ws();
    return this.i === this.s.length ? null : this.fail("text after the JSON object");
  }
  private fail(what: string): string {
    return `malformed JSON (${what} at column ${this.i + 1})`;
  }
  private ws() {
    while (this.i < this.s.length && isSpace(this.s[this.i])) ++this.i;
  }
  private eat(c: string): boolean {
    if (this.s[this.i] === c) {
      ++this.i;
      return true;
    }
    return false;
  }
  private hex4(): number | null {
    const h = this.s.slice(this.i, this.i + 4);
    if (!/^[0-9A-Fa-f]{4}$/.test(h)) return null;
    this.i += 4;
    return parseInt(h, 16);
  }
  private string(): string | null {
    if (!this.eat('"')) return null;
    let out = "";
    while (this.i < this.s.length) {
      const c = this.s[this.i++];
      if (c === '"') return out;
      if (c.charCodeAt(0) < 0x20) return null;
      if (c !== "\\") {
        out += c;
        continue;
      }
      if (this.i >= this.s.length) return null;
      const e = this.s[this.i++];
      const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (e in simple) {
        out += simple[e];
      } else if (e === "u") {
        const cp = this.hex4();
        if (cp === null) return null;
        if (cp >= 0xd800 && cp < 0xdc00) {
          if (!this.eat("\\") || !this.eat("u")) return null;
          const lo = this.hex4();
          if (lo === null || lo < 0xdc00 || lo >= 0xe000) return null;
          out += String.fromCharCode(cp, lo);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return null;
        } else {
          out += String.fromCharCode(cp);
        }
      } else {
        return null;
      }
    }
    return null; // unterminated
  }
  // Numbers, true/false/null: the raw token, checked later by the reader.
  private scalar(): string | null {
    const m = /^[0-9A-Za-z+.-]+/.exec(this.s.slice(this.i, this.i + 400));
    if (!m) return null;
    let end = this.i + m[0].length;
    while (end < this.s.length && /[0-9A-Za-z+.-]/.test(this.s[end])) ++end; // absurdly long token
    const text = this.s.slice(this.i, end);
    this.i = end;
    return text;
  }
  // Skips a nested array/object (Coz writes none) without recursion.
  private skipNested(): boolean {
    let depth = 0;
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === '"') {
        if (this.string() === null) return false;
        continue;
      }
      ++this.i;
      if (c === "[" || c === "{") {
        ++depth;
      } else if (c === "]" || c === "}") {
        if (depth === 0) return false;
        if (--depth === 0) return true;
      }
    }
    return false;
  }
  private value(): { text: string; keep: boolean } | null {
    const c = this.s[this.i];
    if (c === undefined) return null;
    if (c === '"') {
      const t = this.string();
      return t === null ? null : { text: t, keep: true };
    }
    if (c === "[" || c === "{") return this.skipNested() ? { text: "", keep: false } : null;
    const t = this.scalar();
    return t === null ? null : { text: t, keep: true };
  }
}

function splitJson(line: string, out: RecordLine): string | null {
  const error = new JsonLine(line).parse(out);
  if (error !== null) return error;
  const type = findField(out, "type");
  if (type === undefined) return 'JSON record without a "type" key';
  if (!recordType.test(type)) return "not a profile record (bad type)";
  out.type = type;
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
  const out: RecordLine = { type: "", fields: [] };
  const t = trim(line);
  const error = t.startsWith("{") ? splitJson(t, out) : splitTabs(line, out);
  return error === null ? out : error;
}
