//! Every answer a visitor typed reaches the CRM without a mapping: a Static Forms, a Typeform
//! and a Tally submission with name parts, email, phone, company, a company size (a choice),
//! consent (a checkbox), a date, a multi-select and UTM hidden fields, read by their profiles
//! and written twice (a replay) through the HubSpot and Salesforce sinks to their strict
//! stand-ins: one record each, the standard fields filled, every other value in the notes.

use serde_json::Value;
use shared::profile::Profile;
use stream_worker::sink::{BatchItem, LeadSink, Sink};
use tests::crm::{HubSpotStandIn, SalesforceStandIn};
use tests::forms::{lead, leads, tally, OTHER_VALUES};

const ID_PROPERTY: &str = "static_forms_submission_id";
const SF_FIELD: &str = "Static_Forms_Submission_Id__c";

fn assert_shows_every_other_value(profile: Profile, notes: &str) {
    assert!(notes.starts_with("Hello\n\nOther answers:\n"), "{profile:?}: {notes}");
    for value in OTHER_VALUES {
        assert!(
            notes.contains(&format!(": {value}\n")) || notes.ends_with(&format!(": {value}")),
            "{profile:?}: {value} in {notes}"
        );
    }
}

#[tokio::test]
async fn hubspot_without_a_mapping_every_answer_is_in_the_contact_or_the_ticket_once() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    let sink = Sink::connect(&standin.sink_config()).await.unwrap();
    let leads = leads("hs");
    for _replay in 0..2 {
        for (_, lead) in &leads {
            sink.upsert(lead, "k").await.unwrap();
        }
    }
    let state = standin.state.lock().unwrap();
    assert_eq!((state.contacts.len(), state.tickets.len()), (1, 3), "one contact (one email), a ticket per form");
    let contact = state.contacts.values().next().unwrap();
    for (property, value) in [("firstname", "Ada"), ("lastname", "Lovelace"), ("company", "Analytical Engines")] {
        assert_eq!(contact[property], value, "{contact}");
    }
    assert!(contact["phone"].as_str().unwrap().starts_with("+44"), "{contact}");
    for (profile, lead) in &leads {
        let (_, ticket) = &state.tickets[&lead.external_id];
        let content = ticket["content"].as_str().unwrap();
        assert_shows_every_other_value(*profile, content);
        // The ticket keeps what this submission said: company and phone too, never the name's
        // parts (the subject has the name).
        assert!(content.contains("Analytical Engines") && content.contains("7946"), "{profile:?}: {content}");
        assert!(!content.contains("Lovelace"), "{profile:?}: {content}");
    }
}

#[tokio::test]
async fn hubspot_a_phone_the_portal_s_validation_refuses_costs_the_phone_never_the_contact() {
    let standin = HubSpotStandIn::start("pat-test", ID_PROPERTY);
    standin.state.lock().unwrap().phone_validation = true;
    let sink = Sink::connect(&standin.sink_config()).await.unwrap();
    // A local number, not E.164: refused by the portal's rule.
    let mut local = lead(Profile::Tally, &tally("r_local").replace("+442079460000", "020 7946 0000"));
    sink.upsert(&local, "k").await.unwrap();
    {
        let state = standin.state.lock().unwrap();
        let (ticket_id, ticket) = &state.tickets[&local.external_id];
        let (contact_id, contact) = state.contacts.iter().next().unwrap();
        assert_eq!(
            (contact["email"].as_str(), contact["lastname"].as_str()),
            (Some("ada@example.com"), Some("Lovelace"))
        );
        assert_eq!((contact.get("phone"), contact.get("company")), (None, None), "{contact}");
        assert!(state.associations.contains(&(ticket_id.clone(), contact_id.clone())), "the ticket has its person");
        assert!(ticket["content"].as_str().unwrap().contains("020 7946 0000"), "the phone is kept in the ticket");
    }
    // A phone the rule takes is written, as HubSpot stores it.
    local.external_id = String::from("tally:r_e164");
    local.extra.insert(String::from("Phone number"), shared::json::Json::String("+44 20 7946 0000".into()));
    sink.upsert(&local, "k").await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!(state.contacts.values().next().unwrap()["phone"], "+442079460000");
}

#[tokio::test]
async fn salesforce_without_a_mapping_every_answer_is_in_the_lead_once() {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD);
    let sink = Sink::connect(&standin.sink_config()).await.unwrap();
    // The start-up check, as the worker runs it: it finds Phone writable.
    sink.check_configuration().await.unwrap();
    let leads = leads("sf");
    for _replay in 0..2 {
        for (_, lead) in &leads {
            sink.upsert(lead, "k").await.unwrap();
        }
    }
    assert_eq!(standin.state.lock().unwrap().leads.len(), 3, "one Lead per submission, replays included");
    // Field-level security that hides Phone from the integration user: the start-up check sees
    // it, and the phone goes to Description rather than refusing every Lead with one.
    let hidden = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD);
    hidden.state.lock().unwrap().hidden_fields.insert("Phone");
    let hidden_sink = Sink::connect(&hidden.sink_config()).await.unwrap();
    hidden_sink.check_configuration().await.unwrap();
    // A stream batch goes as one collection, the path every batch takes.
    let items: Vec<BatchItem> = leads.iter().map(|(_, lead)| BatchItem { lead, receipt_key: "k" }).collect();
    for result in hidden_sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    for (profile, lead) in &leads {
        let record = hidden.state.lock().unwrap().leads[&lead.external_id].clone();
        assert_eq!(record.get("Phone"), None, "{profile:?}");
        let description = record["Description"].as_str().unwrap();
        assert!(description.contains(": +44") && description.contains("7946"), "{profile:?}: {description}");
    }
    let state = standin.state.lock().unwrap();
    for (profile, lead) in &leads {
        let record: &Value = &state.leads[&lead.external_id];
        for (field, value) in [
            ("FirstName", "Ada"),
            ("LastName", "Lovelace"),
            ("Company", "Analytical Engines"),
            ("Email", "ada@example.com"),
        ] {
            assert_eq!(record[field], value, "{profile:?}: {record}");
        }
        assert!(record["Phone"].as_str().unwrap().starts_with("+44"), "{profile:?}: {record}");
        let description = record["Description"].as_str().unwrap();
        assert_shows_every_other_value(*profile, description);
        for shown in ["Lovelace", "Analytical Engines", "7946"] {
            assert!(!description.contains(shown), "{profile:?}: {shown} is in its field, not repeated: {description}");
        }
    }
}

#[tokio::test]
async fn salesforce_a_phone_a_validation_rule_refuses_costs_the_phone_never_the_lead() {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD);
    standin.state.lock().unwrap().phone_refusal = Some("FIELD_CUSTOM_VALIDATION_EXCEPTION");
    let sink = Sink::connect(&standin.sink_config()).await.unwrap();
    sink.check_configuration().await.unwrap();
    let leads = leads("rule");
    // One Lead alone (reconcile's collection of one) and the rest as a collection (a stream
    // batch).
    sink.upsert(&leads[0].1, "k").await.unwrap();
    let items: Vec<BatchItem> = leads[1..].iter().map(|(_, lead)| BatchItem { lead, receipt_key: "k" }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    let state = standin.state.lock().unwrap();
    for (profile, lead) in &leads {
        let record = &state.leads[&lead.external_id];
        assert_eq!(record.get("Phone"), None, "{profile:?}");
        assert_eq!(record["LastName"], "Lovelace", "{profile:?}");
        assert!(record["Description"].as_str().unwrap().contains("7946"), "{profile:?}: {record}");
    }
}

#[tokio::test]
async fn salesforce_phone_hidden_after_the_start_costs_the_phone_never_the_lead() {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD);
    let sink = Sink::connect(&standin.sink_config()).await.unwrap();
    // The check sees Phone writable; then an administrator's field-level security hides it.
    sink.check_configuration().await.unwrap();
    standin.state.lock().unwrap().hidden_fields.insert("Phone");
    let leads = leads("fls");
    let items: Vec<BatchItem> = leads[..2].iter().map(|(_, lead)| BatchItem { lead, receipt_key: "k" }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    let upserts = standin.state.lock().unwrap().upserts.len();
    // The sink no longer writes Phone: the next Lead goes at once, without it.
    sink.upsert(&leads[2].1, "k").await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!(state.upserts.len(), upserts + 1, "one call for the Lead after");
    for (profile, lead) in &leads {
        let record = &state.leads[&lead.external_id];
        assert_eq!(record.get("Phone"), None, "{profile:?}");
        assert!(record["Description"].as_str().unwrap().contains("7946"), "{profile:?}: {record}");
    }
}
