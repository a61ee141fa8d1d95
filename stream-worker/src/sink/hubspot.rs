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
//!
//! With a lead mapping (`LEAD_MAPPING`, [`catalogue`]), the answers it names go to typed contact
//! and ticket properties, checked against the properties API at start (or before the first
//! write when the start could not read it); a value that does not convert is left out, and one
//! HubSpot refuses sends the contact (with its email and name) or the ticket once more without
//! its mapped properties. The ticket's content keeps every answer no ticket property shows, so
//! a refused value is still there.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shared::lead::Lead;

use tokio::time::Instant;

use super::contract::{BatchItem, CheckError, LeadSink, SinkError, RECEIPT_UPDATE_BUDGET};

mod api;
mod batch;
pub mod catalogue;
pub mod pace;
mod plan;

pub use api::{
    association_error, classify_error, classify_upsert_answer, contact_input, contact_properties, property_verdicts,
    ticket_properties, HubSpot, TicketPipeline, BATCH_SIZE, MAX_PROPERTY_CHARS,
};
use batch::Found;
use catalogue::{Catalogued, LeadProperties};
use plan::TicketSettings;

use super::typed_map;

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
        if !self.mapping.is_empty() {
            let typed = self.read_properties().await?;
            *self.typed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(typed));
        }
        Ok(())
    }

    /// The contact and ticket properties (`GET /crm/v3/properties/{object}`), paced as every
    /// call is.
    async fn properties(&self) -> Result<(Vec<Value>, Vec<Value>), CheckError> {
        self.read_both().await.map_err(|e| match e {
            Err(e) => CheckError::Unreachable(format!("HubSpot could not be reached ({e:?})")),
            Ok(check) => check,
        })
    }

    /// The contacts' and tickets' properties; a call that failed (`Err`: unreachable, held by
    /// the pacer for the window or the day) or an answer that refused (`Ok`).
    async fn read_both(&self) -> Result<(Vec<Value>, Vec<Value>), Result<CheckError, SinkError>> {
        let mut both = Vec::new();
        for object in ["contacts", "tickets"] {
            let path = format!("/crm/v3/properties/{object}");
            let answer = self.call(reqwest::Method::GET, &path, None, None).await.map_err(Err)?;
            match answer.status {
                200 => both.push(answer.body["results"].as_array().cloned().unwrap_or_default()),
                401 | 403 => {
                    return Err(Ok(CheckError::Wrong(format!(
                        "HUBSPOT_TOKEN: HubSpot refused to list the {object} properties (the private app needs the {object} read scope)"
                    ))))
                }
                status => {
                    return Err(Ok(CheckError::Unreachable(format!(
                        "HubSpot answered {status} to listing properties"
                    ))))
                }
            }
        }
        let tickets = both.pop().unwrap_or_default();
        Ok((both.pop().unwrap_or_default(), tickets))
    }

    /// The mapping typed by the portal's properties, or the start-up error naming its line.
    async fn read_properties(&self) -> Result<Catalogued, CheckError> {
        let (contacts, tickets) = self.properties().await?;
        catalogue::resolve(&self.mapping, &contacts, &tickets, &self.id_property).map_err(CheckError::Wrong)
    }

    /// The mapping typed by the portal's properties: read once (by the start-up check, or here
    /// when that could not reach HubSpot, or after a refusal showed the portal changed); `None`
    /// without a mapping. A listing refused for the token is `sink_unauthorized`; a mapping the
    /// properties refuse, `sink_mapping_refused`.
    async fn typed(&self) -> Result<Option<Arc<Catalogued>>, SinkError> {
        if self.mapping.is_empty() {
            return Ok(None);
        }
        if let Some(typed) = self.typed.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Ok(Some(typed));
        }
        let retry = |reason: &'static str| SinkError::Retryable { reason, retry_after: None };
        // A call held or failed keeps its own reason (a used-up or reserved day, the window).
        let (contacts, tickets) = self.read_both().await.map_err(|e| match e {
            Err(held @ SinkError::Retryable { .. }) => held,
            Ok(CheckError::Wrong(_)) => retry("sink_unauthorized"),
            _ => retry("sink_unavailable"),
        })?;
        let typed = catalogue::resolve(&self.mapping, &contacts, &tickets, &self.id_property)
            .map_err(|_| retry("sink_mapping_refused"))?;
        let typed = Arc::new(typed);
        *self.typed.lock().unwrap_or_else(|e| e.into_inner()) = Some(typed.clone());
        Ok(Some(typed))
    }

    /// Each mapped property with its HubSpot type and what it takes (`stream-worker mapping
    /// check`), or what is wrong: the whole start-up check first (which reads the properties).
    pub async fn mapping_lines(&self) -> Result<Vec<String>, CheckError> {
        self.check_configuration().await?;
        let typed = self.typed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(typed) = typed.filter(|_| !self.mapping.is_empty()) else {
            return Ok(vec![String::from(
                "no LEAD_MAPPING: every profile gets the default properties (docs/mapping.md)",
            )]);
        };
        let type_of = |field: &str| typed.types.get(field).cloned().unwrap_or_else(|| String::from("?"));
        Ok(typed_map::lines(&typed.maps, &type_of))
    }

    /// Each item's mapped properties (none without a mapping).
    fn mapped_properties(items: &[BatchItem<'_>], typed: Option<&Catalogued>) -> Vec<LeadProperties> {
        let mapped = typed_map::mapped(items, typed.map(|t| &t.maps));
        let kinds = typed.map(|t| t.kinds.clone()).unwrap_or_default();
        mapped.iter().map(|m| LeadProperties::of(m, &kinds)).collect()
    }
}

impl HubSpot {
    /// Writes `items`' leads ([`BATCH_SIZE`] at most, each another receipt's): one result per
    /// item, in their order.
    pub async fn upsert_batch(&self, items: &[BatchItem<'_>], deadline: Option<Instant>) -> Vec<Result<(), SinkError>> {
        let leads: Vec<&Lead> = items.iter().map(|item| item.lead).collect();
        let all = |error: SinkError| vec![Err(error); leads.len()];
        let typed = match self.typed().await {
            Ok(typed) => typed,
            Err(error) => return all(error),
        };
        let mut mapped = Self::mapped_properties(items, typed.as_deref());
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
        let (contacts, stripped) = self.contacts(open.iter().map(|&i| (leads[i], &mapped[i])), deadline).await;
        for &i in &open {
            if stripped.contains(&leads[i].email.trim().to_lowercase()) {
                mapped[i].leave_out_all("contact");
            }
        }
        let place = TicketSettings { id_property: &self.id_property, pipeline: &self.pipeline, stage: &self.stage };
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
                    let properties = plan::new_ticket(lead, &mapped[i], contact.is_none(), &place);
                    ticket_inputs.entry(lead.external_id.clone()).or_insert((i, properties));
                    waiting_for_ticket.push((i, contact));
                }
            }
        }
        let (owners, ticket_inputs): (Vec<usize>, Vec<(String, Value)>) =
            ticket_inputs.into_iter().map(|(id, (i, properties))| (i, (id, properties))).unzip();
        let mut written = self.upsert_objects("tickets", &self.id_property, &ticket_inputs, deadline).await;
        // A ticket with mapped properties refused for its content (a mapped value, however the
        // refusal names it): once more without them; the second answer decides.
        let mut again = Vec::new();
        for (k, result) in written.iter().enumerate() {
            if matches!(result, Err(SinkError::Permanent { .. })) && !mapped[owners[k]].ticket.is_empty() {
                let i = owners[k];
                mapped[i].leave_out_all("ticket");
                let given_up = !matches!(contacts.get(&leads[i].email.trim().to_lowercase()), Some(Ok(Some(_))));
                again.push((k, (ticket_inputs[k].0.clone(), plan::new_ticket(leads[i], &mapped[i], given_up, &place))));
            }
        }
        if !again.is_empty() || !stripped.is_empty() {
            // The portal refused what its properties allowed at the start: read them again
            // before the next write, so a retired option is left out before sending.
            self.forget_typed();
        }
        if !again.is_empty() {
            let (indices, inputs): (Vec<usize>, Vec<(String, Value)>) = again.into_iter().unzip();
            let results = self.upsert_objects("tickets", &self.id_property, &inputs, deadline).await;
            for (k, result) in indices.into_iter().zip(results) {
                written[k] = result;
            }
        }
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
        // A property gone since the mapping was typed: read the properties again before the
        // next write (the mapping is then refused, loudly, until it is mended).
        if results.contains(&Err(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None })) {
            self.forget_typed();
        }
        for &i in &open {
            if results[i].is_ok() {
                typed_map::log_left_out(leads[i], &mapped[i].left_out);
            }
        }
        results
    }

    /// Upserts the contacts of `leads` (each with its mapped properties) that gave an email, one
    /// input per person ([`plan::people`]), a conflict, or a refusal of a property but the
    /// email and name, tried once more at once ([`plan::second_tries`]): each person's contact
    /// ([`plan::contact_results`]), by lowercased email, and the people whose contact was sent
    /// again with its email and name alone.
    async fn contacts<'a>(
        &self,
        leads: impl Iterator<Item = (&'a Lead, &'a LeadProperties)>,
        deadline: Option<Instant>,
    ) -> (BTreeMap<String, Result<Option<String>, SinkError>>, Vec<String>) {
        let people = plan::people(leads);
        let inputs: Vec<(String, Value)> = people.values().cloned().collect();
        let mut written = self.upsert_objects("contacts", "email", &inputs, deadline).await;
        let stripped: Vec<String> = people
            .keys()
            .zip(&written)
            .filter(|(_, result)| **result == Err(api::CONTACT_PROPERTY_REFUSED))
            .map(|(email, _)| email.clone())
            .collect();
        let (indices, again): (Vec<usize>, Vec<(String, Value)>) =
            plan::second_tries(&inputs, &written).into_iter().unzip();
        if !again.is_empty() {
            for (i, result) in indices.into_iter().zip(self.upsert_objects("contacts", "email", &again, deadline).await)
            {
                written[i] = result;
            }
        }
        (plan::contact_results(people.into_keys(), written), stripped)
    }
}

impl HubSpot {
    /// What the sink sends for `lead` (of the receipt `receipt_key`), without sending it: the
    /// contact's input (by email; none without an email), a new ticket's properties, and the
    /// mapped properties left out and why.
    pub async fn preview(&self, lead: &Lead, receipt_key: &str) -> Result<Value, CheckError> {
        let typed = self.typed().await.map_err(|e| match e {
            SinkError::Retryable { reason: "sink_mapping_refused", .. } => CheckError::Wrong(String::from(
                "LEAD_MAPPING: refused by the portal's properties (run `stream-worker mapping check`)",
            )),
            other => CheckError::Unreachable(format!("HubSpot could not be reached ({other:?})")),
        })?;
        let item = [BatchItem { lead, receipt_key }];
        let mapped = Self::mapped_properties(&item, typed.as_deref()).pop().unwrap_or_default();
        let contact =
            contact_input(lead, &mapped).map(|(email, properties)| json!({"id": email, "properties": properties}));
        let ticket = ticket_properties(lead, &mapped, &self.id_property, &self.pipeline, &self.stage);
        let left_out = typed_map::left_out(&mapped.left_out);
        Ok(
            json!({"contact": contact, "ticket": {"id": lead.external_id, "properties": ticket}, "fieldsLeftOut": left_out}),
        )
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
        // tickets, the associations: six calls, then the receipts' updates. With a lead
        // mapping, three more: the contacts' and tickets' properties read before the first
        // write (when the start-up check could not), and the tickets sent again without a
        // refused mapped value.
        let calls = if self.mapping.is_empty() { 6 } else { 9 };
        calls * super::http::TIMEOUT + RECEIPT_UPDATE_BUDGET
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

    #[tokio::test]
    async fn the_preview_is_the_contact_s_and_the_ticket_s_inputs() {
        let tickets = TicketPipeline { pipeline: String::from("0"), stage: String::from("7") };
        let sink = HubSpot::new(reqwest::Client::new(), "https://api.hubapi.com", "t", "sub_id", tickets);
        let lead = Lead {
            external_id: "tally:r1".into(),
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            ..Lead::default()
        };
        let shown = sink.preview(&lead, "tally:r1").await.unwrap();
        assert_eq!(shown["contact"]["id"], "ada@example.com");
        assert_eq!(shown["contact"]["properties"]["lastname"], "Lovelace");
        assert_eq!(shown["ticket"]["id"], "tally:r1");
        assert_eq!(shown["ticket"]["properties"]["hs_pipeline_stage"], "7");
        assert_eq!(shown["ticket"]["properties"]["sub_id"], "tally:r1");
        let anonymous = Lead { email: String::new(), ..lead };
        assert!(sink.preview(&anonymous, "tally:r1").await.unwrap()["contact"].is_null(), "no email, no contact");
    }

    #[test]
    fn each_item_s_properties_come_from_its_profile_s_mapping_typed_by_the_portal() {
        let contacts = [json!({"name": "start_date", "type": "date", "fieldType": "date"})];
        let mapping = crate::mapping::parse("[tally.fields]\nStart = \"start_date\"\n", "m").unwrap();
        let typed = catalogue::resolve(&mapping, &contacts, &[], "p").unwrap();
        let Ok(shared::json::Json::Object(extra)) = shared::json::parse(br#"{"Start":"2027-01-15"}"#) else {
            unreachable!()
        };
        let lead = Lead { extra, ..Lead::default() };
        let (tally, typeform) =
            (shared::profile::Profile::Tally.key("r1"), shared::profile::Profile::Typeform.key("f:t"));
        let items = [BatchItem { lead: &lead, receipt_key: &tally }, BatchItem { lead: &lead, receipt_key: &typeform }];
        let properties = HubSpot::mapped_properties(&items, Some(&typed));
        assert_eq!(Value::Object(properties[0].contact.clone()), json!({"start_date": "1799971200000"}));
        assert_eq!(properties[1], LeadProperties::default(), "a profile the mapping does not name");
        assert_eq!(HubSpot::mapped_properties(&items, None), [LeadProperties::default(), LeadProperties::default()]);
    }

    #[test]
    fn a_hubspot_batch_may_take_six_calls_and_the_store_update_nine_with_a_mapping() {
        let tickets = TicketPipeline { pipeline: String::from("0"), stage: String::from("1") };
        let sink = HubSpot::new(reqwest::Client::new(), "https://api.hubapi.com", "t", "p", tickets);
        assert_eq!(sink.batch_budget(), std::time::Duration::from_secs(71));
        assert_eq!(sink.record_budget(), sink.batch_budget(), "one lead is a batch of one");
        assert_eq!(sink.batch_size(), 100);
        let mapping = crate::mapping::parse("[tally.fields]\nsize = \"company_size\"\n", "m").unwrap();
        let mapped = sink.with_mapping(mapping);
        assert_eq!(mapped.batch_budget(), std::time::Duration::from_secs(101));
        assert_eq!(mapped.record_budget(), mapped.batch_budget());
    }
}
