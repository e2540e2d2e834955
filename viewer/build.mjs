// Builds the viewer into ONE self-contained page (JS and CSS inlined, no
// network access) and the analysis library as a node module for the tests.
//
//   node build.mjs [--out FILE]
//
// Outputs: dist/coz-viewer.html (or FILE), dist/node/analysis.mjs.
import { build } from "esbuild";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const outIndex = args.indexOf("--out");
const out = outIndex >= 0 ? resolve(args[outIndex + 1]) : join(here, "dist", "coz-viewer.html");

// `coz plot` replaces this marker with the embedded profiles; it must occur
// exactly once in the page (tools/coz/plot_command.cpp uses the same text).
const marker = "<!--COZ-EMBEDDED-PROFILES-->";

const page = await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  write: false,
  format: "iife",
  target: "es2020",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
const js = page.outputFiles[0].text;
const css = readFileSync(join(here, "src", "style.css"), "utf8");
const template = readFileSync(join(here, "src", "index.html"), "utf8");

// Inline text must not close its element early.
if (/<\/script/i.test(js)) throw new Error("bundle contains </script");
if (/<\/style/i.test(css)) throw new Error("style.css contains </style");
if (js.includes(marker) || css.includes(marker)) throw new Error("the embed marker leaked into the bundle");

const html = template
  .replace("/*STYLE*/", () => css)
  .replace("/*SCRIPT*/", () => js);
if (html.split(marker).length !== 2) throw new Error(`index.html must hold ${marker} exactly once`);
if (/\b(src|href)\s*=\s*["']?(https?:)?\/\//i.test(html)) throw new Error("the page refers to the network");

mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, html);

await build({
  entryPoints: [join(here, "src", "analysis", "index.ts")],
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node18",
  outfile: join(here, "dist", "node", "analysis.mjs"),
  logLevel: "warning",
});

console.log(`coz viewer: ${out} (${Math.round(html.length / 1024)} KiB)`);
