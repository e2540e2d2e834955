// Writes a synthetic profile with N lines (default 1000), each with 0% and
// several non-zero experiments, to check the viewer stays fast. Deterministic.
const n = Number(process.argv[2] ?? 1000);
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const out = ["startup\ttime=1"];
for (let i = 0; i < n; ++i) {
  const line = `/src/module${i % 37}/file${i % 101}.cpp:${100 + i}`;
  const effect = (i % 10 === 0 ? 0.4 : 0.02) * rand();
  for (const s of [0, 0, 0.25, 0.5, 0.75, 1]) {
    const visits = Math.max(1, Math.round(100 * (1 + effect * s) * (0.9 + 0.2 * rand())));
    out.push(`experiment\tselected=${line}\tspeedup=${s.toFixed(2)}\tduration=100000000\tselected-samples=5`);
    out.push(`throughput-point\tname=ops\tdelta=${visits}`);
  }
  out.push(`samples\tlocation=${line}\tcount=${1 + Math.floor(rand() * 100)}\tfunction=fn${i % 200}()`);
}
out.push("runtime\ttime=60000000000");
process.stdout.write(out.join("\n") + "\n");
