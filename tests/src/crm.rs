//! Stand-ins for HubSpot and Salesforce, written to their documented upsert behaviour. They
//! are the only fakes in the suite: the real services cannot be reached from here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::stub_http::{StubRequest, StubResponse, StubServer};

/// HubSpot's contacts batch upsert, keyed by one unique property.
pub struct HubSpotStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<HubSpotState>>,
}

#[derive(Default)]
pub struct HubSpotState {
    /// Contacts by the unique property's value.
    pub contacts: BTreeMap<String, Value>,
    /// Requests answered so far.
    pub requests: usize,
    /// Answer this many requests with 429 and `Retry-After: 1` first.
    pub throttle_first: usize,
}

impl HubSpotStandIn {
    pub fn start(token: &str, id_property: &str) -> HubSpotStandIn {
        let state = Arc::new(Mutex::new(HubSpotState::default()));
        let (token, id_property, shared) = (token.to_owned(), id_property.to_owned(), Arc::clone(&state));
        let server = StubServer::start(move |request: StubRequest| {
            let mut state = shared.lock().unwrap();
            state.requests += 1;
            if state.requests <= state.throttle_first {
                let mut response = StubResponse::json(429, json!({"status": "error", "category": "RATE_LIMITS"}));
                response.headers.push(("Retry-After".into(), "1".into()));
                return response;
            }
            if request.header("authorization") != Some(&format!("Bearer {token}")) {
                return StubResponse::json(401, json!({"status": "error", "category": "INVALID_AUTHENTICATION"}));
            }
            if (request.method.as_str(), request.path.as_str()) != ("POST", "/crm/v3/objects/contacts/batch/upsert") {
                return StubResponse::json(404, json!({"status": "error"}));
            }
            let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                return StubResponse::json(400, json!({"status": "error", "category": "VALIDATION_ERROR"}));
            };
            let inputs = body["inputs"].as_array().cloned().unwrap_or_default();
            let ids: BTreeSet<&str> = inputs.iter().filter_map(|i| i["id"].as_str()).collect();
            if ids.len() != inputs.len() {
                return StubResponse::json(
                    400,
                    json!({"status": "error", "message": "Duplicate IDs found in batch input"}),
                );
            }
            let mut results = Vec::new();
            for input in &inputs {
                if input["idProperty"] != id_property.as_str() {
                    return StubResponse::json(400, json!({"status": "error", "message": "Property is not unique"}));
                }
                let id = input["id"].as_str().unwrap_or_default().to_owned();
                let created = !state.contacts.contains_key(&id);
                let contact = state.contacts.entry(id).or_insert_with(|| json!({}));
                for (name, value) in input["properties"].as_object().cloned().unwrap_or_default() {
                    contact[name] = value;
                }
                results.push(json!({"properties": contact.clone(), "new": created}));
            }
            StubResponse::json(200, json!({"status": "COMPLETE", "results": results}))
        });
        HubSpotStandIn { server, state }
    }
}

/// Salesforce's Lead upsert by an external ID field, behind the OAuth 2.0 client credentials
/// flow: tokens come from `/services/oauth2/token`, and expire on demand (`expire_tokens`), as
/// sessions do after their timeout, answering 401 `INVALID_SESSION_ID`.
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
}

/// The Lead fields the stand-in's org has (anything else is `INVALID_FIELD`).
const LEAD_FIELDS: [&str; 5] = ["FirstName", "LastName", "Email", "Company", "Description"];

impl SalesforceStandIn {
    pub fn start(client_id: &str, client_secret: &str, version: &str, field: &str) -> SalesforceStandIn {
        let state = Arc::new(Mutex::new(SalesforceState::default()));
        let prefix = format!("/services/data/v{version}/sobjects/Lead/{field}/");
        let (client_id, client_secret, shared) = (client_id.to_owned(), client_secret.to_owned(), Arc::clone(&state));
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
            let bearer = request.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default();
            if !state.tokens.contains(bearer) {
                return StubResponse::json(
                    401,
                    json!([{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]),
                );
            }
            let Some(id) = request.path.strip_prefix(&prefix).filter(|_| request.method == "PATCH") else {
                return StubResponse::json(404, json!([{"errorCode": "NOT_FOUND"}]));
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
            let Ok(fields) = serde_json::from_slice::<Value>(&request.body) else {
                return StubResponse::json(400, json!([{"errorCode": "JSON_PARSER_ERROR"}]));
            };
            if let Some(unknown) =
                fields.as_object().and_then(|f| f.keys().find(|k| !LEAD_FIELDS.contains(&k.as_str())))
            {
                return StubResponse::json(
                    400,
                    json!([{"errorCode": "INVALID_FIELD", "message": format!("No such column '{unknown}' on sobject of type Lead")}]),
                );
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
