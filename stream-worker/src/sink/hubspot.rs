//! HubSpot: one contact per person, one ticket per submission, the two associated.
//!
//! Contacts are unique by email in HubSpot, so a contact per submission fails the moment one
//! person submits twice. Instead, for up to [`BATCH_SIZE`] leads at once ([`batch`]):
//! 1. the tickets are read by the unique ticket property holding the submission ID
//!    (`POST /crm/v3/objects/tickets/batch/read`), and the found ones' contacts (v4
//!    `associations/tickets/contacts/batch/read`): a replay (a redrive, a stream retry after
//!    the lead was written, reconcile) finds its ticket and writes nothing to it, so a stage,
//!    subject or owner an agent changed stays as the agent left it; only an association a
//!    crash left out is made;
//! 2. the contacts are upserted by email (`POST /crm/v3/objects/contacts/batch/upsert`,
//!    `idProperty: "email"`), one input per person (HubSpot refuses a batch naming a record
//!    twice; the latest submission's name wins), when the form gave one;
//! 3. the new submissions become tickets upserted by the unique property (by default
//!    `static_forms_submission_id`, which must exist with unique values): tickets are on every
//!    HubSpot tier, and upsert by a unique property makes two first attempts at once write one
//!    ticket;
//! 4. each ticket is associated with its contact (v4
//!    `associations/tickets/contacts/batch/associate/default`), which upserts cannot carry.
//!
//! Each lead's outcome comes from its own inputs' results, matched by ID values: a refused
//! input (a 207 per-input error) decides its lead only, and a batch refused as a whole is
//! split until the refused input stands alone. Calls are paced to the rate-limit headers
//! ([`pace`]). Two submissions from one person are two tickets and one contact; a replay
//! changes nothing.
//!
//! The contact is the lead's extra, the ticket is the lead: an email HubSpot refuses (a 400
//! `VALIDATION_ERROR`, or a 207 per-input error) or that conflicts with another record (a 409
//! `CONFLICT` twice in a row) answers the same on every attempt, so it costs the contact, never
//! the submission, and never holds the shard: the ticket is written with the email in its
//! content.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use shared::lead::Lead;

use tokio::time::Instant;

use super::contract::{BatchItem, CheckError, LeadSink, SinkError, RECEIPT_UPDATE_BUDGET};

mod api;
mod batch;
pub mod pace;
mod plan;

pub use api::{
    association_error, classify_error, classify_upsert_answer, contact_input, contact_properties, property_verdicts,
    ticket_properties, HubSpot, TicketPipeline, BATCH_SIZE, MAX_PROPERTY_CHARS,
};
use batch::Found;

impl HubSpot {
    /// Checks, once at start, that the ticket property holding submission IDs exists with unique
    /// values and that the pipeline has the stage; without that, every upsert would fail.
    pub async fn check_configuration(&self) -> Result<(), CheckError> {
        let get = |path: String| async move {
            let response = self.client.get(format!("{}{path}", self.base_url)).bearer_auth(&self.token).send().await;
            let response =
                response.map_err(|e| CheckError::Unreachable(format!("HubSpot could not be reached: {e}")))?;
            match response.status().as_u16() {
                200 => Ok(Some(response.json::<Value>().await.unwrap_or(Value::Null))),
                404 => Ok(None),
                401 | 403 => Err(CheckError::Wrong(
                    "HUBSPOT_TOKEN: HubSpot refused the token (it needs the tickets and contacts scopes)".into(),
                )),
                status => Err(CheckError::Unreachable(format!("HubSpot answered {status}"))),
            }
        };
        let property = get(format!("/crm/v3/properties/tickets/{}", self.id_property)).await?;
        let Some(property) = property else {
            return Err(CheckError::Wrong(format!(
                "HUBSPOT_ID_PROPERTY: the ticket property {:?} does not exist; create it with unique values",
                self.id_property
            )));
        };
        if property["hasUniqueValue"] != Value::Bool(true) {
            return Err(CheckError::Wrong(format!(
                "HUBSPOT_ID_PROPERTY: the ticket property {:?} must have unique values (hasUniqueValue)",
                self.id_property
            )));
        }
        let pipeline = get(format!("/crm/v3/pipelines/tickets/{}", self.pipeline)).await?;
        let has_stage = pipeline.as_ref().is_some_and(|p| {
            p["stages"].as_array().into_iter().flatten().any(|s| s["id"].as_str() == Some(self.stage.as_str()))
        });
        if !has_stage {
            return Err(CheckError::Wrong(format!(
                "HUBSPOT_TICKET_PIPELINE / HUBSPOT_TICKET_STAGE: the ticket pipeline {:?} has no stage {:?}",
                self.pipeline, self.stage
            )));
        }
        Ok(())
    }
}

impl HubSpot {
    /// Writes `items`' leads ([`BATCH_SIZE`] at most, each another receipt's): one result per
    /// item, in their order.
    pub async fn upsert_batch(&self, items: &[BatchItem<'_>], deadline: Option<Instant>) -> Vec<Result<(), SinkError>> {
        let leads: Vec<&Lead> = items.iter().map(|item| item.lead).collect();
        let all = |error: SinkError| vec![Err(error); leads.len()];
        let mut ids: Vec<&str> = leads.iter().map(|lead| lead.external_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        // 1. The tickets that exist, and which of them have their contact.
        let found = match self.read_tickets(&ids, deadline).await {
            Ok(found) => found,
            Err(error) => return all(error),
        };
        let tickets: Vec<&str> = found
            .values()
            .filter_map(|f| match f {
                Found::Ticket(ticket) => Some(ticket.as_str()),
                Found::Collision => None,
            })
            .collect();
        let associated = match tickets.is_empty() {
            true => Default::default(),
            false => match self.associated(&tickets, deadline).await {
                Ok(associated) => associated,
                Err(error) => return all(error),
            },
        };
        let (mut results, open) = plan::open_leads(&leads, &found, &associated);
        // 2. The contacts, one input per person.
        let contacts = self.contacts(open.iter().map(|&i| leads[i]), deadline).await;
        // 3. The new tickets; the ticket of a lead whose contact HubSpot refused holds the email.
        let (mut ticket_inputs, mut pairs) = (BTreeMap::new(), Vec::new());
        let mut waiting_for_ticket = Vec::new();
        for &i in &open {
            let lead = leads[i];
            let contact = match contacts.get(&lead.email.trim().to_lowercase()) {
                Some(Err(error)) => {
                    results[i] = Err(*error);
                    continue;
                }
                Some(Ok(contact)) => contact.clone(),
                None => None,
            };
            match found.get(lead.external_id.as_str()) {
                Some(Found::Ticket(ticket)) => pairs.extend(contact.map(|c| (i, (ticket.clone(), c)))),
                _ => {
                    let (pipeline, stage) = (&self.pipeline, &self.stage);
                    let properties = plan::new_ticket(lead, contact.is_none(), &self.id_property, pipeline, stage);
                    ticket_inputs.entry(lead.external_id.clone()).or_insert(properties);
                    waiting_for_ticket.push((i, contact));
                }
            }
        }
        let ticket_inputs: Vec<(String, Value)> = ticket_inputs.into_iter().collect();
        let written = self.upsert_objects("tickets", &self.id_property, &ticket_inputs, deadline).await;
        let written: BTreeMap<&str, &Result<String, SinkError>> =
            ticket_inputs.iter().map(|(id, _)| id.as_str()).zip(written.iter()).collect();
        for (i, contact) in waiting_for_ticket {
            match written.get(leads[i].external_id.as_str()) {
                Some(Ok(ticket)) => pairs.extend(contact.map(|c| (i, ((*ticket).clone(), c)))),
                Some(Err(error)) => results[i] = Err(*error),
                None => results[i] = Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }),
            }
        }
        // 4. The associations, each pair once.
        if !pairs.is_empty() {
            let mut distinct: Vec<(String, String)> = pairs.iter().map(|(_, pair)| pair.clone()).collect();
            distinct.sort();
            distinct.dedup();
            let made = self.associate(&distinct, deadline).await;
            let made: BTreeMap<&(String, String), Result<(), SinkError>> = distinct.iter().zip(made).collect();
            for (i, pair) in &pairs {
                if let Some(Err(error)) = made.get(pair) {
                    results[*i] = Err(*error);
                }
            }
        }
        results
    }

    /// Upserts the contacts of `leads` that gave an email, one input per person
    /// ([`plan::people`]), a conflict, or a refusal of its company or phone, tried once more at
    /// once ([`plan::second_tries`]): each person's contact
    /// ([`plan::contact_results`]), by lowercased email.
    async fn contacts<'a>(
        &self,
        leads: impl Iterator<Item = &'a Lead>,
        deadline: Option<Instant>,
    ) -> BTreeMap<String, Result<Option<String>, SinkError>> {
        let people = plan::people(leads);
        let inputs: Vec<(String, Value)> = people.values().cloned().collect();
        let mut written = self.upsert_objects("contacts", "email", &inputs, deadline).await;
        let (indices, again): (Vec<usize>, Vec<(String, Value)>) =
            plan::second_tries(&inputs, &written).into_iter().unzip();
        if !again.is_empty() {
            for (i, result) in indices.into_iter().zip(self.upsert_objects("contacts", "email", &again, deadline).await)
            {
                written[i] = result;
            }
        }
        plan::contact_results(people.into_keys(), written)
    }
}

impl HubSpot {
    /// What the sink sends for `lead`, without sending it: the contact's input (by email; none
    /// without an email) and a new ticket's properties.
    pub fn preview(&self, lead: &Lead) -> Value {
        let contact = contact_input(lead).map(|(email, properties)| json!({"id": email, "properties": properties}));
        let ticket = ticket_properties(lead, &self.id_property, &self.pipeline, &self.stage);
        json!({"contact": contact, "ticket": {"id": lead.external_id, "properties": ticket}})
    }
}

impl LeadSink for HubSpot {
    fn record_budget(&self) -> Duration {
        self.batch_budget()
    }

    fn batch_size(&self) -> usize {
        BATCH_SIZE
    }

    fn batch_budget(&self) -> Duration {
        // The tickets' read, their associations, the contacts (twice after a conflict), the
        // tickets, the associations: six calls, then the receipts' updates.
        6 * super::http::TIMEOUT + RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        let item = [BatchItem { lead, receipt_key }];
        let mut results = self.upsert_batch(&item, None).await;
        results.pop().unwrap_or(Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_is_the_contact_s_and_the_ticket_s_inputs() {
        let tickets = TicketPipeline { pipeline: String::from("0"), stage: String::from("7") };
        let sink = HubSpot::new(reqwest::Client::new(), "https://api.hubapi.com", "t", "sub_id", tickets);
        let lead = Lead {
            external_id: "tally:r1".into(),
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            ..Lead::default()
        };
        let shown = sink.preview(&lead);
        assert_eq!(shown["contact"]["id"], "ada@example.com");
        assert_eq!(shown["contact"]["properties"]["lastname"], "Lovelace");
        assert_eq!(shown["ticket"]["id"], "tally:r1");
        assert_eq!(shown["ticket"]["properties"]["hs_pipeline_stage"], "7");
        assert_eq!(shown["ticket"]["properties"]["sub_id"], "tally:r1");
        let anonymous = Lead { email: String::new(), ..lead };
        assert!(sink.preview(&anonymous)["contact"].is_null(), "no email, no contact");
    }

    #[test]
    fn a_hubspot_batch_may_take_six_calls_and_the_store_update() {
        let tickets = TicketPipeline { pipeline: String::from("0"), stage: String::from("1") };
        let sink = HubSpot::new(reqwest::Client::new(), "https://api.hubapi.com", "t", "p", tickets);
        assert_eq!(sink.batch_budget(), std::time::Duration::from_secs(71));
        assert_eq!(sink.record_budget(), sink.batch_budget(), "one lead is a batch of one");
        assert_eq!(sink.batch_size(), 100);
    }
}
