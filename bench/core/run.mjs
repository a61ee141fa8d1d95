// Times the edge's core path in Wasm (V8, as in workerd): the bench-core crate built with the
// Worker's release profile and wasm-bindgen --target nodejs. Prints one JSON line per step.
//
// Usage: node bench/core/run.mjs <dir with bench_core.js> <size bytes> <milliseconds per step>
import { createRequire } from "node:module";

const [dir, size, budget] = process.argv.slice(2);
const core = createRequire(import.meta.url)(`${dir}/bench_core.js`);
const bytes = core.prepare(Number(size));
for (const step of ["parse", "receive", "sign", "path"]) {
  // Warm up until V8 has optimised the code, then time whole batches for the budget.
  core.run(step, 200);
  let iterations = 0;
  const started = performance.now();
  while (performance.now() - started < Number(budget)) {
    core.run(step, 20);
    iterations += 20;
  }
  const elapsed = performance.now() - started;
  process.stdout.write(`${JSON.stringify({ step, bytes, us_per_iteration: (elapsed * 1000) / iterations, iterations })}\n`);
}
