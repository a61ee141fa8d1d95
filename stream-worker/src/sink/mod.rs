//! Where leads go: the sink chosen by `LEAD_SINK`, dispatching to the sinks beside this file.
//! The contract they all keep (one trait, one error type, the budgets) is [`contract`], below
//! them; this file sits above them all.

use std::time::Duration;

use shared::lead::Lead;
use tokio::time::Instant;

pub mod contract;
pub mod http;
pub mod hubspot;
pub mod postgres;
pub mod salesforce;
pub mod sql;
pub mod typed_map;
pub mod webhook;

use crate::config::SinkConfig;

pub use contract::{
    fit, fit_utf16, start_verdict, BatchItem, CheckError, LeadSink, SinkError, CALL_TIMEOUT,
    DYNAMODB_OPERATION_TIMEOUT, MAX_CONCURRENT_RECORDS, RECEIPT_UPDATE_BUDGET, START_CHECK_LIMIT,
};

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

impl Sink {
    /// The sink with the lead mapping (`LEAD_MAPPING`; empty: none). The Salesforce, HubSpot
    /// and webhook sinks read one; a SQL sink given one refuses to start, rather than drop what
    /// the mapping names. `[salesforce]`'s assignment is Salesforce's alone.
    pub fn with_mapping(self, mapping: shared::field_map::FieldMapping) -> anyhow::Result<Sink> {
        match self {
            Sink::Salesforce(sink) => Ok(Sink::Salesforce(sink.with_mapping(mapping))),
            Sink::HubSpot(_) | Sink::Webhook(_) if mapping.assignment.is_some() => anyhow::bail!(
                "LEAD_MAPPING: [salesforce] assignment is for LEAD_SINK=salesforce; remove it (only Salesforce has assignment rules)"
            ),
            Sink::HubSpot(sink) => Ok(Sink::HubSpot(sink.with_mapping(mapping))),
            Sink::Webhook(sink) => Ok(Sink::Webhook(sink.with_mapping(&mapping).map_err(anyhow::Error::msg)?)),
            other if mapping.is_empty() => Ok(other),
            _ => anyhow::bail!(
                "LEAD_MAPPING: the SQL sinks read no lead mapping (they keep every answer in extra); remove it, or use LEAD_SINK=salesforce, hubspot or a webhook URL"
            ),
        }
    }

    /// Each mapped field with its CRM type and what it takes (`stream-worker mapping check`).
    pub async fn mapping_lines(&self) -> Result<Vec<String>, CheckError> {
        match self {
            Sink::Salesforce(sink) => sink.mapping_lines().await,
            Sink::HubSpot(sink) => sink.mapping_lines().await,
            Sink::Webhook(sink) => Ok(sink.mapping_lines()),
            Sink::Sql(_) => Err(CheckError::Wrong(String::from(
                "mapping check: the SQL sinks read no lead mapping (LEAD_SINK=salesforce, hubspot or a webhook URL do)",
            ))),
        }
    }

    /// What the sink would send for `lead` (of the receipt `receipt_key`), without sending it
    /// (`receipts show --as-lead`): Salesforce's collection record (the phone as the start-up
    /// check found it writable), HubSpot's contact and ticket, the webhook's body, the SQL row.
    pub async fn preview(&self, lead: &Lead, receipt_key: &str) -> Result<serde_json::Value, CheckError> {
        let json = |body: shared::json::Json| serde_json::from_str(&body.to_text()).unwrap_or_default();
        match self {
            Sink::Salesforce(sink) => sink.preview(lead, receipt_key).await,
            Sink::HubSpot(sink) => sink.preview(lead, receipt_key).await,
            Sink::Webhook(sink) => Ok(json(sink.body(lead, receipt_key))),
            Sink::Sql(_) => Ok(json(lead.to_json())),
        }
    }

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
    /// once, as the batching sinks' single leads do (reconcile and redrive).
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
    use shared::json::Json;

    /// The sinks the configuration builds, none of them called (no network needed).
    #[tokio::test]
    async fn the_crm_and_webhook_sinks_take_a_lead_mapping_and_no_other_drops_one() {
        let mapping = crate::mapping::parse("[tally.fields]\nsize = \"Size__c\"\n", "m").unwrap();
        for (name, sink) in every_sink().await {
            let taken = sink.with_mapping(mapping.clone());
            assert_eq!(taken.is_ok(), ["salesforce", "hubspot", "webhook"].contains(&name), "{name}");
        }
        // Salesforce's assignment rules are Salesforce's: HubSpot and the webhook refuse to
        // start with them.
        let assignment = crate::mapping::parse("[salesforce]\nassignment = \"FALSE\"\n", "m").unwrap();
        for (name, sink) in every_sink().await {
            assert_eq!(sink.with_mapping(assignment.clone()).is_ok(), name == "salesforce", "{name}");
        }
        for (name, sink) in every_sink().await {
            assert!(sink.with_mapping(Default::default()).is_ok(), "{name}: no mapping, nothing to refuse");
        }
    }

    /// The mapping handed to the webhook sink reaches its body, its preview and its check's
    /// lines; the SQL sink's preview stays the lead's JSON.
    #[tokio::test]
    async fn the_webhook_s_preview_and_check_show_the_mapped_fields() {
        let mapping = crate::mapping::parse("[tally.fields]\nsize = \"company_size\"\n", "m").unwrap();
        let Json::Object(extra) = shared::json::parse(br#"{"size":["11-50"]}"#).unwrap() else { unreachable!() };
        let lead = Lead { external_id: "tally:t1".into(), extra, ..Lead::default() };
        let sinks = every_sink().await;
        let [(_, sqlite), _, _, (_, webhook)] = <[_; 4]>::try_from(sinks).ok().unwrap();
        let webhook = webhook.with_mapping(mapping).unwrap();
        let shown = webhook.preview(&lead, "tally:t1").await.unwrap();
        assert_eq!(shown["fields"], serde_json::json!({"company_size": ["11-50"]}));
        assert_eq!(shown["extra"]["size"], serde_json::json!(["11-50"]));
        let lines = webhook.mapping_lines().await.unwrap();
        assert_eq!(lines, ["[tally] \"size\" -> company_size (as sent)"]);
        let row = sqlite.preview(&lead, "tally:t1").await.unwrap();
        assert_eq!(row, serde_json::from_str::<serde_json::Value>(&lead.to_json().to_text()).unwrap());
        assert!(matches!(sqlite.mapping_lines().await, Err(CheckError::Wrong(_))));
    }

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
        // The budgets differ (six calls for a HubSpot batch, eight for a Salesforce lead, one for a
        // webhook, a connect and statements for SQLite), so dispatching one sink's budget for
        // another's is seen.
        let budgets: Vec<Duration> = every_sink().await.iter().map(|(_, s)| s.batch_budget()).collect();
        assert_eq!(budgets[1], 6 * http::TIMEOUT + RECEIPT_UPDATE_BUDGET, "hubspot");
        assert_eq!(budgets[2], 8 * http::TIMEOUT + RECEIPT_UPDATE_BUDGET, "salesforce");
        assert_eq!(budgets[3], http::TIMEOUT + RECEIPT_UPDATE_BUDGET, "webhook");
        assert!(budgets[0] > budgets[3], "sqlite: a connect and two statements");
    }
}
