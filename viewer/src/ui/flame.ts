// An icicle flame graph (outermost frame on top) of the `stack` records.
// Click a frame to zoom into it; click the top bar to zoom out. Frames of
// functions outside the profiled scope ("memcpy [libc.so.6]") are grey.
import { FlameNode, parseStackFrame } from "../analysis/conventional";
import { clear, h, s } from "./dom";
import { share, shortFunction, shortLocation } from "./format";

const rowHeight = 18;
const width = 600;
const minPixels = 0.75; // narrower frames are not drawn

export function renderFlame(root: FlameNode): HTMLElement {
  const box = h("div", { class: "flame", id: "flame-graph" });
  const draw = (focus: FlameNode, path: FlameNode[]) => {
    clear(box);
    const rows: SVGElement[] = [];
    let depth = 0;
    const visit = (n: FlameNode, x0: number, d: number, scale: number) => {
      const w = n.value * scale;
      if (w < minPixels) return;
      depth = Math.max(depth, d + 1);
      const frame = parseStackFrame(n.name);
      const callee = frame.kind === "callee" ? frame : null;
      const hue = 18 + ((hash(n.name) % 40) - 20);
      const fill = d === 0 ? "#8a93a6" : callee ? `hsl(220 8% ${80 + (d % 2) * 4}%)` : `hsl(${hue} 75% ${62 + (d % 3) * 5}%)`;
      const title = callee
        ? `${callee.function}\nin ${callee.library}, outside the profiled scope\n${n.value} samples, ${share(n.value / root.value)} of all`
        : `${n.name}\n${n.value} samples, ${share(n.value / root.value)} of all`;
      const g = s(
        "g",
        { class: callee ? "frame callee" : "frame", transform: `translate(${x0} ${d * rowHeight})`, onclick: () => (n === focus ? draw(path[path.length - 1] ?? root, path.slice(0, -1)) : draw(n, [...path, focus])) },
        s("rect", { width: Math.max(w - 1, 0.5), height: rowHeight - 2, rx: 2, fill }),
        w > 40 ? label(d === 0 ? n.name : callee ? null : shortLocation(n.name).short, callee, w - 8) : null,
        s("title", {}, title),
      );
      rows.push(g);
      let x = x0;
      for (const c of n.children) {
        visit(c, x, d + 1, scale);
        x += c.value * scale;
      }
    };
    visit(focus, 0, 0, width / focus.value);
    const svg = s("svg", { viewBox: `0 0 ${width} ${depth * rowHeight}`, class: "flame-svg", width: "100%" });
    rows.forEach((r) => svg.append(r));
    box.append(svg);
    if (focus !== root) box.prepend(h("div", { class: "hint" }, `Zoomed into ${focus.name} — click it to zoom out`));
  };
  draw(root, []);
  return box;
}

// An in-scope frame's name, or a callee's function with its library in a lighter tone when there is room.
function label(text: string | null, callee: { function: string; library: string } | null, pixels: number): SVGElement {
  if (!callee) return s("text", { x: 4, y: rowHeight - 6 }, fit(text ?? "", pixels));
  const fn = shortFunction(callee.function, 40);
  const lib = ` [${callee.library}]`;
  const room = Math.floor(pixels / 6.2);
  if (fn.length + lib.length <= room) return s("text", { x: 4, y: rowHeight - 6 }, fn, s("tspan", { class: "lib" }, lib));
  return s("text", { x: 4, y: rowHeight - 6 }, fit(fn, pixels));
}

function hash(text: string): number {
  let v = 2166136261;
  for (let i = 0; i < text.length; ++i) v = Math.imul(v ^ text.charCodeAt(i), 16777619);
  return v >>> 0;
}

// ~6.2 px per character at the 11px label font.
function fit(text: string, pixels: number): string {
  const n = Math.floor(pixels / 6.2);
  return text.length <= n ? text : n < 3 ? "" : text.slice(0, n - 1) + "…";
}
