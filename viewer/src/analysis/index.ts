// The viewer's analysis library: what the page uses and what the node tests
// check against test/vectors/ (bundled to dist/node/analysis.mjs).
export * from "./bytes_text";
export * from "./json_object";
export * from "./record_line";
export * from "./profile";
export * from "./latency_buckets";
export * from "./analysis";
export * from "./conventional";
