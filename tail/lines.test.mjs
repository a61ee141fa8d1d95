//! Unit tests of tail/lines.mjs (`node --test tail/`, run by scripts/test.sh).

import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_BYTES, MAX_EVENTS, abnormalEndLine, batches, logEvents } from "./lines.mjs";

const emf = (outcome) => JSON.stringify({ outcome, _aws: { Timestamp: 1, CloudWatchMetrics: [] }, Deliveries: 1 });

test("only the producer's JSON-object lines are shipped, as written, oldest first", () => {
  const traces = [
    {
      outcome: "ok",
      logs: [
        { timestamp: 20, message: [emf("duplicate")] },
        { timestamp: 5, message: ["plain text from a dependency", 42, "[1,2]", "{not json"] },
      ],
    },
    { outcome: "ok", logs: [{ timestamp: 10, message: [emf("stored")] }] },
  ];
  assert.deepEqual(logEvents(traces), [
    { timestamp: 10, message: emf("stored") },
    { timestamp: 20, message: emf("duplicate") },
  ]);
});

test("an invocation that ended abnormally gets one metric line; a client that left does not", () => {
  for (const outcome of ["ok", "canceled", "responseStreamDisconnected"]) {
    assert.equal(abnormalEndLine({ outcome, eventTimestamp: 7 }), null, outcome);
  }
  const line = JSON.parse(
    abnormalEndLine({
      outcome: "exceededCpu",
      eventTimestamp: 7,
      exceptions: [{ name: "Error: with ada@example.com", message: "ada@example.com" }, { name: "RangeError" }],
      event: { request: { headers: { "cf-ray": "8f2a9c7d1e-AMS" } } },
    }),
  );
  assert.deepEqual(line, {
    requestId: "8f2a9c7d1e-AMS",
    outcome: "exceeded_cpu",
    exception: "RangeError",
    answer: "5xx",
    _aws: {
      Timestamp: 7,
      CloudWatchMetrics: [
        { Namespace: "WebhookReceiver", Dimensions: [["outcome"], ["answer"]], Metrics: [{ Name: "Deliveries", Unit: "Count" }] },
      ],
    },
    Deliveries: 1,
  });
  const odd = JSON.parse(abnormalEndLine({ outcome: "exception", eventTimestamp: 7, event: { request: { headers: { "cf-ray": "a b" } } } }));
  assert.equal(odd.requestId, null);
  assert.equal(odd.exception, null);
});

test("an invocation that logged its own metric line and then ended abnormally counts once", () => {
  const after = {
    outcome: "exceededCpu",
    eventTimestamp: 30,
    logs: [{ timestamp: 20, message: [emf("stored")] }],
  };
  const events = logEvents([after]);
  assert.deepEqual(events.map((e) => e.timestamp), [20, 30]);
  const record = JSON.parse(events[1].message);
  assert.deepEqual(record, { requestId: null, outcome: "exceeded_cpu", exception: null, answer: "5xx" });
  // A plain JSON line the producer wrote (no metric) does not stand in for the count.
  const plain = { outcome: "exception", eventTimestamp: 30, logs: [{ timestamp: 20, message: ['{"note":1}'] }] };
  assert.equal(JSON.parse(logEvents([plain])[1].message).Deliveries, 1);
});

test("calls are cut at PutLogEvents' count and size limits, in order", () => {
  const many = Array.from({ length: MAX_EVENTS + 1 }, (_, i) => ({ timestamp: i, message: "{}" }));
  const cut = batches(many);
  assert.deepEqual(cut.map((b) => b.length), [MAX_EVENTS, 1]);
  assert.equal(cut[1][0].timestamp, MAX_EVENTS);

  // Each event counts its UTF-8 bytes and 26 more: four of these fill a call to the byte.
  const size = MAX_BYTES / 4 - 26;
  const big = (i) => ({ timestamp: i, message: `{"a":"${"é".repeat((size - 8) / 2)}"}` });
  assert.equal(new TextEncoder().encode(big(0).message).length, size);
  assert.deepEqual(batches([0, 1, 2, 3].map(big)).map((b) => b.length), [4]);
  assert.deepEqual(batches([0, 1, 2, 3, 4].map(big)).map((b) => b.length), [4, 1]);
  assert.deepEqual(batches([]), []);
});
