// The viewer page: loads profiles (embedded by `coz plot`, a file picker or
// drag-and-drop), analyses them in the browser with the same formulas as
// `coz report`, and renders the causal ranking beside the conventional profile.
// Everything runs offline: no request ever leaves the page.
import {
  analyze,
  Analysis,
  BaselineMode,
  falseDiscoveryRate,
  LineEffect,
  LinePercentiles,
  minSettleExperiments,
  percentileNames,
  PointPercentiles,
  PointSummary,
  samplingCoverage,
  stealShare,
  secondsPerExperiment,
  settleHalfWidth,
} from "./analysis/analysis";
import { decodeBytes } from "./analysis/bytes_text";
import { Callee, flameTree, parseStackFrame, splitLocation } from "./analysis/conventional";
import { emptyProfile, formatWarning, mergeProfile, Profile, readProfile } from "./analysis/profile";
import { clear, h } from "./ui/dom";
import { renderFlame } from "./ui/flame";
import { count, duration, pct, aboutSeconds, share, shortFunction, shortLocation } from "./ui/format";
import { renderPercentilePlot, renderPlot } from "./ui/plot";

interface LoadedFile {
  name: string;
  text: string;
}

/** impact: the analysis's ranking (the mean's impact); p99: the lines of latency points with request histograms by their p99's change at 50% (docs/analysis.md §13), first. */
type SortKey = "impact" | "p99" | "max" | "name" | "samples";
type Tab = "lines" | "functions" | "stacks" | "blocked";

const pageSize = 25; // effects per page of the ranking
/**
 * The first cards of the ranking get their plots at once, the rest when they
 * come near the viewport: the first screen never waits for an observer's
 * callback (a headless browser under load dumped the page before the first
 * one ran, with no plot drawn).
 */
const plotsDrawnAtOnce = 4;
const tableRows = 100; // rows per conventional table before "show all"
const hotShare = 0.05; // a line with this share of samples is "hot"
const mostlyInCallee = 0.5; // a callee with this share of a line's stack samples is shown (as in `coz report`)
const lowCoverage = 0.5; // below this share of CPU time attributed to lines, the verdicts speak for a minority (as in `coz report`)
const highSteal = 0.02; // from this share of the machine's time taken by a hypervisor, it warns (as `coz report` does)
const maxNeededCounted = 10000; // experiments counted per undecided line in "to settle" (as in `coz report`): one hopeless line must not swamp the sum
const fdr = `${falseDiscoveryRate * 100}%`; // the false discovery rate, as text
// A confidence level as a percentage, two significant digits: 0.008 -> "0.8%", 0.05 -> "5%".
const levelText = (level: number) => `${Number((level * 100).toPrecision(2))}%`;

const state = {
  files: [] as LoadedFile[],
  profile: emptyProfile() as Profile,
  analysis: null as Analysis | null,
  baseline: "local" as BaselineMode,
  sort: "impact" as SortKey,
  point: "", // "" = all points; else "kind:name"
  file: "",
  search: "",
  shown: pageSize,
  tab: "lines" as Tab,
  tableAll: false,
};

const $ = (id: string) => document.getElementById(id)!;

// ---------- loading ----------

function load(files: LoadedFile[]) {
  state.files = files;
  const profile = emptyProfile();
  for (const f of files) {
    const one = emptyProfile();
    readProfile(f.text, f.name, one);
    mergeProfile(profile, one);
  }
  state.profile = profile;
  state.shown = pageSize;
  analyzeAndRender();
}

function analyzeAndRender() {
  const t0 = performance.now();
  state.analysis = state.files.length > 0 ? analyze(state.profile, { baseline: state.baseline }) : null;
  render();
  document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
}

async function readFiles(list: FileList | File[]): Promise<LoadedFile[]> {
  const files = [...list];
  // Not f.text(): its U+FFFD would merge paths that coz plot keeps apart (bytes_text.ts).
  return Promise.all(files.map(async (f) => ({ name: f.name, text: decodeBytes(new Uint8Array(await f.arrayBuffer())) })));
}

function embedded(): LoadedFile[] | null {
  const el = document.getElementById("coz-embedded");
  if (!el || !el.textContent) return null;
  try {
    const data = JSON.parse(el.textContent) as LoadedFile[];
    return Array.isArray(data) ? data.filter((d) => typeof d.name === "string" && typeof d.text === "string") : null;
  } catch {
    return null;
  }
}

function setUpInput() {
  const picker = $("file-input") as HTMLInputElement;
  let adding = false;
  $("open-button").addEventListener("click", () => {
    adding = false;
    picker.click();
  });
  $("add-button").addEventListener("click", () => {
    adding = true;
    picker.click();
  });
  picker.addEventListener("change", async () => {
    if (!picker.files || picker.files.length === 0) return;
    const files = await readFiles(picker.files);
    picker.value = "";
    load(adding ? [...state.files, ...files] : files);
  });
  let depth = 0;
  window.addEventListener("dragenter", (e) => {
    e.preventDefault();
    if (++depth === 1) document.body.classList.add("dragging");
  });
  window.addEventListener("dragleave", () => {
    if (--depth <= 0) {
      depth = 0;
      document.body.classList.remove("dragging");
    }
  });
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", async (e) => {
    e.preventDefault();
    depth = 0;
    document.body.classList.remove("dragging");
    const list = e.dataTransfer?.files;
    if (!list || list.length === 0) return;
    const files = await readFiles(list);
    // Shift while dropping adds to what is loaded; a plain drop replaces it.
    load(e.shiftKey ? [...state.files, ...files] : files);
  });
  for (const [id, apply] of [
    ["sort", (v: string) => (state.sort = v as SortKey)],
    ["filter-point", (v: string) => (state.point = v)],
    ["filter-file", (v: string) => (state.file = v)],
  ] as const) {
    $(id).addEventListener("change", (e) => {
      apply((e.target as HTMLSelectElement).value);
      state.shown = pageSize;
      renderRanking();
    });
  }
  $("baseline").addEventListener("change", (e) => {
    state.baseline = (e.target as HTMLSelectElement).value as BaselineMode;
    analyzeAndRender();
  });
  $("search").addEventListener("input", (e) => {
    state.search = (e.target as HTMLInputElement).value.trim();
    state.shown = pageSize;
    renderRanking();
  });
}

// ---------- rendering ----------

function render() {
  renderHeader();
  const a = state.analysis;
  const main = $("main");
  const empty = $("empty-message");
  clear(empty);
  if (!a) {
    main.hidden = true;
    empty.hidden = false;
    empty.append(
      h("h2", {}, "Open a profile"),
      h("p", {}, "Drop one or more ", h("code", {}, "profile.coz"), " files anywhere on this page, or use ", h("b", {}, "Open profiles…"), ". Several files are analysed together (runs merge)."),
      h("p", { class: "muted" }, "Files are read locally; nothing leaves this page. ", h("code", {}, "coz plot profile.coz"), " writes a page with the profile already inside."),
    );
    return;
  }
  main.hidden = false;
  const problem = emptyReason(a);
  empty.hidden = problem === null;
  if (problem) empty.append(problem);
  renderFilters(a);
  renderRanking();
  renderConventional();
}

/** Why there is nothing to rank, and what to do about it; null when there is something. */
function emptyReason(a: Analysis): HTMLElement | null {
  const measured = a.effects.filter((e) => e.measured).length;
  if (measured > 0) return null;
  const todo = h(
    "ul",
    {},
    h("li", {}, h("b", {}, "Add a progress point"), " where the program completes a unit of work: ", h("code", {}, "COZ_PROGRESS;"), " (or ", h("code", {}, 'COZ_BEGIN("x")'), "/", h("code", {}, 'COZ_END("x")'), " for latency), or run ", h("code", {}, "coz run --end-to-end"), "."),
    h("li", {}, h("b", {}, "Run longer"), ": every line needs several experiments at several speedups, each with visits to the progress point."),
    h("li", {}, h("b", {}, "Build with ", h("code", {}, "-g")), " so that samples map to source lines in scope (check ", h("code", {}, "--source-scope"), " / ", h("code", {}, "--binary-scope"), ")."),
  );
  let what: string;
  if (a.experiments === 0) what = "This profile holds no performance experiments.";
  else if (a.points.length === 0) what = `This profile holds ${count(a.experiments)} experiments but no progress point was recorded in any of them.`;
  else if (a.points.every((p) => p.baseline_ns === null)) what = "No experiment at 0% speedup reached a progress point, so there is no baseline to compare against.";
  else what = "No line was measured at a non-zero speedup with visits to a progress point.";
  const stopped = experimentsStopped(a);
  return h("div", { class: "notice" }, h("h2", {}, "Nothing to rank yet"), h("p", {}, what), stopped ? h("p", {}, `The ${stopped.textContent}.`) : null, h("p", {}, "What to do:"), todo);
}

function renderHeader() {
  const chips = $("files");
  clear(chips);
  state.files.forEach((f, i) =>
    chips.append(
      h(
        "span",
        { class: "chip", title: f.name },
        f.name,
        h("button", { class: "chip-x", title: `remove ${f.name}`, onclick: () => load(state.files.filter((_, j) => j !== i)) }, "×"),
      ),
    ),
  );
  ($("add-button") as HTMLButtonElement).hidden = state.files.length === 0;
  const sum = $("summary");
  clear(sum);
  const a = state.analysis;
  if (!a) return;
  const stat = (label: string, value: string, title?: string) => h("div", { class: "stat", title }, h("div", { class: "value" }, value), h("div", { class: "label" }, label));
  const measured = a.effects.filter((e) => e.measured).length;
  const positive = a.effects.filter((e) => e.label === "positive").length;
  sum.append(
    stat("experiments", count(a.experiments)),
    stat(a.points.length === 1 ? "progress point" : "progress points", count(a.points.length), a.points.map((p) => `${p.name} (${p.kind})`).join("\n")),
    stat("lines measured", count(measured)),
    stat(
      "would speed up the program",
      count(positive),
      `lines whose speedup speeds up the program, at a ${fdr} false discovery rate over all the lines tested for their progress point`,
    ),
    stat("samples", count(a.total_samples)),
    a.sampling && a.sampling.samples > 0
      ? stat(
          "in-scope samples",
          share(a.sampling.in_scope / a.sampling.samples),
          `${count(a.sampling.in_scope)} of the ${count(a.sampling.samples)} samples taken were in a line in scope` +
            (a.sampling.lost > 0 ? `; ${count(a.sampling.lost)} more were lost by the kernel` : ""),
        )
      : "",
    coverageStat(a),
    stealStat(a),
    stat("run time", duration(a.runtime_ns)),
  );
  for (const p of a.points) {
    const card = pointVerdicts(a, p);
    if (card) sum.append(card);
  }
  const warnings = $("warnings");
  clear(warnings);
  const p = state.profile;
  if (p.warnings.length > 0) {
    const total = p.warnings.length + p.warningsDropped;
    warnings.append(
      h(
        "details",
        {},
        h("summary", {}, `${total} line${total === 1 ? "" : "s"} skipped while reading`),
        h("pre", {}, p.warnings.slice(0, 50).map(formatWarning).join("\n") + (total > 50 ? `\n… and ${total - 50} more` : "")),
      ),
    );
  }
}

/** "CPU time attributed": how much of the program's CPU time the verdicts speak for; "" when the profile does not say. */
function coverageStat(a: Analysis): HTMLElement | "" {
  const coverage = samplingCoverage(a.sampling);
  if (coverage === null) return "";
  const low = coverage < lowCoverage;
  const title =
    `${duration(a.sampling!.attributed_ns)} of the program's ${duration(a.sampling!.cpu_time_ns)} of CPU time became samples attributed to a line in scope.` +
    (low ? "\nThe rest: kernel time (not sampled), time in code out of scope, threads not sampled. The verdicts only speak for the attributed part." : "");
  return h(
    "div",
    { class: low ? "stat warn" : "stat", id: "coverage", title },
    h("div", { class: "value" }, share(coverage)),
    h("div", { class: "label" }, "CPU time attributed"),
    low ? h("div", { class: "note" }, "most of the program's CPU time is not attributed to any line") : null,
  );
}

/** "steal time": the share of the machine a hypervisor took during the run, shown from highSteal; "" below it. */
function stealStat(a: Analysis): HTMLElement | "" {
  const steal = stealShare(a.sampling);
  if (steal < highSteal) return "";
  return h(
    "div",
    {
      class: "stat warn",
      id: "steal",
      title:
        `A hypervisor kept this machine's CPUs from running for ${share(steal)} of their time during the run (steal time, /proc/stat). ` +
        "It comes and goes, so effects measured at different moments differ by more than their intervals say: trust effects of a few % only from a quieter machine.",
    },
    h("div", { class: "value" }, share(steal)),
    h("div", { class: "label" }, "taken by a hypervisor"),
    h("div", { class: "note" }, "effects of a few % are unreliable"),
  );
}

/** A point's verdicts (how many lines settled, of how many tested) and how stable its top lines are between the halves of the run. */
function pointVerdicts(a: Analysis, p: PointSummary): HTMLElement | null {
  const mine = a.effects.filter((e) => e.point === p.name && e.kind === p.kind);
  if (!mine.some((e) => e.measured)) return null;
  const n = (label: string) => mine.filter((e) => e.label === label).length;
  const handOffs = mine.filter((e) => e.withheld === "fast-hand-offs").length;
  const settled = p.contended
    ? h(
        "div",
        {
          class: "settled contended",
          title:
            "docs/analysis.md §5.1: in the 0% experiments, threads ready to run found no core free. A line that frees CPU can speed such a program up by giving it to them, " +
            "which pausing the other threads does not reproduce: a line's effect may be anywhere up to what the cores allow (the interval's upper end), so no line gets a verdict.",
        },
        `cores contended: ${(p.waiting_for_core ?? 0).toFixed(1)} threads waited for a core on average (${p.cores} cores, ${(p.cores_busy ?? 0).toFixed(1)} busy): no verdicts`,
      )
    : p.tested > 0
      ? h(
          "div",
          {
            class: "settled",
            title:
              `Verdicts over the ${count(p.tested)} lines tested for this point, at a ${fdr} false discovery rate: at most ${fdr} of the lines said to speed up or slow down ` +
              `the program are expected to be wrong. A line needs ${minSettleExperiments} experiments at a non-zero speedup before any verdict; ` +
              `"no effect" means any effect is within ±${settleHalfWidth * 100}%.`,
          },
          `settled: ${count(n("positive"))} speed up, ${count(n("negative"))} slow down, ${count(n("no-effect"))} no effect, ` +
            `${count(n("undecided") - handOffs)} undecided${handOffs > 0 ? `, ${count(handOffs)} hand-offs` : ""} of ${count(p.tested)} tested`,
        )
      : h("div", { class: "settled" }, "no line tested yet: too few experiments to estimate the noise");
  const fast =
    !p.contended && p.fast_hand_offs
      ? h(
          "div",
          {
            class: "settled hand-offs",
            title:
              "docs/analysis.md §5.2: in the 0% experiments the program's threads gave up their core to wait for each other this often (voluntary context switches). " +
              "A wake costs more after a long wait than after a short one, and the experiments keep the waits as long as in the measured program: speed-ups here read low " +
              "(5-12 points at 50% on such programs), and no line is called \"no effect\".",
          },
          `fast hand-offs: ${count(Math.round(p.hand_offs_per_second ?? 0))} a second: speed-ups read low, no "no effect" verdicts`,
        )
      : null;
  const st = a.stability.find((s) => s.name === p.name && s.kind === p.kind);
  const stable = st
    ? h(
        "div",
        {
          class: st.agree < st.top ? "stability warn" : "stability",
          title:
            `The even- and odd-numbered experiments, each analysed alone: ${count(st.agree)} of the ${count(st.top)} top lines of one half are in the other's top ${count(st.top)}. ` +
            (st.agree < st.top ? "The ranking may come out differently in a second run: run longer for a firmer ranking." : "The ranking would likely come out the same in a second run."),
        },
        `top ${st.top} agree between halves: ${st.agree} of ${st.top}`,
        st.agree < st.top ? h("b", {}, " · run longer") : null,
      )
    : null;
  return h(
    "div",
    { class: "stat point-stat", "data-point": p.name },
    h("div", { class: "label", title: `progress point ${p.name} (${p.kind})` }, `${p.kind === "latency" ? "latency · " : ""}${shortLocation(p.name).short}`),
    settled,
    fast,
    requestsMeasured(a, p),
    toSettle(a, mine),
    p.tested > 0 ? experimentsStopped(a) : null,
    stable,
  );
}

/** "2,605 requests measured: untreated p50 1.07 ms · p95 5.2 ms · p99 12.4 ms" (docs/analysis.md §13); null without request histograms. */
function requestsMeasured(a: Analysis, p: PointSummary): HTMLElement | null {
  const pp = p.kind === "latency" ? a.percentiles?.find((x) => x.name === p.name) : undefined;
  if (!pp) return null;
  const untreated = percentileNames.map((n, k) => `${n} ${duration(pp.baseline_ns[k])}`).join(" · ");
  return h(
    "div",
    { class: "requests", title: `${count(pp.baseline_experiments)} experiments at 0% measured ${count(Math.round(pp.baseline_requests))} requests (weighted): the untreated percentiles` },
    `${count(pp.requests)} requests · untreated ${untreated}`,
  );
}

/** "to settle the 2 undecided lines: ~40 more experiments, ~25 s at this run's pace" (docs/settling.md); null without undecided lines. */
function toSettle(a: Analysis, mine: LineEffect[]): HTMLElement | null {
  const open = mine.filter((e) => e.label === "undecided" && !undecidable(e));
  if (open.length === 0) return null;
  const needed = open.reduce((n, e) => n + Math.min(e.experiments_needed ?? 0, maxNeededCounted), 0);
  const pace = secondsPerExperiment(a);
  const time = pace !== null ? `, ${aboutSeconds(needed * pace)} at this run's pace` : "";
  const lines = open.length === 1 ? "the undecided line" : `the ${count(open.length)} undecided lines`;
  const title =
    `The experiments each undecided line still needs for a verdict (at most ${count(maxNeededCounted)} counted per line)` +
    (pace !== null ? `, at this run's pace: ${count(a.experiments)} experiments in ${duration(a.runtime_ns)}` : "") +
    ". coz run --until-settled aims the experiments at the lines that decide the answer and stops them once the top lines are settled.";
  return h(
    "div",
    { class: "to-settle", title },
    `to settle ${lines}: ~${count(needed)} more experiments${time} (coz run --until-settled stops when the top lines are settled)`,
  );
}

/** Why the experiments stopped before the program ended, as `coz report` says it; null when they did not. */
function experimentsStopped(a: Analysis): HTMLElement | null {
  if (a.experiments_stopped.length === 0) return null;
  const why = a.experiments_stopped[0];
  const settled = why === "settled";
  const text = settled
    ? "experiments stopped once the top lines were settled (coz run --until-settled)"
    : `experiments stopped early (${why === "max-time" ? "coz run --max-time" : why})`;
  const title = settled
    ? "coz run --until-settled stopped the experiments once the top lines of every progress point were settled; no experiment followed."
    : "The experiments stopped before the program ended, settled or not; no experiment followed.";
  return h("div", { class: "stopped", title }, text);
}

const pointKey = (e: { kind: string; point?: string; name?: string }) => `${e.kind}:${e.point ?? e.name}`;

function renderFilters(a: Analysis) {
  const points = $("filter-point") as HTMLSelectElement;
  clear(points);
  points.append(h("option", { value: "" }, "all progress points"));
  for (const p of a.points) {
    const key = pointKey(p);
    points.append(h("option", { value: key, selected: key === state.point }, `${p.name} (${p.kind})`));
  }
  if (!a.points.some((p) => pointKey(p) === state.point)) state.point = "";
  points.value = state.point;

  const files = $("filter-file") as HTMLSelectElement;
  clear(files);
  files.append(h("option", { value: "" }, "all source files"));
  const names = [...new Set(a.effects.map((e) => splitLocation(e.line).file))].sort();
  for (const f of names) files.append(h("option", { value: f }, shortLocation(f).short + (shortLocation(f).dir ? `  (${shortLocation(f).dir})` : "")));
  if (!names.includes(state.file)) state.file = "";
  files.value = state.file;

  // Ranking by p99: offered only where some latency point has request histograms (after "ranking").
  const sort = $("sort") as HTMLSelectElement;
  const byP99 = document.getElementById("sort-p99");
  if (a.percentiles && !byP99) {
    const title = "latency points with measured requests: the change of their p99 latency with the line 50% faster, largest first; then the other lines";
    sort.options[0].after(h("option", { value: "p99", id: "sort-p99", title }, "ranking by p99 at 50%"));
  } else if (!a.percentiles && byP99) {
    byP99.remove();
  }
  if (!a.percentiles && state.sort === "p99") state.sort = "impact";
  sort.value = state.sort;
}

// ---------- latency percentiles (docs/analysis.md §13) ----------

const p99 = percentileNames.length - 1;
const percentileIndex = new WeakMap<Analysis, Map<string, { point: PointPercentiles; line: LinePercentiles }>>();

/** A latency effect's percentiles: its point's and its line's; null without request histograms. */
function percentilesOf(a: Analysis, e: LineEffect): { point: PointPercentiles; line: LinePercentiles } | null {
  if (!a.percentiles || e.kind !== "latency") return null;
  let index = percentileIndex.get(a);
  if (!index) {
    index = new Map();
    for (const point of a.percentiles) for (const line of point.lines) index.set(`${point.name}\u0000${line.line}`, { point, line });
    percentileIndex.set(a, index);
  }
  return index.get(`${e.point}\u0000${e.line}`) ?? null;
}

/** The ranking: the analysis's (mean impact), or by p99's change at 50%, largest first, then the lines without one in the analysis's order. */
function rankedEffects(a: Analysis): LineEffect[] {
  if (state.sort !== "p99" || !a.percentiles) return a.effects;
  const change = (e: LineEffect) => percentilesOf(a, e)?.line.at_half[p99].change ?? null;
  const known = a.effects.filter((e) => change(e) !== null).sort((x, y) => change(y)! - change(x)!);
  return [...known, ...a.effects.filter((e) => change(e) === null)];
}

function visibleEffects(a: Analysis, ranked: LineEffect[]): LineEffect[] {
  const q = state.search.toLowerCase();
  const list = ranked.filter(
    (e) =>
      (state.point === "" || pointKey(e) === state.point) &&
      (state.file === "" || splitLocation(e.line).file === state.file) &&
      (q === "" || e.line.toLowerCase().includes(q) || e.function.toLowerCase().includes(q)),
  );
  const by: Record<SortKey, ((x: LineEffect, y: LineEffect) => number) | null> = {
    impact: null, // already ranked (rankedEffects)
    p99: null,
    max: (x, y) => Number(y.measured) - Number(x.measured) || y.max_effect - x.max_effect || y.impact - x.impact,
    name: (x, y) => x.line.localeCompare(y.line, "en", { numeric: true }) || x.point.localeCompare(y.point),
    samples: (x, y) => y.samples - x.samples || y.impact - x.impact,
  };
  const cmp = by[state.sort];
  return cmp ? [...list].sort(cmp) : list;
}

let plotObserver: IntersectionObserver | null = null;

function renderRanking() {
  const a = state.analysis;
  if (!a) return;
  const list = $("ranking");
  clear(list);
  plotObserver?.disconnect();
  // Plots are drawn when their card comes near the viewport.
  plotObserver = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        const el = entry.target as HTMLElement;
        plotObserver!.unobserve(el);
        const draw = plotsToDraw.get(el);
        if (draw) el.prepend(draw());
      }
    },
    { rootMargin: "400px" },
  );
  const ranked = rankedEffects(a);
  const effects = visibleEffects(a, ranked);
  $("effect-count").textContent =
    effects.length === a.effects.length ? `${count(a.effects.length)} line/point pairs` : `${count(effects.length)} of ${count(a.effects.length)} line/point pairs`;
  list.dataset.ranking = ranked !== a.effects ? "p99" : "mean";
  const ranks = new Map(ranked.map((e, i) => [e, i + 1]));
  const points = new Map(a.points.map((p) => [pointKey(p), p]));
  effects
    .slice(0, state.shown)
    .forEach((e, i) => list.append(card(e, ranks.get(e)!, points.get(pointKey(e)), i < plotsDrawnAtOnce)));
  const more = $("more") as HTMLButtonElement;
  const rest = effects.length - state.shown;
  more.hidden = rest <= 0;
  more.textContent = `Show ${Math.min(rest, pageSize)} more (${count(rest)} not shown)`;
  if (effects.length === 0 && a.effects.length > 0) list.append(h("p", { class: "muted" }, "No line matches the filters."));
}

/** "↳ 97% of its samples in memcpy [libc.so.6]" under a line mostly inside one out-of-scope callee; null otherwise. */
function calleeNote(c: Callee | null): HTMLElement | null {
  if (!c || !(c.share >= mostlyInCallee)) return null;
  const title =
    `${count(c.samples)} of the ${count(c.stack_samples)} sampled call stacks of this line continue in\n${c.function}\n` +
    `a function of ${c.library}, outside the profiled scope, that the line calls.`;
  // A long function name is cut (CSS ellipsis), never the library.
  return h(
    "div",
    { class: "callee", title },
    h("span", { class: "head" }, "↳ ", h("b", {}, `${(c.share * 100).toFixed(0)}%`), " of its samples in "),
    h("span", { class: "callee-fn" }, shortFunction(c.function)),
    h("span", { class: "lib" }, ` [${c.library}]`),
  );
}

/** "↳ lines: a.c:12 61%, a.c:14 20%" under a function unit (coz run --granularity function); null for a line. */
function unitLinesNote(e: LineEffect, a: Analysis): HTMLElement | null {
  if (!e.function_unit || e.samples === 0) return null;
  const inside = a.profile.lines.filter((l) => l.function === e.function).slice(0, 3); // sorted by samples
  if (inside.length === 0) return null;
  const text = inside.map((l) => `${shortLocation(l.location).short} ${((l.samples / e.samples) * 100).toFixed(0)}%`);
  return h("div", { class: "callee", title: "the lines of this function with the most samples" }, `↳ lines: ${text.join(", ")}`);
}

/** For a tooltip: the line's top callee, also when it holds less than half of its samples. */
const calleeTitle = (c: Callee | null) => (c ? `\n${(c.share * 100).toFixed(0)}% of its sampled call stacks in ${c.function} [${c.library}]` : "");

/** The plots not drawn yet, by the element they go in. */
const plotsToDraw = new WeakMap<Element, () => Node>();

/** `draw()` into `el` now, or when it comes near the viewport. */
function plotInto(el: HTMLElement, draw: () => Node, now: boolean): HTMLElement {
  if (now) {
    el.prepend(draw());
  } else {
    plotsToDraw.set(el, draw);
    plotObserver!.observe(el);
  }
  return el;
}

// Undecided because it has too few experiments at a non-zero speedup for any verdict.
const thin = (e: LineEffect) => e.label === "undecided" && e.measured_experiments < minSettleExperiments;
// Undecided for good: a line of a contended point (docs/analysis.md section 5.1), or one whose "no effect" was withheld for fast hand-offs (5.2): more experiments would not settle it.
const undecidable = (e: LineEffect) => e.label === "undecided" && e.experiments_needed === null;
// Unmeasured because every speedup of it inserted no delay (docs/analysis.md section 2).
const rarelyRuns = (e: LineEffect) => e.label === "unmeasured" && e.untreated_experiments > 0;

/** The verdict in words, and why, for the tag and its tooltip. */
function verdict(e: LineEffect, p: PointSummary | undefined): { text: string; why: string } {
  const tested = p ? ` over the ${count(p.tested)} lines tested for this point` : "";
  switch (e.label) {
    case "positive":
      return { text: "speeding it up speeds up the program", why: `Its adjusted interval is above 0 at a ${fdr} false discovery rate${tested}.` };
    case "negative":
      return { text: "speeding it up slows the program down", why: `Its adjusted interval is below 0 at a ${fdr} false discovery rate${tested}.` };
    case "no-effect":
      return { text: "no measurable effect", why: `Its effect at a 50% line speedup is estimated within ±${settleHalfWidth * 100}%, and its impact known to within ±${settleHalfWidth * 100}% (its 90% confidence sequence: two one-sided tests at 5%): too small to be worth a change, even where the interval excludes 0.` };
    case "undecided":
      if (undecidable(e) && e.withheld === "fast-hand-offs") {
        return {
          text: "fast hand-offs: no verdict of no effect",
          why:
            "Its experiments find no effect, but this program's threads wait for each other many times a second, and there its experiments read speed-ups low: " +
            "each wake costs more after a long wait than after a short one, and the experiments keep the waits long (docs/analysis.md §5.2). A small effect, or a slow-down, cannot be told from none here.",
        };
      }
      if (undecidable(e)) {
        return {
          text: "cores contended: no verdict",
          why: "Threads of this program waited for a core. Speeding this line up may free CPU for them, which its experiments cannot show: its effect may be anywhere up to what the cores allow (the interval's upper end).",
        };
      }
      if (thin(e)) {
        return {
          text: `too few experiments to decide: ${e.measured_experiments} of ${minSettleExperiments}`,
          why: `A line needs ${minSettleExperiments} experiments at a non-zero speedup before any verdict: with fewer, one experiment in an unusual phase of the program decides the estimate.`,
        };
      }
      return {
        text: "no measurable effect yet",
        why:
          e.impact_low !== null && e.impact_high !== null && (e.impact_low > 0 || e.impact_high < 0)
            ? `Its 95% confidence sequence excludes 0, but not once the ${fdr} false discovery rate${tested} is accounted for.`
            : `Its 95% confidence sequence includes 0 and is wider than ±${settleHalfWidth * 100}%.`,
      };
    case "insufficient-data":
      return { text: "too few experiments", why: "Too few experiments for this progress point to estimate its noise: no interval yet." };
    default:
      if (rarelyRuns(e)) {
        return {
          text: "runs too rarely to test",
          why: `Its ${count(e.untreated_experiments)} experiments at a non-zero speedup took no sample in the line, so they inserted no delay: nothing was tried.`,
        };
      }
      return { text: "not measured", why: "No experiment at a non-zero speedup of this line reached the progress point (or there is no 0% baseline)." };
  }
}

function tags(e: LineEffect, p: PointSummary | undefined): HTMLElement[] {
  const { text, why } = verdict(e, p);
  const out = [h("span", { class: `tag label-${e.label}${thin(e) ? " thin" : ""}`, title: why }, text)];
  if (e.sample_share >= hotShare && (e.label === "no-effect" || e.label === "negative")) {
    out.push(h("span", { class: "tag hot-useless", title: "many samples, but making it faster does not help" }, "hot but useless"));
  }
  if (e.sample_share < hotShare && e.label === "positive") {
    out.push(h("span", { class: "tag cold-critical", title: "few samples, but making it faster helps" }, "cold but critical"));
  }
  return out;
}

/** The impact's intervals: a discovery's adjusted one first (the ranking uses it), then the 95% one. */
function intervals(e: LineEffect, p: PointSummary | undefined): HTMLElement[] {
  const plain = h("div", { class: "ci", title: "95% confidence sequence: it holds the true impact at every look at once, however often the profile is looked at" }, `95%: ${e.impact_low !== null ? `${pct(e.impact_low)} … ${pct(e.impact_high)}` : "no interval"}`);
  if (e.adjusted_low === null || e.adjusted_high === null || !p) return [plain];
  const title =
    `Widened for a ${fdr} false discovery rate over the ${count(p.tested)} lines tested for this point: ` +
    `the discoveries' intervals are confidence sequences, each at level ${p.adjusted_level !== null ? levelText(p.adjusted_level) : "–"} instead of ${fdr}, ` +
    `valid however often the profile is looked at. ` +
    `With that many lines, some 95% sequences exclude 0 by chance alone; of the lines whose adjusted interval excludes 0, at most ${fdr} are expected to be wrong. ` +
    `Lines are ranked by its ${e.label === "positive" ? "lower" : "upper"} bound.`;
  return [h("div", { class: "ci adjusted", title }, `FDR-adjusted: ${pct(e.adjusted_low)} … ${pct(e.adjusted_high)}`), plain];
}

/** A line's card; `drawPlot`: its plot now, else when it comes near the viewport. */
function card(e: LineEffect, rank: number, p: PointSummary | undefined, drawPlot: boolean): HTMLElement {
  const { short, dir } = shortLocation(e.line);
  const pace = state.analysis ? secondsPerExperiment(state.analysis) : null;
  const needed =
    e.label === "undecided" && e.experiments_needed !== null
      ? h(
          "div",
          { class: "metric" },
          h("span", {}, "to decide"),
          h(
            "b",
            { title: pace !== null ? "the experiments this line still needs for a verdict, and the time they would take at this run's pace" : undefined },
            `~${count(e.experiments_needed)} more exps` + (pace !== null ? ` (${aboutSeconds(e.experiments_needed * pace)})` : ""),
          ),
        )
      : null;
  const plot = plotInto(h("div", { class: "plot" }), () => renderPlot(e), drawPlot);
  const percentiles = state.analysis ? percentilesOf(state.analysis, e) : null;
  const el = h(
    "article",
    { class: `effect ${e.label}${thin(e) ? " thin" : ""}`, id: `effect-${rank}`, "data-line": e.line, "data-point": e.point },
    h(
      "header",
      {},
      h("span", { class: "rank" }, `#${rank}`),
      h("span", { class: "loc", title: e.line }, h("span", { class: "dir" }, dir), h("b", {}, short)),
      h("span", { class: "point", title: `progress point ${e.point} (${e.kind})` }, `${e.kind === "latency" ? "latency · " : ""}${shortLocation(e.point).short}`),
    ),
    e.function ? h("div", { class: "fn" }, e.function) : null,
    calleeNote(e.callee),
    state.analysis ? unitLinesNote(e, state.analysis) : null,
    h(
      "div",
      { class: "body" },
      h(
        "div",
        { class: "metrics" },
        h("div", { class: "impact" }, h("span", { class: "big" }, pct(e.impact)), h("span", { class: "muted" }, "impact"), ...intervals(e, p)),
        h("div", { class: "tags" }, ...tags(e, p)),
        h("div", { class: "metric" }, h("span", {}, "slope"), h("b", { title: "program speedup per line speedup (least squares through 0)" }, e.slope === null ? "–" : `${pct(e.slope / 10)} per 10%`)),
        h("div", { class: "metric" }, h("span", {}, "best measured"), h("b", {}, e.measured ? pct(e.max_effect) : "–")),
        h("div", { class: "metric" }, h("span", {}, "samples"), h("b", {}, share(e.sample_share)), h("span", { class: "bar" }, h("span", { style: `width:${Math.min(100, e.sample_share * 100)}%` }))),
        h(
          "div",
          { class: "metric" },
          h("span", {}, "experiments"),
          h("b", { title: `${count(e.measured_experiments)} at a non-zero speedup, ${count(e.experiments - e.measured_experiments)} at 0% (or without visits)` }, count(e.experiments)),
          e.measured ? h("span", { class: "muted" }, `(${count(e.measured_experiments)} at >0%)`) : null,
        ),
        h("div", { class: "metric" }, h("span", {}, "baseline"), h("b", {}, e.baseline === "none" ? "none" : `${duration(e.baseline_ns)}${e.kind === "latency" ? " latency" : " / visit"}${e.baseline === "line" ? " (own)" : ""}`)),
        needed,
      ),
      plot,
    ),
    percentiles ? percentileBlock(e, percentiles.point, percentiles.line, drawPlot) : null,
  );
  return el;
}

/**
 * Under a latency line's card: what the line 50% faster does to the requests'
 * mean, p50, p95 and p99 (with 95% intervals), and their curves against the
 * line's speedup (docs/analysis.md §13).
 */
function percentileBlock(e: LineEffect, point: PointPercentiles, lp: LinePercentiles, drawPlot: boolean): HTMLElement {
  const half = (v: number | null) => (v === null ? null : v * 0.5);
  const rows: Array<{ name: string; untreated: number | null; change: number | null; low: number | null; high: number | null; why: string }> = [
    {
      name: "mean",
      untreated: e.baseline_ns,
      change: half(e.slope),
      low: half(e.slope_low),
      high: half(e.slope_high),
      why: "the mean latency (Little's law, from counts): its slope through the origin × 50%",
    },
    ...percentileNames.map((name, k) => ({
      name,
      untreated: point.baseline_ns[k],
      ...lp.at_half[k],
      why:
        lp.at_half[k].change !== null
          ? `the ${name} of the requests' own latencies: read off a line through the origin of log(${name}(s) / ${name}(0)) against the line's speedup s`
          : `too few requests at this line's speedups (or at 0%) for a ${name}: a cell needs ${Math.round(2 / (1 - point.levels[k]))} (weighted) requests`,
    })),
  ];
  const cls = (v: number | null) => (v === null ? "muted" : v > 0 ? "shorter" : v < 0 ? "longer" : "");
  const table = h(
    "table",
    { class: "pct-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", {}, "latency"),
        h("th", { class: "num", title: "the change with the line 50% faster: positive = shorter" }, "at 50%"),
        h("th", { class: "num", title: "its 95% interval (pointwise)" }, "95% interval"),
      ),
    ),
    h(
      "tbody",
      {},
      ...rows.map((r) =>
        h(
          "tr",
          { class: `pct-${r.name}`, "data-level": r.name, title: `${r.name} untreated: ${duration(r.untreated)}\n${r.why}` },
          h("td", {}, h("i", { class: `swatch series-${r.name}` }), r.name),
          h("td", { class: `num ${cls(r.change)}` }, h("b", {}, pct(r.change))),
          h("td", { class: "num muted" }, r.low !== null && r.high !== null ? `${pct(r.low, 0)} … ${pct(r.high, 0)}` : "–"),
        ),
      ),
    ),
  );
  const measured = lp.curve.reduce((n, c) => n + c.requests, 0);
  const caption = h(
    "div",
    { class: "pct-caption", title: "The requests measured at this line's speedups (weighted). Each request's latency in the virtually sped-up program: its wall time less the delays inserted meanwhile (docs/analysis.md §13). Intervals are pointwise 95%: no verdict is drawn from them yet." },
    h("b", {}, "request latency"),
    ` with the line 50% faster · ${count(Math.round(measured))} requests`,
  );
  const legend = h(
    "div",
    { class: "pct-legend" },
    ...["mean", ...percentileNames].map((n) => h("span", { class: "key" }, h("i", { class: `swatch series-${n}` }), n)),
    h("span", { class: "key" }, h("i", { class: "k-bar" }), "95% interval"),
  );
  const plot = plotInto(h("div", { class: "plot" }, legend), () => renderPercentilePlot(e, lp), drawPlot);
  return h("div", { class: "percentiles" }, h("div", {}, caption, table), plot);
}

// ---------- conventional profile ----------

function renderConventional() {
  const a = state.analysis!;
  const tabs = $("tabs");
  clear(tabs);
  const conv = a.profile;
  const labels: Array<[Tab, string, number]> = [
    ["lines", "Lines", conv.lines.length],
    ["functions", "Functions", conv.functions.length],
    ["stacks", "Call stacks", conv.stacks.length],
    ["blocked", "Blocked", conv.blocked.length],
  ];
  for (const [tab, label, n] of labels) {
    tabs.append(
      h(
        "button",
        { class: tab === state.tab ? "tab active" : "tab", id: `tab-${tab}`, onclick: () => ((state.tab = tab), (state.tableAll = false), renderConventional()) },
        label,
        h("span", { class: "n" }, count(n)),
      ),
    );
  }
  const panel = $("conventional-body");
  clear(panel);
  const limit = (n: number) => (state.tableAll ? n : Math.min(n, tableRows));
  const showAll = (n: number): Node | string =>
    n > tableRows && !state.tableAll ? h("button", { class: "link", onclick: () => ((state.tableAll = true), renderConventional()) }, `Show all ${count(n)} rows`) : "";
  const bar = (x: number, cls = "") => h("span", { class: `bar ${cls}` }, h("span", { style: `width:${Math.min(100, x * 100)}%` }));

  if (state.tab === "lines") {
    // The causal verdict of each hot line, for its best-ranked point.
    const best = new Map<string, LineEffect>();
    for (const e of a.effects) if (!best.has(e.line)) best.set(e.line, e);
    // Under --granularity function the experiments are on functions: a line shows its function's verdict.
    const unitOf = new Map<string, LineEffect>();
    for (const e of a.effects) if (e.function_unit && !unitOf.has(e.function)) unitOf.set(e.function, e);
    if (conv.lines.length === 0) return panel.append(h("p", { class: "muted" }, "No samples in this profile."));
    const rows = conv.lines.slice(0, limit(conv.lines.length)).flatMap((l, i) => {
      const unit = best.has(l.location) ? undefined : unitOf.get(l.function);
      const e = best.get(l.location) ?? unit;
      // The program (coz run --system) goes under the line, with its function: the column is narrow.
      const { program } = splitLocation(l.location);
      const { short, dir } = shortLocation(program ? l.location.slice(0, -(program.length + 3)) : l.location, 14);
      const under = [l.function, program ? `in ${program}` : ""].filter((t) => t !== "").join(" · ");
      const hotUseless = e && l.share >= hotShare && (e.label === "no-effect" || e.label === "negative");
      // The callee note gets a row of its own, across the table: function names are long.
      const note = calleeNote(l.callee);
      const row = h(
        "tr",
        { class: [hotUseless ? "hot-useless-row" : "", note ? "has-callee" : ""].join(" ").trim() },
        h("td", { class: "num muted" }, i + 1),
        h(
          "td",
          { class: "loc", title: l.location + (l.function ? `\n${l.function}` : "") + calleeTitle(l.callee) },
          h("span", { class: "dir" }, dir),
          h("b", {}, short),
          under ? h("div", { class: "fn" }, under) : null,
        ),
        h("td", { class: "num" }, share(l.share), bar(l.share)),
        h(
          "td",
          { class: "num", title: unit ? `the verdict of its function, ${unit.function} (--granularity function)` : undefined },
          e && e.measured ? h("span", { class: `impact-${e.label}` }, pct(e.impact), unit ? " (fn)" : "") : h("span", { class: "muted" }, !e ? "no experiments" : rarelyRuns(e) ? "rarely runs" : "not measured"),
        ),
      );
      if (!note) return [row];
      return [row, h("tr", { class: `callee-row ${hotUseless ? "hot-useless-row" : ""}`.trim() }, h("td", {}), h("td", { colspan: 3 }, note))];
    });
    panel.append(
      h(
        "p",
        { class: "caption" },
        "Where the samples fell, next to what speeding the line up would do. ",
        h("span", { class: "hot-useless-key" }, "Highlighted"),
        " lines are hot but useless: many samples, no measurable effect.",
        conv.lines.some((l) => l.callee && l.callee.share >= mostlyInCallee)
          ? h("span", {}, " ", h("span", { class: "callee-key" }, "↳ N% of its samples in F [LIB]"), ": in N% of the line's sampled call stacks, the time was spent inside F, a function of the library LIB (outside the profiled scope) that the line calls.")
          : null,
      ),
      h("table", { id: "conventional-lines" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "line"), h("th", { class: "num" }, "samples"), h("th", { class: "num" }, "causal impact"))), h("tbody", {}, ...rows)),
      showAll(conv.lines.length),
    );
  } else if (state.tab === "functions") {
    if (conv.functions.length === 0) {
      return panel.append(h("p", { class: "muted" }, "No function names in this profile (", h("code", {}, "samples"), " records without ", h("code", {}, "function="), "; Coz's files have none)."));
    }
    const rows = conv.functions.slice(0, limit(conv.functions.length)).map((f, i) =>
      h("tr", {}, h("td", { class: "num muted" }, i + 1), h("td", { class: "fn-name", title: f.function }, f.function), h("td", { class: "num" }, share(f.share), bar(f.share)), h("td", { class: "num" }, count(f.lines))),
    );
    panel.append(
      h("table", { id: "conventional-functions" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "function"), h("th", { class: "num" }, "samples"), h("th", { class: "num" }, "lines"))), h("tbody", {}, ...rows)),
      showAll(conv.functions.length),
    );
  } else if (state.tab === "stacks") {
    const root = flameTree(conv.stacks);
    if (!root) return panel.append(h("p", { class: "muted" }, "No call stacks in this profile (", h("code", {}, "stack"), " records are written by our runtime, not by Coz)."));
    const callees = conv.stacks.some((st) => st.frames.some((f) => parseStackFrame(f).kind === "callee"));
    panel.append(
      h(
        "p",
        { class: "caption" },
        `Flame graph of ${count(root.value)} sampled call stacks, outermost frame on top; width = share of samples. Click a frame to zoom.`,
        callees ? h("span", {}, " ", h("span", { class: "callee-frame-key" }, "Grey frames"), " are functions outside the profiled scope (library in brackets), called by the line above them.") : null,
      ),
      renderFlame(root),
    );
  } else {
    if (conv.blocked.length === 0) return panel.append(h("p", { class: "muted" }, "No blocked time in this profile (", h("code", {}, "blocked"), " records are written by our runtime, not by Coz)."));
    const total = conv.blocked.reduce((t, b) => t + b.time_ns, 0);
    const rows = conv.blocked.slice(0, limit(conv.blocked.length)).map((b) => {
      const { short, dir } = shortLocation(b.site, 0);
      return h(
        "tr",
        {},
        h("td", { class: "loc", title: b.site }, h("span", { class: "dir" }, dir), h("b", {}, short)),
        h("td", {}, h("span", { class: "kind" }, b.kind)),
        h("td", { class: "num" }, duration(b.time_ns), bar(total > 0 ? b.time_ns / total : 0, "blocked")),
        h("td", { class: "num" }, count(b.count)),
        h("td", { class: "num" }, duration(b.count > 0 ? b.time_ns / b.count : null)),
      );
    });
    panel.append(
      h("p", { class: "caption" }, `Time threads spent waiting, per call site: ${duration(total)} in all.`),
      h("table", { id: "conventional-blocked" }, h("thead", {}, h("tr", {}, h("th", {}, "wait site"), h("th", {}, "kind"), h("th", { class: "num" }, "time"), h("th", { class: "num" }, "waits"), h("th", { class: "num" }, "mean"))), h("tbody", {}, ...rows)),
      showAll(conv.blocked.length),
    );
  }
}

// ---------- start ----------

function start() {
  // #tab=stacks (or lines, functions, blocked) opens that tab of the conventional profile.
  const tab = /tab=(lines|functions|stacks|blocked)/.exec(location.hash)?.[1] as Tab | undefined;
  if (tab) state.tab = tab;
  // #rank=p99 ranks latency lines by their p99's change at 50% (where request histograms allow).
  if (/rank=p99/.test(location.hash)) state.sort = "p99";
  setUpInput();
  ($("more") as HTMLButtonElement).addEventListener("click", () => {
    state.shown += pageSize;
    renderRanking();
  });
  const data = embedded();
  if (data && data.length > 0) load(data);
  else render();
  document.body.dataset.ready = "true";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
