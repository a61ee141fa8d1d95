// Runs the built edge Worker in workerd (through Miniflare) on 127.0.0.1 and an ephemeral port.
//
// Usage: node tests/support/edge-runner.mjs <bindings.json> [<tail.json>]
// Prints `READY <url>` once serving, then one `LOG <level> <message>` line per log line the
// Worker writes. Stops when its standard input closes or on SIGTERM/SIGINT.
//
// With <tail.json> ({"bindings": {...}, "producer": "edge" | "throws"}), the Tail Worker
// (tail/index.mjs, bundled here as wrangler would) tails the producer with those bindings: the
// edge, or a stand-in Worker that throws on every request.
import { readFileSync } from "node:fs";
import { build } from "esbuild";
import { Miniflare } from "miniflare";

const root = new URL("../../", import.meta.url).pathname;
const bindings = JSON.parse(readFileSync(process.argv[2], "utf8"));
const tail = process.argv[3] ? JSON.parse(readFileSync(process.argv[3], "utf8")) : null;

const edge = {
  name: "edge",
  modules: true,
  scriptPath: `${root}edge/build/index.js`,
  modulesRoot: `${root}edge/build`,
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
  compatibilityDate: "2026-04-20",
  bindings,
};
const throws = {
  name: "throws",
  modules: true,
  script: 'export default { async fetch() { throw new Error("a defect, with form data: ada@example.com"); } };',
  compatibilityDate: "2026-04-20",
};
let workers = [edge];
if (tail !== null) {
  const bundled = await build({ entryPoints: [`${root}tail/index.mjs`], bundle: true, format: "esm", write: false });
  const producer = tail.producer === "throws" ? throws : edge;
  workers = [
    { ...producer, tails: ["tail"] },
    { name: "tail", modules: true, script: bundled.outputFiles[0].text, compatibilityDate: "2026-04-20", bindings: tail.bindings },
  ];
}

const mf = new Miniflare({
  workers,
  cf: false,
  host: "127.0.0.1",
  port: 0,
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
