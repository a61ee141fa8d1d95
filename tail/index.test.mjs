//! Tests of tail/index.mjs's calls (`node --test tail/`, run by scripts/test.sh) against a
//! PutLogEvents stand-in on 127.0.0.1 that answers as scripted: what each call carries, which
//! answers are tried again, and what the Tail Worker says when a call is not shipped.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import worker from "./index.mjs";

const line = JSON.stringify({ outcome: "stored", _aws: { Timestamp: 5, CloudWatchMetrics: [] }, Deliveries: 1 });
const traces = [{ outcome: "ok", logs: [{ timestamp: 5, message: [line] }] }];

/** A stand-in answering each call with the next of `answers` ([status, body]); its requests. */
async function standIn(answers) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      requests.push({ headers: req.headers, body });
      const [status, text] = answers[Math.min(requests.length - 1, answers.length - 1)];
      res.writeHead(status, { "Content-Type": "application/x-amz-json-1.1" }).end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const env = { ...settings, LOGS_ENDPOINT: `http://127.0.0.1:${server.address().port}` };
  return { requests, env, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** The Tail Worker's settings, as `make deploy-edge` gives them (no LOGS_ENDPOINT). */
const settings = {
  AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
  AWS_SECRET_ACCESS_KEY: "secret",
  AWS_REGION: "eu-west-1",
  EDGE_LOG_GROUP: "/webhook-receiver/receipts/edge",
  EDGE_LOG_STREAM: "edge",
};

/**
 * Runs the Tail Worker against a stand-in answering `answers`, then stops the stand-in: what
 * the Tail Worker wrote with console.error, and the requests the stand-in received.
 */
async function shipAgainst(answers) {
  const stand = await standIn(answers);
  try {
    return { said: await tail(stand.env), requests: stand.requests };
  } finally {
    await stand.close();
  }
}

/** Runs the Tail Worker; what it wrote with console.error. */
async function tail(env) {
  const said = [];
  const original = console.error;
  console.error = (text) => said.push(JSON.parse(text));
  try {
    await worker.tail(traces, env);
  } finally {
    console.error = original;
  }
  return said;
}

test("one signed PutLogEvents call into the group's stream, asking for EMF extraction", async () => {
  const { said, requests } = await shipAgainst([[200, "{}"]]);
  assert.deepEqual(said, []);
  assert.equal(requests.length, 1);
  const { headers, body } = requests[0];
  assert.equal(headers["x-amz-target"], "Logs_20140328.PutLogEvents");
  assert.equal(headers["x-amzn-logs-format"], "json/emf");
  assert.equal(headers["content-type"], "application/x-amz-json-1.1");
  assert.match(headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/logs\/aws4_request, /);
  assert.deepEqual(JSON.parse(body), {
    logGroupName: "/webhook-receiver/receipts/edge",
    logStreamName: "edge",
    logEvents: [{ timestamp: 5, message: line }],
  });
});

test("without LOGS_ENDPOINT the call goes to the region's CloudWatch Logs endpoint", async () => {
  const urls = [];
  const original = globalThis.fetch;
  globalThis.fetch = async (request) => {
    urls.push(request.url);
    return new Response("{}", { status: 200 });
  };
  try {
    assert.deepEqual(await tail(settings), []);
  } finally {
    globalThis.fetch = original;
  }
  assert.deepEqual(urls, ["https://logs.eu-west-1.amazonaws.com/"]);
});

test("a throttle or a server error is tried again, three times in all", async () => {
  const throttled = await shipAgainst([[400, '{"__type":"ThrottlingException"}'], [503, ""], [200, "{}"]]);
  assert.deepEqual(throttled.said, []);
  assert.equal(throttled.requests.length, 3);
  const down = await shipAgainst([[500, ""]]);
  assert.deepEqual(down.said, [{ service: "edge-tail", outcome: "not_shipped", status: 500, events: 1 }]);
  assert.equal(down.requests.length, 3);
});

test("a refusal is not tried again; refused events and a missing setting are said, without content", async () => {
  const denied = await shipAgainst([[400, '{"__type":"AccessDeniedException","message":"not allowed"}']]);
  assert.deepEqual(denied.said, [{ service: "edge-tail", outcome: "not_shipped", status: 400, events: 1 }]);
  assert.equal(denied.requests.length, 1);
  const old = await shipAgainst([[200, '{"rejectedLogEventsInfo":{"tooOldLogEventEndIndex":1}}']]);
  assert.deepEqual(old.said, [{ service: "edge-tail", outcome: "rejected", tooOldLogEventEndIndex: 1 }]);
  const { EDGE_LOG_STREAM, ...missing } = settings;
  assert.equal(EDGE_LOG_STREAM, "edge");
  assert.deepEqual(await tail(missing), [{ service: "edge-tail", outcome: "config_invalid", reason: "EDGE_LOG_STREAM" }]);
});
