//! The edge's Tail Worker: after each edge invocation, its log lines go to CloudWatch Logs with
//! one signed PutLogEvents call, so CloudWatch turns their EMF blocks into metrics; an
//! invocation that ended in an exception or over a limit (the edge could not log it) gets a
//! metric line of its own. docs/operating.md#the-edges-metrics-in-cloudwatch.
//!
//! Only the edge's own lines that are JSON objects are shipped (they never hold form data or
//! credentials, ARCHITECTURE.md); an exception's message is never shipped, only its name.

import { AwsClient } from "aws4fetch";
import { batches, logEvents } from "./lines.mjs";

/** Attempts per call; a throttled or failed call is tried again after a short wait. */
const ATTEMPTS = 3;

export default {
  async tail(traces, env) {
    const events = logEvents(traces);
    if (events.length === 0) return;
    const settings = settingsOf(env);
    if (typeof settings === "string") {
      console.error(JSON.stringify({ service: "edge-tail", outcome: "config_invalid", reason: settings }));
      return;
    }
    for (const batch of batches(events)) {
      await ship(settings, batch);
    }
  },
};

/** The variables the Tail Worker needs, or the name of the first one missing. */
function settingsOf(env) {
  for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "EDGE_LOG_GROUP", "EDGE_LOG_STREAM"]) {
    if (typeof env[name] !== "string" || env[name].length === 0) return name;
  }
  const endpoint = env.LOGS_ENDPOINT || `https://logs.${env.AWS_REGION}.amazonaws.com`;
  return {
    client: new AwsClient({
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      region: env.AWS_REGION,
      service: "logs",
      retries: 0,
    }),
    endpoint: endpoint.replace(/\/$/, "") + "/",
    group: env.EDGE_LOG_GROUP,
    stream: env.EDGE_LOG_STREAM,
  };
}

/**
 * One PutLogEvents call, tried again after a throttle, a server error or a network failure;
 * what it could not ship is logged by count and status only (the Tail Worker's own logs).
 */
async function ship(settings, events) {
  const body = JSON.stringify({ logGroupName: settings.group, logStreamName: settings.stream, logEvents: events });
  let status = 0;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const response = await settings.client.fetch(settings.endpoint, {
        method: "POST",
        headers: {
          "Content-Type": "application/x-amz-json-1.1",
          "X-Amz-Target": "Logs_20140328.PutLogEvents",
          // Tells CloudWatch Logs to extract the lines' metrics (CloudWatch's EMF guide).
          "x-amzn-logs-format": "json/emf",
        },
        body,
      });
      status = response.status;
      const text = await response.text();
      if (response.ok) {
        const refused = rejected(text);
        if (refused !== null) {
          const { tooOldLogEventEndIndex, tooNewLogEventStartIndex, expiredLogEventEndIndex } = refused;
          const indexes = { tooOldLogEventEndIndex, tooNewLogEventStartIndex, expiredLogEventEndIndex };
          console.error(JSON.stringify({ service: "edge-tail", outcome: "rejected", ...indexes }));
        }
        return;
      }
      if (status !== 429 && status < 500 && !text.includes("ThrottlingException")) break;
    } catch {
      status = 0;
    }
    if (attempt < ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
  }
  console.error(JSON.stringify({ service: "edge-tail", outcome: "not_shipped", status, events: events.length }));
}

/** What PutLogEvents' answer says it refused (indexes only: too old, too new, expired), or null. */
function rejected(text) {
  try {
    const info = JSON.parse(text).rejectedLogEventsInfo;
    return info && typeof info === "object" ? info : null;
  } catch {
    return null;
  }
}
