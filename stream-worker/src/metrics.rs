//! What one batch (or one reconcile run) did, counted, and written as Embedded Metric Format
//! lines: names, reasons and counts only, never anything from a receipt's form data.

use std::collections::BTreeMap;

use shared::metrics::{emf_line, Metric, Unit};

/// The `service` dimension of every stream-worker metric.
pub const SERVICE: &str = "stream-worker";

/// Counts of what happened to records or receipts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Leads written and receipts marked `COMPLETED`.
    pub written: u64,
    /// Receipts that were already `COMPLETED` or `FAILED` when this attempt finished: a record
    /// delivered again, whose repeated upsert the sink's key made harmless.
    pub absorbed: u64,
    /// Records that needed nothing (a `REMOVE`, a receipt no longer `RECEIVED`, a receipt gone).
    pub skipped: u64,
    /// Receipts marked `FAILED`, by reason.
    pub failed: BTreeMap<&'static str, u64>,
    /// Records left to be retried, by reason.
    pub retried: BTreeMap<&'static str, u64>,
}

impl Tally {
    /// Counts one settled record by the outcome the handler logged.
    pub fn settled(&mut self, outcome: &'static str, reason: Option<&'static str>) {
        match outcome {
            "completed" => self.written += 1,
            "failed" => *self.failed.entry(reason.unwrap_or("unknown")).or_default() += 1,
            "already_finished" => self.absorbed += 1,
            _ => self.skipped += 1,
        }
    }

    /// Counts one record left for a retry.
    pub fn retry(&mut self, reason: &'static str) {
        *self.retried.entry(reason).or_default() += 1;
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Tally) {
        self.written += other.written;
        self.absorbed += other.absorbed;
        self.skipped += other.skipped;
        for (reason, n) in &other.failed {
            *self.failed.entry(reason).or_default() += n;
        }
        for (reason, n) in &other.retried {
            *self.retried.entry(reason).or_default() += n;
        }
    }

    /// All receipts marked `FAILED`.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// All records left for a retry.
    pub fn retried_total(&self) -> u64 {
        self.retried.values().sum()
    }

    /// The EMF lines: one with the totals (`LeadsWritten`, `DuplicatesAbsorbed`,
    /// `LeadsFailed`, `RecordsRetried`), then one per failure and per retry reason (dimension
    /// `reason`), at `timestamp_ms`.
    pub fn emf_lines(&self, timestamp_ms: u64) -> Vec<String> {
        let count = |name, value| Metric { name, unit: Unit::Count, value };
        let mut lines = vec![emf_line(
            timestamp_ms,
            &[("service", SERVICE)],
            &[
                count("LeadsWritten", self.written),
                count("DuplicatesAbsorbed", self.absorbed),
                count("LeadsFailed", self.failed_total()),
                count("RecordsRetried", self.retried_total()),
            ],
        )];
        for (name, by_reason) in [("LeadsFailed", &self.failed), ("RecordsRetried", &self.retried)] {
            for (reason, n) in by_reason {
                lines.push(emf_line(timestamp_ms, &[("service", SERVICE), ("reason", reason)], &[count(name, *n)]));
            }
        }
        lines
    }
}

/// Epoch milliseconds now.
pub fn now_millis() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn counts_by_outcome_and_reason() {
        let mut tally = Tally::default();
        tally.settled("completed", None);
        tally.settled("completed", None);
        tally.settled("failed", Some("missing_email"));
        tally.settled("already_finished", None);
        tally.settled("not_received", None);
        tally.retry("sink_unavailable");
        let mut other = Tally::default();
        other.settled("failed", Some("missing_email"));
        other.retry("deadline");
        tally.add(&other);
        assert_eq!(tally.written, 2);
        assert_eq!(tally.absorbed, 1);
        assert_eq!(tally.skipped, 1);
        assert_eq!(tally.failed, [("missing_email", 2)].into());
        assert_eq!(tally.retried, [("deadline", 1), ("sink_unavailable", 1)].into());
    }

    #[test]
    fn lines_are_emf_with_the_counts() {
        let mut tally = Tally::default();
        tally.settled("completed", None);
        tally.settled("failed", Some("sink_refused"));
        tally.retry("sink_unavailable");
        let lines: Vec<Value> = tally.emf_lines(1_000).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        let totals = &lines[0];
        assert_eq!(totals["_aws"]["CloudWatchMetrics"][0]["Namespace"], "WebhookReceiver");
        assert_eq!(totals["_aws"]["CloudWatchMetrics"][0]["Dimensions"], serde_json::json!([["service"]]));
        assert_eq!(totals["_aws"]["Timestamp"], 1_000);
        assert_eq!((totals["LeadsWritten"].as_u64(), totals["LeadsFailed"].as_u64()), (Some(1), Some(1)));
        assert_eq!((totals["DuplicatesAbsorbed"].as_u64(), totals["RecordsRetried"].as_u64()), (Some(0), Some(1)));
        assert_eq!(lines[1]["reason"], "sink_refused");
        assert_eq!(lines[1]["LeadsFailed"], 1);
        assert_eq!(lines[1]["_aws"]["CloudWatchMetrics"][0]["Dimensions"], serde_json::json!([["service", "reason"]]));
        assert_eq!(lines[2]["reason"], "sink_unavailable");
        assert_eq!(lines[2]["RecordsRetried"], 1);
    }

    #[test]
    fn tallies_add_up_every_count_and_reason() {
        let mut first = Tally::default();
        first.settled("completed", None);
        first.settled("failed", Some("sink_rejected"));
        first.retry("sink_unavailable");
        let mut second = Tally::default();
        for _ in 0..2 {
            second.settled("completed", None);
            second.settled("already_finished", None);
            second.settled("skipped", None);
            second.settled("failed", Some("sink_rejected"));
            second.retry("sink_unavailable");
        }
        second.settled("failed", None);
        second.retry("sink_rate_limited");
        first.add(&second);
        assert_eq!((first.written, first.absorbed, first.skipped), (3, 2, 2));
        assert_eq!((first.failed["sink_rejected"], first.failed["unknown"]), (3, 1));
        assert_eq!((first.retried["sink_unavailable"], first.retried["sink_rate_limited"]), (3, 1));
        assert_eq!((first.failed_total(), first.retried_total()), (4, 4));
        assert_eq!((Tally::default().failed_total(), Tally::default().retried_total()), (0, 0));
    }

    #[test]
    fn now_is_in_epoch_milliseconds() {
        // After 2023-11-14 (1.7e12 ms) and before 2286 (1e13): milliseconds, not seconds.
        let now = now_millis();
        assert!((1_700_000_000_000..10_000_000_000_000).contains(&now), "{now}");
    }
}
