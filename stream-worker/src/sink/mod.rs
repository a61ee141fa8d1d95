//! Where leads go: one trait, one error type, and the sink chosen by `LEAD_SINK`.

use std::future::Future;
use std::time::Duration;

use shared::lead::Lead;
use tokio::time::Instant;

pub mod http;
pub mod hubspot;
pub mod postgres;
pub mod salesforce;
pub mod sql;
pub mod webhook;

use crate::config::SinkConfig;

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
        http::TIMEOUT + RECEIPT_UPDATE_BUDGET
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

/// The configured sink.
pub enum Sink {
    Sql(sql::SqlSink),
    HubSpot(hubspot::HubSpot),
    Salesforce(salesforce::Salesforce),
    Webhook(webhook::Webhook),
}

impl Sink {
    /// Sets up the configured sink: SQLite opens its file and schema now; PostgreSQL connects
    /// on first use (not during a Lambda's init, which a slow database would time out).
    pub async fn connect(config: &SinkConfig) -> anyhow::Result<Sink> {
        Ok(match config {
            SinkConfig::Sqlite { path } => Sink::Sql(sql::SqlSink::sqlite(path)?),
            SinkConfig::Postgres { target } => Sink::Sql(sql::SqlSink::postgres(target.clone())),
            SinkConfig::HubSpot { token, base_url, id_property, pipeline, stage } => {
                let tickets = hubspot::TicketPipeline { pipeline: pipeline.clone(), stage: stage.clone() };
                Sink::HubSpot(hubspot::HubSpot::new(http::client()?, base_url, token, id_property, tickets))
            }
            SinkConfig::Salesforce { instance_url, client_id, client_secret, api_version, external_id_field } => {
                let login = salesforce::Login {
                    domain_url: instance_url.clone(),
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                };
                Sink::Salesforce(salesforce::Salesforce::new(http::client()?, login, api_version, external_id_field))
            }
            SinkConfig::Webhook { url, secret } => {
                Sink::Webhook(webhook::Webhook::new(http::client()?, url, secret.clone()))
            }
        })
    }
}

/// Why a sink's configuration check did not pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The sink answered, and the configuration cannot work: refuse to start; the text says
    /// what to fix.
    Wrong(String),
    /// The sink could not be asked (down, throttled, slow): start anyway, and say so.
    Unreachable(String),
}

impl Sink {
    /// Checks, once at start and where the sink's API allows, that its configuration can work
    /// (HubSpot: the ticket property exists and is unique, the pipeline has the stage;
    /// Salesforce: the credentials work and the field is an External ID on Lead).
    pub async fn check_configuration(&self) -> Result<(), CheckError> {
        match self {
            Sink::HubSpot(sink) => sink.check_configuration().await,
            Sink::Salesforce(sink) => sink.check_configuration().await,
            Sink::Sql(_) | Sink::Webhook(_) => Ok(()),
        }
    }
}

impl LeadSink for Sink {
    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        match self {
            Sink::Sql(sink) => sink.upsert(lead, receipt_key).await,
            Sink::HubSpot(sink) => sink.upsert(lead, receipt_key).await,
            Sink::Salesforce(sink) => sink.upsert(lead, receipt_key).await,
            Sink::Webhook(sink) => sink.upsert(lead, receipt_key).await,
        }
    }

    /// HubSpot writes a stream batch's leads in batches of [`hubspot::BATCH_SIZE`] (a person's
    /// contact named once per batch: two upserts of one contact at once would race into a 409),
    /// so it takes one batch at a time; Salesforce in collections of
    /// [`salesforce::batch::BATCH_SIZE`]; the SQL sinks in transactions of
    /// [`sql::BATCH_SIZE`]. The webhook takes one lead per call, [`MAX_CONCURRENT_RECORDS`] at
    /// once, as the batching sinks' single upserts do (reconcile and redrive).
    fn concurrency(&self) -> usize {
        match self {
            Sink::HubSpot(_) => 1,
            Sink::Sql(_) | Sink::Salesforce(_) | Sink::Webhook(_) => MAX_CONCURRENT_RECORDS,
        }
    }

    fn batch_size(&self) -> usize {
        match self {
            Sink::HubSpot(sink) => sink.batch_size(),
            Sink::Salesforce(sink) => sink.batch_size(),
            Sink::Sql(sink) => sink.batch_size(),
            Sink::Webhook(sink) => sink.batch_size(),
        }
    }

    async fn upsert_batch<'a>(
        &'a self,
        items: &'a [BatchItem<'a>],
        deadline: Option<Instant>,
    ) -> Vec<Result<(), SinkError>> {
        match self {
            Sink::HubSpot(sink) => sink.upsert_batch(items, deadline).await,
            Sink::Sql(sink) => sink.upsert_batch(items, deadline).await,
            Sink::Salesforce(sink) => sink.upsert_batch(items, deadline).await,
            Sink::Webhook(sink) => sink.upsert_batch(items, deadline).await,
        }
    }

    fn batch_budget(&self) -> Duration {
        match self {
            Sink::HubSpot(sink) => sink.batch_budget(),
            Sink::Sql(sink) => sink.batch_budget(),
            Sink::Salesforce(sink) => sink.batch_budget(),
            Sink::Webhook(sink) => sink.batch_budget(),
        }
    }

    fn record_budget(&self) -> Duration {
        match self {
            Sink::Sql(sink) => sink.record_budget(),
            Sink::HubSpot(sink) => sink.record_budget(),
            Sink::Salesforce(sink) => sink.record_budget(),
            Sink::Webhook(sink) => sink.record_budget(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink with the default budget: one HTTP call (the webhook's case).
    struct OneCall;

    impl LeadSink for OneCall {
        async fn upsert(&self, _lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
            Ok(())
        }
    }

    #[test]
    fn a_records_budget_is_its_calls_at_their_timeouts_and_the_store_update() {
        // README: one call of 10 s and 11 s for the store; the function's timeout covers it.
        assert_eq!(OneCall.record_budget(), Duration::from_secs(21));
        assert_eq!(RECEIPT_UPDATE_BUDGET, Duration::from_secs(11));
        assert!(RECEIPT_UPDATE_BUDGET > 2 * DYNAMODB_OPERATION_TIMEOUT, "a read and the update, with a margin");
    }

    /// The sinks the configuration builds, none of them called (no network needed).
    async fn every_sink() -> Vec<(&'static str, Sink)> {
        let configs = [
            ("sqlite", SinkConfig::Sqlite { path: ":memory:".into() }),
            (
                "hubspot",
                SinkConfig::HubSpot {
                    token: "pat-test".into(),
                    base_url: "http://127.0.0.1:9".into(),
                    id_property: "submission_id".into(),
                    pipeline: "0".into(),
                    stage: "1".into(),
                },
            ),
            (
                "salesforce",
                SinkConfig::Salesforce {
                    instance_url: "http://127.0.0.1:9".into(),
                    client_id: "id".into(),
                    client_secret: "secret".into(),
                    api_version: "62.0".into(),
                    external_id_field: "Submission_Id__c".into(),
                },
            ),
            (
                "webhook",
                SinkConfig::Webhook {
                    url: "http://127.0.0.1:9/leads".into(),
                    secret: shared::secret::SigningSecret::plain("whsec-test").unwrap(),
                },
            ),
        ];
        let mut sinks = Vec::new();
        for (name, config) in configs {
            sinks.push((name, Sink::connect(&config).await.unwrap()));
        }
        sinks
    }

    #[tokio::test]
    async fn hubspot_takes_batches_one_at_a_time_and_each_sink_keeps_its_own_budget() {
        for (name, sink) in every_sink().await {
            let shape = (sink.concurrency(), sink.batch_size(), sink.record_budget(), sink.batch_budget());
            let expected = match &sink {
                Sink::HubSpot(inner) => (1, hubspot::BATCH_SIZE, inner.record_budget(), inner.batch_budget()),
                Sink::Salesforce(inner) => {
                    (MAX_CONCURRENT_RECORDS, salesforce::batch::BATCH_SIZE, inner.record_budget(), inner.batch_budget())
                }
                Sink::Sql(inner) => {
                    (MAX_CONCURRENT_RECORDS, sql::BATCH_SIZE, inner.record_budget(), inner.batch_budget())
                }
                Sink::Webhook(inner) => (MAX_CONCURRENT_RECORDS, 1, inner.record_budget(), inner.batch_budget()),
            };
            assert_eq!(shape, expected, "{name}");
        }
        // The budgets differ (six calls for a HubSpot batch, five for a Salesforce lead, one
        // for a webhook), so dispatching one sink's budget for another's is seen.
        let budgets: Vec<Duration> = every_sink().await.iter().map(|(_, s)| s.batch_budget()).collect();
        assert_eq!(budgets[1], 6 * http::TIMEOUT + RECEIPT_UPDATE_BUDGET, "hubspot");
        assert_eq!(budgets[2], 5 * http::TIMEOUT + RECEIPT_UPDATE_BUDGET, "salesforce");
        assert_eq!(budgets[3], http::TIMEOUT + RECEIPT_UPDATE_BUDGET, "webhook");
        assert!(budgets[0] > budgets[3], "sqlite: a connect and two statements");
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
