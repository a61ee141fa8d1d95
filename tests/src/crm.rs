//! Stand-ins for HubSpot and Salesforce, written to their documented upsert behaviour. They
//! are the only fakes in the suite: the real services cannot be reached from here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::stub_http::{FailNext, StubRequest, StubResponse, StubServer};

/// HubSpot as its API documents it, for the calls the sink makes: contacts unique by email
/// (upsert by `email`; a create with an existing email is 409 `CONFLICT`), tickets upserted by
/// a unique ticket property (which must exist and be unique: else 400 `VALIDATION_ERROR`,
/// `PROPERTY_DOESNT_EXIST`), on both upserts `properties[idProperty]`, when given, equal to the
/// `id` (else 400 `VALIDATION_ERROR`; our client's own rule, HubSpot documents the value in
/// `id` only), refused inputs as a 400 `VALIDATION_ERROR` listing them (or 207 per-input errors
/// when the inputs carry `objectWriteTraceId`; an email without `@` is `INVALID_EMAIL`), v4
/// default associations, the properties API, and rate limits as 429 with
/// `policyName` and the `X-HubSpot-RateLimit-*` headers (no `Retry-After`, which HubSpot
/// documents only for other answers). Sources: developers.hubspot.com "Error handling" (429,
/// 502/504, 503; the `status`/`category`/`message` body), "Using object APIs" (batch upsert).
///
/// Knobs: `fail_next` (any status; 429 with the `RATE_LIMIT` body), `conflicting_emails` (a
/// contact upsert naming one answers 409 `CONFLICT`, as HubSpot's contact endpoints do for an
/// email another record holds; the v3 batch upsert documents no 409, so this is the worst case:
/// the same answer on every attempt) and `refuse_inputs` (refused inputs by input `id`).
pub struct HubSpotStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<HubSpotState>>,
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
    /// Emails (any case) whose contact upsert answers 409 `CONFLICT`, every time.
    pub conflicting_emails: BTreeSet<String>,
    /// Per-input errors by batch input `id` (a contact's email, a ticket's submission ID),
    /// answered in a 207 as HubSpot answers an input it refuses.
    pub refuse_inputs: BTreeMap<String, Value>,
    next_id: u64,
}

impl HubSpotState {
    fn new_id(&mut self) -> String {
        self.next_id += 1;
        (1000 + self.next_id).to_string()
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
            ..HubSpotState::default()
        }));
        let (token, shared) = (token.to_owned(), Arc::clone(&state));
        let server = StubServer::start(move |request: StubRequest| {
            let mut state = shared.lock().unwrap();
            state.requests += 1;
            if let Some((status, retry_after)) = state.fail_next.take() {
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
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let path: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
            match (request.method.as_str(), path.as_slice()) {
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
                    let ids: BTreeSet<&str> = inputs.iter().filter_map(|i| i["id"].as_str()).collect();
                    if ids.len() != inputs.len() {
                        return validation_error("Duplicate IDs found in batch input", "DUPLICATE_ID");
                    }
                    let (mut results, mut errors) = (Vec::new(), Vec::new());
                    for input in &inputs {
                        let id = input["id"].as_str().unwrap_or_default().to_owned();
                        let id_property = input["idProperty"].as_str().unwrap_or_default();
                        let properties = input["properties"].as_object().cloned().unwrap_or_default();
                        if properties.values().any(|v| v.as_str().is_some_and(|t| t.chars().count() > 65_536)) {
                            errors.push(json!({"status": "error", "category": "VALIDATION_ERROR", "code": "INVALID_STRING_LENGTH",
                                "message": "Property values were not valid", "context": {"id": [id]}}));
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
                            if state.conflicting_emails.iter().any(|e| e.eq_ignore_ascii_case(&id)) {
                                return StubResponse::json(
                                    409,
                                    json!({
                                        "status": "error", "category": "CONFLICT",
                                        "message": "Contact already exists. Existing ID: 901"
                                    }),
                                );
                            }
                            if let Some(error) = state.refuse_inputs.get(&id).cloned() {
                                errors.push(error);
                                continue;
                            }
                            if !id.contains('@') {
                                errors.push(
                                    json!({"status": "error", "category": "VALIDATION_ERROR", "code": "INVALID_EMAIL",
                                    "message": format!("Email address {id} is invalid"),
                                    "context": {"id": [id], "propertyName": ["email"]}}),
                                );
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
                            results.push(json!({"id": contact_id, "new": created, "properties": contact.clone()}));
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
                                errors.push(error);
                                continue;
                            }
                            if properties.get("hs_pipeline").and_then(Value::as_str) == Some("0")
                                && !["1", "2", "4"].contains(
                                    &properties.get("hs_pipeline_stage").and_then(Value::as_str).unwrap_or_default(),
                                )
                            {
                                errors.push(json!({"status": "error", "category": "VALIDATION_ERROR", "code": "INVALID_OPTION",
                                    "message": "Property values were not valid", "context": {"propertyName": ["hs_pipeline_stage"]}}));
                                continue;
                            }
                            let missing = ["subject", "hs_pipeline", "hs_pipeline_stage"]
                                .into_iter()
                                .find(|p| properties.get(*p).and_then(Value::as_str).is_none_or(str::is_empty));
                            if let Some(missing) = missing {
                                errors.push(json!({"status": "error", "category": "VALIDATION_ERROR",
                                    "message": format!("Property {missing} is required"), "context": {"id": [id]}}));
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
                            results
                                .push(json!({"id": ticket_id.clone(), "new": created, "properties": ticket.clone()}));
                        }
                    }
                    // "Error handling": a batch answers 207 per-input errors only when its inputs
                    // carry `objectWriteTraceId` (multi-status on); otherwise a refused input is a
                    // 400 `VALIDATION_ERROR` for the whole request.
                    let multi_status = inputs.iter().any(|i| i.get("objectWriteTraceId").is_some());
                    if errors.is_empty() {
                        StubResponse::json(200, json!({"status": "COMPLETE", "results": results}))
                    } else if multi_status {
                        StubResponse::json(
                            207,
                            json!({"status": "COMPLETE", "results": results, "numErrors": errors.len(), "errors": errors}),
                        )
                    } else {
                        StubResponse::json(
                            400,
                            json!({"status": "error", "category": "VALIDATION_ERROR",
                                   "message": "Some inputs were not valid", "errors": errors}),
                        )
                    }
                }
                (
                    "PUT",
                    ["crm", "v4", "objects", "tickets", ticket, "associations", "default", "contacts", contact],
                ) => {
                    let ticket_exists = state.tickets.values().any(|(id, _)| id == ticket);
                    if !ticket_exists || !state.contacts.contains_key(*contact) {
                        return StubResponse::json(404, json!({"status": "error", "category": "OBJECT_NOT_FOUND"}));
                    }
                    state.associations.insert(((*ticket).to_owned(), (*contact).to_owned()));
                    StubResponse::json(
                        200,
                        json!({"status": "COMPLETE", "results": [{
                            "from": {"id": ticket}, "to": {"id": contact},
                            "associationSpec": {"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 16}
                        }]}),
                    )
                }
                _ => StubResponse::json(404, json!({"status": "error"})),
            }
        });
        HubSpotStandIn { server, state }
    }

    /// Answers the next requests with `failure` (429 with the `RATE_LIMIT` body, 5xx, ...).
    pub fn fail_next(&self, failure: FailNext) {
        self.state.lock().unwrap().fail_next = failure;
    }
}

/// Salesforce's Lead upsert by an external ID field, behind the OAuth 2.0 client credentials
/// flow: tokens come from `/services/oauth2/token`, and expire on demand (`expire_tokens`), as
/// sessions do after their timeout, answering 401 `INVALID_SESSION_ID`. Field API names (in the
/// body and the external ID field in the path) compare without case, as Salesforce's do.
///
/// `fail_next` answers the next API calls (never the token endpoint) with Salesforce's bodies
/// (developer.salesforce.com, REST API "Status Codes and Error Responses"): 401
/// `INVALID_SESSION_ID` (a count of 2 outlasts the one new token a client fetches), 403
/// `REQUEST_LIMIT_EXCEEDED` (Salesforce's request limit answer; it does not use 429), 415, 503
/// `SERVER_UNAVAILABLE` (with `Retry-After` when set); any other status, 429 included, gets a
/// generic error.
pub struct SalesforceStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<SalesforceState>>,
}

#[derive(Default)]
pub struct SalesforceState {
    /// Leads by external ID (percent-decoded, as Salesforce stores the value).
    pub leads: BTreeMap<String, Value>,
    /// External IDs that match more than one Lead (answered with 300).
    pub ambiguous: BTreeSet<String>,
    /// Access tokens currently valid.
    pub tokens: BTreeSet<String>,
    /// Tokens issued so far.
    pub issued: usize,
    /// Whether the org's external ID field is marked External ID (it always exists).
    pub field_not_external: bool,
    /// Answer the next API calls (not token requests) with a failure.
    pub fail_next: FailNext,
}

/// Salesforce's answer with `status` for an API call it did not serve.
fn salesforce_failure(status: u16, retry_after: Option<String>) -> StubResponse {
    let (code, message) = match status {
        401 => ("INVALID_SESSION_ID", "Session expired or invalid"),
        403 => ("REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded."),
        415 => ("UNSUPPORTED_MEDIA_TYPE", "Content type not supported"),
        503 => ("SERVER_UNAVAILABLE", "Server temporarily unavailable"),
        _ => ("UNKNOWN_EXCEPTION", "An unexpected error occurred"),
    };
    let response = StubResponse::json(status, json!([{"message": message, "errorCode": code}]));
    match retry_after {
        Some(seconds) => response.with_header("Retry-After", &seconds),
        None => response,
    }
}

/// The Lead fields the stand-in's org has (anything else is `INVALID_FIELD`).
const LEAD_FIELDS: [&str; 5] = ["FirstName", "LastName", "Email", "Company", "Description"];

impl SalesforceStandIn {
    pub fn start(client_id: &str, client_secret: &str, version: &str, field: &str) -> SalesforceStandIn {
        let state = Arc::new(Mutex::new(SalesforceState::default()));
        let prefix = format!("/services/data/v{version}/sobjects/Lead/{field}/");
        let (client_id, client_secret, shared) = (client_id.to_owned(), client_secret.to_owned(), Arc::clone(&state));
        let (version, field) = (version.to_owned(), field.to_owned());
        let own_url: Arc<Mutex<String>> = Arc::default();
        let url = Arc::clone(&own_url);
        let server = StubServer::start(move |request: StubRequest| {
            let mut state = shared.lock().unwrap();
            if request.path == "/services/oauth2/token" {
                let form: BTreeMap<String, String> = form_decode(&request.body);
                let is_form = request.header("content-type") == Some("application/x-www-form-urlencoded");
                if request.method != "POST"
                    || !is_form
                    || form.get("grant_type").map(String::as_str) != Some("client_credentials")
                {
                    return StubResponse::json(400, json!({"error": "unsupported_grant_type"}));
                }
                if form.get("client_id") != Some(&client_id) || form.get("client_secret") != Some(&client_secret) {
                    return StubResponse::json(
                        400,
                        json!({"error": "invalid_client", "error_description": "invalid client credentials"}),
                    );
                }
                state.issued += 1;
                let token = format!("00D!token-{}", state.issued);
                state.tokens.insert(token.clone());
                return StubResponse::json(
                    200,
                    json!({
                        "access_token": token, "instance_url": url.lock().unwrap().clone(), "token_type": "Bearer",
                        "issued_at": "1796019713000", "signature": "c2ln", "id": "https://login.salesforce.com/id/00D/005"
                    }),
                );
            }
            if let Some((status, retry_after)) = state.fail_next.take() {
                return salesforce_failure(status, retry_after);
            }
            let bearer = request.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default();
            if !state.tokens.contains(bearer) {
                return StubResponse::json(
                    401,
                    json!([{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]),
                );
            }
            if request.method == "GET" && request.path == format!("/services/data/v{version}/sobjects/Lead/describe") {
                let mut fields: Vec<Value> =
                    LEAD_FIELDS.iter().map(|name| json!({"name": name, "externalId": false})).collect();
                fields.push(json!({"name": field, "externalId": !state.field_not_external, "unique": true}));
                return StubResponse::json(200, json!({"name": "Lead", "fields": fields}));
            }
            // The object and field names in the path compare without case too.
            let id = request
                .path
                .get(..prefix.len())
                .filter(|start| start.eq_ignore_ascii_case(&prefix) && request.method == "PATCH")
                .and_then(|_| request.path.get(prefix.len()..));
            let Some(id) = id else {
                let message = "Provided external ID field does not exist or is not accessible";
                return StubResponse::json(404, json!([{"errorCode": "NOT_FOUND", "message": message}]));
            };
            let id = percent_decode(id);
            if state.ambiguous.contains(&id) {
                return StubResponse::json(
                    300,
                    json!(["/services/data/v60.0/sobjects/Lead/00Q1", "/services/data/v60.0/sobjects/Lead/00Q2"]),
                );
            }
            if !request.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
                return StubResponse::json(415, json!([{"errorCode": "UNSUPPORTED_MEDIA_TYPE"}]));
            }
            let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                return StubResponse::json(400, json!([{"errorCode": "JSON_PARSER_ERROR"}]));
            };
            // Each field name is matched without case to the org's field, and stored as the org
            // spells it; a name no field has is INVALID_FIELD.
            let mut fields = json!({});
            for (name, value) in body.as_object().cloned().unwrap_or_default() {
                let Some(known) = LEAD_FIELDS.iter().find(|f| f.eq_ignore_ascii_case(&name)) else {
                    return StubResponse::json(
                        400,
                        json!([{"errorCode": "INVALID_FIELD", "message": format!("No such column '{name}' on sobject of type Lead")}]),
                    );
                };
                fields[*known] = value;
            }
            // Lead field lengths and the email format, as the org enforces them.
            for (name, max) in
                [("FirstName", 40), ("LastName", 80), ("Company", 255), ("Email", 80), ("Description", 32_000)]
            {
                if fields[name].as_str().is_some_and(|v| v.chars().count() > max) {
                    return StubResponse::json(400, json!([{"errorCode": "STRING_TOO_LONG", "fields": [name]}]));
                }
            }
            if fields["Email"].as_str().is_some_and(|e| !e.contains('@') || e.contains(' ')) {
                return StubResponse::json(400, json!([{"errorCode": "INVALID_EMAIL_ADDRESS", "fields": ["Email"]}]));
            }
            for required in ["LastName", "Company"] {
                if fields[required].as_str().is_none_or(str::is_empty) {
                    return StubResponse::json(
                        400,
                        json!([{"errorCode": "REQUIRED_FIELD_MISSING", "fields": [required]}]),
                    );
                }
            }
            match state.leads.get_mut(&id) {
                Some(lead) => {
                    for (name, value) in fields.as_object().cloned().unwrap_or_default() {
                        lead[name] = value;
                    }
                    StubResponse { status: 204, headers: vec![], body: String::new() }
                }
                None => {
                    state.leads.insert(id, fields);
                    StubResponse::json(
                        201,
                        json!({"id": "00Q000000000001", "success": true, "errors": [], "created": true}),
                    )
                }
            }
        });
        *own_url.lock().unwrap() = server.url();
        SalesforceStandIn { server, state }
    }

    /// Ends every session, as the org's session timeout does.
    pub fn expire_tokens(&self) {
        self.state.lock().unwrap().tokens.clear();
    }

    /// Answers the next API calls (not token requests) with `failure`.
    pub fn fail_next(&self, failure: FailNext) {
        self.state.lock().unwrap().fail_next = failure;
    }
}

/// `%XX` sequences as bytes, then UTF-8.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An `application/x-www-form-urlencoded` body as a map.
fn form_decode(body: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (percent_decode(&k.replace('+', " ")), percent_decode(&v.replace('+', " "))))
        .collect()
}
