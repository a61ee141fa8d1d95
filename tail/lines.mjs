//! What the edge's Tail Worker ships, decided without I/O: the log events for a batch of
//! producer invocations (tail/index.mjs sends them) and their cut into PutLogEvents calls.

/** The namespace of every metric of this project (shared/src/metrics.rs). */
export const NAMESPACE = "WebhookReceiver";
/** PutLogEvents' limits: events per call, and bytes per call (each event counts 26 more). */
export const MAX_EVENTS = 10_000;
export const MAX_BYTES = 1_048_576;
const EVENT_OVERHEAD = 26;
/**
 * The log events to ship for these invocations, oldest first: each line the producer logged
 * that is a JSON object, as it was written, and a metric line for each invocation that ended
 * in an exception or over a limit.
 */
export function logEvents(traces) {
  const events = [];
  for (const trace of traces) {
    let counted = false;
    for (const log of trace.logs ?? []) {
      for (const part of log.message ?? []) {
        const value = typeof part === "string" ? jsonObject(part) : null;
        if (value !== null) {
          events.push({ timestamp: log.timestamp, message: part });
          counted ||= "_aws" in value;
        }
      }
    }
    const line = abnormalEndLine(trace, counted);
    if (line !== null) events.push({ timestamp: trace.eventTimestamp ?? Date.now(), message: line });
  }
  return events.sort((a, b) => a.timestamp - b.timestamp);
}

/**
 * The metric line for an invocation the producer could not log itself: one that threw, ran
 * out of CPU or memory, or otherwise did not end `ok`. The sender got a 5xx (or no answer) and
 * will retry. `null` for an invocation that ended `ok` or whose client went away. When the
 * producer had already logged its own metric line (`counted`: it ran out of CPU after
 * answering), the line is a plain record, without the metric, so each invocation counts once.
 */
export function abnormalEndLine(trace, counted = false) {
  const outcome = trace.outcome;
  if (outcome === undefined || ["ok", "canceled", "responseStreamDisconnected"].includes(outcome)) return null;
  const name = (trace.exceptions ?? []).map((e) => e.name).find((n) => /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(n ?? ""));
  const ray = trace.event?.request?.headers?.["cf-ray"];
  const record = {
    requestId: typeof ray === "string" && /^[A-Za-z0-9._:-]{1,64}$/.test(ray) ? ray : null,
    outcome: snakeCase(outcome),
    exception: name ?? null,
    answer: "5xx",
  };
  if (!counted) {
    record._aws = {
      Timestamp: trace.eventTimestamp ?? Date.now(),
      CloudWatchMetrics: [
        { Namespace: NAMESPACE, Dimensions: [["outcome"], ["answer"]], Metrics: [{ Name: "Deliveries", Unit: "Count" }] },
      ],
    };
    record.Deliveries = 1;
  }
  return JSON.stringify(record);
}

/** `exceededCpu` as `exceeded_cpu`: the edge's outcomes are snake case. */
function snakeCase(word) {
  return String(word)
    .replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    .replace(/[^a-z0-9_]/g, "_")
    .slice(0, 64);
}

/** The text as a JSON object, or `null` when it is not one. */
function jsonObject(text) {
  if (!text.startsWith("{")) return null;
  try {
    const value = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** Events cut into PutLogEvents calls within its limits, in order. */
export function batches(events) {
  const out = [];
  let batch = [];
  let bytes = 0;
  for (const event of events) {
    const size = new TextEncoder().encode(event.message).length + EVENT_OVERHEAD;
    if (batch.length > 0 && (batch.length === MAX_EVENTS || bytes + size > MAX_BYTES)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(event);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}
