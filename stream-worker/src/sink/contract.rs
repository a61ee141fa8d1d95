//! The sink contract: what every sink keeps. One trait ([`LeadSink`]), one error type
//! ([`SinkError`]), a batch's item, the budgets a record and a batch are given, and the field
//! fitting the CRMs need. Below every sink; nothing here knows one.

use std::future::Future;
use std::time::Duration;

use shared::lead::Lead;
use tokio::time::Instant;

/// The longest one call to an HTTP sink may take: its client's timeout
/// ([`crate::sink::http::client`]), from which record and batch budgets are computed.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a sink did not take a lead. Whether to retry is decided by the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkError {
    /// It may work later (429, 5xx, timeouts, lost connections): stop the batch here and retry.
    /// `retry_after` is the sink's own hint, when it gave one.
    Retryable { reason: &'static str, retry_after: Option<Duration> },
    /// It will never work for this lead (the sink refused its content): mark the receipt
    /// `FAILED` with `reason` and go on.
    Permanent { reason: &'static str },
}

/// The retry reasons that stand until something changes: the sink's setup, which a person
/// fixes (the org's rules and automation, a missing field or property, the credentials, the
/// URL, a HubSpot ticket refused as a `CONFLICT`, which may be a unique property's value), and
/// a used-up allocation, which a new day brings back (HubSpot's day and reserve, Salesforce's
/// reserve). They refuse every try alike, so the handler spaces a record's tries
/// ([`shared::backoff`]) instead of trying it at every invocation until then.
pub fn stands(reason: &str) -> bool {
    reason.starts_with("sink_org_")
        || [
            "sink_config_invalid",
            "sink_mapping_refused",
            "sink_unauthorized",
            "sink_login_refused",
            "sink_lookup_refused",
            "sink_method_not_allowed",
            "sink_unsupported_media_type",
            "sink_redirected",
            "sink_tls_config",
            "sink_daily_limit",
            "sink_allocation_reserved",
            "sink_ticket_conflict",
        ]
        .contains(&reason)
}

/// Records processed at the same time, at most (records of one receipt never are): the sink
/// contract's ceiling on [`LeadSink::concurrency`].
pub const MAX_CONCURRENT_RECORDS: usize = 10;

/// One lead of a batch, with its receipt's `pk`.
#[derive(Clone, Copy)]
pub struct BatchItem<'a> {
    pub lead: &'a Lead,
    pub receipt_key: &'a str,
}

/// A place leads are upserted into, keyed by the submission ID.
pub trait LeadSink {
    /// Creates or updates the lead whose key is `lead.external_id`; `receipt_key` is the
    /// receipt's `pk`, for sinks that take an idempotency key.
    fn upsert(&self, lead: &Lead, receipt_key: &str) -> impl Future<Output = Result<(), SinkError>> + Send;

    /// How many leads one [`LeadSink::upsert_batch`] takes. 1 (the default): the sink writes
    /// one lead per call, and the handler runs records one by one, several receipts at once.
    fn batch_size(&self) -> usize {
        1
    }

    /// Upserts `items` (at most [`LeadSink::batch_size`], each naming another receipt) in as
    /// few calls as the sink allows: one result per item, in the items' order, each decided by
    /// that item's own answer. `deadline` is the invocation's end: a sink that paces itself
    /// waits only when the wait and then the batch fit before it. The default: one
    /// [`LeadSink::upsert`] after another.
    fn upsert_batch<'a>(
        &'a self,
        items: &'a [BatchItem<'a>],
        deadline: Option<Instant>,
    ) -> impl Future<Output = Vec<Result<(), SinkError>>> + Send + 'a
    where
        Self: Sync,
    {
        let _ = deadline;
        async move {
            let mut results = Vec::with_capacity(items.len());
            for item in items {
                results.push(self.upsert(item.lead, item.receipt_key).await);
            }
            results
        }
    }

    /// The longest one [`LeadSink::upsert_batch`] can take, the receipts' updates after it
    /// included. The handler starts a batch (but the invocation's first) only when this much
    /// time is left.
    fn batch_budget(&self) -> Duration {
        self.record_budget()
    }

    /// The longest one record can take with this sink: one call at its timeout, the receipt
    /// update, and a margin. The handler starts a record only when this much time is left.
    fn record_budget(&self) -> Duration {
        CALL_TIMEOUT + RECEIPT_UPDATE_BUDGET
    }

    /// How many records the sink takes at the same time (the handler caps it at
    /// [`MAX_CONCURRENT_RECORDS`]).
    fn concurrency(&self) -> usize {
        MAX_CONCURRENT_RECORDS
    }
}

/// The longest one DynamoDB call may take (the SDK's operation timeout, set in `main`).
pub const DYNAMODB_OPERATION_TIMEOUT: Duration = Duration::from_secs(5);

/// Time allowed for the store's part of a record, margin included: a read by key (for a record
/// without an image) and the receipt update.
pub const RECEIPT_UPDATE_BUDGET: Duration = Duration::from_secs(11);

/// `text` cut to at most `max` characters (ending in `…` when cut): CRM fields have documented
/// length limits, and a value over one refuses the whole record, which would turn a lead whose
/// only fault is a long message into a `FAILED` one.
pub fn fit(text: &str, max: usize) -> String {
    fit_measured(text, max, |_| 1)
}

/// [`fit`] in UTF-16 code units, the unit Salesforce (Apex and Java strings) counts a Text
/// field's length in: an emoji outside the Basic Multilingual Plane is two. A surrogate pair is
/// never cut: a character that does not fit whole is left out whole.
pub fn fit_utf16(text: &str, max: usize) -> String {
    fit_measured(text, max, char::len_utf16)
}

/// `text` whole when its characters' sizes add up to at most `max`; else the longest prefix of
/// whole characters that leaves room for `…` (one unit in both measures), then `…`.
fn fit_measured(text: &str, max: usize, size: fn(char) -> usize) -> String {
    if text.chars().map(size).sum::<usize>() <= max {
        return text.to_owned();
    }
    let mut cut = String::new();
    let mut used = 0;
    for c in text.chars() {
        used += size(c);
        if used > max.saturating_sub(1) {
            break;
        }
        cut.push(c);
    }
    if max > 0 {
        cut.push('…');
    }
    cut
}

/// Why a sink's configuration check did not pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The sink answered, and the configuration cannot work: refuse to start; the text says
    /// what to fix.
    Wrong(String),
    /// The sink could not be asked (down, throttled, slow): start anyway, and say so.
    Unreachable(String),
    /// The sink answered, and the configuration may not work, which only the sink's own
    /// automation can tell (a required field a flow fills): start, and say what to check.
    Doubtful(String),
}

/// How long the start-up check may take: well within Lambda's 10-second init, and before a
/// call's own [`CALL_TIMEOUT`] would give up on a sink that does not answer.
pub const START_CHECK_LIMIT: Duration = Duration::from_secs(4);

/// What the start makes of the configuration check's answer (`None`: it took longer than
/// [`START_CHECK_LIMIT`]): `Err` stops the start with the text; `Ok(Some(line))` starts, with
/// a line to log; `Ok(None)` starts without a word. A sink that cannot be asked now is no
/// reason not to start (its leads are retried); one whose configuration cannot work is.
pub fn start_verdict(check: Option<Result<(), CheckError>>) -> Result<Option<String>, String> {
    match check {
        Some(Ok(())) => Ok(None),
        Some(Err(CheckError::Wrong(problem))) => Err(format!("the lead sink's configuration cannot work: {problem}")),
        Some(Err(CheckError::Unreachable(why))) => {
            Ok(Some(format!("the lead sink's configuration could not be checked ({why}); starting anyway")))
        }
        Some(Err(CheckError::Doubtful(what))) => {
            Ok(Some(format!("the lead sink's configuration may not work: {what}; starting anyway")))
        }
        None => Ok(Some("the lead sink's configuration check took too long; starting anyway".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reasons docs/sinks.md names as standing are held back; those that pass by
    /// themselves are retried at once.
    #[test]
    fn the_reasons_that_stand_until_something_changes() {
        for reason in [
            "sink_org_required_field",
            "sink_org_validation_rule",
            "sink_org_permissions",
            "sink_org_automation",
            "sink_org_duplicate_rule",
            "sink_org_unique_field",
            "sink_org_storage_full",
            "sink_org_record_locked",
            "sink_config_invalid",
            "sink_mapping_refused",
            "sink_unauthorized",
            "sink_login_refused",
            "sink_lookup_refused",
            "sink_method_not_allowed",
            "sink_unsupported_media_type",
            "sink_redirected",
            "sink_tls_config",
            "sink_daily_limit",
            "sink_allocation_reserved",
            "sink_ticket_conflict",
        ] {
            assert!(stands(reason), "{reason}");
        }
        for reason in [
            "sink_unavailable",
            "sink_timeout",
            "sink_unreachable",
            "sink_rate_limited",
            "sink_paced",
            "sink_row_locked",
            "sink_concurrent_upsert",
            "sink_id_collision",
            "sink_unexpected_answer",
            "sink_association_failed",
            "deadline",
            "receipt_store_unreachable",
        ] {
            assert!(!stands(reason), "{reason}");
        }
    }

    #[test]
    fn a_start_stops_only_for_a_configuration_that_cannot_work() {
        assert_eq!(start_verdict(Some(Ok(()))), Ok(None));
        let wrong = start_verdict(Some(Err(CheckError::Wrong("no property x".into()))));
        assert_eq!(wrong, Err("the lead sink's configuration cannot work: no property x".into()));
        let unreachable = start_verdict(Some(Err(CheckError::Unreachable("HubSpot answered 429".into()))));
        let line = "the lead sink's configuration could not be checked (HubSpot answered 429); starting anyway";
        assert_eq!(unreachable, Ok(Some(line.into())));
        let doubtful = start_verdict(Some(Err(CheckError::Doubtful("Region__c is required".into()))));
        let line = "the lead sink's configuration may not work: Region__c is required; starting anyway";
        assert_eq!(doubtful, Ok(Some(line.into())));
        let slow = Ok(Some("the lead sink's configuration check took too long; starting anyway".into()));
        assert_eq!(start_verdict(None), slow);
        assert!(START_CHECK_LIMIT < Duration::from_secs(10) && START_CHECK_LIMIT < CALL_TIMEOUT);
        assert_eq!(START_CHECK_LIMIT, Duration::from_secs(4), "docs/sinks.md: slower than 4 s");
    }

    /// A sink with the default budget: one HTTP call (the webhook's case).
    struct OneCall;

    impl LeadSink for OneCall {
        async fn upsert(&self, _lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
            Ok(())
        }
    }

    #[test]
    fn a_records_budget_is_its_calls_at_their_timeouts_and_the_store_update() {
        // docs/sinks.md: one call of 10 s and 11 s for the store; the function's timeout covers it.
        assert_eq!(OneCall.record_budget(), Duration::from_secs(21));
        assert_eq!(RECEIPT_UPDATE_BUDGET, Duration::from_secs(11));
        assert!(RECEIPT_UPDATE_BUDGET > 2 * DYNAMODB_OPERATION_TIMEOUT, "a read and the update, with a margin");
    }

    #[test]
    fn fit_cuts_by_characters_and_marks_the_cut() {
        assert_eq!(fit("ab", 2), "ab");
        assert_eq!(fit("abc", 2), "a…");
        assert_eq!(fit("ééé", 3), "ééé", "characters, not bytes");
        assert_eq!(fit("", 0), "");
        assert_eq!(fit("a", 0), "", "nothing fits in nothing, not even the mark");
        assert_eq!(fit("a", 1), "a");
        assert_eq!(fit("ab", 1), "…");
    }

    #[test]
    fn fit_utf16_counts_code_units_and_never_splits_a_pair() {
        // 30 emoji are 30 characters and 60 UTF-16 code units: over a 40-unit field.
        let emoji = "😀".repeat(30);
        let cut = fit_utf16(&emoji, 40);
        assert_eq!(cut.encode_utf16().count(), 39, "19 pairs and the mark: a 20th pair would pass 40");
        assert_eq!(cut, format!("{}…", "😀".repeat(19)));
        assert_eq!(fit_utf16(&"😀".repeat(20), 40), "😀".repeat(20), "exactly 40 units fits whole");
        assert_eq!(fit_utf16("a😀", 2), "a…", "the pair does not fit beside the mark");
        assert_eq!(fit_utf16("ééé", 3), "ééé", "one unit each");
        assert_eq!(fit("😀😀😀", 2), "😀…", "fit still counts characters");
    }
}
