// The viewer's analysis against every test/vectors/*/expected.json, with the
// same rule as the C++ test (test/unit/analysis_test.cpp): every key in the
// expectation must be in the result with an equal value (numbers within
// tolerance * max(1, |expected|)); arrays match element by element and in length.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { analyze, emptyProfile, readProfile } from "../../viewer/dist/node/analysis.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const vectors = join(here, "..", "vectors");

function expectSubset(expected, actual, path, tolerance) {
  if (expected === null) {
    assert.ok(actual === null || (typeof actual === "number" && !Number.isFinite(actual)), `${path}: expected null, got ${actual}`);
  } else if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: not an array`);
    assert.equal(actual.length, expected.length, `${path}: length`);
    expected.forEach((e, i) => expectSubset(e, actual[i], `${path}[${i}]`, tolerance));
  } else if (typeof expected === "object") {
    assert.ok(actual !== null && typeof actual === "object" && !Array.isArray(actual), `${path}: not an object`);
    for (const [k, v] of Object.entries(expected)) {
      assert.ok(k in actual, `${path}.${k}: missing`);
      expectSubset(v, actual[k], `${path}.${k}`, tolerance);
    }
  } else if (typeof expected === "number") {
    assert.equal(typeof actual, "number", `${path}: not a number (${actual})`);
    const allowed = tolerance * Math.max(1, Math.abs(expected));
    assert.ok(Math.abs(actual - expected) <= allowed, `${path}: ${actual} != ${expected} (tolerance ${allowed})`);
  } else {
    assert.equal(actual, expected, path);
  }
}

// JSON has no infinities: the C++ writes null for a non-finite number.
const asJson = (analysis) => JSON.parse(JSON.stringify(analysis, (_, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v)));

const dirs = readdirSync(vectors, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(vectors, d.name, "expected.json")))
  .map((d) => d.name)
  .sort();

test("there are vectors to check", () => assert.ok(dirs.length > 0, `no vectors in ${vectors}`));

for (const name of dirs) {
  test(`vector ${name}`, () => {
    const dir = join(vectors, name);
    const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8"));
    const tolerance = expected.tolerance ?? 1e-9;
    // The input files, in order (read one after the other, as `coz report a b`):
    // "inputs" in expected.json, else inputs.txt, else profile.coz.
    const files = expected.inputs ??
      (existsSync(join(dir, "inputs.txt"))
        ? readFileSync(join(dir, "inputs.txt"), "utf8").split("\n").map((l) => l.trim()).filter(Boolean)
        : ["profile.coz"]);
    // The defaults, or the vector's "options" (its options.txt).
    const options = expected.options ? { baseline: expected.options.baseline } : {};
    delete expected.tolerance;
    delete expected.comment;
    delete expected.inputs;
    delete expected.options;
    const profile = emptyProfile();
    // Named as listed in the inputs: warnings carry that name.
    for (const f of files) readProfile(readFileSync(join(dir, f), "utf8"), f, profile);
    expectSubset(expected, asJson(analyze(profile, options)), name, tolerance);
  });
}
