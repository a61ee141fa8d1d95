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

/// Salesforce's Lead upsert by an external ID field.
pub struct SalesforceStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<SalesforceState>>,
}

#[derive(Default)]
pub struct SalesforceState {
    /// Leads by external ID.
    pub leads: BTreeMap<String, Value>,
    /// External IDs that match more than one Lead (answered with 300).
    pub ambiguous: BTreeSet<String>,
}

impl SalesforceStandIn {
    pub fn start(token: &str, version: &str, field: &str) -> SalesforceStandIn {
        let state = Arc::new(Mutex::new(SalesforceState::default()));
        let prefix = format!("/services/data/v{version}/sobjects/Lead/{field}/");
        let (token, shared) = (token.to_owned(), Arc::clone(&state));
        let server = StubServer::start(move |request: StubRequest| {
            let mut state = shared.lock().unwrap();
            if request.header("authorization") != Some(&format!("Bearer {token}")) {
                return StubResponse::json(401, json!([{"errorCode": "INVALID_SESSION_ID"}]));
            }
            let Some(id) = request.path.strip_prefix(&prefix).filter(|_| request.method == "PATCH") else {
                return StubResponse::json(404, json!([{"errorCode": "NOT_FOUND"}]));
            };
            if state.ambiguous.contains(id) {
                return StubResponse::json(
                    300,
                    json!(["/services/data/v60.0/sobjects/Lead/00Q1", "/services/data/v60.0/sobjects/Lead/00Q2"]),
                );
            }
            let Ok(fields) = serde_json::from_slice::<Value>(&request.body) else {
                return StubResponse::json(400, json!([{"errorCode": "JSON_PARSER_ERROR"}]));
            };
            for required in ["LastName", "Company"] {
                if fields[required].as_str().is_none_or(str::is_empty) {
                    return StubResponse::json(
                        400,
                        json!([{"errorCode": "REQUIRED_FIELD_MISSING", "fields": [required]}]),
                    );
                }
            }
            match state.leads.get_mut(id) {
                Some(lead) => {
                    for (name, value) in fields.as_object().cloned().unwrap_or_default() {
                        lead[name] = value;
                    }
                    StubResponse { status: 204, headers: vec![], body: String::new() }
                }
                None => {
                    state.leads.insert(id.to_owned(), fields);
                    StubResponse::json(
                        201,
                        json!({"id": "00Q000000000001", "success": true, "errors": [], "created": true}),
                    )
                }
            }
        });
        SalesforceStandIn { server, state }
    }
}
