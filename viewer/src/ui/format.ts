// Number formatting shared by the panels.

/** +12.3% / -4.0% / 0.0%: program and line speedups are fractions. */
export function pct(x: number | null | undefined, digits = 1): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  const v = x * 100;
  const text = Math.abs(v).toFixed(digits);
  if (Number(text) === 0) return `${(0).toFixed(digits)}%`;
  return `${v > 0 ? "+" : "−"}${text}%`;
}

/** 42.0% without a sign (shares). */
export function share(x: number): string {
  const v = x * 100;
  return v > 0 && v < 0.1 ? "<0.1%" : `${v.toFixed(1)}%`;
}

export function duration(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return "–";
  const a = Math.abs(ns);
  if (a >= 60e9) return `${(ns / 60e9).toFixed(1)} min`;
  if (a >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (a >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (a >= 1e3) return `${(ns / 1e3).toFixed(1)} µs`;
  return `${Math.round(ns)} ns`;
}

/** A rough time to come, as `coz report` says it: "<1 s", "~42 s", "~3 min", "~1.5 h". */
export function aboutSeconds(seconds: number): string {
  if (seconds < 1) return "<1 s";
  if (seconds < 90) return `~${seconds.toFixed(0)} s`;
  if (seconds < 5400) return `~${(seconds / 60).toFixed(0)} min`;
  return `~${(seconds / 3600).toFixed(1)} h`;
}

export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** FILE:LINE as its base name and a directory shortened on the left ("…/test/programs/"). */
export function shortLocation(loc: string, maxDir = 30): { short: string; dir: string } {
  const slash = loc.lastIndexOf("/");
  if (slash < 0) return { short: loc, dir: "" };
  let dir = loc.slice(0, slash + 1);
  if (dir.length > maxDir) {
    const parts = dir.split("/");
    let kept = "/";
    for (let i = parts.length - 2; i > 0 && kept.length + parts[i].length + 1 <= maxDir - 1; --i) kept = "/" + parts[i] + kept;
    dir = "…" + kept;
  }
  return { short: loc.slice(slash + 1), dir };
}

/** "ns::f<int>(char const*, int) const" -> "ns::f<int>(…) const" (the last parameter list). */
function withoutParameters(name: string): string {
  const close = name.lastIndexOf(")");
  if (close < 0) return name;
  let depth = 0;
  for (let i = close; i >= 0; --i) {
    if (name[i] === ")") ++depth;
    else if (name[i] === "(" && --depth === 0) return close === i + 1 ? name : name.slice(0, i + 1) + "…" + name.slice(close);
  }
  return name;
}

/** "std::vector<std::pair<int, int> >::push_back" -> "std::vector<…>::push_back"; operator<, operator-> stay. */
function withoutTemplateArguments(name: string): string {
  let out = "";
  let depth = 0;
  for (let i = 0; i < name.length; ++i) {
    if (name.startsWith("operator", i) && (i === 0 || !/[A-Za-z0-9_]/.test(name[i - 1]))) {
      let end = i + 8;
      while (end < name.length && "<>=-!".includes(name[end])) ++end;
      if (depth === 0) out += name.slice(i, end);
      i = end - 1;
    } else if (name[i] === "<") {
      if (depth++ === 0) out += "<…";
    } else if (name[i] === ">" && depth > 0) {
      if (--depth === 0) out += ">";
    } else if (depth === 0) out += name[i];
  }
  return depth === 0 ? out : name;
}

/** A C++ function name in about `max` characters: whole, else without parameters, else without template arguments (CSS cuts the rest). */
export function shortFunction(name: string, max = 48): string {
  if (name.length <= max) return name;
  const plain = withoutParameters(name);
  return plain.length <= max ? plain : withoutTemplateArguments(plain);
}
