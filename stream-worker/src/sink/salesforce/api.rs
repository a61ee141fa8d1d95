//! The Salesforce org as the sink reaches it: the client, its session (a token per client
//! credentials login), the API allocation it keeps within, the calls it makes (a collection
//! create, a query) and what a refusal means. Below the collections ([`super::batch`]) and the
//! sink.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{limits, refusals};
use crate::sink::contract::SinkError;
use crate::sink::http::{classify_status, transport_error};

/// The header that saves a Lead past duplicate rules whose action is Alert (Salesforce REST
/// API, "Duplicate Rule Header"; `allowSave` is false when the header is absent).
pub const DUPLICATE_RULE_HEADER: (&str, &str) = ("Sforce-Duplicate-Rule-Header", "allowSave=true");

/// The header that says whether (and by which rule) the org's assignment rules run on a create
/// (Salesforce REST API, "Assignment Rule Header": `TRUE`, `FALSE` or a rule's ID; absent is
/// `TRUE`).
pub const AUTO_ASSIGN_HEADER: &str = "Sforce-Auto-Assign";

/// A Salesforce org reached through a connected app's client credentials.
pub struct Salesforce {
    pub(super) client: reqwest::Client,
    pub(super) login: Login,
    /// `/services/data/vNN.N/sobjects/Lead/<field>`, after the instance URL (its describe, and
    /// the external ID field's name).
    pub(super) path: String,
    /// `/services/data/vNN.N/composite/sobjects`: sObject Collections create.
    pub(super) collection_path: String,
    /// `/services/data/vNN.N/query`: SOQL.
    pub(super) query_path: String,
    /// The org's API allocation as the answers so far describe it.
    pub(super) allocation: Mutex<limits::Allocation>,
    /// The current access token and the instance URL it is for.
    pub(super) session: Mutex<Option<Session>>,
    /// Whether the start-up check saw that the integration user may write the Lead's `Phone`
    /// (until it has, a phone goes to `Description`).
    pub(super) phone: AtomicBool,
    /// The lead mapping as configured (`LEAD_MAPPING`).
    pub(super) mapping: shared::field_map::FieldMapping,
    /// The mapping typed by the org's describe, once read (at start, or before the first
    /// create when the start-up check could not reach the org).
    pub(super) typed: Mutex<Option<std::sync::Arc<crate::sink::typed_map::Typed>>>,
    /// Records per collection call now ([`super::size`]).
    pub(super) size: super::size::CollectionSize,
}

/// What the token request needs.
pub struct Login {
    /// The org's My Domain URL, where the token endpoint is.
    pub domain_url: String,
    pub client_id: String,
    pub client_secret: String,
}

#[derive(Clone)]
pub(super) struct Session {
    pub(super) token: String,
    pub(super) instance_url: String,
}

impl Salesforce {
    pub fn new(client: reqwest::Client, login: Login, version: &str, field: &str) -> Salesforce {
        let path = format!("/services/data/v{version}/sobjects/Lead/{field}");
        let collection_path = format!("/services/data/v{version}/composite/sobjects");
        let query_path = format!("/services/data/v{version}/query");
        Salesforce {
            client,
            login,
            path,
            collection_path,
            query_path,
            allocation: Mutex::default(),
            session: Mutex::new(None),
            phone: AtomicBool::new(false),
            mapping: shared::field_map::FieldMapping::default(),
            typed: Mutex::new(None),
            size: Default::default(),
        }
    }

    /// The sink with a lead mapping ([`crate::mapping`]), checked against the org at start.
    pub fn with_mapping(mut self, mapping: shared::field_map::FieldMapping) -> Salesforce {
        self.mapping = mapping;
        self
    }

    /// Reads the describe again before the next create (the org's fields changed: a call
    /// refused for a field it no longer has, or for a value's type).
    pub(super) fn forget_typed(&self) {
        *self.typed.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether the Lead's `Phone` is written ([`Salesforce::phone`]).
    pub(super) fn phone_writable(&self) -> bool {
        self.phone.load(Ordering::Relaxed)
    }

    /// After a refusal of a Lead's `Phone`: when it says the integration user may no longer
    /// write or see the field, phones go to `Description` until the worker starts again.
    pub(super) fn note_phone_refused(&self, errors: &[refusals::Refusal]) {
        if refusals::phone_not_writable(errors) {
            self.phone.store(false, Ordering::Relaxed);
        }
    }

    /// The external ID field's API name (the path's last segment).
    pub(super) fn field(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(_, field)| field)
    }

    /// Refuses a call while the org's allocation is at its reserved part ([`limits`]).
    pub(super) fn check_allocation(&self) -> Result<(), SinkError> {
        let allows = self.allocation.lock().map_err(|_| poisoned())?.allows(tokio::time::Instant::now());
        allows.then_some(()).ok_or(SinkError::Retryable { reason: "sink_allocation_reserved", retry_after: None })
    }

    /// Notes an answer's `Sforce-Limit-Info`.
    pub(super) fn note_usage(&self, headers: &reqwest::header::HeaderMap) {
        let usage = headers.get("sforce-limit-info").and_then(|v| v.to_str().ok()).and_then(limits::api_usage);
        if let (Some(usage), Ok(mut allocation)) = (usage, self.allocation.lock()) {
            allocation.observe(tokio::time::Instant::now(), usage);
        }
    }

    /// A `POST` of `body` to `path` (after the instance URL) with the duplicate rule header,
    /// on the cached session (a new one when `fresh`), once the allocation allows a call; the
    /// answer's `Sforce-Limit-Info` is noted. Every collection create sends so.
    pub(super) async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
        fresh: bool,
    ) -> Result<reqwest::Response, SinkError> {
        self.check_allocation()?;
        let session = self.session(fresh).await?;
        let request = self
            .client
            .post(format!("{}{path}", session.instance_url))
            .bearer_auth(&session.token)
            .header(DUPLICATE_RULE_HEADER.0, DUPLICATE_RULE_HEADER.1)
            .json(body);
        // The org's assignment rules on each new Lead, as the mapping says (absent: TRUE).
        let request = match &self.mapping.assignment {
            Some(value) => request.header(AUTO_ASSIGN_HEADER, value),
            None => request,
        };
        let response = request.send().await.map_err(|e| {
            // A create that outlasted the client's timeout: smaller collections from now on.
            if e.is_timeout() {
                self.size.note(true);
            }
            transport_error(&e)
        })?;
        self.note_usage(response.headers());
        Ok(response)
    }

    /// A SOQL query (`GET .../query?q=`), as [`Salesforce::post`] sends its calls.
    pub(super) async fn query(&self, soql: &str, fresh: bool) -> Result<reqwest::Response, SinkError> {
        self.check_allocation()?;
        let session = self.session(fresh).await?;
        let url = format!("{}{}", session.instance_url, self.query_path);
        let request = self.client.get(url).query(&[("q", soql)]).bearer_auth(&session.token);
        let response = request.send().await.map_err(|e| transport_error(&e))?;
        self.note_usage(response.headers());
        Ok(response)
    }

    /// The cached session, or a new one from the token endpoint.
    pub(super) async fn session(&self, fresh: bool) -> Result<Session, SinkError> {
        if !fresh {
            if let Some(session) = self.session.lock().map_err(|_| poisoned())?.clone() {
                return Ok(session);
            }
        }
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.login.client_id.as_str()),
            ("client_secret", self.login.client_secret.as_str()),
        ];
        let url = format!("{}/services/oauth2/token", self.login.domain_url);
        let response = self.client.post(url).form(&form).send().await.map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        if status != 200 {
            // `invalid_client`, `invalid_grant` (400) or 401: the connected app's settings need
            // a fix; never a reason to fail a lead.
            if matches!(status, 400 | 401 | 403) {
                return Err(SinkError::Retryable { reason: "sink_login_refused", retry_after: None });
            }
            let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok());
            return Err(classify_status(status, retry_after));
        }
        let answer: serde_json::Value = response.json().await.map_err(|e| transport_error(&e))?;
        let token = answer["access_token"].as_str().filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(SinkError::Retryable { reason: "sink_login_refused", retry_after: None });
        };
        let instance_url = answer["instance_url"]
            .as_str()
            .filter(|u| crate::config::is_http_url(u))
            .unwrap_or(&self.login.domain_url)
            .trim_end_matches('/');
        let session = Session { token: token.to_owned(), instance_url: instance_url.to_owned() };
        *self.session.lock().map_err(|_| poisoned())? = Some(session.clone());
        Ok(session)
    }
}

/// A call's answer other than 200 (`field`: the external ID field): its error codes first
/// ([`refusals::meaning`]), then its status ([`classify_status`]: 415
/// retried as `sink_unsupported_media_type`, 429 and 5xx with their `Retry-After`, other 4xx
/// the lead's).
pub fn classify_answer(status: u16, retry_after: Option<&str>, body: &str, field: &str) -> Result<(), SinkError> {
    match refusals::meaning(status, &refusals::errors(body), field) {
        Some(meaning) => meaning.verdict(),
        None => Err(classify_status(status, retry_after)),
    }
}

pub(super) fn poisoned() -> SinkError {
    SinkError::Retryable { reason: "sink_session_poisoned", retry_after: None }
}
