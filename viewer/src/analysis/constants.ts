// The analysis's fixed settings, in one place (docs/analysis.md: the notation,
// sections 7 and 8). `settings` in the JSON lists them; tools/analysis/ uses
// the same values (analysis.h, verdicts.h).

export const z95 = 1.959963984540054; // two-sided 95%
export const settleHalfWidth = 0.025; // ±2.5 percentage points settles "no effect"
export const materialLineSpeedup = 0.5; // a line's effect is material when slope * this is outside ±settleHalfWidth
export const speedupStepsPerUnit = 20; // the runtime's 5% grid
export const maxExperimentsNeeded = 1e9; // beyond this, "never" in practice
export const falseDiscoveryRate = 0.05; // α: expected share of wrong "speeds up"/"slows down" verdicts of a point
export const minSettleExperiments = 10; // n_min: measured experiments a line needs before any verdict
export const mixtureScale = 0.05; // the scale of the normal mixture behind every confidence sequence (program speedup)
export const equivalenceMixtureScale = 0.025; // §7: the no-effect test's own scale, where its decisions land
export const lineDispersionPriorDof = 10; // §3: a line's own dispersion is shrunk toward its point's as if the point's were this many more degrees of freedom
export const stabilityTop = 5; // split-half stability compares this many top lines per point
export const contendedWaitingThreads = 0.1; // §5.1: threads waiting for a core, on average, that make a point contended
export const fastHandOffsPerSecond = 20000; // §5.2: voluntary switches per second, in the 0% experiments, from which a point's hand-offs are fast
