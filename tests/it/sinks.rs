//! The HTTP sinks (webhook, HubSpot, Salesforce) against strict stand-ins: what each kind of
//! answer means. A sink that cannot be reached, hangs, throttles or is down is retried (the
//! receipt stays `RECEIVED` and the shard waits); only a refusal of the lead itself marks the
//! receipt `FAILED`. Each test calls the sink directly, with the exact reason pinned, and the
//! handler tests run the same answers through the poller and a real receipts table.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shared::secret::SigningSecret;
use stream_worker::config::SinkConfig;
use stream_worker::handler::{Handler, MAX_ATTEMPTS};
use stream_worker::receipts::DynamoReceipts;
use stream_worker::sink::webhook::Webhook;
use stream_worker::sink::{LeadSink, Sink, SinkError};
use tests::aws::sample_lead;
use tests::crm::{HubSpotStandIn, SalesforceStandIn};
use tests::delivery;
use tests::stub_http::{FailNext, WebhookStandIn};
use tests::worker::{self, World};

const ID_PROPERTY: &str = "static_forms_submission_id";
const SF_FIELD: &str = "Static_Forms_Submission_Id__c";

async fn world() -> World {
    World::start("sinks").await
}

/// What these tests ask of a [`World`] beyond its own helpers.
trait Verdicts {
    /// Runs passes (a new poller on the checkpoint, as after a restart) until the stream is
    /// quiet: panics if a record keeps failing, as one retried forever would.
    async fn drain<S: LeadSink + Sync>(&self, handler: &Handler<S, DynamoReceipts>);
    /// One pass stops at `id`'s record (a retryable answer): the batch is reported failed and
    /// the receipt stays `RECEIVED`, with no failure reason.
    async fn assert_retried<S: LeadSink + Sync>(&self, handler: &Handler<S, DynamoReceipts>, id: &str);
    fn assert_status(&self, id: &str, status: &str, reason: Option<&str>);
}

impl Verdicts for World {
    async fn drain<S: LeadSink + Sync>(&self, handler: &Handler<S, DynamoReceipts>) {
        worker::drain(&self.poller(), handler).await;
    }

    async fn assert_retried<S: LeadSink + Sync>(&self, handler: &Handler<S, DynamoReceipts>, id: &str) {
        let pass = self.poller().pass(handler).await.unwrap();
        assert_eq!(pass.failed_batches, 1, "{id}: {pass:?}");
        assert_eq!(self.status(id), Some(("RECEIVED".into(), None)), "{id}");
    }

    fn assert_status(&self, id: &str, status: &str, reason: Option<&str>) {
        assert_eq!(self.status(id), Some((status.to_owned(), reason.map(str::to_owned))), "{id}");
    }
}

fn secret() -> SigningSecret {
    SigningSecret::parse(&delivery::signing_secret()).unwrap()
}

async fn webhook_sink(url: &str) -> Sink {
    Sink::connect(&SinkConfig::Webhook { url: url.to_owned(), secret: secret() }).await.unwrap()
}

fn hubspot_config(base_url: &str) -> SinkConfig {
    SinkConfig::HubSpot {
        token: "pat-test".into(),
        base_url: base_url.to_owned(),
        id_property: ID_PROPERTY.into(),
        pipeline: "0".into(),
        stage: "1".into(),
    }
}

fn salesforce_config(instance_url: &str, field: &str) -> SinkConfig {
    SinkConfig::Salesforce {
        instance_url: instance_url.to_owned(),
        client_id: "sf-client".into(),
        client_secret: "sf-secret".into(),
        api_version: "60.0".into(),
        external_id_field: field.into(),
    }
}

fn salesforce_standin() -> SalesforceStandIn {
    SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD)
}

fn retryable(reason: &'static str, retry_after: Option<Duration>) -> Result<(), SinkError> {
    Err(SinkError::Retryable { reason, retry_after })
}

fn permanent(reason: &'static str) -> Result<(), SinkError> {
    Err(SinkError::Permanent { reason })
}

/// The ticket content's ending when the contact was given up: the email is kept there.
fn email_kept_in_content(email: &str) -> String {
    format!("(email as submitted: {email})")
}

#[tokio::test]
async fn an_http_sink_at_a_closed_port_is_retried_as_unreachable_never_failed() {
    // A port that was free a moment ago: nothing listens there, the connection is refused.
    let closed = format!("http://127.0.0.1:{}", tests::free_port());
    let lead = sample_lead("sub_closed");
    let webhook = webhook_sink(&format!("{closed}/leads")).await;
    assert_eq!(webhook.upsert(&lead, &delivery::key("sub_closed")).await, retryable("sink_unreachable", None));
    let hubspot = Sink::connect(&hubspot_config(&closed)).await.unwrap();
    assert_eq!(hubspot.upsert(&lead, "k").await, retryable("sink_unreachable", None));
    // Salesforce's first call is the token request.
    let salesforce = Sink::connect(&salesforce_config(&closed, SF_FIELD)).await.unwrap();
    assert_eq!(salesforce.upsert(&lead, "k").await, retryable("sink_unreachable", None));
}

#[tokio::test]
async fn an_http_sink_that_accepts_and_never_answers_is_retried_once_the_timeout_ends() {
    // A listener nobody accepts from: the kernel completes the handshake, the request is
    // sent, and no answer ever comes, as with a hung receiver.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/leads", listener.local_addr().unwrap());
    let timeout = Duration::from_millis(500);
    let client = stream_worker::sink::http::client_with_timeout(timeout).unwrap();
    let sink = Webhook::new(client, &url, secret());
    let started = Instant::now();
    let result = sink.upsert(&sample_lead("sub_hung"), &delivery::key("sub_hung")).await;
    let took = started.elapsed();
    assert_eq!(result, retryable("sink_timeout", None));
    // Bounded by the configured timeout, not by the server (which would wait forever).
    assert!(took >= timeout && took < Duration::from_secs(5), "{took:?}");
    drop(listener);
}

#[tokio::test]
async fn the_webhook_standin_is_strict_and_the_sink_satisfies_it() {
    let standin = WebhookStandIn::start();
    let url = standin.url();
    let get = tests::http::send("GET", &url, &[], b"").unwrap();
    assert_eq!((get.status, get.header("allow")), (405, Some("POST")));
    let text = tests::http::send("POST", &url, &[("Content-Type", "text/plain")], b"{}").unwrap();
    assert_eq!(text.status, 415);
    let undeclared = tests::http::send("POST", &url, &[], b"{}").unwrap();
    assert_eq!(undeclared.status, 415);
    let with_charset = [("Content-Type", "application/json; charset=utf-8")];
    assert_eq!(tests::http::send("POST", &url, &with_charset, b"{}").unwrap().status, 200);
    standin.state.lock().unwrap().accepted.clear();
    // The sink POSTs JSON, declared as such: accepted as it is.
    let sink = webhook_sink(&url).await;
    sink.upsert(&sample_lead("sub_strict"), &delivery::key("sub_strict")).await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!(state.accepted.len(), 1);
    let body: Value = serde_json::from_slice(&state.accepted[0].body).unwrap();
    assert_eq!(body["externalId"], "sub_strict");
}

#[tokio::test]
async fn webhook_refusals_are_the_leads_and_throttles_and_outages_are_retried() {
    let standin = WebhookStandIn::start();
    let sink = webhook_sink(&standin.url()).await;
    let (lead, key) = (sample_lead("sub_wh_codes"), delivery::key("sub_wh_codes"));
    for status in [400, 422] {
        standin.fail_next(FailNext::new(1, status));
        assert_eq!(sink.upsert(&lead, &key).await, permanent("sink_rejected"), "{status}");
    }
    standin.fail_next(FailNext::new(1, 429).with_retry_after(4));
    assert_eq!(sink.upsert(&lead, &key).await, retryable("sink_unavailable", Some(Duration::from_secs(4))));
    standin.fail_next(FailNext::new(1, 503));
    assert_eq!(sink.upsert(&lead, &key).await, retryable("sink_unavailable", None));
    assert!(standin.state.lock().unwrap().accepted.is_empty());
    sink.upsert(&lead, &key).await.unwrap();
    assert_eq!(standin.state.lock().unwrap().accepted.len(), 1);
}

#[tokio::test]
async fn through_the_handler_a_webhook_refusal_fails_the_receipt_and_an_outage_leaves_it_received() {
    let w = world().await;
    // Unreachable, then hung: the receipt waits, the shard stops at it.
    w.deliver("sub_wh_down");
    let closed = webhook_sink(&format!("http://127.0.0.1:{}/leads", tests::free_port())).await;
    w.assert_retried(
        &Handler { backoff: Default::default(), mapping: Default::default(), sink: closed, receipts: w.receipts() },
        "sub_wh_down",
    )
    .await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = stream_worker::sink::http::client_with_timeout(Duration::from_millis(300)).unwrap();
    let hung = Webhook::new(client, &format!("http://{}/leads", listener.local_addr().unwrap()), secret());
    w.assert_retried(
        &Handler { backoff: Default::default(), mapping: Default::default(), sink: hung, receipts: w.receipts() },
        "sub_wh_down",
    )
    .await;
    drop(listener);
    // The receiver is back: the same receipt goes through.
    let standin = WebhookStandIn::start();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: webhook_sink(&standin.url()).await,
        receipts: w.receipts(),
    };
    w.drain(&handler).await;
    w.assert_status("sub_wh_down", "COMPLETED", None);
    // The receiver refuses the lead's content: FAILED, and the next receipts go on.
    for (id, status) in [("sub_wh_400", 400), ("sub_wh_422", 422)] {
        standin.fail_next(FailNext::new(1, status));
        w.deliver(id);
        w.drain(&handler).await;
        w.assert_status(id, "FAILED", Some("sink_rejected"));
    }
    // Throttled with a Retry-After: waited out in place, each attempt throttled, then left
    // RECEIVED for the next pass, which completes it.
    let before = standin.state.lock().unwrap().requests.len();
    standin.fail_next(FailNext::new(MAX_ATTEMPTS as usize, 429).with_retry_after(1));
    w.deliver("sub_wh_429");
    w.assert_retried(&handler, "sub_wh_429").await;
    assert_eq!(standin.state.lock().unwrap().requests.len() - before, MAX_ATTEMPTS as usize);
    w.drain(&handler).await;
    w.assert_status("sub_wh_429", "COMPLETED", None);
    // Down (503, no Retry-After): retried at the next pass.
    standin.fail_next(FailNext::new(1, 503));
    w.deliver("sub_wh_503");
    w.assert_retried(&handler, "sub_wh_503").await;
    w.drain(&handler).await;
    w.assert_status("sub_wh_503", "COMPLETED", None);
    let accepted: Vec<Value> = standin
        .state
        .lock()
        .unwrap()
        .accepted
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["externalId"].clone())
        .collect();
    assert_eq!(accepted, [json!("sub_wh_down"), json!("sub_wh_429"), json!("sub_wh_503")]);
}

#[tokio::test]
async fn hubspot_a_contact_conflict_costs_the_contact_never_the_submission() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    standin.state.lock().unwrap().conflicting_emails.insert(delivery::VISITOR_EMAIL.to_uppercase());
    // The stand-in answers as HubSpot documents a conflict.
    let upsert = json!({"inputs": [{"idProperty": "email", "id": delivery::VISITOR_EMAIL, "properties": {}}]});
    let answer = tests::http::send(
        "POST",
        &format!("{}/crm/v3/objects/contacts/batch/upsert", standin.server.url()),
        &[("Authorization", "Bearer pat-test"), ("Content-Type", "application/json")],
        upsert.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(answer.status, 409, "{}", answer.body);
    let body = answer.json();
    assert_eq!((body["status"].as_str(), body["category"].as_str()), (Some("error"), Some("CONFLICT")));
    assert!(body["message"].is_string(), "{body}");
    // The conflict answers the same every time: each attempt writes the ticket, without the
    // contact, and succeeds, so the shard is never held by it.
    let sink = Sink::connect(&hubspot_config(&standin.server.url())).await.unwrap();
    for _ in 0..2 {
        sink.upsert(&sample_lead("sub_hs_conflict"), "k").await.unwrap();
    }
    let state = standin.state.lock().unwrap();
    assert!(state.contacts.is_empty() && state.associations.is_empty());
    assert_eq!(state.tickets.len(), 1);
    let content = state.tickets["sub_hs_conflict"].1["content"].as_str().unwrap();
    assert!(content.ends_with(&email_kept_in_content(delivery::VISITOR_EMAIL)), "{content}");
}

#[tokio::test]
async fn hubspot_a_contact_conflict_that_clears_at_once_keeps_the_contact() {
    // Another submission from the same new person created the contact a moment ago: the first
    // upsert answers 409, the one right after finds the contact and updates it.
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    standin.state.lock().unwrap().contact_conflicts_once = 1;
    let sink = Sink::connect(&hubspot_config(&standin.server.url())).await.unwrap();
    sink.upsert(&sample_lead("sub_hs_race"), "k").await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!((state.contacts.len(), state.tickets.len(), state.associations.len()), (1, 1, 1));
    let content = state.tickets["sub_hs_race"].1["content"].as_str().unwrap();
    assert_eq!(
        content,
        format!("{}\n\nOther answers:\nplan: pro", delivery::VISITOR_MESSAGE),
        "the email is the contact's, not kept in the ticket"
    );
}

#[tokio::test]
async fn hubspot_an_email_with_surrounding_spaces_is_one_contact_under_the_trimmed_email() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    // The stand-in holds HubSpot's rule: properties[idProperty], when given, equals the id.
    let untrimmed = json!({"inputs": [{"idProperty": "email", "id": "ada@example.com",
        "properties": {"email": " ada@example.com "}}]});
    let refused = tests::http::send(
        "POST",
        &format!("{}/crm/v3/objects/contacts/batch/upsert", standin.server.url()),
        &[("Authorization", "Bearer pat-test"), ("Content-Type", "application/json")],
        untrimmed.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.json()["category"], "VALIDATION_ERROR");
    assert!(standin.state.lock().unwrap().contacts.is_empty());
    // The sink sends the same trimmed email as the id and the property: the contact is written
    // (an untrimmed property would be refused, and the contact silently given up).
    let sink = Sink::connect(&hubspot_config(&standin.server.url())).await.unwrap();
    let mut lead = sample_lead("sub_hs_spaces");
    lead.email = format!("  {}\t ", delivery::VISITOR_EMAIL);
    sink.upsert(&lead, "k").await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!(state.contacts.len(), 1);
    let (contact_id, contact) = state.contacts.iter().next().unwrap();
    assert_eq!(contact["email"], delivery::VISITOR_EMAIL);
    let (ticket_id, ticket) = &state.tickets["sub_hs_spaces"];
    assert!(state.associations.contains(&(ticket_id.clone(), contact_id.clone())));
    assert!(!ticket["content"].as_str().unwrap().contains("email as submitted"), "{ticket}");
}

#[tokio::test]
async fn hubspot_throttles_and_outages_are_retried_with_their_reason_and_write_nothing() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let sink = Sink::connect(&hubspot_config(&standin.server.url())).await.unwrap();
    let lead = sample_lead("sub_hs_down");
    for status in [429, 500, 502, 503, 504] {
        standin.fail_next(FailNext::new(1, status));
        assert_eq!(sink.upsert(&lead, "k").await, retryable("sink_unavailable", None), "{status}");
    }
    standin.fail_next(FailNext::new(1, 503).with_retry_after(2));
    assert_eq!(sink.upsert(&lead, "k").await, retryable("sink_unavailable", Some(Duration::from_secs(2))));
    {
        let state = standin.state.lock().unwrap();
        assert!(state.contacts.is_empty() && state.tickets.is_empty(), "nothing written while failing");
    }
    sink.upsert(&lead, "k").await.unwrap();
    assert!(standin.state.lock().unwrap().tickets.contains_key("sub_hs_down"));
}

#[tokio::test]
async fn through_the_handler_a_hubspot_refusal_fails_the_receipt_and_the_rest_never_does() {
    let w = world().await;
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Sink::connect(&hubspot_config(&standin.server.url())).await.unwrap(),
        receipts: w.receipts(),
    };
    // HubSpot refuses the submission's ticket (a 400 VALIDATION_ERROR naming the input): FAILED.
    let refusal = json!({"status": "error", "category": "VALIDATION_ERROR",
        "message": "Property values were not valid", "context": {"id": ["sub_hsh_refused"]}});
    standin.state.lock().unwrap().refuse_inputs.insert("sub_hsh_refused".into(), refusal);
    w.deliver("sub_hsh_refused");
    w.drain(&handler).await;
    w.assert_status("sub_hsh_refused", "FAILED", Some("sink_rejected"));
    // HubSpot refuses the email (a 400 INVALID_EMAIL on the contact): the contact is given up,
    // the submission is written as its ticket, with the email in its content: COMPLETED.
    let invalid_email = json!({"status": "error", "category": "VALIDATION_ERROR", "code": "INVALID_EMAIL",
        "message": "Email address is invalid", "context": {"propertyName": ["email"]}});
    standin.state.lock().unwrap().refuse_inputs.insert(delivery::VISITOR_EMAIL.into(), invalid_email);
    w.deliver("sub_hsh_email");
    w.drain(&handler).await;
    w.assert_status("sub_hsh_email", "COMPLETED", None);
    standin.state.lock().unwrap().refuse_inputs.clear();
    // A conflict on the contact, the same on every attempt: COMPLETED too, never held (drain
    // panics if the stream never goes quiet).
    standin.state.lock().unwrap().conflicting_emails.insert(delivery::VISITOR_EMAIL.into());
    w.deliver("sub_hsh_conflict");
    w.drain(&handler).await;
    w.assert_status("sub_hsh_conflict", "COMPLETED", None);
    standin.state.lock().unwrap().conflicting_emails.clear();
    {
        let state = standin.state.lock().unwrap();
        for id in ["sub_hsh_email", "sub_hsh_conflict"] {
            let content = state.tickets[id].1["content"].as_str().unwrap();
            assert!(content.ends_with(&email_kept_in_content(delivery::VISITOR_EMAIL)), "{id}: {content}");
        }
        assert!(!state.tickets.contains_key("sub_hsh_refused"));
    }
    // Throttled, then down: RECEIVED after the pass, COMPLETED once HubSpot answers again.
    for (id, status) in [("sub_hsh_429", 429), ("sub_hsh_503", 503)] {
        standin.fail_next(FailNext::new(1, status));
        w.deliver(id);
        w.assert_retried(&handler, id).await;
        w.drain(&handler).await;
        w.assert_status(id, "COMPLETED", None);
    }
}

#[tokio::test]
async fn salesforce_outages_limits_and_formats_are_retried_each_with_its_reason() {
    let standin = salesforce_standin();
    let sink = Sink::connect(&salesforce_config(&standin.server.url(), SF_FIELD)).await.unwrap();
    let lead = sample_lead("sub_sf_retry");
    standin.fail_next(FailNext::new(1, 503).with_retry_after(3));
    assert_eq!(sink.upsert(&lead, "k").await, retryable("sink_unavailable", Some(Duration::from_secs(3))));
    // The org's API request limit: Salesforce answers 403 REQUEST_LIMIT_EXCEEDED.
    standin.fail_next(FailNext::new(1, 403));
    assert_eq!(sink.upsert(&lead, "k").await, retryable("sink_rate_limited", None));
    standin.fail_next(FailNext::new(1, 429));
    assert_eq!(sink.upsert(&lead, "k").await, retryable("sink_unavailable", None));
    // The request's format refused: the sink's fault, the same for every lead, never FAILED.
    standin.fail_next(FailNext::new(1, 415));
    assert_eq!(sink.upsert(&lead, "k").await, retryable("sink_unsupported_media_type", None));
    {
        let state = standin.state.lock().unwrap();
        assert!(state.leads.is_empty());
        assert_eq!(state.issued, 1, "none of these is a reason for a new token");
    }
    sink.upsert(&lead, "k").await.unwrap();
    assert!(standin.state.lock().unwrap().leads.contains_key("sub_sf_retry"));
}

#[tokio::test]
async fn salesforce_a_session_refused_after_a_new_token_is_retried_as_unauthorized() {
    let standin = salesforce_standin();
    let sink = Sink::connect(&salesforce_config(&standin.server.url(), SF_FIELD)).await.unwrap();
    // 401 INVALID_SESSION_ID, and again with the new token.
    standin.fail_next(FailNext::new(2, 401));
    assert_eq!(sink.upsert(&sample_lead("sub_sf_401"), "k").await, retryable("sink_unauthorized", None));
    {
        let state = standin.state.lock().unwrap();
        assert_eq!(state.issued, 2, "one token, then exactly one new one");
        assert!(state.leads.is_empty());
    }
    // Once sessions work again, the next attempt uses the cached token.
    sink.upsert(&sample_lead("sub_sf_401"), "k").await.unwrap();
    assert_eq!(standin.state.lock().unwrap().issued, 2);
}

#[tokio::test]
async fn salesforce_field_names_match_without_case_as_the_org_does() {
    let standin = salesforce_standin();
    // The external ID field configured in another case: the check and the upsert accept it.
    let sink = Sink::connect(&salesforce_config(&standin.server.url(), "static_forms_submission_id__C")).await.unwrap();
    sink.check_configuration().await.unwrap();
    sink.upsert(&sample_lead("sub_sf_case"), "k").await.unwrap();
    assert!(standin.state.lock().unwrap().leads.contains_key("sub_sf_case"));
    // Lead fields named in any case are the org's fields; a name no field has is refused.
    standin.state.lock().unwrap().tokens.insert("raw-token".into());
    let url = format!("{}/services/data/v60.0/sobjects/Lead/{SF_FIELD}/sub_sf_raw", standin.server.url());
    let headers = [("Authorization", "Bearer raw-token"), ("Content-Type", "application/json")];
    let any_case = json!({"lastname": "Lovelace", "COMPANY": "Analytical Engines", "eMail": "ada@example.com"});
    let created = tests::http::send("PATCH", &url, &headers, any_case.to_string().as_bytes()).unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    {
        let state = standin.state.lock().unwrap();
        let written = &state.leads["sub_sf_raw"];
        assert_eq!(
            (written["LastName"].as_str(), written["Company"].as_str()),
            (Some("Lovelace"), Some("Analytical Engines"))
        );
        assert_eq!(written["Email"], "ada@example.com");
    }
    let unknown = json!({"LastName": "Lovelace", "Company": "Engines", "Favourite_Colour__c": "blue"});
    let refused = tests::http::send("PATCH", &url, &headers, unknown.to_string().as_bytes()).unwrap();
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.json()[0]["errorCode"], "INVALID_FIELD");
}

#[tokio::test]
async fn through_the_handler_a_salesforce_refusal_fails_the_receipt_and_limits_never_do() {
    let w = world().await;
    let standin = salesforce_standin();
    let sink = Sink::connect(&salesforce_config(&standin.server.url(), SF_FIELD)).await.unwrap();
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    // Several Leads hold the submission ID (300): this lead's data problem, FAILED.
    standin.state.lock().unwrap().ambiguous.insert("sub_sfh_dup".into());
    w.deliver("sub_sfh_dup");
    w.drain(&handler).await;
    w.assert_status("sub_sfh_dup", "FAILED", Some("sink_multiple_matches"));
    // The request limit, a refused format, an outage: RECEIVED, then COMPLETED.
    for (id, status) in [("sub_sfh_limit", 403), ("sub_sfh_415", 415), ("sub_sfh_503", 503)] {
        standin.fail_next(FailNext::new(1, status));
        w.deliver(id);
        w.assert_retried(&handler, id).await;
        w.drain(&handler).await;
        w.assert_status(id, "COMPLETED", None);
    }
    let state = standin.state.lock().unwrap();
    let written: Vec<&str> = state.leads.keys().map(String::as_str).collect();
    assert_eq!(written, ["sub_sfh_415", "sub_sfh_503", "sub_sfh_limit"]);
}

#[tokio::test]
async fn a_non_ascii_submission_id_reaches_the_webhook_receiver_as_its_utf8_bytes() {
    // Any text without a control character is a valid submission ID (shared/src/envelope.rs):
    // accents, CJK, an emoji, `/`, `+`, `:`, `=`, a space and a no-break space (U+00A0).
    let w = world().await;
    let standin = WebhookStandIn::start();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: webhook_sink(&standin.url()).await,
        receipts: w.receipts(),
    };
    let ids = ["sub_é/東京 +:=", "réponse 🚀", "sub\u{a0}nbsp"];
    for id in ids {
        w.deliver(id);
    }
    w.drain(&handler).await;
    for id in ids {
        w.assert_status(id, "COMPLETED", None);
        let key = delivery::key(id);
        let state = standin.state.lock().unwrap();
        let sent: Vec<&tests::stub_http::StubRequest> =
            state.accepted.iter().filter(|r| r.header("idempotency-key") == Some(key.as_str())).collect();
        assert_eq!(sent.len(), 1, "{id}: one request, keyed by the receipt's key as UTF-8");
        let body: Value = serde_json::from_slice(&sent[0].body).unwrap();
        assert_eq!(body["externalId"], id);
        assert_eq!(sent[0].header("webhook-id"), Some(stream_worker::sink::webhook::message_id(id).as_str()));
    }
}
