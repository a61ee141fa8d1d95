// Samples the CPU of a Worker in `workerd serve --inspector-addr` while a load runs, and writes
// the self time by function (Wasm functions by name when the build keeps the names section).
//
// Usage: node --experimental-websocket bench/profile.mjs <inspector host:port> <seconds> <out.json>
import { writeFileSync } from "node:fs";

const [address, seconds, out] = process.argv.slice(2);
const targets = await (await fetch(`http://${address}/json`)).json();
if (targets.length === 0) throw new Error("no inspector target");
const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
await new Promise((resolve, reject) => {
  socket.onopen = resolve;
  socket.onerror = reject;
});
let id = 0;
const pending = new Map();
socket.onmessage = (event) => {
  const message = JSON.parse(event.data);
  if (message.id !== undefined && pending.has(message.id)) {
    pending.get(message.id)(message);
    pending.delete(message.id);
  }
};
const call = (method, params = {}) =>
  new Promise((resolve) => {
    id += 1;
    pending.set(id, resolve);
    socket.send(JSON.stringify({ id, method, params }));
  });

await call("Profiler.enable");
await call("Profiler.setSamplingInterval", { interval: 50 });
await call("Profiler.start");
process.stdout.write("PROFILING\n");
await new Promise((resolve) => setTimeout(resolve, Number(seconds) * 1000));
const { result } = await call("Profiler.stop");
const profile = result.profile;
const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const deltas = profile.timeDeltas;
profile.samples.forEach((nodeId, i) => {
  const node = byNode.get(nodeId);
  const frame = node.callFrame;
  const name = `${frame.functionName || "(anonymous)"} ${frame.url ? frame.url.split("/").pop() : ""}`.trim();
  self.set(name, (self.get(name) || 0) + (deltas[i] || 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, us, share: us / total }));
writeFileSync(out, JSON.stringify({ total_us: total, functions: rows }, null, 1));
socket.close();
process.exit(0);
