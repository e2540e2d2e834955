// A deliberately small JSON reader for one flat object per line, as JSON
// Lines profiles hold (docs/profile-format.md, "JSON Lines"). Mirrors
// tools/analysis/json_object.cpp: string keys; values that are strings (every
// escape, \uXXXX with surrogate pairs), numbers (RFC 8259's grammar), true,
// false or null; a nested array or object is skipped whole. Same error texts.
// Not JSON.parse: that one throws without saying where, accepts nesting to
// any depth, and loses the number as written ("0.35", "1.2e8").

export type JsonKind = "string" | "number" | "true" | "false" | "null" | "nested";

export interface JsonMember {
  key: string;
  kind: JsonKind;
  // string: the decoded text; number: the token as written; literals: their word; nested: "".
  text: string;
}

const isSpace = (c: string) => c === " " || c === "\t" || c === "\r" || c === "\n";
const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";
const simpleEscapes: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

class Parser {
  private i = 0;
  constructor(private readonly s: string) {}

  object(out: JsonMember[]): string | null {
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
      out.push({ key, kind: v.kind, text: v.text });
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
      // A raw control character is not JSON: also what makes a cut line fail.
      if (c.charCodeAt(0) < 0x20) return null;
      if (c !== "\\") {
        out += c;
        continue;
      }
      if (this.i >= this.s.length) return null;
      const e = this.s[this.i++];
      if (e in simpleEscapes) {
        out += simpleEscapes[e];
      } else if (e === "u") {
        const cp = this.hex4();
        if (cp === null) return null;
        if (cp >= 0xd800 && cp < 0xdc00) {
          if (!this.eat("\\") || !this.eat("u")) return null;
          const lo = this.hex4();
          if (lo === null || lo < 0xdc00 || lo >= 0xe000) return null;
          out += String.fromCharCode(cp, lo);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return null; // a lone low surrogate
        } else {
          out += String.fromCharCode(cp);
        }
      } else {
        return null;
      }
    }
    return null; // unterminated
  }
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  private number(): string | null {
    const start = this.i;
    const digits = () => {
      if (!isDigit(this.s[this.i])) return false;
      while (isDigit(this.s[this.i])) ++this.i;
      return true;
    };
    this.eat("-");
    if (!this.eat("0") && !digits()) return null;
    if (this.eat(".") && !digits()) return null;
    if (this.eat("e") || this.eat("E")) {
      if (!this.eat("+")) this.eat("-");
      if (!digits()) return null;
    }
    return this.s.slice(start, this.i);
  }
  // Skips a nested array/object without recursion.
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
  private value(): { kind: JsonKind; text: string } | null {
    const c = this.s[this.i];
    if (c === undefined) return null;
    if (c === '"') {
      const t = this.string();
      return t === null ? null : { kind: "string", text: t };
    }
    if (c === "[" || c === "{") return this.skipNested() ? { kind: "nested", text: "" } : null;
    if (c === "-" || isDigit(c)) {
      const t = this.number();
      return t === null ? null : { kind: "number", text: t };
    }
    for (const word of ["true", "false", "null"] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return { kind: word, text: word };
      }
    }
    return null;
  }
}

/** Parses `text` (one object) into `members`, in order; returns null, or why it is not one JSON object. */
export function parseJsonObject(text: string, members: JsonMember[]): string | null {
  return new Parser(text).object(members);
}
