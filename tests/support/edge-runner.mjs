// Runs the built edge Worker in workerd (through Miniflare) on 127.0.0.1 and an ephemeral port.
//
// Usage: node tests/support/edge-runner.mjs <bindings.json>
// Prints `READY <url>` once serving, then one `LOG <level> <message>` line per log line the
// Worker writes. Stops when its standard input closes or on SIGTERM/SIGINT.
import { readFileSync } from "node:fs";
import { Miniflare } from "miniflare";

const root = new URL("../../", import.meta.url).pathname;
const bindings = JSON.parse(readFileSync(process.argv[2], "utf8"));

const mf = new Miniflare({
  modules: true,
  scriptPath: `${root}edge/build/index.js`,
  modulesRoot: `${root}edge/build`,
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
  compatibilityDate: "2026-04-20",
  cf: false,
  host: "127.0.0.1",
  port: 0,
  bindings,
  handleStructuredLogs: ({ level, message }) => {
    for (const line of String(message).split("\n")) {
      if (line.length > 0) process.stdout.write(`LOG ${level} ${line}\n`);
    }
  },
});

const url = await mf.ready;
process.stdout.write(`READY ${url.href.replace(/\/$/, "")}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await mf.dispose();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
