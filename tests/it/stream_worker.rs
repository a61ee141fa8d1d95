//! The stream worker against ministack's real stream, real PostgreSQL and SQLite, and the CRM
//! stand-ins. Receipts are written as the edge writes them; the poller feeds the Lambda handler.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use shared::lead::Lead;
use shared::secret::SigningSecret;
use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::poll::Poller;
use stream_worker::receipts::{Mark, Marked, ReceiptStore};
use stream_worker::sink::postgres::PostgresTarget;
use stream_worker::sink::{CheckError, LeadSink, Sink, SinkError};
use tests::aws::{put_item, receipt, sample_lead, sdk_config_at};
use tests::crm::{HubSpotStandIn, SalesforceStandIn};
use tests::delivery;
use tests::delivery::lead;
use tests::postgres::Postgres;
use tests::worker::{self, CrashBeforeMark, World, TABLE};
use tests::{now_millis, TempDir};

async fn world() -> World {
    World::start("stream").await
}

/// Leads in PostgreSQL: `(external_id, email, upsert_count)`.
async fn postgres_leads(url: &str) -> Vec<(String, String, i64)> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows =
        client.query("SELECT external_id, email, upsert_count FROM leads ORDER BY external_id", &[]).await.unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
}

#[tokio::test]
async fn a_record_delivered_twice_is_one_lead_written_once_sqlite() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    w.deliver("sub_twice");
    worker::drain(&w.poller(), &handler).await;
    assert_eq!(w.sqlite_leads(), [lead("sub_twice", 1)]);
    assert_eq!(w.status("sub_twice"), Some(("COMPLETED".into(), None)));
    // Redelivery: forget the checkpoint, so the stream is read again from its start. The
    // record comes again, finds its receipt finished, and the lead is not written again.
    std::fs::remove_file(w.dir.0.join("checkpoint.json")).unwrap();
    let passes = worker::drain(&w.poller(), &handler).await;
    assert!(passes.iter().map(|p| p.processed).sum::<usize>() > 0, "read again: {passes:?}");
    assert_eq!(w.sqlite_leads(), [lead("sub_twice", 1)]);
    assert_eq!(w.status("sub_twice"), Some(("COMPLETED".into(), None)));
}

#[tokio::test]
async fn a_record_delivered_twice_is_one_lead_written_once_postgres() {
    let w = world().await;
    let postgres = Postgres::start();
    let sink = Sink::connect(&SinkConfig::Postgres { target: PostgresTarget::parse(&postgres.url(), None).unwrap() })
        .await
        .unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    w.deliver("sub_pg");
    worker::drain(&w.poller(), &handler).await;
    std::fs::remove_file(w.dir.0.join("checkpoint.json")).unwrap();
    let passes = worker::drain(&w.poller(), &handler).await;
    assert!(passes.iter().map(|p| p.processed).sum::<usize>() > 0, "read again: {passes:?}");
    assert_eq!(postgres_leads(&postgres.url()).await, [lead("sub_pg", 1)]);
    assert_eq!(w.status("sub_pg"), Some(("COMPLETED".into(), None)));
}

#[tokio::test]
async fn a_crash_between_the_upsert_and_the_receipt_update_leaves_one_lead() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink,
        receipts: CrashBeforeMark::new(w.receipts(), 1),
    };
    w.deliver("sub_crash");
    let poller = w.poller();
    let first = poller.pass(&handler).await.unwrap();
    assert_eq!(first.failed_batches, 1);
    assert_eq!(w.sqlite_leads(), [lead("sub_crash", 1)], "the upsert happened");
    assert_eq!(w.status("sub_crash"), Some(("RECEIVED".into(), None)), "the update did not");
    worker::drain(&poller, &handler).await;
    assert_eq!(w.sqlite_leads(), [lead("sub_crash", 2)]);
    assert_eq!(w.status("sub_crash"), Some(("COMPLETED".into(), None)));
}

/// A sink that refuses one submission (retryably) until told it recovered, and records the
/// order of every upsert attempt.
struct FlakySink<S> {
    inner: S,
    broken: Mutex<Option<String>>,
    attempts: Mutex<Vec<String>>,
}

impl<S: LeadSink + Sync> LeadSink for FlakySink<S> {
    async fn upsert(&self, lead: &Lead, key: &str) -> Result<(), SinkError> {
        self.attempts.lock().unwrap().push(lead.external_id.clone());
        if self.broken.lock().unwrap().as_deref() == Some(lead.external_id.as_str()) {
            return Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None });
        }
        self.inner.upsert(lead, key).await
    }
}

#[tokio::test]
async fn a_retryable_failure_stops_the_batch_at_that_record_and_resumes_there() {
    let w = world().await;
    let postgres = Postgres::start();
    let inner = Sink::connect(&SinkConfig::Postgres { target: PostgresTarget::parse(&postgres.url(), None).unwrap() })
        .await
        .unwrap();
    let sink = FlakySink { inner, broken: Mutex::new(Some("sub_3".into())), attempts: Mutex::new(vec![]) };
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    for i in 1..=5 {
        w.deliver(&format!("sub_{i}"));
    }
    let poller = w.poller();
    let first = poller.pass(&handler).await.unwrap();
    assert_eq!((first.processed, first.failed_batches), (2, 1));
    let done: Vec<String> = postgres_leads(&postgres.url()).await.into_iter().map(|l| l.0).collect();
    assert_eq!(done, ["sub_1", "sub_2"]);
    for (id, status) in [("sub_1", "COMPLETED"), ("sub_2", "COMPLETED"), ("sub_3", "RECEIVED"), ("sub_5", "RECEIVED")] {
        assert_eq!(w.status(id).map(|s| s.0).as_deref(), Some(status), "{id}");
    }
    // Still broken: the next pass starts at record 3 again and goes no further.
    assert_eq!(poller.pass(&handler).await.unwrap().failed_batches, 1);
    *handler.sink.broken.lock().unwrap() = None;
    worker::drain(&poller, &handler).await;
    let all: Vec<(String, String, i64)> = postgres_leads(&postgres.url()).await;
    assert_eq!(all, (1..=5).map(|i| lead(&format!("sub_{i}"), 1)).collect::<Vec<_>>());
    let attempts = handler.sink.attempts.lock().unwrap().clone();
    assert_eq!(
        attempts,
        ["sub_1", "sub_2", "sub_3", "sub_3", "sub_3", "sub_4", "sub_5"],
        "in stream order, never ahead"
    );
    for i in 1..=5 {
        assert_eq!(w.status(&format!("sub_{i}")).map(|s| s.0).as_deref(), Some("COMPLETED"));
    }
}

#[tokio::test]
async fn a_poison_record_is_marked_failed_and_the_next_ones_are_processed() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    let mut poison = receipt(&delivery::body("sub_poison", "x", 1), now_millis());
    poison.submission_id = "someone_else".into();
    put_item(&w.store, TABLE, &poison.to_item());
    w.deliver("sub_after");
    worker::drain(&w.poller(), &handler).await;
    assert_eq!(w.status("sub_poison"), Some(("FAILED".into(), Some("submission_id_mismatch".into()))));
    assert_eq!(w.status("sub_after"), Some(("COMPLETED".into(), None)));
    assert_eq!(w.sqlite_leads(), [lead("sub_after", 1)]);
}

#[tokio::test]
async fn a_receipt_deleted_before_the_update_is_not_recreated() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    let key = w.deliver("sub_ttl");
    w.store.ok("DynamoDB_20120810.DeleteItem", &serde_json::json!({"TableName": TABLE, "Key": {"pk": {"S": key}}}));
    worker::drain(&w.poller(), &handler).await;
    assert_eq!(w.store.get(TABLE, &key), None, "no receipt came back");
    assert!(w.store.scan(TABLE).is_empty());
    assert_eq!(w.sqlite_leads(), [lead("sub_ttl", 1)]);
}

#[tokio::test]
async fn a_restarted_poller_resumes_from_its_checkpoint() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    w.deliver("sub_a");
    worker::drain(&w.poller(), &handler).await;
    w.deliver("sub_b");
    // A new poller (a restart) with the same checkpoint reads only what is new.
    let passes = worker::drain(&w.poller(), &handler).await;
    // sub_b's INSERT, and the MODIFY that marked it COMPLETED (a record the handler skips).
    let processed: usize = passes.iter().map(|p| p.processed).sum();
    assert_eq!(processed, 2, "{passes:?}");
    assert_eq!(w.sqlite_leads(), [lead("sub_a", 1), lead("sub_b", 1)], "sub_a was not replayed");
}

/// The text of a configuration check that found the configuration wrong (not unreachable).
fn wrong_config(error: CheckError) -> String {
    match error {
        CheckError::Wrong(problem) => problem,
        other => panic!("expected a wrong configuration, got {other:?}"),
    }
}

fn hubspot_config(standin: &HubSpotStandIn, token: &str, id_property: &str) -> SinkConfig {
    SinkConfig::HubSpot {
        token: token.into(),
        base_url: standin.server.url(),
        id_property: id_property.into(),
        pipeline: "0".into(),
        stage: "1".into(),
    }
}

#[tokio::test]
async fn hubspot_keeps_one_contact_per_person_and_one_ticket_per_submission() {
    let standin = HubSpotStandIn::start("pat-test", "static_forms_submission_id");
    let sink = Sink::connect(&hubspot_config(&standin, "pat-test", "static_forms_submission_id")).await.unwrap();
    sink.check_configuration().await.unwrap();
    // Two submissions from one person, each delivered twice.
    for id in ["sub_hs_1", "sub_hs_2", "sub_hs_1", "sub_hs_2"] {
        sink.upsert(&sample_lead(id), "k").await.unwrap();
    }
    {
        let state = standin.state.lock().unwrap();
        assert_eq!(state.contacts.len(), 1, "one contact per email");
        let (contact_id, contact) = state.contacts.iter().next().unwrap();
        assert_eq!(contact["email"], delivery::VISITOR_EMAIL);
        assert_eq!(
            (contact["firstname"].as_str(), contact["lastname"].as_str()),
            (Some("Ada"), Some("Integration-Lovelace"))
        );
        assert_eq!(state.tickets.len(), 2, "one ticket per submission");
        let ticket = &state.tickets["sub_hs_1"].1;
        assert_eq!(ticket["static_forms_submission_id"], "sub_hs_1");
        assert_eq!(ticket["content"], format!("{}\n\nOther answers:\nplan: pro", delivery::VISITOR_MESSAGE));
        assert_eq!((ticket["hs_pipeline"].as_str(), ticket["hs_pipeline_stage"].as_str()), (Some("0"), Some("1")));
        let expected: BTreeSet<(String, String)> =
            state.tickets.values().map(|(ticket, _)| (ticket.clone(), contact_id.clone())).collect();
        assert_eq!(state.associations, expected, "each ticket associated with the contact, once");
    }
    // A lead without an email is a ticket alone.
    let mut anonymous = sample_lead("sub_hs_anon");
    anonymous.email.clear();
    sink.upsert(&anonymous, "k").await.unwrap();
    assert_eq!(standin.state.lock().unwrap().contacts.len(), 1);
    assert!(standin.state.lock().unwrap().tickets.contains_key("sub_hs_anon"));
    // An email HubSpot refuses is this lead's problem (a 400 VALIDATION_ERROR naming the input): FAILED.
    // An email HubSpot refuses (a 400 VALIDATION_ERROR naming the input) costs the contact, not the submission:
    // the ticket is written with the email in its content. Even when what the visitor typed
    // reads like a configuration fault: only HubSpot's error codes decide, never messages.
    for (id, email) in
        [("sub_hs_bad", "not-an-email"), ("sub_hs_odd", "PROPERTY_DOESNT_EXIST does not exist, not unique")]
    {
        let mut bad_email = sample_lead(id);
        bad_email.email = email.into();
        sink.upsert(&bad_email, "k").await.unwrap();
        let state = standin.state.lock().unwrap();
        assert!(state.tickets[id].1["content"].as_str().unwrap().ends_with(&format!("(email as submitted: {email})")));
        assert_eq!(state.contacts.len(), 1, "no contact for a refused email");
    }
    // A message past HubSpot's 65,536-character property limit is cut to fit, not refused.
    let mut long = sample_lead("sub_hs_long");
    long.message = "m".repeat(100_000);
    sink.upsert(&long, "k").await.unwrap();
    let content = standin.state.lock().unwrap().tickets["sub_hs_long"].1["content"].as_str().unwrap().to_owned();
    assert_eq!(content.chars().count(), 65_536);
    assert!(content.ends_with('…'));
    // A second submission without a last name keeps the one the contact has.
    let mut first_name_only = sample_lead("sub_hs_short");
    first_name_only.name = "Ada".into();
    sink.upsert(&first_name_only, "k").await.unwrap();
    let state = standin.state.lock().unwrap();
    let contact = state.contacts.values().find(|c| c["email"] == delivery::VISITOR_EMAIL).unwrap();
    assert_eq!(contact["lastname"], "Integration-Lovelace");
    drop(state);
}

#[tokio::test]
async fn hubspot_rate_limits_outages_and_configuration_mistakes_are_retried_never_failed() {
    let standin = HubSpotStandIn::start("pat-test", "static_forms_submission_id");
    let sink = Sink::connect(&hubspot_config(&standin, "pat-test", "static_forms_submission_id")).await.unwrap();
    let lead = sample_lead("sub_hs_rl");
    standin.state.lock().unwrap().throttle_first = 1;
    assert_eq!(
        sink.upsert(&lead, "k").await,
        Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None })
    );
    standin.state.lock().unwrap().fail_first = 1;
    assert_eq!(
        sink.upsert(&lead, "k").await,
        Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None })
    );
    sink.upsert(&lead, "k").await.unwrap();
    // A token HubSpot refuses.
    let expired = Sink::connect(&hubspot_config(&standin, "expired", "static_forms_submission_id")).await.unwrap();
    assert_eq!(
        expired.upsert(&lead, "k").await,
        Err(SinkError::Retryable { reason: "sink_unauthorized", retry_after: None })
    );
    assert!(expired.check_configuration().await.map_err(wrong_config).unwrap_err().contains("HUBSPOT_TOKEN"));
    // A property that does not exist: refused at start, and retried (loudly) if it goes away.
    let misnamed = Sink::connect(&hubspot_config(&standin, "pat-test", "submission_id_typo")).await.unwrap();
    let problem = misnamed.check_configuration().await.map_err(wrong_config).unwrap_err();
    assert!(problem.contains("HUBSPOT_ID_PROPERTY") && problem.contains("does not exist"), "{problem}");
    assert_eq!(
        misnamed.upsert(&sample_lead("sub_hs_typo"), "k").await,
        Err(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None })
    );
    // A pipeline stage the portal does not have.
    let mut other_stage = hubspot_config(&standin, "pat-test", "static_forms_submission_id");
    if let SinkConfig::HubSpot { stage, .. } = &mut other_stage {
        *stage = "99".into();
    }
    let other_stage = Sink::connect(&other_stage).await.unwrap();
    let problem = other_stage.check_configuration().await.map_err(wrong_config).unwrap_err();
    assert!(problem.contains("HUBSPOT_TICKET_STAGE"), "{problem}");
    // HubSpot down at start: the check says it could not ask, and the worker would start.
    standin.state.lock().unwrap().fail_first = 1;
    assert!(matches!(sink.check_configuration().await, Err(CheckError::Unreachable(_))));
    // A property whose values are not unique cannot key anything.
    standin.state.lock().unwrap().ticket_property = Some(("static_forms_submission_id".into(), false));
    let problem = sink.check_configuration().await.map_err(wrong_config).unwrap_err();
    assert!(problem.contains("unique"), "{problem}");
    assert_eq!(
        sink.upsert(&sample_lead("sub_hs_dup"), "k").await,
        Err(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None })
    );
    assert_eq!(standin.state.lock().unwrap().tickets.len(), 1, "nothing written while misconfigured");
}

fn salesforce_config(standin: &SalesforceStandIn, secret: &str) -> SinkConfig {
    SinkConfig::Salesforce {
        instance_url: standin.server.url(),
        client_id: "sf-client".into(),
        client_secret: secret.into(),
        api_version: "60.0".into(),
        external_id_field: "Static_Forms_Submission_Id__c".into(),
    }
}

#[tokio::test]
async fn salesforce_creates_once_and_refuses_multiple_matches() {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", "Static_Forms_Submission_Id__c");
    let sink = Sink::connect(&salesforce_config(&standin, "sf-secret")).await.unwrap();
    let lead = sample_lead("sub_sf");
    sink.upsert(&lead, "k").await.unwrap(); // created
    sink.upsert(&lead, "k").await.unwrap(); // refused as a duplicate, found by the query
    {
        let state = standin.state.lock().unwrap();
        assert_eq!(state.leads.len(), 1);
        assert_eq!(state.leads["sub_sf"]["LastName"], "Integration-Lovelace");
        assert_eq!(state.leads["sub_sf"]["Company"], "[not provided]");
        assert_eq!(state.issued, 1, "one token for both calls");
    }
    // Values past the Lead's field lengths are cut to fit, and an email Salesforce would refuse
    // moves into the description: the Lead is written, not FAILED.
    let mut odd = sample_lead("sub_sf_long");
    odd.name = format!("{} {}", "F".repeat(60), "L".repeat(120));
    odd.message = "d".repeat(40_000);
    odd.email = "not an email".into();
    sink.upsert(&odd, "k").await.unwrap();
    {
        let state = standin.state.lock().unwrap();
        let written = &state.leads["sub_sf_long"];
        assert_eq!(written["FirstName"].as_str().unwrap().chars().count(), 40);
        assert_eq!(written["LastName"].as_str().unwrap().chars().count(), 80);
        assert_eq!(written["Description"].as_str().unwrap().chars().count(), 32_000);
        assert!(written["Email"].is_null());
    }
    let mut short = sample_lead("sub_sf_email");
    short.message = "hi".into();
    short.email = "not an email".into();
    sink.upsert(&short, "k").await.unwrap();
    assert_eq!(
        standin.state.lock().unwrap().leads["sub_sf_email"]["Description"],
        "hi\n\nOther answers:\nplan: pro\n\n(email as submitted: not an email)"
    );
    // An ID with characters a path or a SOQL literal must escape arrives as the same value, and
    // its replay finds it.
    for _ in 0..2 {
        sink.upsert(&sample_lead(r"sub/8fK2?x#y'z\+ é"), "k").await.unwrap();
    }
    assert!(standin.state.lock().unwrap().leads.contains_key(r"sub/8fK2?x#y'z\+ é"));
    assert_eq!(standin.state.lock().unwrap().queries, 2, "sub_sf's replay, then this one's: each query found its Lead");
    // An ID with white space around it, which Salesforce would trim away (so its replay would
    // never find it, and `sub_trim` would share its Lead): held as its digest.
    for id in [" sub_trim ", " sub_trim ", "sub_trim"] {
        sink.upsert(&sample_lead(id), "k").await.unwrap();
    }
    let digest = stream_worker::sink::salesforce::external_id(" sub_trim ").into_owned();
    assert!(digest.starts_with("sha256-"), "{digest}");
    {
        let state = standin.state.lock().unwrap();
        assert!(state.leads.contains_key(&digest) && state.leads.contains_key("sub_trim"));
        assert_eq!(state.queries, 3, "the replay of \" sub_trim \" found its Lead");
    }
    standin.state.lock().unwrap().ambiguous.insert("sub_dup".into());
    assert_eq!(
        sink.upsert(&sample_lead("sub_dup"), "k").await,
        Err(SinkError::Permanent { reason: "sink_multiple_matches" })
    );
}

#[tokio::test]
async fn salesforce_fetches_a_new_token_once_when_the_session_expires() {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", "Static_Forms_Submission_Id__c");
    let sink = Sink::connect(&salesforce_config(&standin, "sf-secret")).await.unwrap();
    sink.upsert(&sample_lead("sub_a"), "k").await.unwrap();
    // The session times out mid-run: the next call gets 401, logs in again, and succeeds.
    standin.expire_tokens();
    sink.upsert(&sample_lead("sub_b"), "k").await.unwrap();
    assert_eq!(standin.state.lock().unwrap().issued, 2);
    assert_eq!(standin.state.lock().unwrap().leads.len(), 2);
    // Wrong client credentials: a configuration fault, retried (loudly), never a FAILED lead.
    let wrong = Sink::connect(&salesforce_config(&standin, "not-the-secret")).await.unwrap();
    assert_eq!(
        wrong.upsert(&sample_lead("sub_c"), "k").await,
        Err(SinkError::Retryable { reason: "sink_login_refused", retry_after: None })
    );
    assert!(!standin.state.lock().unwrap().leads.contains_key("sub_c"));
    assert!(wrong.check_configuration().await.map_err(wrong_config).unwrap_err().contains("SALESFORCE_CLIENT_ID"));
}

#[tokio::test]
async fn salesforce_configuration_mistakes_are_caught_at_start_and_retried_never_failed() {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", "Static_Forms_Submission_Id__c");
    let sink = Sink::connect(&salesforce_config(&standin, "sf-secret")).await.unwrap();
    sink.check_configuration().await.unwrap();
    // A field name the org does not have: refused at start; the creates answer 400
    // INVALID_FIELD, which is the configuration, not the lead.
    let mut misnamed = salesforce_config(&standin, "sf-secret");
    if let SinkConfig::Salesforce { external_id_field, .. } = &mut misnamed {
        *external_id_field = "Typo__c".into();
    }
    let misnamed = Sink::connect(&misnamed).await.unwrap();
    assert!(misnamed.check_configuration().await.map_err(wrong_config).unwrap_err().contains("no field \"Typo__c\""));
    assert_eq!(
        misnamed.upsert(&sample_lead("sub_typo"), "k").await,
        Err(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None })
    );
    // A custom field the org made Required without a default: unless a flow of the org's fills
    // it, no Lead can be created, each retried as the org's setup. Named at start (the worker
    // starts all the same); the standard required fields (LastName, Company, always filled) and
    // those the org fills (the owner, the status) are not named.
    standin.state.lock().unwrap().required_fields.insert("Region__c");
    assert_eq!(
        sink.upsert(&sample_lead("sub_required"), "k").await,
        Err(SinkError::Retryable { reason: "sink_org_required_field", retry_after: None })
    );
    let Err(CheckError::Doubtful(text)) = sink.check_configuration().await else { panic!("Region__c must be named") };
    assert!(text.contains("\"Region__c\"") && text.contains("requires"), "{text}");
    for filled in ["LastName", "Company", "OwnerId", "Status", "IsConverted", "Static_Forms_Submission_Id__c"] {
        assert!(!text.contains(&format!("{filled:?}")), "{filled}: {text}");
    }
    standin.state.lock().unwrap().required_fields.clear();
    sink.check_configuration().await.unwrap();
    // A field that exists but is not an External ID.
    standin.state.lock().unwrap().field_not_external = true;
    assert!(sink.check_configuration().await.map_err(wrong_config).unwrap_err().contains("is not an External ID"));
}

#[tokio::test]
async fn the_webhook_sink_posts_the_lead_with_the_receipt_key() {
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    let server = tests::stub_http::StubServer::start(move |request| {
        log.lock().unwrap().push(request.clone());
        tests::stub_http::StubResponse::json(if request.body.is_empty() { 400 } else { 200 }, serde_json::json!({}))
    });
    let secret = SigningSecret::parse(&delivery::signing_secret()).unwrap();
    let config = SinkConfig::Webhook { url: format!("{}/leads", server.url()), secret: secret.clone() };
    let sink = Sink::connect(&config).await.unwrap();
    sink.upsert(&sample_lead("sub_wh"), "staticforms:form.submitted:sub_wh").await.unwrap();
    let requests = seen.lock().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("POST", "/leads"));
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    assert_eq!(requests[0].header("idempotency-key"), Some("staticforms:form.submitted:sub_wh"));
    assert_eq!(requests[0].header("webhook-id"), Some(stream_worker::sink::webhook::message_id("sub_wh").as_str()));
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["externalId"], "sub_wh");
    // The receiver verifies it as any Standard Webhooks receiver would: with the reference
    // verifier, and with this project's own.
    let headers: Vec<(String, String)> = requests[0].headers.clone();
    let mut map = http::HeaderMap::new();
    for (name, value) in &headers {
        map.insert(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
    }
    standardwebhooks::Webhook::new(&delivery::signing_secret()).unwrap().verify(&requests[0].body, &map).unwrap();
    let policy = shared::auth::AuthPolicy { signing_secrets: vec![secret], ..Default::default() };
    let now = delivery::now_secs() as i64;
    assert!(policy.authenticate(&shared::headers::Headers::new(headers.clone()), &requests[0].body, now).is_ok());
    let forged = format!("{{{}", String::from_utf8_lossy(&requests[0].body));
    assert!(policy.authenticate(&shared::headers::Headers::new(headers), forged.as_bytes(), now).is_err());
}

#[tokio::test]
async fn http_sinks_never_follow_redirects() {
    // A redirect to a server that answers 200 to anything: following it (and turning the POST
    // into a GET) would mark the receipt COMPLETED with no lead written.
    let landed = std::sync::Arc::new(Mutex::new(0));
    let count = std::sync::Arc::clone(&landed);
    let target = tests::stub_http::StubServer::start(move |_| {
        *count.lock().unwrap() += 1;
        tests::stub_http::StubResponse::json(200, serde_json::json!({}))
    });
    let location = format!("{}/elsewhere", target.url());
    for status in [301, 302, 303, 307, 308] {
        let location = location.clone();
        let redirecting = tests::stub_http::StubServer::start(move |_| {
            let mut response = tests::stub_http::StubResponse::json(status, serde_json::json!({}));
            response.headers = vec![("Location".into(), location.clone())];
            response
        });
        let secret = SigningSecret::parse(&delivery::signing_secret()).unwrap();
        let sink =
            Sink::connect(&SinkConfig::Webhook { url: format!("{}/leads", redirecting.url()), secret }).await.unwrap();
        let result = sink.upsert(&sample_lead("sub_redirect"), "staticforms:form.submitted:sub_redirect").await;
        assert_eq!(result, Err(SinkError::Retryable { reason: "sink_redirected", retry_after: None }), "{status}");
    }
    assert_eq!(*landed.lock().unwrap(), 0, "no redirect was followed");
}

/// A sink that refuses every lead for good.
struct RefusingSink;

impl LeadSink for RefusingSink {
    async fn upsert(&self, _lead: &Lead, _key: &str) -> Result<(), SinkError> {
        Err(SinkError::Permanent { reason: "sink_rejected" })
    }
}

#[tokio::test]
async fn a_redelivered_record_never_turns_a_completed_receipt_into_failed() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    w.deliver("sub_done");
    worker::drain(
        &w.poller(),
        &Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() },
    )
    .await;
    assert_eq!(w.status("sub_done"), Some(("COMPLETED".into(), None)));
    // The stream delivers the INSERT again; this time the sink refuses the lead. The update
    // against the real store must not apply: the receipt is no longer RECEIVED.
    std::fs::remove_file(w.dir.0.join("checkpoint.json")).unwrap();
    worker::drain(
        &w.poller(),
        &Handler {
            backoff: Default::default(),
            mapping: Default::default(),
            sink: RefusingSink,
            receipts: w.receipts(),
        },
    )
    .await;
    assert_eq!(w.status("sub_done"), Some(("COMPLETED".into(), None)));
    // A receipt still RECEIVED is marked FAILED by the same sink, so the update itself works.
    w.deliver("sub_refused");
    worker::drain(
        &w.poller(),
        &Handler {
            backoff: Default::default(),
            mapping: Default::default(),
            sink: RefusingSink,
            receipts: w.receipts(),
        },
    )
    .await;
    assert_eq!(w.status("sub_refused"), Some(("FAILED".into(), Some("sink_rejected".into()))));
    // Each verdict has its own time: completedAt for a lead written, failedAt for one never.
    let done = w.store.get(TABLE, &delivery::key("sub_done")).unwrap();
    assert!(done["completedAt"]["S"].is_string() && done["failedAt"].is_null(), "{done}");
    let refused = w.store.get(TABLE, &delivery::key("sub_refused")).unwrap();
    assert!(refused["failedAt"]["S"].is_string() && refused["completedAt"].is_null(), "{refused}");
    // The real update tells "already finished" from "gone".
    let received_at = done["receivedAt"]["S"].as_str().unwrap().to_owned();
    let receipts = w.receipts();
    let now = "2026-11-30T07:00:00.000Z";
    let key = delivery::key("sub_done");
    assert_eq!(receipts.mark(&key, &received_at, Mark::Failed("x"), now).await, Ok(Marked::AlreadyFinished));
    assert_eq!(receipts.mark(&key, "2020-01-01T00:00:00.000Z", Mark::Completed, now).await, Ok(Marked::Gone));
    assert_eq!(receipts.mark(&delivery::key("sub_never"), &received_at, Mark::Completed, now).await, Ok(Marked::Gone));
    assert_eq!(w.status("sub_done"), Some(("COMPLETED".into(), None)));
}

#[tokio::test]
async fn the_poller_refuses_a_stream_without_new_images() {
    let w = world().await;
    w.store.ok(
        "DynamoDB_20120810.CreateTable",
        &serde_json::json!({
            "TableName": "keys-only",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}
        }),
    );
    let keys_only = tests::aws::sdk_config(&w.store, &w.store.worker_access_key("keys-only", "keys-only")).await;
    let poller = worker::poller(&keys_only, "keys-only", w.dir.0.join("other-checkpoint.json"));
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    let error = poller.run(&handler, Duration::from_millis(10), std::future::pending()).await.unwrap_err();
    assert!(format!("{error:#}").contains("must carry new images"), "{error:#}");
    assert!(format!("{error:#}").contains("KEYS_ONLY"), "{error:#}");
    // The receipts table, with new and old images, is accepted.
    w.poller().check_stream().await.unwrap();
}

/// Upserts one lead through a PostgreSQL sink configured by `url` (and `ca_file`).
async fn postgres_upsert(url: &str, ca_file: Option<String>, id: &str) -> Result<(), SinkError> {
    let target = PostgresTarget::parse(url, ca_file).unwrap();
    let sink = Sink::connect(&SinkConfig::Postgres { target }).await.unwrap();
    sink.upsert(&sample_lead(id), "k").await
}

#[tokio::test]
async fn postgres_over_tls_with_sslmode_as_libpq_users_know_it() {
    // The server takes TLS only (hostssl), with a certificate from a test CA.
    let postgres = Postgres::start_tls();
    let ca = postgres.ca_file.as_ref().unwrap().display().to_string();
    let base = postgres.url_by_name();
    // verify-full with the private CA: the chain and the name check out.
    postgres_upsert(&format!("{base}?sslmode=verify-full&sslrootcert={ca}"), None, "sub_tls_1").await.unwrap();
    postgres_upsert(&format!("{base}?sslmode=verify-full"), Some(ca.clone()), "sub_tls_2").await.unwrap();
    // require: encrypted, the certificate not checked.
    postgres_upsert(&format!("{base}?sslmode=require"), None, "sub_tls_3").await.unwrap();
    // verify-full without the CA: the system's roots do not know it, so no connection. A
    // configuration fault: retried, never a FAILED lead.
    let unknown_ca = postgres_upsert(&format!("{base}?sslmode=verify-full"), None, "sub_tls_x").await;
    assert_eq!(unknown_ca, Err(SinkError::Retryable { reason: "sink_tls_failed", retry_after: None }));
    // verify-full to a name the certificate does not hold (it names localhost, not 127.0.0.1).
    let by_address = postgres.url();
    let refused =
        postgres_upsert(&format!("{by_address}?sslmode=verify-full&sslrootcert={ca}"), None, "sub_tls_y").await;
    assert_eq!(refused, Err(SinkError::Retryable { reason: "sink_tls_failed", retry_after: None }));
    // require with the CA (libpq's verify-ca): the chain is checked, the name is not.
    postgres_upsert(&format!("{by_address}?sslmode=require&sslrootcert={ca}"), None, "sub_tls_4").await.unwrap();
    // require with another CA: the server's chain does not lead to it, so no connection.
    let other = TempDir::new("other-ca");
    tests::postgres::make_certificates(&other.0);
    let other_ca = other.0.join("ca.crt").display().to_string();
    let wrong_ca =
        postgres_upsert(&format!("{by_address}?sslmode=require&sslrootcert={other_ca}"), None, "sub_tls_w").await;
    assert_eq!(wrong_ca, Err(SinkError::Retryable { reason: "sink_tls_failed", retry_after: None }));
    // disable: the server refuses plain TCP.
    let plain = postgres_upsert(&format!("{base}?sslmode=disable"), None, "sub_tls_z").await;
    // pg_hba has no entry for a plain connection: 28000, refused credentials.
    assert_eq!(plain, Err(SinkError::Retryable { reason: "sink_unauthorized", retry_after: None }));
    let reader = PostgresTarget::parse(&format!("{}?sslmode=require", postgres.url()), None).unwrap();
    let client = reader.connect().await.unwrap();
    let rows = client.query("SELECT external_id FROM leads ORDER BY external_id", &[]).await.unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, ["sub_tls_1", "sub_tls_2", "sub_tls_3", "sub_tls_4"]);
}

#[tokio::test]
async fn a_postgres_server_that_never_answers_times_out_and_is_retried() {
    // A listener nobody accepts from: the kernel completes the TCP handshake and then nothing
    // answers, as with a hung server or a black-holed route.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The reason says which timeout ended it (timings are for benchmarks, not pass/fail tests).
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let result = postgres_upsert(&url, None, "sub_hang").await;
    assert_eq!(result, Err(SinkError::Retryable { reason: "sink_timeout", retry_after: None }));
    drop(listener);
    // The sink does not connect at all until it has a lead: setting it up needs no server.
    let target = PostgresTarget::parse("postgres://postgres@127.0.0.1:9/postgres", None).unwrap();
    assert!(Sink::connect(&SinkConfig::Postgres { target }).await.is_ok());
}

#[tokio::test]
async fn a_statement_that_waits_past_the_statement_timeout_is_retried_and_the_next_lead_goes_through() {
    let postgres = Postgres::start();
    let target = PostgresTarget::parse(&postgres.url(), None).unwrap();
    let sink = Sink::connect(&SinkConfig::Postgres { target: target.clone() }).await.unwrap();
    sink.upsert(&sample_lead("sub_lock_0"), "k").await.unwrap();
    // Another session holds the table: the upsert waits, and the server ends it.
    let holder = target.connect().await.unwrap();
    holder.batch_execute("BEGIN; LOCK TABLE leads IN ACCESS EXCLUSIVE MODE").await.unwrap();
    let blocked = sink.upsert(&sample_lead("sub_lock_1"), "k").await;
    assert_eq!(blocked, Err(SinkError::Retryable { reason: "sink_timeout", retry_after: None }));
    holder.batch_execute("ROLLBACK").await.unwrap();
    sink.upsert(&sample_lead("sub_lock_1"), "k").await.unwrap();
    let rows = holder.query("SELECT external_id FROM leads ORDER BY external_id", &[]).await.unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, ["sub_lock_0", "sub_lock_1"]);
}

#[tokio::test]
async fn a_receipt_is_read_by_its_key_from_the_real_table() {
    let w = world().await;
    let key = w.deliver("sub_get");
    let receipts = w.receipts();
    let item = receipts.get(&key).await.unwrap().expect("the receipt is there");
    let read = shared::receipt::Receipt::from_item(&item).unwrap();
    assert_eq!(read.submission_id, "sub_get");
    assert_eq!(read.status, shared::receipt::ReceiptStatus::Received);
    assert_eq!(receipts.get(&delivery::key("sub_missing")).await.unwrap(), None);
}

#[tokio::test]
async fn a_trimmed_checkpoint_restarts_at_the_trim_horizon_instead_of_failing_forever() {
    let w = world().await;
    let path = w.sqlite_path();
    w.deliver("sub_trim_1");
    w.deliver("sub_trim_2");
    let sink = Sink::connect(&SinkConfig::Sqlite { path: path.clone() }).await.unwrap();
    worker::drain(
        &w.poller(),
        &Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() },
    )
    .await;
    assert_eq!(w.sqlite_leads().len(), 2);
    // The worker was down longer than the stream keeps records: its checkpoint is trimmed.
    let proxy = tests::proxy::FaultProxy::start(w.store.port);
    proxy.set(tests::proxy::Mode::AnswerWhen(
        "AFTER_SEQUENCE_NUMBER".into(),
        400,
        r#"{"__type":"com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException","message":"trimmed"}"#.into(),
    ));
    let through_proxy = sdk_config_at(&proxy.endpoint(), &w.store.worker_access_key("trimmed", worker::TABLE)).await;
    let poller = worker::poller(&through_proxy, TABLE, w.dir.0.join("checkpoint.json"));
    let sink = Sink::connect(&SinkConfig::Sqlite { path }).await.unwrap();
    let passes = worker::drain(
        &poller,
        &Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() },
    )
    .await;
    // It went on from the oldest record still there, rather than failing every pass: both
    // inserts came again (and found their receipts finished: nothing written twice).
    assert!(passes.iter().all(|p| p.failed_batches == 0), "{passes:?}");
    assert!(passes.iter().map(|p| p.processed).sum::<usize>() >= 2, "{passes:?}");
    let leads = w.sqlite_leads();
    assert_eq!(leads.iter().map(|l| (l.0.as_str(), l.2)).collect::<Vec<_>>(), [("sub_trim_1", 1), ("sub_trim_2", 1)]);
}

#[tokio::test]
async fn a_second_poller_on_the_same_checkpoint_refuses_to_start() {
    let w = world().await;
    let (stop_first, stopped) = tokio::sync::oneshot::channel::<()>();
    let first = w.poller();
    let second = w.poller();
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    let running = first.run(&handler, Duration::from_millis(20), async {
        let _ = stopped.await;
    });
    let trying = async {
        // Let the first take the lock, then try the second.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let refused = second.run(&handler, Duration::from_millis(20), async {}).await;
        let _ = stop_first.send(());
        refused
    };
    let (first_result, refused) = tokio::join!(running, trying);
    first_result.unwrap();
    let message = format!("{:#}", refused.unwrap_err());
    assert!(message.contains("another poller"), "{message}");
    // Once the first has stopped, the lock is free again.
    second.run(&handler, Duration::from_millis(20), async {}).await.unwrap();
}

/// A sink that records upserts and refuses the IDs in `busy` as retryable.
#[derive(Default)]
struct BusySink {
    upserts: Mutex<Vec<String>>,
    busy: Mutex<BTreeSet<String>>,
}

impl LeadSink for BusySink {
    async fn upsert(&self, lead: &Lead, _key: &str) -> Result<(), SinkError> {
        if self.busy.lock().unwrap().contains(&lead.external_id) {
            return Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None });
        }
        self.upserts.lock().unwrap().push(lead.external_id.clone());
        Ok(())
    }
}

/// Receipts that are always still there and RECEIVED.
struct AcceptingReceipts;

impl ReceiptStore for AcceptingReceipts {
    async fn get(
        &self,
        _key: &str,
    ) -> Result<Option<shared::dynamo::Item>, stream_worker::receipts::ReceiptStoreError> {
        Ok(None)
    }

    async fn mark(
        &self,
        _key: &str,
        _at: &str,
        _mark: Mark<'_>,
        _now: &str,
    ) -> Result<Marked, stream_worker::receipts::ReceiptStoreError> {
        Ok(Marked::Done)
    }
}

/// A receipt's item as wire JSON, as a stream record's image carries it.
fn image(id: &str) -> Value {
    let item = receipt(&delivery::body(id, delivery::VISITOR_MESSAGE, 1), now_millis()).to_item();
    serde_json::from_str(&shared::dynamo::item_to_wire(&item).to_text()).unwrap()
}

/// A poller reading the Streams stand-in serving `shards`, with a checkpoint in its own folder.
async fn standin_poller(shards: Vec<tests::streams_standin::Shard>) -> (tests::stub_http::StubServer, Poller, TempDir) {
    let server = tests::streams_standin::start(shards);
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(server.url())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::new("AKID", "secret", None, None, "tests"))
        .load()
        .await;
    let dir = TempDir::new("standin");
    let poller = worker::poller(&config, TABLE, dir.0.join("checkpoint.json"));
    (server, poller, dir)
}

#[tokio::test]
async fn across_a_shard_split_the_child_waits_until_its_parent_is_past_a_failure() {
    use tests::streams_standin::Shard;
    let shards = vec![
        Shard {
            id: "shard-parent".into(),
            parent: None,
            records: vec![("101".into(), image("sub_split_1")), ("102".into(), image("sub_split_2"))],
            closed: true,
        },
        Shard {
            id: "shard-child".into(),
            parent: Some("shard-parent".into()),
            records: vec![("201".into(), image("sub_split_3"))],
            closed: false,
        },
    ];
    let (_server, poller, dir) = standin_poller(shards).await;
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BusySink::default(),
        receipts: AcceptingReceipts,
    };
    // The parent's second record fails: its child must not be read past it.
    handler.sink.busy.lock().unwrap().insert("sub_split_2".into());
    let pass = poller.pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 1);
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_split_1"], "the child waited");
    let checkpoint: Value = serde_json::from_slice(&std::fs::read(dir.0.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(checkpoint["shards"]["shard-parent"]["after"], "101", "saved after the batch, before the failure");
    assert!(checkpoint["shards"]["shard-child"].is_null());
    // Once the parent's record goes through, the parent finishes and then its child is read.
    handler.sink.busy.lock().unwrap().clear();
    worker::drain(&poller, &handler).await;
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_split_1", "sub_split_2", "sub_split_3"]);
    let checkpoint: Value = serde_json::from_slice(&std::fs::read(dir.0.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(checkpoint["shards"]["shard-parent"]["done"], true);
}

#[tokio::test]
async fn an_empty_page_inside_a_shard_is_passed_on_the_next_pass_not_met_again() {
    use tests::streams_standin::{Shard, EMPTY_PAGE};
    let records =
        vec![("301".into(), image("sub_gap_1")), (EMPTY_PAGE.into(), Value::Null), ("302".into(), image("sub_gap_2"))];
    let shards = vec![Shard { id: "shard-open".into(), parent: None, records, closed: false }];
    let (_server, poller, _dir) = standin_poller(shards).await;
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BusySink::default(),
        receipts: AcceptingReceipts,
    };
    // The first pass ends at the empty page; the second goes on from its NextShardIterator. A
    // poller that started again from the checkpoint would meet the empty page every time.
    for _ in 0..3 {
        poller.pass(&handler).await.unwrap();
    }
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_gap_1", "sub_gap_2"]);
}

/// Every column of one lead row, as text (SQLite and PostgreSQL alike).
type LeadRow = Vec<(String, String)>;

const LEAD_COLUMNS: [&str; 8] =
    ["external_id", "name", "email", "message", "extra", "created_at", "updated_at", "upsert_count"];

fn sqlite_row(path: &str, id: &str) -> LeadRow {
    let connection = rusqlite::Connection::open(path).unwrap();
    let sql = format!("SELECT {} FROM leads WHERE external_id = ?1", LEAD_COLUMNS.join(", "));
    connection
        .query_row(&sql, [id], |row| {
            Ok(LEAD_COLUMNS
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let value = match row.get_ref(i).unwrap() {
                        rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                        other => other.as_str().unwrap().to_owned(),
                    };
                    (c.to_string(), value)
                })
                .collect())
        })
        .unwrap()
}

async fn postgres_row(url: &str, id: &str) -> LeadRow {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let columns: Vec<String> = LEAD_COLUMNS.iter().map(|c| format!("{c}::text")).collect();
    let sql = format!("SELECT {} FROM leads WHERE external_id = $1", columns.join(", "));
    let row = client.query_one(&sql, &[&id]).await.unwrap();
    LEAD_COLUMNS.iter().enumerate().map(|(i, c)| (c.to_string(), row.get::<_, String>(i))).collect()
}

fn column<'a>(row: &'a LeadRow, name: &str) -> &'a str {
    &row.iter().find(|(c, _)| c == name).unwrap().1
}

/// A lead whose every field differs from `sample_lead(id)`'s.
fn changed_lead(id: &str) -> Lead {
    let mut lead = sample_lead(id);
    lead.name = "Grace Hopper".into();
    lead.email = "grace@example.com".into();
    lead.message = "Second thoughts".into();
    lead.extra = [("plan".to_owned(), shared::json::Json::String("team".into()))].into_iter().collect();
    lead
}

/// docs/sinks.md: a redelivery with changed content updates every column but `created_at`, and counts.
async fn assert_redelivery_updates_every_column(before: LeadRow, after: LeadRow) {
    assert_eq!(column(&before, "upsert_count"), "1", "{before:?}");
    assert_eq!(column(&after, "upsert_count"), "2", "{after:?}");
    assert_eq!(column(&after, "external_id"), column(&before, "external_id"));
    assert_eq!(column(&after, "name"), "Grace Hopper");
    assert_eq!(column(&after, "email"), "grace@example.com");
    assert_eq!(column(&after, "message"), "Second thoughts");
    let extra: Value = serde_json::from_str(column(&after, "extra")).unwrap();
    assert_eq!(extra, serde_json::json!({"plan": "team"}), "the old extra fields are replaced, not merged");
    assert_eq!(column(&after, "created_at"), column(&before, "created_at"), "created_at is the first write's");
    assert_ne!(column(&after, "updated_at"), column(&before, "updated_at"), "updated_at moves");
    assert!(column(&after, "updated_at") > column(&after, "created_at"), "{after:?}");
}

#[tokio::test]
async fn a_redelivery_with_changed_content_updates_every_sql_column_sqlite() {
    let dir = TempDir::new("columns");
    let path = dir.0.join("leads.db").display().to_string();
    let sink = Sink::connect(&SinkConfig::Sqlite { path: path.clone() }).await.unwrap();
    sink.upsert(&sample_lead("sub_cols"), "k").await.unwrap();
    let before = sqlite_row(&path, "sub_cols");
    assert_eq!(column(&before, "email"), delivery::VISITOR_EMAIL);
    tokio::time::sleep(Duration::from_millis(5)).await;
    sink.upsert(&changed_lead("sub_cols"), "k").await.unwrap();
    assert_redelivery_updates_every_column(before, sqlite_row(&path, "sub_cols")).await;
}

#[tokio::test]
async fn a_redelivery_with_changed_content_updates_every_sql_column_postgres() {
    let postgres = Postgres::start();
    let target = PostgresTarget::parse(&postgres.url(), None).unwrap();
    let sink = Sink::connect(&SinkConfig::Postgres { target }).await.unwrap();
    sink.upsert(&sample_lead("sub_cols"), "k").await.unwrap();
    let before = postgres_row(&postgres.url(), "sub_cols").await;
    assert_eq!(column(&before, "email"), delivery::VISITOR_EMAIL);
    sink.upsert(&changed_lead("sub_cols"), "k").await.unwrap();
    assert_redelivery_updates_every_column(before, postgres_row(&postgres.url(), "sub_cols").await).await;
}

#[tokio::test]
async fn the_received_at_guard_holds_against_the_real_store() {
    let w = world().await;
    let key = w.deliver("sub_guard");
    let receipts = w.receipts();
    let now = "2026-11-30T07:00:00.000Z";
    // A record of an older receipt under the same key (since expired and replaced): the
    // receipt is still RECEIVED, but it is not the one the record saw.
    assert_eq!(receipts.mark(&key, "2020-01-01T00:00:00.000Z", Mark::Completed, now).await, Ok(Marked::Gone));
    assert_eq!(receipts.mark(&key, "2020-01-01T00:00:00.000Z", Mark::Failed("x"), now).await, Ok(Marked::Gone));
    let item = w.store.get(TABLE, &key).unwrap();
    assert_eq!(item["status"]["S"], "RECEIVED", "{item}");
    assert!(item["completedAt"].is_null() && item["failedAt"].is_null(), "{item}");
    assert!(item["pendingShard"]["S"].is_string(), "still in the index of waiting receipts: {item}");
    // The receipt's own receivedAt moves it, and takes it out of the waiting index.
    let received_at = item["receivedAt"]["S"].as_str().unwrap().to_owned();
    assert_eq!(receipts.mark(&key, &received_at, Mark::Completed, now).await, Ok(Marked::Done));
    let item = w.store.get(TABLE, &key).unwrap();
    assert_eq!((item["status"]["S"].as_str(), item["completedAt"]["S"].as_str()), (Some("COMPLETED"), Some(now)));
    assert!(item["pendingShard"].is_null(), "{item}");
    // Marked FAILED, a receipt leaves the waiting index too.
    let failing = w.deliver("sub_guard_failed");
    let item = w.store.get(TABLE, &failing).unwrap();
    assert!(item["pendingShard"]["S"].is_string(), "{item}");
    let received_at = item["receivedAt"]["S"].as_str().unwrap().to_owned();
    assert_eq!(receipts.mark(&failing, &received_at, Mark::Failed("sink_rejected"), now).await, Ok(Marked::Done));
    let item = w.store.get(TABLE, &failing).unwrap();
    assert_eq!(
        (item["status"]["S"].as_str(), item["failureReason"]["S"].as_str()),
        (Some("FAILED"), Some("sink_rejected"))
    );
    assert!(item["pendingShard"].is_null(), "a FAILED receipt is not waiting: {item}");
    // It is in the index of FAILED receipts (the alarm's gauge), by the same shard digit; a
    // COMPLETED one is not.
    assert_eq!(item["failedShard"]["S"].as_str(), Some(shared::receipt::pending_shard(&failing).as_str()), "{item}");
    assert!(w.store.get(TABLE, &key).unwrap()["failedShard"].is_null());
}

/// A store error body as DynamoDB's JSON protocol writes it.
fn store_error(kind: &str) -> String {
    format!(r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{kind}","message":"injected"}}"#)
}

#[tokio::test]
async fn store_faults_on_the_receipt_update_leave_it_waiting_and_the_record_retried() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    // The poller reads the stream directly; the receipt updates go through the proxy.
    let proxy = tests::proxy::FaultProxy::start(w.store.port);
    let through_proxy = sdk_config_at(&proxy.endpoint(), &w.store.worker_access_key("faults", worker::TABLE)).await;
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink,
        receipts: worker::receipts(&through_proxy, TABLE),
    };
    let poller = w.poller();
    w.deliver("sub_fault");
    for (status, body) in [
        (500, store_error("InternalServerError")),
        (400, store_error("ProvisionedThroughputExceededException")),
        (400, store_error("ThrottlingException")),
    ] {
        proxy.set(tests::proxy::Mode::AnswerWhen("UpdateItem".into(), status, body.clone()));
        let pass = poller.pass(&handler).await.unwrap();
        // The lead is written, the receipt is not marked: the record is reported for a retry.
        assert_eq!((pass.processed, pass.failed_batches), (0, 1), "{body}: {pass:?}");
        assert_eq!(w.status("sub_fault"), Some(("RECEIVED".into(), None)), "{body}");
    }
    assert_eq!(w.sqlite_leads(), [lead("sub_fault", 3)], "one lead, upserted once per attempt");
    // The store writes the update, but its answer is lost: the retry finds it already done.
    proxy.set(tests::proxy::Mode::DropResponse { times: 1 });
    worker::drain(&poller, &handler).await;
    assert_eq!(w.status("sub_fault"), Some(("COMPLETED".into(), None)));
    assert_eq!(w.sqlite_leads(), [lead("sub_fault", 4)]);
    // A store that hangs: the operation timeout ends the call, and the record waits.
    w.deliver("sub_hang");
    proxy.set(tests::proxy::Mode::Hang);
    let started = std::time::Instant::now();
    let pass = poller.pass(&handler).await.unwrap();
    assert_eq!(pass.failed_batches, 1, "{pass:?}");
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    assert_eq!(w.status("sub_hang"), Some(("RECEIVED".into(), None)));
    proxy.set(tests::proxy::Mode::PassThrough);
    worker::drain(&poller, &handler).await;
    assert_eq!(w.status("sub_hang"), Some(("COMPLETED".into(), None)));
}

#[tokio::test]
async fn the_poller_ignores_the_checkpoint_of_another_stream() {
    let w = world().await;
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    w.deliver("sub_arn");
    worker::drain(&w.poller(), &handler).await;
    assert_eq!(w.sqlite_leads(), [lead("sub_arn", 1)]);
    // The same shard positions, saved for another stream (the table was recreated): they say
    // nothing about this stream, which is read again from its start.
    let path = w.dir.0.join("checkpoint.json");
    let mut checkpoint: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(checkpoint["shards"].as_object().is_some_and(|s| !s.is_empty()), "{checkpoint}");
    checkpoint["streamArn"] =
        Value::from("arn:aws:dynamodb:us-east-1:000000000000:table/old/stream/2020-01-01T00:00:00.000");
    std::fs::write(&path, checkpoint.to_string()).unwrap();
    let passes = worker::drain(&w.poller(), &handler).await;
    let replayed: usize = passes.iter().map(|p| p.processed).sum();
    assert!(replayed > 0, "replayed from the start: {passes:?}");
    assert_eq!(w.sqlite_leads(), [lead("sub_arn", 1)], "found finished, not written again");
    // With its own stream's checkpoint, nothing is replayed.
    let passes = worker::drain(&w.poller(), &handler).await;
    assert_eq!(passes.iter().map(|p| p.processed).sum::<usize>(), 0, "{passes:?}");
}

#[tokio::test]
async fn the_poller_survives_passes_that_fail_and_goes_on_when_the_store_is_back() {
    let w = world().await;
    let proxy = tests::proxy::FaultProxy::start(w.store.port);
    let through_proxy = sdk_config_at(&proxy.endpoint(), &w.store.worker_access_key("outage", worker::TABLE)).await;
    let poller = worker::poller(&through_proxy, TABLE, w.dir.0.join("checkpoint.json"));
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.sqlite_path() }).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = poller.run(&handler, Duration::from_millis(20), async {
        let _ = stopped.await;
    });
    let world = &w;
    let outage = async {
        let wait_for = |id: &'static str| async move {
            for _ in 0..300 {
                if world.sqlite_leads().iter().any(|l| l.0 == id) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("no lead for {id} within 30 s");
        };
        w.deliver("sub_before");
        wait_for("sub_before").await;
        // The stream is unreachable for a while: passes fail, the poller keeps going.
        proxy.set(tests::proxy::Mode::Refuse);
        let refused = proxy.accepted.load(std::sync::atomic::Ordering::Relaxed);
        w.deliver("sub_during");
        for _ in 0..100 {
            if proxy.accepted.load(std::sync::atomic::Ordering::Relaxed) >= refused + 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(proxy.accepted.load(std::sync::atomic::Ordering::Relaxed) >= refused + 3, "the poller stopped trying");
        proxy.set(tests::proxy::Mode::PassThrough);
        wait_for("sub_during").await;
        stop.send(()).unwrap();
    };
    let (result, ()) = tokio::join!(run, outage);
    result.unwrap();
    assert_eq!(w.sqlite_leads(), [lead("sub_before", 1), lead("sub_during", 1)]);
}

#[tokio::test]
async fn the_stream_worker_s_key_holds_exactly_its_role_s_statements() {
    // The key every stream worker test signs with is template.yaml's StreamWorkerRole (plus
    // DescribeTable for poll mode): what the worker does passes, a call it does not make
    // (a scan, a put, a query of the index) is refused, as the deployed role would refuse it.
    let w = world().await;
    w.deliver("sub_role");
    let client = aws_sdk_dynamodb::Client::new(&w.config);
    let key = aws_sdk_dynamodb::types::AttributeValue::S(delivery::key("sub_role"));
    let read = client.get_item().table_name(TABLE).key("pk", key.clone()).consistent_read(true).send().await;
    assert!(read.unwrap().item.is_some());
    let denied = |what: &str, error: String| assert!(error.contains("AccessDenied"), "{what}: {error}");
    denied("Scan", format!("{:?}", client.scan().table_name(TABLE).send().await.unwrap_err()));
    let item = std::collections::HashMap::from([("pk".to_owned(), key)]);
    denied(
        "PutItem",
        format!("{:?}", client.put_item().table_name(TABLE).set_item(Some(item)).send().await.unwrap_err()),
    );
    let query = client
        .query()
        .table_name(TABLE)
        .index_name("pending")
        .key_condition_expression("pendingShard = :s")
        .expression_attribute_values(":s", aws_sdk_dynamodb::types::AttributeValue::S("0".into()))
        .send()
        .await;
    denied("Query", format!("{:?}", query.unwrap_err()));
}

#[tokio::test]
async fn a_poller_killed_mid_run_leaves_no_lock_behind_and_the_next_one_goes_on_from_its_checkpoint() {
    let w = World::start("poll-killed").await;
    let key = w.store.worker_access_key("poller", TABLE);
    let standin = tests::stub_http::WebhookStandIn::start();
    let secret = delivery::whsec(b"poller-kill-key-0123456789abcdef");
    let start = || tests::worker::PollerProcess::start(&w.store, &key, &standin.url(), &secret, &w.dir.0);
    let completed = |id: &str| w.status(id).is_some_and(|(status, _)| status == "COMPLETED");
    let wait_for = |id: &str| {
        (0..300).any(|_| {
            completed(id) || {
                std::thread::sleep(Duration::from_millis(100));
                false
            }
        })
    };

    let first = start();
    w.deliver("sub_before_kill");
    assert!(wait_for("sub_before_kill"), "{}", first.output());
    // A second poller on the same checkpoint is refused while the first runs.
    let mut second = start();
    assert!(second.exit_within(Duration::from_secs(30)).is_some_and(|s| !s.success()), "{}", second.output());
    assert!(second.output().contains("another poller holds"), "{}", second.output());
    // The first is killed (SIGKILL: no clean stop, no unlock of its own): the lock file stays,
    // and the kernel's lock goes with the process.
    drop(first);
    assert!(w.dir.0.join("checkpoint.lock").exists());
    let third = start();
    w.deliver("sub_after_kill");
    assert!(wait_for("sub_after_kill"), "{}", third.output());
    assert!(!third.output().contains("another poller"), "{}", third.output());
    // From the checkpoint: the receipt settled before the kill is not sent again.
    assert_eq!(standin.attempts(&delivery::key("sub_before_kill")), 1);
    assert_eq!(standin.attempts(&delivery::key("sub_after_kill")), 1);
}
