//! Stand-ins for HubSpot and Salesforce, written to their documented upsert behaviour. They
//! are the only fakes in the suite: the real services cannot be reached from here.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::stub_http::{FailNext, StubRequest, StubResponse, StubServer};

mod hubspot_properties;
mod salesforce;
mod salesforce_fields;
pub use hubspot_properties::PortalProperty;
pub use salesforce::{DuplicateRule, SalesforceStandIn, SalesforceState};
pub use salesforce_fields::OrgField;

/// HubSpot as its API documents it, for the calls the sink makes: contacts unique by email
/// (upsert by `email`; a create with an existing email is 409 `CONFLICT`), tickets upserted by
/// a unique ticket property (which must exist and be unique: else 400 `VALIDATION_ERROR`,
/// `PROPERTY_DOESNT_EXIST`), on both upserts `properties[idProperty]`, when given, equal to the
/// `id` (else 400 `VALIDATION_ERROR`; our client's own rule, HubSpot documents the value in
/// `id` only), refused inputs as a 400 `VALIDATION_ERROR` listing them (or 207 per-input errors
/// when the inputs carry `objectWriteTraceId`; an email without `@` is `INVALID_EMAIL`), v4
/// default associations and their listing, tickets read by the unique property (`batch/read`,
/// a 207 `OBJECT_NOT_FOUND` for missing IDs), `application/json` required on every body (415),
/// a property catalogue (an input naming another property is a 400 `PROPERTY_DOESNT_EXIST`)
/// with typed properties of the portal's own ([`PortalProperty`]: listed by the properties
/// API, each input's values checked, a refused one an `INVALID_OPTION`, `INVALID_INTEGER`,
/// `INVALID_BOOLEAN` or `INVALID_DATE` verdict for that input), and rate limits as 429 with
/// `policyName` and the `X-HubSpot-RateLimit-*` headers (no `Retry-After`, which HubSpot
/// documents only for other answers), a body that is not JSON (or none on a write) refused with
/// 400 `VALIDATION_ERROR` `Invalid input JSON on line L, column C: ...` (HubSpot's answer as
/// its client libraries' users report it: HubSpot/hubspot-api-php#91 and #209,
/// Chinchilla-Software-Com/HubSpot.NET#23, hubspot-api-nodejs#555), and requests served at
/// once: each answer is decided with the portal's state locked (one change at a time, as a
/// database's would be), then leaves after `latency` with the state free, so the calls of two
/// workers overlap as at HubSpot ([`HubSpotStandIn::most_at_once`] counts it). Sources: developers.hubspot.com
/// "Error handling" (429, 502/504, 503; the `status`/`category`/`message` body), "Using object
/// APIs" (batch upsert), "API usage guidelines and limits" (a used-up day's 429, `policyName:
/// DAILY`, on every call).
///
/// Knobs: `fail_next` (any status; 429 with the `RATE_LIMIT` body), `conflicting_emails` (a
/// contact upsert naming one answers 409 `CONFLICT`, as HubSpot's contact endpoints do for an
/// email another record holds; the v3 batch upsert documents no 409, so this is the worst case:
/// the same answer on every attempt) and `refuse_inputs` (refused inputs by input `id`).
pub struct HubSpotStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<HubSpotState>>,
    /// The private app token it takes, and its ticket property for submission IDs.
    token: String,
    id_property: String,
    /// Answers on their way back now, and the most at once so far.
    at_once: Arc<[AtomicUsize; 2]>,
}

#[derive(Default)]
pub struct HubSpotState {
    /// Contacts by ID: their properties.
    pub contacts: BTreeMap<String, Value>,
    /// Tickets by the unique property's value: `(ticket ID, properties)`.
    pub tickets: BTreeMap<String, (String, Value)>,
    /// Ticket → contact associations.
    pub associations: BTreeSet<(String, String)>,
    /// The ticket property that holds submission IDs, and whether it is unique.
    pub ticket_property: Option<(String, bool)>,
    /// Requests answered so far.
    pub requests: usize,
    /// Answer the next requests with a failure, before anything else (see [`FailNext`]).
    pub fail_next: FailNext,
    /// Answer this many requests with 429 first (after `fail_next`): `fail_next` with 429.
    pub throttle_first: usize,
    /// Answer this many requests with 502 first (after any throttling): `fail_next` with 502.
    pub fail_first: usize,
    /// The next this many contact upserts answer 409 `CONFLICT` (a concurrent create's race).
    pub contact_conflicts_once: usize,
    /// Emails (any case) whose contact upsert answers 409 `CONFLICT`, every time.
    pub conflicting_emails: BTreeSet<String>,
    /// Per-input errors by batch input `id` (a contact's email, a ticket's submission ID),
    /// answered in a 207 as HubSpot answers an input it refuses.
    pub refuse_inputs: BTreeMap<String, Value>,
    /// The portal's phone number validation (the `phone` property's rule, which HubSpot applies
    /// to API writes since July 2023): a contact's `phone` must be E.164 once spaces, dashes,
    /// dots and parentheses are dropped (and is stored so); otherwise the input is refused with
    /// the verdicts of a `VALIDATION_ERROR` (HubSpot documents no code for it: here
    /// `INVALID_PHONE_NUMBER`; the sink reads only the property's name).
    pub phone_validation: bool,
    /// The portal's own typed properties, contacts' and tickets', beyond the defaults.
    pub portal_properties: Vec<PortalProperty>,
    /// Every call served past the failures and the token, as `METHOD /path` (no query).
    pub calls: Vec<String>,
    /// Failures for requests whose path ends with the key (`tickets/batch/read`,
    /// `tickets/batch/upsert`, `/associations/contacts`, ...), after `fail_next`.
    pub fail_path: BTreeMap<String, FailNext>,
    /// Unique ticket values compare without case (HubSpot documents neither way): a read by
    /// `abcDEF` finds the ticket of `ABCdef`.
    pub fold_ticket_ids: bool,
    /// The private app's burst limit: at most this many requests in any rolling interval
    /// (HubSpot's Free and Starter: 100 per 10 s), the rest answered 429 with the
    /// `TEN_SECONDLY_ROLLING` policy; `None`: no limit.
    pub rate_limit: Option<(usize, Duration)>,
    /// When each request of the current window came.
    pub window: VecDeque<Instant>,
    /// Requests left today (`X-HubSpot-RateLimit-Daily-Remaining`), counted down per request.
    pub daily_remaining: u64,
    /// 429s answered for the burst limit.
    pub throttled: usize,
    /// 429s answered for the day used up (`daily_remaining` 0).
    pub day_refused: usize,
    /// How long each answer takes to leave once it is decided, the state unlocked meanwhile:
    /// requests overlap as they do at HubSpot (the state still changes one request at a time).
    pub latency: Duration,
    next_id: u64,
}

/// HubSpot's documented burst limit for a private app on Free and Starter.
pub const HUBSPOT_BURST: (usize, Duration) = (100, Duration::from_secs(10));

/// `response` with the rate-limit headers HubSpot puts on every answer.
fn with_limits(state: &HubSpotState, mut response: StubResponse) -> StubResponse {
    if let Some((max, interval)) = state.rate_limit {
        let remaining = max.saturating_sub(state.window.len());
        response.headers.extend([
            ("X-HubSpot-RateLimit-Max".to_owned(), max.to_string()),
            ("X-HubSpot-RateLimit-Remaining".to_owned(), remaining.to_string()),
            ("X-HubSpot-RateLimit-Interval-Milliseconds".to_owned(), interval.as_millis().to_string()),
        ]);
    }
    response.headers.extend([
        ("X-HubSpot-RateLimit-Daily".to_owned(), "250000".to_owned()),
        ("X-HubSpot-RateLimit-Daily-Remaining".to_owned(), state.daily_remaining.to_string()),
    ]);
    response
}

impl HubSpotState {
    fn new_id(&mut self) -> String {
        self.next_id += 1;
        (1000 + self.next_id).to_string()
    }

    /// A ticket ID value as the unique property compares it.
    fn ticket_key(&self, id: &str) -> String {
        if self.fold_ticket_ids {
            id.to_lowercase()
        } else {
            id.to_owned()
        }
    }

    /// The contact with this email (HubSpot compares emails without case).
    fn contact_by_email(&self, email: &str) -> Option<String> {
        self.contacts
            .iter()
            .find(|(_, c)| c["email"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(email)))
            .map(|(id, _)| id.clone())
    }
}

/// HubSpot's answer with `status` for a request it did not serve: 429 with the `RATE_LIMIT`
/// body and rate limit headers, anything else (502/504 timeouts, 503, 500) with the common
/// error body; `Retry-After` when given.
fn hubspot_failure(status: u16, retry_after: Option<String>) -> StubResponse {
    let mut response = if status == 429 {
        let mut response = StubResponse::json(
            429,
            json!({
                "status": "error", "message": "You have reached your ten_secondly_rolling limit.",
                "errorType": "RATE_LIMIT", "policyName": "TEN_SECONDLY_ROLLING"
            }),
        );
        response.headers = vec![
            ("X-HubSpot-RateLimit-Max".into(), "100".into()),
            ("X-HubSpot-RateLimit-Remaining".into(), "0".into()),
            ("X-HubSpot-RateLimit-Interval-Milliseconds".into(), "10000".into()),
        ];
        response
    } else {
        let message = match status {
            500 => "Internal Server Error",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            _ => "error",
        };
        StubResponse::json(status, json!({"status": "error", "message": message}))
    };
    if let Some(seconds) = retry_after {
        response.headers.push(("Retry-After".into(), seconds));
    }
    response
}

/// The portal's property catalogue: the properties an input may name (the default contact and
/// ticket properties the sink writes, a few more, and the portal's own ticket property).
const CONTACT_PROPERTIES: [&str; 6] = ["email", "firstname", "lastname", "phone", "company", "website"];
const TICKET_PROPERTIES: [&str; 6] =
    ["subject", "content", "hs_pipeline", "hs_pipeline_stage", "hs_ticket_priority", "hubspot_owner_id"];

/// The first property an upsert's input names that the portal does not have.
fn unknown_property(state: &HubSpotState, path: &[&str], body: &Value) -> Option<String> {
    let ["crm", "v3", "objects", object, ..] = path else { return None };
    let own = state.ticket_property.as_ref().map(|(p, _)| p.as_str());
    let typed = |name: &str| state.portal_properties.iter().any(|p| p.object == *object && p.name == name);
    let known = |name: &str| match *object {
        "contacts" => CONTACT_PROPERTIES.contains(&name) || typed(name),
        "tickets" => TICKET_PROPERTIES.contains(&name) || Some(name) == own || typed(name),
        _ => true,
    };
    let single = body.get("properties").into_iter();
    let inputs = body["inputs"].as_array().into_iter().flatten().filter_map(|i| i.get("properties"));
    single.chain(inputs).filter_map(Value::as_object).flat_map(|p| p.keys()).find(|name| !known(name)).cloned()
}

/// The properties API's listing of `object`'s properties: the defaults (text, but the
/// pipeline's, whose options are the pipelines'), the ticket property for submission IDs, and
/// the portal's own.
fn listed_properties(state: &HubSpotState, object: &str) -> Value {
    let defaults: &[&str] = if object == "contacts" { &CONTACT_PROPERTIES } else { &TICKET_PROPERTIES };
    let own = state.ticket_property.iter().filter(|_| object == "tickets").map(|(name, _)| name.as_str());
    let typed = |name: &str| state.portal_properties.iter().any(|p| p.object == object && p.name == name);
    let mut results: Vec<Value> = defaults
        .iter()
        .copied()
        .filter(|name| !typed(name))
        .chain(own)
        .map(|name| {
            let external = name.starts_with("hs_pipeline") || name == "hubspot_owner_id";
            let (ty, field_type) = if external { ("enumeration", "select") } else { ("string", "text") };
            json!({"name": name, "label": name, "type": ty, "fieldType": field_type, "options": [],
                   "externalOptions": external, "calculated": false,
                   "modificationMetadata": {"readOnlyValue": false}})
        })
        .collect();
    results.extend(state.portal_properties.iter().filter(|p| p.object == object).map(PortalProperty::listed));
    json!({"results": results})
}

/// The verdicts on an input's values of the portal's typed properties: `None` when every one
/// is taken.
fn typed_refusal(state: &HubSpotState, object: &str, properties: &serde_json::Map<String, Value>) -> Option<Value> {
    let verdicts: Vec<(&str, &str, String)> = state
        .portal_properties
        .iter()
        .filter(|p| p.object == object)
        .filter_map(|p| {
            let (code, message) = p.check(properties.get(p.name)?)?;
            Some((code, p.name, message))
        })
        .collect();
    let items: Vec<(&str, &str, &str)> = verdicts.iter().map(|(c, n, m)| (*c, *n, m.as_str())).collect();
    (!items.is_empty()).then(|| invalid_properties(&items))
}

fn validation_error(message: &str, code: &str) -> StubResponse {
    StubResponse::json(
        400,
        json!({
            "status": "error", "message": message, "category": "VALIDATION_ERROR",
            "errors": [{"message": message, "code": code}]
        }),
    )
}

impl HubSpotStandIn {
    /// A portal whose ticket property `id_property` exists with unique values.
    pub fn start(token: &str, id_property: &str) -> HubSpotStandIn {
        let state = Arc::new(Mutex::new(HubSpotState {
            ticket_property: Some((id_property.to_owned(), true)),
            rate_limit: Some(HUBSPOT_BURST),
            daily_remaining: 250_000,
            ..HubSpotState::default()
        }));
        let (token, shared) = (token.to_owned(), Arc::clone(&state));
        let token_for_config = token.clone();
        // Answers on their way now, and the most at once so far.
        let at_once: Arc<[AtomicUsize; 2]> = Arc::default();
        let counts = Arc::clone(&at_once);
        let server = StubServer::start(move |request: StubRequest| {
            let (response, latency) = {
                let mut state = shared.lock().unwrap();
                (limited(&mut state, &token, &request), state.latency)
            };
            // On its way back, the state free: another request may be decided and on its way too.
            let [sending, most] = &*counts;
            most.fetch_max(sending.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            std::thread::sleep(latency);
            sending.fetch_sub(1, Ordering::SeqCst);
            response
        });
        HubSpotStandIn { server, state, token: token_for_config, id_property: id_property.to_owned(), at_once }
    }

    /// The HubSpot sink's configuration for this portal: its token and ticket property, the
    /// support pipeline (`0`) and its first stage (`1`).
    pub fn sink_config(&self) -> stream_worker::config::SinkConfig {
        stream_worker::config::SinkConfig::HubSpot {
            token: self.token.clone(),
            base_url: self.server.url(),
            id_property: self.id_property.clone(),
            pipeline: "0".into(),
            stage: "1".into(),
        }
    }

    /// The most answers that were on their way back at the same time (see `latency`).
    pub fn most_at_once(&self) -> usize {
        self.at_once[1].load(Ordering::SeqCst)
    }

    /// Answers the next requests with `failure` (429 with the `RATE_LIMIT` body, 5xx, ...).
    pub fn fail_next(&self, failure: FailNext) {
        self.state.lock().unwrap().fail_next = failure;
    }
}

/// HubSpot's validation error as its "Using object APIs" page shows it: the category, and the
/// properties' verdicts as a JSON array inside the message (`error` the code, `name` the
/// property), with no `errors[].code` and no `context.propertyName`.
fn invalid_properties(items: &[(&str, &str, &str)]) -> Value {
    let verdicts: Vec<Value> = items
        .iter()
        .map(|(error, name, message)| json!({"isValid": false, "message": message, "error": error, "name": name}))
        .collect();
    json!({"status": "error", "category": "VALIDATION_ERROR",
           "message": format!("Property values were not valid: {}", Value::Array(verdicts))})
}

/// A batch's results in another order than their inputs: HubSpot does not promise the order,
/// so a client matching results by position must fail here.
fn unordered(mut results: Vec<Value>) -> Vec<Value> {
    results.reverse();
    results
}

/// A batch result carrying its input's `objectWriteTraceId`, as HubSpot's results do.
fn result_traced(trace: &Option<Value>, mut result: Value) -> Value {
    if let Some(trace) = trace {
        result["objectWriteTraceId"] = trace.clone();
    }
    result
}

/// A per-input error naming its input's `objectWriteTraceId` in its context.
fn error_traced(trace: &Option<Value>, mut error: Value) -> Value {
    if let Some(trace) = trace {
        if !error["context"].is_object() {
            error["context"] = json!({});
        }
        error["context"]["objectWriteTraceId"] = json!([trace]);
    }
    error
}

/// The answer to one request: 429 past the burst limit, else [`serve`]'s, with the limit headers.
fn limited(state: &mut HubSpotState, token: &str, request: &StubRequest) -> StubResponse {
    let now = Instant::now();
    // The day used up: every call answered 429 until the portal's midnight ("API usage
    // guidelines and limits": the body's `policyName` is `DAILY`), here with no rate-limit
    // header at all, the least a client can be told.
    if state.daily_remaining == 0 {
        state.day_refused += 1;
        return StubResponse::json(
            429,
            json!({
                "status": "error", "message": "You have reached your daily limit.",
                "errorType": "RATE_LIMIT", "policyName": "DAILY"
            }),
        );
    }
    if let Some((max, interval)) = state.rate_limit {
        while state.window.front().is_some_and(|sent| *sent + interval <= now) {
            state.window.pop_front();
        }
        if state.window.len() >= max {
            state.throttled += 1;
            let mut response = hubspot_failure(429, None);
            response.headers.clear();
            return with_limits(state, response);
        }
        state.window.push_back(now);
    }
    let response = serve(state, token, request);
    with_limits(state, response)
}

/// The answer to one request the rate limit let through.
fn serve(state: &mut HubSpotState, token: &str, request: &StubRequest) -> StubResponse {
    state.requests += 1;
    state.daily_remaining = state.daily_remaining.saturating_sub(1);
    if let Some((status, retry_after)) = state.fail_next.take() {
        return hubspot_failure(status, retry_after);
    }
    let path_only = request.path.split('?').next().unwrap_or_default().to_owned();
    let failing = state.fail_path.iter_mut().find(|(suffix, _)| path_only.ends_with(suffix.as_str()));
    if let Some((status, retry_after)) = failing.and_then(|(_, failure)| failure.take()) {
        return hubspot_failure(status, retry_after);
    }
    if state.throttle_first > 0 {
        state.throttle_first -= 1;
        return hubspot_failure(429, None);
    }
    if state.fail_first > 0 {
        state.fail_first -= 1;
        return hubspot_failure(502, None);
    }
    if request.header("authorization") != Some(&format!("Bearer {token}")) {
        return StubResponse::json(401, json!({"status": "error", "category": "INVALID_AUTHENTICATION"}));
    }
    let media_type = request.header("content-type").and_then(|t| t.split(';').next()).map(str::trim);
    if !request.body.is_empty() && !media_type.is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
        return StubResponse::json(
            415,
            json!({"status": "error", "message": "Unsupported Media Type", "category": "UNSUPPORTED_MEDIA_TYPE"}),
        );
    }
    // A body that is not JSON, or none where one is due: 400 `Invalid input JSON ...`, as
    // HubSpot's clients' users report its answers (the message names where reading stopped:
    // HubSpot/hubspot-api-php#91 and #209, Chinchilla-Software-Com/HubSpot.NET#23; the
    // category: HubSpot/hubspot-api-nodejs#555). Jackson stops at the first value, so text
    // after it is not refused.
    let invalid = |message: String| {
        let body = json!({"status": "error", "message": message, "correlationId": "00000000-0000-4000-8000-000000000000",
                          "category": "VALIDATION_ERROR"});
        StubResponse::json(400, body)
    };
    let body: Value = if request.body.is_empty() {
        if matches!(request.method.as_str(), "POST" | "PUT" | "PATCH") {
            return invalid("Invalid input JSON: No content to map due to end-of-input".into());
        }
        Value::Null
    } else {
        let mut values = serde_json::Deserializer::from_slice(&request.body).into_iter::<Value>();
        match values.next() {
            Some(Ok(body)) => body,
            Some(Err(error)) => {
                let what = error.to_string();
                let what = what.split(" at line ").next().unwrap_or_default().to_owned();
                return invalid(format!(
                    "Invalid input JSON on line {}, column {}: {what}",
                    error.line(),
                    error.column()
                ));
            }
            None => return invalid("Invalid input JSON: No content to map due to end-of-input".into()),
        }
    };
    state.calls.push(format!("{} {path_only}", request.method));
    let path: Vec<&str> = path_only.trim_start_matches('/').split('/').collect();
    if let Some(unknown) = unknown_property(state, &path, &body) {
        let message = format!("Property \"{unknown}\" does not exist");
        return StubResponse::json(400, invalid_properties(&[("PROPERTY_DOESNT_EXIST", &unknown, &message)]));
    }
    match (request.method.as_str(), path.as_slice()) {
        ("POST", ["crm", "v3", "objects", "tickets", "batch", "read"]) => {
            let id_property = body["idProperty"].as_str().unwrap_or_default();
            if state.ticket_property.as_ref().is_none_or(|(p, unique)| p != id_property || !unique) {
                return validation_error(
                    &format!("Unable to perform read by non-unique property {id_property}"),
                    "INVALID_ID_PROPERTY",
                );
            }
            let (mut results, mut missing) = (Vec::new(), Vec::new());
            // Only the properties asked for come back (and HubSpot's own object ID).
            let asked: Vec<&str> =
                body["properties"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            for input in body["inputs"].as_array().into_iter().flatten() {
                let id = input["id"].as_str().unwrap_or_default();
                let matched = state.tickets.keys().find(|k| state.ticket_key(k) == state.ticket_key(id));
                match matched.and_then(|k| state.tickets.get(k)) {
                    Some((ticket_id, properties)) => {
                        let mut shown = json!({"hs_object_id": ticket_id});
                        for name in &asked {
                            if let Some(value) = properties.get(*name) {
                                shown[*name] = value.clone();
                            }
                        }
                        results.push(json!({"id": ticket_id, "properties": shown}));
                    }
                    None => missing.push(id.to_owned()),
                }
            }
            if missing.is_empty() {
                return StubResponse::json(200, json!({"status": "COMPLETE", "results": unordered(results)}));
            }
            StubResponse::json(
                207,
                json!({"status": "COMPLETE", "results": unordered(results), "numErrors": 1, "errors": [{
                    "status": "error", "category": "OBJECT_NOT_FOUND",
                    "message": "Could not get some TICKET objects, they may be deleted or not exist.",
                    "context": {"ids": missing}
                }]}),
            )
        }
        ("POST", ["crm", "v4", "associations", "tickets", "contacts", "batch", "read"]) => {
            let (mut results, mut errors) = (Vec::new(), Vec::new());
            for input in body["inputs"].as_array().into_iter().flatten() {
                let ticket = input["id"].as_str().unwrap_or_default();
                let to: Vec<Value> = state
                    .associations
                    .iter()
                    .filter(|(t, _)| t == ticket)
                    .map(|(_, contact)| {
                        json!({"toObjectId": contact,
                               "associationTypes": [{"category": "HUBSPOT_DEFINED", "typeId": 16, "label": null}]})
                    })
                    .collect();
                if to.is_empty() {
                    errors.push(json!({"status": "error", "category": "OBJECT_NOT_FOUND",
                        "subCategory": "crm.associations.NO_ASSOCIATIONS_FOUND",
                        "message": format!("No tickets to contacts associations found for {ticket}"),
                        "context": {"fromObjectId": [ticket]}}));
                } else {
                    results.push(json!({"from": {"id": ticket}, "to": to}));
                }
            }
            let status = if errors.is_empty() { 200 } else { 207 };
            StubResponse::json(
                status,
                json!({"status": "COMPLETE", "results": unordered(results), "numErrors": errors.len(), "errors": errors}),
            )
        }
        ("POST", ["crm", "v4", "associations", "tickets", "contacts", "batch", "associate", "default"]) => {
            let inputs = body["inputs"].as_array().cloned().unwrap_or_default();
            let pairs: BTreeSet<(String, String)> = inputs
                .iter()
                .map(|i| {
                    (
                        i["from"]["id"].as_str().unwrap_or_default().to_owned(),
                        i["to"]["id"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            if pairs.len() != inputs.len() {
                return validation_error("Duplicate associations found in batch input", "DUPLICATE_ID");
            }
            let (mut results, mut errors) = (Vec::new(), Vec::new());
            for (ticket, contact) in pairs {
                let ticket_exists = state.tickets.values().any(|(id, _)| *id == ticket);
                if !ticket_exists || !state.contacts.contains_key(&contact) {
                    errors.push(json!({"status": "error", "category": "OBJECT_NOT_FOUND",
                        "context": {"fromObjectId": [ticket], "toObjectId": [contact]}}));
                    continue;
                }
                state.associations.insert((ticket.clone(), contact.clone()));
                results.push(json!({"from": {"id": ticket}, "to": {"id": contact},
                    "associationSpec": {"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 16}}));
            }
            let status = if errors.is_empty() { 200 } else { 207 };
            StubResponse::json(
                status,
                json!({"status": "COMPLETE", "results": unordered(results), "numErrors": errors.len(), "errors": errors}),
            )
        }
        ("GET", ["crm", "v3", "properties", object @ ("contacts" | "tickets")]) => {
            StubResponse::json(200, listed_properties(state, object))
        }
        ("GET", ["crm", "v3", "properties", "tickets", name]) => match &state.ticket_property {
            Some((property, unique)) if property == name => StubResponse::json(
                200,
                json!({"name": name, "type": "string", "fieldType": "text", "hasUniqueValue": unique}),
            ),
            _ => StubResponse::json(404, json!({"status": "error", "category": "OBJECT_NOT_FOUND"})),
        },
        ("GET", ["crm", "v3", "pipelines", "tickets", "0"]) => StubResponse::json(
            200,
            json!({
                "id": "0", "label": "Support Pipeline",
                "stages": [{"id": "1", "label": "New"}, {"id": "2", "label": "Waiting on contact"}, {"id": "4", "label": "Closed"}]
            }),
        ),
        ("GET", ["crm", "v3", "pipelines", "tickets", _]) => {
            StubResponse::json(404, json!({"status": "error", "category": "OBJECT_NOT_FOUND"}))
        }
        ("POST", ["crm", "v3", "objects", "contacts"]) => {
            let email = body["properties"]["email"].as_str().unwrap_or_default().to_owned();
            if let Some(existing) = state.contact_by_email(&email) {
                return StubResponse::json(
                    409,
                    json!({
                        "status": "error", "category": "CONFLICT",
                        "message": format!("Contact already exists. Existing ID: {existing}")
                    }),
                );
            }
            let id = state.new_id();
            state.contacts.insert(id.clone(), body["properties"].clone());
            StubResponse::json(201, json!({"id": id, "properties": body["properties"]}))
        }
        ("POST", ["crm", "v3", "objects", object @ ("contacts" | "tickets"), "batch", "upsert"]) => {
            let inputs = body["inputs"].as_array().cloned().unwrap_or_default();
            // Emails are one address in any case: a batch naming one in two cases names it twice.
            let ids: BTreeSet<String> = inputs
                .iter()
                .filter_map(|i| i["id"].as_str())
                .map(|id| if *object == "contacts" { id.to_lowercase() } else { id.to_owned() })
                .collect();
            if ids.len() != inputs.len() {
                return validation_error("Duplicate IDs found in batch input", "DUPLICATE_ID");
            }
            let (mut results, mut errors) = (Vec::new(), Vec::new());
            for input in &inputs {
                let id = input["id"].as_str().unwrap_or_default().to_owned();
                let trace = input.get("objectWriteTraceId").cloned();
                let id_property = input["idProperty"].as_str().unwrap_or_default();
                let properties = input["properties"].as_object().cloned().unwrap_or_default();
                if properties.values().any(|v| v.as_str().is_some_and(|t| t.chars().count() > 65_536)) {
                    errors.push(error_traced(
                        &trace,
                        invalid_properties(&[("INVALID_STRING_LENGTH", "content", "value is too long")]),
                    ));
                    continue;
                }
                if *object == "contacts" {
                    if id_property != "email" {
                        return validation_error(
                            &format!("Property \"{id_property}\" does not exist"),
                            "PROPERTY_DOESNT_EXIST",
                        );
                    }
                    // As for tickets: the ID property's value, when given, is the ID.
                    if properties.get("email").is_some_and(|v| v.as_str() != Some(id.as_str())) {
                        return validation_error("properties[idProperty] must equal id", "INVALID_ID");
                    }
                    let racing = state.contact_conflicts_once > 0;
                    state.contact_conflicts_once = state.contact_conflicts_once.saturating_sub(1);
                    if racing || state.conflicting_emails.iter().any(|e| e.eq_ignore_ascii_case(&id)) {
                        return StubResponse::json(
                            409,
                            json!({
                                "status": "error", "category": "CONFLICT",
                                "message": "Contact already exists. Existing ID: 901"
                            }),
                        );
                    }
                    if let Some(error) = state.refuse_inputs.get(&id).cloned() {
                        errors.push(error_traced(&trace, error));
                        continue;
                    }
                    if !id.contains('@') {
                        errors.push(error_traced(
                            &trace,
                            invalid_properties(&[(
                                "INVALID_EMAIL",
                                "email",
                                &format!("Email address {id} is invalid"),
                            )]),
                        ));
                        continue;
                    }
                    let mut properties = properties;
                    if let (true, Some(phone)) =
                        (state.phone_validation, properties.get("phone").and_then(Value::as_str))
                    {
                        let bare: String = phone.chars().filter(|c| !" -.()".contains(*c)).collect();
                        let digits = bare.strip_prefix('+').unwrap_or_default();
                        let e164 = (2..=15).contains(&digits.len())
                            && !digits.starts_with('0')
                            && digits.chars().all(|c| c.is_ascii_digit());
                        if !e164 {
                            let refusal =
                                invalid_properties(&[("INVALID_PHONE_NUMBER", "phone", "not a valid phone number")]);
                            errors.push(error_traced(&trace, refusal));
                            continue;
                        }
                        properties.insert(String::from("phone"), json!(bare));
                    }
                    if let Some(refusal) = typed_refusal(state, "contacts", &properties) {
                        errors.push(error_traced(&trace, refusal));
                        continue;
                    }
                    let (contact_id, created) = match state.contact_by_email(&id) {
                        Some(existing) => (existing, false),
                        None => {
                            let new = state.new_id();
                            state.contacts.insert(new.clone(), json!({"email": id}));
                            (new, true)
                        }
                    };
                    let contact = state.contacts.get_mut(&contact_id).unwrap();
                    for (name, value) in properties {
                        contact[name] = value;
                    }
                    results.push(result_traced(
                        &trace,
                        json!({"id": contact_id, "new": created, "properties": contact.clone()}),
                    ));
                } else {
                    match &state.ticket_property {
                        Some((property, true)) if property == id_property => {}
                        Some((property, false)) if property == id_property => {
                            return validation_error(
                                &format!("Property \"{id_property}\" is not unique"),
                                "INVALID_ID_PROPERTY",
                            );
                        }
                        _ => {
                            return validation_error(
                                &format!("Property \"{id_property}\" does not exist"),
                                "PROPERTY_DOESNT_EXIST",
                            )
                        }
                    }
                    if properties.get(id_property).and_then(Value::as_str) != Some(id.as_str()) {
                        return validation_error("properties[idProperty] must equal id", "INVALID_ID");
                    }
                    if let Some(error) = state.refuse_inputs.get(&id).cloned() {
                        errors.push(error_traced(&trace, error));
                        continue;
                    }
                    if properties.get("hs_pipeline").and_then(Value::as_str) == Some("0")
                        && !["1", "2", "4"]
                            .contains(&properties.get("hs_pipeline_stage").and_then(Value::as_str).unwrap_or_default())
                    {
                        let message = "was not one of the allowed options";
                        let refusal = invalid_properties(&[("INVALID_OPTION", "hs_pipeline_stage", message)]);
                        errors.push(error_traced(&trace, refusal));
                        continue;
                    }
                    if let Some(refusal) = typed_refusal(state, "tickets", &properties) {
                        errors.push(error_traced(&trace, refusal));
                        continue;
                    }
                    let missing = ["subject", "hs_pipeline", "hs_pipeline_stage"]
                        .into_iter()
                        .find(|p| properties.get(*p).and_then(Value::as_str).is_none_or(str::is_empty));
                    if let Some(missing) = missing {
                        errors.push(error_traced(
                            &trace,
                            json!({"status": "error", "category": "VALIDATION_ERROR",
                            "message": format!("Property {missing} is required"), "context": {"id": [id]}}),
                        ));
                        continue;
                    }
                    let created = !state.tickets.contains_key(&id);
                    if created {
                        let ticket_id = state.new_id();
                        state.tickets.insert(id.clone(), (ticket_id, json!({})));
                    }
                    let (ticket_id, ticket) = state.tickets.get_mut(&id).unwrap();
                    for (name, value) in properties {
                        ticket[name] = value;
                    }
                    results.push(result_traced(
                        &trace,
                        json!({"id": ticket_id.clone(), "new": created, "properties": ticket.clone()}),
                    ));
                }
            }
            // "Error handling": a batch answers 207 per-input errors only when its inputs
            // carry `objectWriteTraceId` (multi-status on); otherwise a refused input is a
            // 400 `VALIDATION_ERROR` for the whole request.
            // "Partial upserts are not supported when using email as the idProperty" (Using object
            // APIs): contacts by email answer a refused input with a 400 for the whole batch.
            let multi_status = inputs.iter().any(|i| i.get("objectWriteTraceId").is_some()) && *object != "contacts";
            if errors.is_empty() {
                StubResponse::json(200, json!({"status": "COMPLETE", "results": unordered(results)}))
            } else if multi_status {
                StubResponse::json(
                    207,
                    json!({"status": "COMPLETE", "results": unordered(results), "numErrors": errors.len(), "errors": errors}),
                )
            } else {
                StubResponse::json(
                    400,
                    json!({"status": "error", "category": "VALIDATION_ERROR",
                           "message": "Some inputs were not valid", "errors": errors}),
                )
            }
        }
        _ => StubResponse::json(404, json!({"status": "error"})),
    }
}
