//! The operator's commands over the receipts table: reconcile the receipts the stream left
//! behind, and list, show or redrive receipts. Every receipt that is worked on goes through the
//! handler's own path (same sink upsert, same conditional update), so running a command twice,
//! or while the stream is running, changes nothing that is already done.

use serde_json::{json, Value};
use shared::dynamo::Item;
use shared::profile::registry::{lead_from_receipt, LeadMapping};
use shared::profile::Profile;
use shared::receipt::{waiting_since, Receipt, ReceiptStatus};
use shared::stream::submission_id_of_key;
use shared::time::iso8601_millis;
use std::time::Duration;

use tokio::time::Instant;

use crate::handler::Handler;
use crate::inventory::{OperateError, Reopen};
use crate::metrics::{now_millis, Tally, SERVICE};
use crate::receipts::DynamoReceipts;
use crate::sink::LeadSink;

/// What one reconcile run found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Receipts the `pending` index (or the scan) listed as received before the threshold when
    /// the run began (some may turn out finished or redriven since: `skipped`).
    pub overdue: u64,
    /// What settling them did (completed, failed, already finished, retried).
    pub tally: Tally,
    /// Overdue receipts not reached before the invocation's deadline (the next run takes them).
    pub not_reached: u64,
    /// Receipts `FAILED` in the table when the run ended, from their sparse index (`None` when
    /// a run with `--scan` found a table without that index).
    pub failed_now: Option<u64>,
    /// `FAILED` receipts a run with `--scan` put into the `failed` index (failed before it
    /// existed).
    pub failed_indexed: u64,
    /// Why the `FAILED` receipts could not be counted (the run's other work and metrics stand).
    pub failed_count_error: Option<OperateError>,
}

impl ReconcileReport {
    /// A run's report before it settles anything: `overdue` receipts found.
    pub fn of(overdue: u64) -> ReconcileReport {
        ReconcileReport { overdue, ..ReconcileReport::default() }
    }

    /// Receipts the run left waiting: retried ones and ones it did not reach.
    pub fn still_waiting(&self) -> u64 {
        self.tally.retried_total() + self.not_reached
    }

    /// The report for scripts.
    pub fn to_json(&self) -> Value {
        json!({
            "overdue": self.overdue,
            "completed": self.tally.written,
            "failed": self.tally.failed_total(),
            "alreadyFinished": self.tally.absorbed,
            "skipped": self.tally.skipped,
            "retryLater": self.tally.retried_total(),
            "notReached": self.not_reached,
            "stillWaiting": self.still_waiting(),
            "failedInTable": self.failed_now,
            "failedIndexed": self.failed_indexed,
            "failedCountError": self.failed_count_error.as_ref().map(ToString::to_string),
        })
    }

    /// The report for people: one count per line.
    pub fn to_text(&self) -> String {
        let Value::Object(fields) = self.to_json() else { return String::new() };
        fields.iter().filter(|(_, n)| !n.is_null()).map(|(name, n)| format!("{name:>16}  {n}\n")).collect()
    }

    /// EMF lines: `ReceiptsOverdue`, `ReceiptsReconciled`, `ReceiptsWaiting` and `ReceiptsFailed`
    /// (gauges the alarms watch), then the tally's own lines.
    pub fn emf_lines(&self, timestamp_ms: u64) -> Vec<String> {
        use shared::metrics::{emf_line, Metric, Unit};
        let count = |name, value| Metric { name, unit: Unit::Count, value };
        let mut gauges = vec![
            count("ReceiptsOverdue", self.overdue),
            count("ReceiptsReconciled", self.tally.written),
            count("ReceiptsWaiting", self.still_waiting()),
        ];
        gauges.extend(self.failed_now.map(|failed| count("ReceiptsFailed", failed)));
        let mut lines = vec![emf_line(timestamp_ms, &[("service", SERVICE)], &gauges)];
        lines.extend(self.tally.emf_lines(timestamp_ms));
        lines
    }
}

/// Settles every receipt still `RECEIVED` whose `receivedAt` is before `cutoff` (ISO-8601):
/// found through the sparse `pending` index, or with `scan` by reading the whole table (for
/// receipts written before the index existed). Stops starting receipts when `deadline` would
/// not cover one more. `progress(done, total)` is called after each receipt. Then counts the
/// unexpired receipts `FAILED` at `now_secs` from their index; with `scan`, first puts the ones
/// that failed before the index existed into it (and counts only when the table has the
/// index). A count that fails is reported in the report, not as the run's error: the receipts
/// it settled and its other metrics stand.
pub async fn reconcile<S: LeadSink + Sync>(
    handler: &Handler<S, DynamoReceipts>,
    cutoff: &str,
    scan: bool,
    deadline: Option<Instant>,
    now_secs: u64,
    mut progress: impl FnMut(usize, usize),
) -> Result<ReconcileReport, OperateError> {
    let keys =
        if scan { handler.receipts.overdue_by_scan(cutoff).await? } else { handler.receipts.overdue(cutoff).await? };
    let mut report = ReconcileReport::of(keys.len() as u64);
    let budget = handler.sink.record_budget();
    for (done, key) in keys.iter().enumerate() {
        if deadline.is_some_and(|deadline| Instant::now() + budget > deadline) {
            report.not_reached = (keys.len() - done) as u64;
            break;
        }
        match handler.settle_key(key, Some(cutoff), deadline).await {
            Ok((outcome, reason)) => report.tally.settled(outcome, reason),
            Err(reason) => report.tally.retry(reason),
        }
        progress(done + 1, keys.len());
    }
    if scan {
        report.failed_indexed = handler.receipts.index_failed_by_scan().await?;
    }
    match handler.receipts.failed_count(now_secs).await {
        Ok(failed) => report.failed_now = Some(failed),
        Err(OperateError::NoIndex { .. }) if scan => {}
        Err(error) => report.failed_count_error = Some(error),
    }
    Ok(report)
}

/// The progress line of a run over `total` receipts after `done`: runs of 100 or more say
/// where they are every 100 receipts and at the end; shorter ones say nothing.
pub fn progress_line(what: &str, done: usize, total: usize) -> Option<String> {
    (total >= 100 && (done.is_multiple_of(100) || done == total)).then(|| format!("{what}: {done} of {total}"))
}

/// The event source mapping's `MaximumRecordAgeInSeconds` in `template.yaml`: past this the
/// stream has given up on a receipt's record, and nothing but reconcile or a redrive will call
/// the sink for it.
pub const STREAM_MAX_RECORD_AGE: Duration = Duration::from_secs(3_600);

/// The stream function's `Timeout` in `template.yaml`: an invocation that took a record just
/// before its maximum age may still be calling the sink for it this long after.
pub const STREAM_FUNCTION_TIMEOUT: Duration = Duration::from_secs(120);

/// What else may lie between a receipt's `receivedAt` and the stream's last call for it: the
/// edge's clock against AWS's and its put's latency (the record's age counts from the write), the
/// mapping's batching window (1 s) and a cold start's init (up to 10 s), with room to spare.
pub const STREAM_SLACK: Duration = Duration::from_secs(300);

/// The youngest receipt reconcile takes without `--force`: past the stream's maximum record
/// age by the stream function's timeout and [`STREAM_SLACK`], so no invocation of the stream
/// can still hold it (4,020 s).
pub const RECONCILE_MIN_AGE: Duration =
    Duration::from_secs(STREAM_MAX_RECORD_AGE.as_secs() + STREAM_FUNCTION_TIMEOUT.as_secs() + STREAM_SLACK.as_secs());

/// What redriving one receipt did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redriven {
    /// The receipt's sender profile.
    pub profile: &'static str,
    /// The receipt's submission ID.
    pub submission_id: String,
    /// Its status before.
    pub was: String,
    /// `completed` or `failed` (settled), `reopened` (the stream has not settled it within the
    /// wait), `already_completed`, `changed_meanwhile` (another redrive or a replacement got
    /// there first), `expired` (past its TTL: not brought back), `in_stream` (`RECEIVED` and
    /// younger than the stream's maximum record age: the stream may be retrying it now; use
    /// `--force`), `retry_later`, `receipt_gone`.
    pub outcome: &'static str,
    /// Why it failed or waits, when it did.
    pub reason: Option<String>,
}

impl Redriven {
    fn of(key: &str, was: &str, outcome: &'static str, reason: Option<String>) -> Redriven {
        let (profile, submission_id) = Profile::of_key(key).map_or(("-", key), |(p, id)| (p.name(), id));
        Redriven { profile, submission_id: submission_id.to_owned(), was: was.to_owned(), outcome, reason }
    }

    /// The result for scripts.
    pub fn to_json(&self) -> Value {
        json!({
            "profile": self.profile,
            "submissionId": self.submission_id,
            "was": self.was,
            "outcome": self.outcome,
            "reason": self.reason
        })
    }
}

/// How `redrive` treats a receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedriveMode {
    /// Only `FAILED` receipts (`--status FAILED`): one found otherwise changed meanwhile.
    pub only_failed: bool,
    /// Settle a `RECEIVED` receipt even when the stream may still be retrying it.
    pub force: bool,
    /// How long to wait for the stream's verdicts on reopened receipts.
    pub wait: Duration,
}

/// Reprocesses the receipts whose keys are `keys`.
///
/// A `FAILED` one is moved back to `RECEIVED` (conditionally: still that `FAILED` receipt, and
/// not expired), which the stream sees as a new waiting receipt and settles on the handler's
/// path: only the stream calls the sink for it, so no two calls for one submission race. Then
/// this waits up to `mode.wait` for the stream's verdicts, all receipts at once. A `RECEIVED`
/// one older than [`RECONCILE_MIN_AGE`] (the stream gave up on it), or any with
/// `mode.force`, is settled here on the same path; a `COMPLETED` one is left alone.
/// `progress(done, total)` is called as receipts are reopened or settled.
pub async fn redrive<S: LeadSink + Sync>(
    handler: &Handler<S, DynamoReceipts>,
    keys: &[String],
    mode: RedriveMode,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<Redriven>, OperateError> {
    let mut results = Vec::new();
    let mut reopened = Vec::new();
    for (done, key) in keys.iter().enumerate() {
        let key = key.clone();
        let submission_id = submission_id_of_key(&key).unwrap_or(&key).to_owned();
        let submission_id = submission_id.as_str();
        let item = match handler.receipts.find(&key, submission_id).await {
            Ok(item) => item,
            // Deleted (TTL) since the listing: nothing left to redrive.
            Err(OperateError::UnknownSubmission { .. }) if mode.only_failed => {
                results.push(Redriven::of(&key, "FAILED", "receipt_gone", None));
                continue;
            }
            Err(error) => return Err(error),
        };
        let text = |name: &str| item.get(name).and_then(|v| v.as_s()).unwrap_or("").to_owned();
        let was = text("status");
        let done_with = |outcome, reason| Redriven::of(&key, &was, outcome, reason);
        let result = match ReceiptStatus::parse(&was) {
            Some(ReceiptStatus::Completed) => done_with("already_completed", None),
            Some(ReceiptStatus::Failed) => {
                let now = now_millis();
                let (received_at, at) = (text("receivedAt"), iso8601_millis(now));
                let failed_at = item.get("failedAt").and_then(|v| v.as_s());
                match handler.receipts.reopen(&key, &received_at, failed_at, &at, now / 1000).await? {
                    Reopen::Done => {
                        reopened.push((results.len(), key.clone()));
                        done_with("reopened", Some("the stream has not settled it yet".into()))
                    }
                    Reopen::Changed => done_with("changed_meanwhile", None),
                    Reopen::Expired => done_with("expired", None),
                }
            }
            _ if mode.only_failed => done_with("changed_meanwhile", None),
            Some(ReceiptStatus::Received) | None => {
                let stream_gave_up = iso8601_millis(now_millis().saturating_sub(RECONCILE_MIN_AGE.as_millis() as u64));
                let young = waiting_since(&item).is_none_or(|since| since > stream_gave_up.as_str());
                if young && !mode.force {
                    done_with("in_stream", Some("the stream may be retrying it; wait, or use --force".into()))
                } else {
                    match handler.settle_key(&key, None, None).await {
                        Ok((outcome, reason)) => done_with(outcome, reason.map(str::to_owned)),
                        Err(reason) => done_with("retry_later", Some(reason.to_owned())),
                    }
                }
            }
        };
        results.push(result);
        progress(done + 1, keys.len());
    }
    await_verdicts(handler, &mut results, reopened, mode.wait).await;
    Ok(results)
}

/// Polls the reopened receipts (index into `results`, key) until the stream has settled each
/// or `wait` is over; a receipt whose read fails stays `reopened`.
async fn await_verdicts<S: LeadSink + Sync>(
    handler: &Handler<S, DynamoReceipts>,
    results: &mut [Redriven],
    mut waiting: Vec<(usize, String)>,
    wait: Duration,
) {
    let until = Instant::now() + wait;
    while !waiting.is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(500).min(wait)).await;
        let mut still = Vec::new();
        for (index, key) in waiting {
            let result = &mut results[index];
            match handler.receipts.find(&key, &result.submission_id).await {
                Ok(item) => {
                    let text = |name: &str| item.get(name).and_then(|v| v.as_s()).map(str::to_owned);
                    match text("status").as_deref() {
                        Some("COMPLETED") => (result.outcome, result.reason) = ("completed", None),
                        Some("FAILED") => (result.outcome, result.reason) = ("failed", text("failureReason")),
                        _ => still.push((index, key)),
                    }
                }
                Err(OperateError::UnknownSubmission { .. }) => (result.outcome, result.reason) = ("receipt_gone", None),
                Err(_) => still.push((index, key)),
            }
        }
        waiting = still;
    }
}

/// What the configured sink would send for the receipt `item`, without sending it (`receipts
/// show --as-lead`): the lead through `mapping` and the sink's own mapping, as the stream
/// worker makes it. The error says why there is none (never the form's contents).
pub async fn as_lead(item: &Item, mapping: &LeadMapping, sink: &crate::sink::Sink) -> Result<Value, String> {
    let receipt = Receipt::from_item(item).map_err(|e| format!("the receipt cannot be read ({e:?})"))?;
    let lead =
        lead_from_receipt(&receipt, mapping).map_err(|e| format!("the receipt makes no lead ({})", e.reason()))?;
    sink.preview(&lead, &receipt.key).await.map_err(|e| match e {
        crate::sink::CheckError::Wrong(text)
        | crate::sink::CheckError::Unreachable(text)
        | crate::sink::CheckError::Doubtful(text) => text,
    })
}

/// One receipt as `receipts show` prints it: identifiers, status, times, failure reason and
/// the lead's key; the form's contents only when `payload` is asked for.
pub fn describe(item: &Item, payload: bool) -> Value {
    let text = |name: &str| item.get(name).and_then(|v| v.as_s()).map(str::to_owned);
    let receipt = Receipt::from_item(item);
    // The lead's key does not depend on the configured mapping.
    let lead_key = receipt
        .as_ref()
        .ok()
        .and_then(|r| lead_from_receipt(r, &LeadMapping::default()).ok())
        .map(|lead| lead.external_id);
    let mut shown = summary(item);
    shown["key"] = json!(text("pk"));
    shown["fingerprint"] = json!(text("fingerprint"));
    shown["expiresAt"] = json!(item.get("expiresAt").and_then(|v| v.as_n()).and_then(|n| n.parse::<i64>().ok()));
    shown["leadKey"] = json!(lead_key);
    shown["readable"] = json!(receipt.is_ok());
    if payload {
        shown["payload"] =
            receipt.ok().and_then(|r| serde_json::from_str(&r.payload.to_text()).ok()).unwrap_or(Value::Null);
    }
    shown
}

/// `describe`'s fields as `name  value` lines (absent ones left out).
pub fn describe_text(shown: &Value) -> String {
    let Value::Object(fields) = shown else { return String::new() };
    let mut out = String::new();
    for (name, value) in fields {
        let value = match value {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!("{name:>14}  {value}\n"));
    }
    out
}

/// Listed receipts as a table: profile, submission ID, status, received, finished, reason.
pub fn list_table(items: &[Item]) -> String {
    let text = |item: &Item, name: &str| item.get(name).and_then(|v| v.as_s()).unwrap_or("-").to_owned();
    let mut rows = vec![[
        "PROFILE".to_owned(),
        "SUBMISSION ID".to_owned(),
        "STATUS".to_owned(),
        "RECEIVED AT".to_owned(),
        "FINISHED AT".to_owned(),
        "REASON".to_owned(),
    ]];
    for item in items {
        let finished = item.get("completedAt").or(item.get("failedAt")).and_then(|v| v.as_s()).unwrap_or("-");
        rows.push([
            profile_of(item).to_owned(),
            shorten(&text(item, "submissionId"), 40),
            text(item, "status"),
            text(item, "receivedAt"),
            finished.to_owned(),
            text(item, "failureReason"),
        ]);
    }
    let widths: Vec<usize> = (0..6).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!("{} receipt(s)\n", items.len()));
    out
}

/// Listed receipts for scripts.
pub fn list_json(items: &[Item]) -> Value {
    Value::Array(items.iter().map(summary).collect())
}

/// A receipt's identifiers, status, times and failure reason (what `list` reads, and the
/// console's list).
pub fn summary(item: &Item) -> Value {
    let text = |name: &str| item.get(name).and_then(|v| v.as_s()).map(str::to_owned);
    json!({
        "profile": profile_of(item),
        "submissionId": text("submissionId"),
        "status": text("status"),
        "receivedAt": text("receivedAt"),
        "completedAt": text("completedAt"),
        "failedAt": text("failedAt"),
        "failureReason": text("failureReason"),
        "redrivenAt": text("redrivenAt"),
        "requestId": text("requestId"),
    })
}

/// The receipt's sender profile: its `profile`, else the one its key names (receipts stored
/// before profiles have no `profile`: `staticforms`).
fn profile_of(item: &Item) -> &str {
    let key = item.get("pk").and_then(|v| v.as_s()).and_then(Profile::of_key).map(|(p, _)| p.name());
    item.get("profile").and_then(|v| v.as_s()).or(key).unwrap_or("-")
}

/// `text` cut to `max` characters, escaped so a table stays one line per receipt.
fn shorten(text: &str, max: usize) -> String {
    let escaped: String = text.escape_debug().collect();
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_say_where_they_are_every_hundred_receipts_and_at_the_end() {
        let lines = |total| (1..=total).filter_map(|done| progress_line("redrive", done, total)).collect::<Vec<_>>();
        assert_eq!(lines(99), Vec::<String>::new(), "a short run says nothing");
        assert_eq!(lines(100), ["redrive: 100 of 100"]);
        assert_eq!(lines(250), ["redrive: 100 of 250", "redrive: 200 of 250", "redrive: 250 of 250"]);
    }

    #[test]
    fn a_report_begins_with_what_was_found_and_nothing_settled() {
        let mut report = ReconcileReport::of(5);
        assert_eq!((report.overdue, report.not_reached, report.still_waiting()), (5, 0, 0));
        assert_eq!(report.to_json()["overdue"], 5);
        // Left waiting: the retried and the ones not reached, together.
        report.tally.retry("sink_unavailable");
        report.tally.retry("sink_unavailable");
        report.not_reached = 3;
        assert_eq!(report.still_waiting(), 5);
    }

    #[test]
    fn a_redrive_result_names_the_profile_and_the_bare_submission_id() {
        let failed = Redriven::of("tally:2wgx4n", "FAILED", "failed", Some("sink_rejected".into()));
        assert_eq!(
            failed.to_json(),
            json!({"profile": "tally", "submissionId": "2wgx4n", "was": "FAILED", "outcome": "failed", "reason": "sink_rejected"})
        );
        let odd = Redriven::of("not-a-key", "RECEIVED", "receipt_gone", None);
        assert_eq!(
            (odd.profile, odd.submission_id.as_str(), odd.to_json()["reason"].is_null()),
            ("-", "not-a-key", true)
        );
    }

    #[test]
    fn shorten_keeps_a_table_cell_to_its_width_and_one_line() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcd", 3), "ab…", "max characters, the mark included");
        assert_eq!(shorten("a\nb", 4), "a\\nb", "escaped, so one line");
        assert_eq!(shorten("a\nb", 3), "a\\…");
    }
    use shared::dynamo::AttributeValue;
    use shared::key::expected_key;

    fn item(id: &str, status: &str, reason: Option<&str>) -> Item {
        let mut item = Item::new();
        let s = |v: &str| AttributeValue::S(v.to_owned());
        item.insert("pk".into(), s(&expected_key(id)));
        item.insert("submissionId".into(), s(id));
        item.insert("status".into(), s(status));
        item.insert("receivedAt".into(), s("2026-11-30T06:21:53.123Z"));
        if let Some(reason) = reason {
            item.insert("failedAt".into(), s("2026-11-30T06:22:00.000Z"));
            item.insert("failureReason".into(), s(reason));
        }
        item
    }

    #[test]
    fn a_listing_is_a_table_and_json() {
        let mut tally = item("2wgx4n", "RECEIVED", None);
        tally.insert("pk".into(), AttributeValue::S("tally:2wgx4n".into()));
        tally.insert("profile".into(), AttributeValue::S("tally".into()));
        let items = [
            item("sub_1", "COMPLETED", None),
            item(&format!("sub_\t{}", "x".repeat(60)), "FAILED", Some("missing_email")),
            tally,
        ];
        let table = list_table(&items);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 5, "{table}");
        assert!(lines[0].starts_with("PROFILE      SUBMISSION ID"), "{table}");
        // A receipt from before profiles is Static Forms', by its key.
        assert!(lines[1].starts_with("staticforms  sub_1") && lines[1].contains("COMPLETED"), "{table}");
        assert!(lines[2].starts_with("staticforms  sub_\\tx") && lines[2].contains('…'), "{table}");
        assert!(lines[2].ends_with("missing_email"));
        assert!(lines[3].starts_with("tally        2wgx4n"), "{table}");
        assert_eq!(lines[4], "3 receipt(s)");
        let json = list_json(&items);
        assert_eq!(json[1]["failureReason"], "missing_email");
        assert_eq!(json[0]["completedAt"], Value::Null);
        assert_eq!((json[0]["profile"].as_str(), json[2]["profile"].as_str()), (Some("staticforms"), Some("tally")));
    }

    #[test]
    fn show_leaves_the_form_out_unless_asked() {
        let envelope =
            shared::envelope::parse_envelope(include_bytes!("../../shared/tests/fixtures/delivery.json")).unwrap();
        let receipt = Receipt::new(&envelope, expected_key(&envelope.submission_id), "req-1", 1_796_019_713_123, 30);
        let shown = describe(&receipt.to_item(), false);
        assert_eq!(shown["status"], "RECEIVED");
        assert_eq!(shown["leadKey"], envelope.submission_id.as_str());
        assert_eq!(shown["readable"], true);
        let text = describe_text(&shown);
        assert!(!text.contains("ada@example.com") && !text.contains("Lovelace"), "{text}");
        assert!(text.contains("submissionId  sub_8fK2qLw9Xc"), "{text}");
        let with_payload = describe(&receipt.to_item(), true);
        assert_eq!(with_payload["payload"]["data"]["formData"]["email"], "ada@example.com");
    }

    #[test]
    fn a_report_counts_what_is_still_waiting() {
        let mut report = ReconcileReport { overdue: 5, not_reached: 1, failed_now: Some(3), ..Default::default() };
        report.tally.settled("completed", None);
        report.tally.settled("not_received", None);
        report.tally.retry("sink_unavailable");
        report.tally.settled("failed", Some("missing_email"));
        assert_eq!(report.still_waiting(), 2);
        let json = report.to_json();
        assert_eq!(
            (json["completed"].as_u64(), json["skipped"].as_u64(), json["failed"].as_u64()),
            (Some(1), Some(1), Some(1))
        );
        let lines = report.emf_lines(7);
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!((first["ReceiptsOverdue"].as_u64(), first["ReceiptsWaiting"].as_u64()), (Some(5), Some(2)));
        assert_eq!((first["ReceiptsReconciled"].as_u64(), first["ReceiptsFailed"].as_u64()), (Some(1), Some(3)));
        assert!(report.to_text().contains("stillWaiting  2"), "{}", report.to_text());
        assert!(report.to_text().contains("failedInTable  3"), "{}", report.to_text());
        report.failed_indexed = 4;
        assert_eq!(report.to_json()["failedIndexed"], 4);
        // A run by scan on a table without the failed index has no count: no gauge, no line.
        report.failed_now = None;
        let first: Value = serde_json::from_str(&report.emf_lines(7)[0]).unwrap();
        assert!(first.get("ReceiptsFailed").is_none(), "{first}");
        assert!(!report.to_text().contains("failedInTable"), "{}", report.to_text());
    }
}
