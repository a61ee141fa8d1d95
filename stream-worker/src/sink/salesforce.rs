//! Salesforce: upsert a Lead by an external ID field holding the submission ID.
//!
//! `PATCH /services/data/vNN.N/sobjects/Lead/<field>/<submissionId>`: 201 created, 200 or 204
//! updated, 300 when several Leads match (a data problem: permanent for this lead).

use serde_json::json;
use shared::lead::Lead;

use super::http::{classify_status, transport_error};
use super::{LeadSink, SinkError};

/// What Salesforce requires on a Lead when the form did not supply it.
pub const NOT_PROVIDED: &str = "[not provided]";

/// A Salesforce org reached with an access token.
pub struct Salesforce {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Salesforce {
    pub fn new(client: reqwest::Client, instance_url: &str, token: &str, version: &str, field: &str) -> Salesforce {
        let base = format!("{instance_url}/services/data/v{version}/sobjects/Lead/{field}");
        Salesforce { client, base, token: token.to_owned() }
    }
}

/// The Lead's fields: `LastName` and `Company` are required by Salesforce.
pub fn fields(lead: &Lead) -> serde_json::Value {
    let (first, last) = match lead.name.rsplit_once(' ') {
        Some((first, last)) => (first, last),
        None => ("", lead.name.as_str()),
    };
    let company = lead.extra.get("company").and_then(|c| c.as_str()).unwrap_or(NOT_PROVIDED);
    json!({
        "FirstName": first,
        "LastName": if last.is_empty() { NOT_PROVIDED } else { last },
        "Email": lead.email,
        "Company": company,
        "Description": lead.message,
    })
}

impl LeadSink for Salesforce {
    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        // Submission IDs are letters, digits and `_-.:`, all safe in a path segment.
        let url = format!("{}/{}", self.base, lead.external_id);
        let request = self.client.patch(url).bearer_auth(&self.token).json(&fields(lead));
        let response = request.send().await.map_err(|e| transport_error(&e))?;
        match response.status().as_u16() {
            200 | 201 | 204 => Ok(()),
            300 => Err(SinkError::Permanent { reason: "sink_multiple_matches" }),
            status => {
                let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok());
                Err(classify_status(status, retry_after))
            }
        }
    }
}
