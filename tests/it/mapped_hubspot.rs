//! A lead mapping (`LEAD_MAPPING`) through the HubSpot sink to its strict stand-in portal with
//! typed contact and ticket properties: a Static Forms, a Typeform and a Tally submission, each
//! answer in its typed property (an enumeration by its internal value, a date as midnight UTC
//! in milliseconds, a checkbox as `true`), replays included, one ticket each and one contact;
//! a value the portal refuses costs the mapped properties of that contact or ticket only, and
//! stays in the ticket's content; a mapping naming a property the portal lacks refuses to
//! start, naming its line; `mapping check` and the preview show what the sink would write.

use shared::profile::Profile;
use stream_worker::sink::{BatchItem, CheckError, LeadSink, Sink, SinkError};
use tests::crm::{HubSpotStandIn, PortalProperty};
use tests::forms::{leads, receipt_key};

const HS_PROPERTY: &str = "static_forms_submission_id";

/// The same answers, by each profile's stable identity, to the contact's properties and, for
/// the UTM source, the ticket's; constants for both.
const MAPPING: &str = r#"
[staticforms.fields]
companySize = "company_size"
consent = "consent"
startDate = "start_date"
interests = "interests"
utm_source = "ticket.source_channel"
utm_campaign = "contact.utm_campaign"

[staticforms.constants]
hs_lead_status = "New"
"ticket.hs_ticket_priority" = "High"

[typeform.fields]
company_size = "company_size"
consent = "consent"
start_date = "start_date"
interests = "interests"
"hidden.utm_source" = "ticket.source_channel"
"hidden.utm_campaign" = "contact.utm_campaign"

[typeform.constants]
hs_lead_status = "New"
"ticket.hs_ticket_priority" = "High"

[tally.fields]
"Company size" = "company_size"
"I agree to be contacted" = "consent"
"Start date" = "start_date"
Interests = "interests"
utm_source = "ticket.source_channel"
utm_campaign = "contact.utm_campaign"

[tally.constants]
hs_lead_status = "New"
"ticket.hs_ticket_priority" = "High"
"#;

/// The portal's properties the mapping names: enumerations whose internal values differ from
/// their labels, a checkbox, a date, a multiple checkbox, text, and a read-only score.
fn portal() -> HubSpotStandIn {
    let standin = HubSpotStandIn::start("pat-test", HS_PROPERTY);
    let mut score = PortalProperty::new("contacts", "score", "number", "number");
    score.read_only = true;
    standin.state.lock().unwrap().portal_properties = vec![
        PortalProperty::new("contacts", "company_size", "enumeration", "select")
            .options(&[("1-10", "one_to_ten"), ("11-50", "eleven_to_fifty")]),
        PortalProperty::new("contacts", "consent", "bool", "booleancheckbox"),
        PortalProperty::new("contacts", "start_date", "date", "date"),
        PortalProperty::new("contacts", "interests", "enumeration", "checkbox")
            .options(&[("Engines", "engines"), ("Poetry", "poetry")]),
        PortalProperty::new("contacts", "utm_campaign", "string", "text"),
        PortalProperty::new("contacts", "hs_lead_status", "enumeration", "radio")
            .options(&[("New", "NEW"), ("Open", "OPEN")]),
        score,
        PortalProperty::new("tickets", "source_channel", "string", "text"),
        PortalProperty::new("tickets", "hs_ticket_priority", "enumeration", "select")
            .options(&[("Low", "LOW"), ("High", "HIGH")]),
    ];
    standin
}

async fn mapped_sink(standin: &HubSpotStandIn, mapping: &str) -> Sink {
    let mapping = stream_worker::mapping::parse(mapping, "LEAD_MAPPING").unwrap();
    Sink::connect(&standin.sink_config()).await.unwrap().with_mapping(mapping).unwrap()
}

/// The contact's mapped properties as HubSpot stores them.
const TYPED: [(&str, &str); 6] = [
    ("company_size", "eleven_to_fifty"),
    ("consent", "true"),
    ("start_date", "1799971200000"),
    ("interests", "engines;poetry"),
    ("utm_campaign", "launch"),
    ("hs_lead_status", "NEW"),
];

#[tokio::test]
async fn hubspot_each_profile_s_answers_land_in_their_typed_properties_once() {
    let standin = portal();
    let sink = mapped_sink(&standin, MAPPING).await;
    sink.check_configuration().await.unwrap();
    standin.state.lock().unwrap().calls.clear();
    let leads = leads("hmap");
    let keys: Vec<String> = leads.iter().map(|(profile, lead)| receipt_key(*profile, lead)).collect();
    let items: Vec<BatchItem> =
        leads.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    // No call added by the mapping: the tickets' read, the contacts, the tickets, the
    // associations.
    assert_eq!(standin.state.lock().unwrap().calls.len(), 4, "{:?}", standin.state.lock().unwrap().calls);
    for item in &items {
        sink.upsert(item.lead, item.receipt_key).await.unwrap();
    }
    let state = standin.state.lock().unwrap();
    assert_eq!((state.tickets.len(), state.contacts.len()), (3, 1), "one ticket per submission, one person");
    let contact = state.contacts.values().next().unwrap();
    for (name, value) in TYPED {
        assert_eq!(contact[name], value, "{name}: {contact}");
    }
    assert_eq!((contact["firstname"].as_str(), contact["lastname"].as_str()), (Some("Ada"), Some("Lovelace")));
    for (profile, lead) in &leads {
        let (_, ticket) = &state.tickets[&lead.external_id];
        assert_eq!(
            (ticket["source_channel"].as_str(), ticket["hs_ticket_priority"].as_str()),
            (Some("newsletter"), Some("HIGH"))
        );
        // The ticket keeps what this submission said, but the answer a ticket property shows.
        let content = ticket["content"].as_str().unwrap();
        assert!(!content.contains(": newsletter"), "{profile:?}: in its property: {content}");
        for kept in ["11-50", "2027-01-15", "Engines, Poetry", ": launch"] {
            assert!(content.contains(kept), "{profile:?}: {kept} missing: {content}");
        }
    }
}

/// `leads` as a batch's items, with their receipt keys.
fn batch(leads: &[(Profile, shared::lead::Lead)], keys: &mut Vec<String>) {
    keys.extend(leads.iter().map(|(profile, lead)| receipt_key(*profile, lead)));
}

#[tokio::test]
async fn hubspot_a_value_the_portal_refuses_after_the_start_costs_those_properties_never_the_lead() {
    let standin = portal();
    let sink = mapped_sink(&standin, MAPPING).await;
    sink.check_configuration().await.unwrap();
    // An administrator retires the company size `11-50` after the start: the sink's types
    // still take it, the portal refuses the contact (INVALID_OPTION, the batch whole).
    standin.state.lock().unwrap().portal_properties[0].options.pop();
    let first = leads("hcontact");
    let mut keys = Vec::new();
    batch(&first, &mut keys);
    let items: Vec<BatchItem> =
        first.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    {
        let mut state = standin.state.lock().unwrap();
        assert_eq!((state.tickets.len(), state.contacts.len(), state.associations.len()), (3, 1, 3));
        // The contact: its email and name alone; the tickets keep their own mapped values.
        let contact = state.contacts.values().next().unwrap();
        assert_eq!(
            (contact["email"].as_str(), contact["lastname"].as_str()),
            (Some("ada@example.com"), Some("Lovelace"))
        );
        assert_eq!((contact.get("company_size"), contact.get("consent")), (None, None), "{contact}");
        for (profile, lead) in &first {
            let (_, ticket) = &state.tickets[&lead.external_id];
            assert_eq!(ticket["hs_ticket_priority"], "HIGH", "{profile:?}: {ticket}");
            let content = ticket["content"].as_str().unwrap();
            for kept in ["11-50", "2027-01-15", ": launch"] {
                assert!(content.contains(kept), "{profile:?}: {kept} missing: {content}");
            }
        }
        state.calls.clear();
    }
    // The next batch reads the properties again: the retired option is left out before
    // sending, every other value written at once.
    let second = leads("hcontact2");
    let mut keys = Vec::new();
    batch(&second, &mut keys);
    let items: Vec<BatchItem> =
        second.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    {
        let mut state = standin.state.lock().unwrap();
        assert_eq!(state.calls.len(), 6, "the properties twice, then four calls: {:?}", state.calls);
        let contact = state.contacts.values().next().unwrap();
        assert_eq!((contact.get("company_size"), contact["consent"].as_str()), (None, Some("true")), "{contact}");
        // Then the priority `High`, a constant, is retired too; one visitor's email is one
        // HubSpot refuses.
        state.portal_properties[8].options.pop();
    }
    let mut third = leads("hticket");
    let typo = tests::forms::tally("r_htypo").replace("ada@example.com", "ada.example.com");
    third.push((Profile::Tally, tests::forms::lead(Profile::Tally, &typo)));
    let mut keys = Vec::new();
    batch(&third, &mut keys);
    let items: Vec<BatchItem> =
        third.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    {
        let state = standin.state.lock().unwrap();
        assert_eq!((state.tickets.len(), state.contacts.len(), state.associations.len()), (10, 1, 9));
        for (profile, lead) in &third {
            let (_, ticket) = &state.tickets[&lead.external_id];
            assert_eq!((ticket.get("hs_ticket_priority"), ticket.get("source_channel")), (None, None), "{ticket}");
            let content = ticket["content"].as_str().unwrap();
            assert!(content.contains(": newsletter"), "{profile:?}: {content}");
        }
        let (_, typo) = &state.tickets["tally:r_htypo"];
        assert!(typo["content"].as_str().unwrap().ends_with("(email as submitted: ada.example.com)"), "{typo}");
    }
    // The constant the portal no longer takes: the mapping is refused, loudly, until mended.
    let (profile, lead) = &leads("hafter")[2];
    assert_eq!(
        sink.upsert(lead, &receipt_key(*profile, lead)).await,
        Err(SinkError::Retryable { reason: "sink_mapping_refused", retry_after: None })
    );
}

#[tokio::test]
async fn hubspot_a_mapped_property_deleted_after_the_start_holds_the_leads_until_the_mapping_is_mended() {
    let standin = portal();
    let sink = mapped_sink(&standin, MAPPING).await;
    sink.check_configuration().await.unwrap();
    let removed = {
        let mut state = standin.state.lock().unwrap();
        let at = state.portal_properties.iter().position(|p| p.name == "utm_campaign").unwrap();
        state.portal_properties.remove(at)
    };
    let (profile, lead) = &leads("hgone")[0];
    let key = receipt_key(*profile, lead);
    let retried = |reason: &'static str| Err(SinkError::Retryable { reason, retry_after: None });
    // The portal's setup (PROPERTY_DOESNT_EXIST), then the properties read again: the mapping.
    assert_eq!(sink.upsert(lead, &key).await, retried("sink_config_invalid"));
    assert_eq!(sink.upsert(lead, &key).await, retried("sink_mapping_refused"));
    assert!(standin.state.lock().unwrap().tickets.is_empty(), "no lead without its values");
    standin.state.lock().unwrap().portal_properties.push(removed);
    sink.upsert(lead, &key).await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!(state.contacts.values().next().unwrap()["utm_campaign"], "launch");
}

#[tokio::test]
async fn hubspot_a_properties_read_held_by_the_portal_s_reserve_retries_the_lead_with_that_reason() {
    let standin = portal();
    let sink = mapped_sink(&standin, MAPPING).await;
    // The mapping is read before the first write: its first call is answered with the day
    // down to its last tenth, so its second is held.
    standin.state.lock().unwrap().daily_remaining = 25_001;
    let (profile, lead) = &leads("hres")[0];
    let key = receipt_key(*profile, lead);
    let reserved = Err(SinkError::Retryable { reason: "sink_allocation_reserved", retry_after: None });
    assert_eq!(sink.upsert(lead, &key).await, reserved, "the day's own reason, which stands");
    let state = standin.state.lock().unwrap();
    assert_eq!(state.daily_remaining, 25_000);
    assert!(state.tickets.is_empty());
}

#[tokio::test]
async fn hubspot_a_mapping_naming_a_property_the_portal_lacks_or_cannot_take_refuses_to_start() {
    let standin = portal();
    let refused = |mapping: &'static str| {
        let standin = &standin;
        async move {
            let sink = mapped_sink(standin, mapping).await;
            match sink.check_configuration().await {
                Err(CheckError::Wrong(text)) => text,
                other => panic!("{mapping}: expected a refusal, got {other:?}"),
            }
        }
    };
    let text = refused("[tally.fields]\nutm_source = \"utm_campaign\"\nsize = \"companysize\"\n").await;
    assert!(
        text.starts_with(
            "LEAD_MAPPING line 3 ([tally]): the HubSpot property \"companysize\" does not exist on HubSpot contacts"
        ),
        "{text}"
    );
    assert!(refused("[tally.fields]\nsize = \"ticket.company_size\"\n")
        .await
        .contains("does not exist on HubSpot tickets"));
    assert!(refused("[tally.fields]\nMessage = \"ticket.content\"\n").await.contains("is written by the sink itself"));
    assert!(refused("[tally.fields]\nsize = \"score\"\n").await.contains("is read-only"));
    assert!(refused("[tally.constants]\nhs_lead_status = \"Closed\"\n")
        .await
        .contains("cannot take the constant (no_such_option)"));
    // Without the start-up check (the portal unreachable then), the first write reads the
    // properties, and a wrong mapping is retried, never a contact without its values.
    standin.state.lock().unwrap().portal_properties.retain(|p| p.name != "start_date");
    let sink = mapped_sink(&standin, MAPPING).await;
    let (_, lead) = &leads("hlate")[2];
    assert_eq!(
        sink.upsert(lead, &receipt_key(Profile::Tally, lead)).await,
        Err(SinkError::Retryable { reason: "sink_mapping_refused", retry_after: None })
    );
    assert!(standin.state.lock().unwrap().tickets.is_empty(), "nothing written");
    standin.state.lock().unwrap().portal_properties.push(PortalProperty::new("contacts", "start_date", "date", "date"));
    sink.upsert(lead, &receipt_key(Profile::Tally, lead)).await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!(state.contacts.values().next().unwrap()["start_date"], "1799971200000");
}

#[tokio::test]
async fn hubspot_mapping_check_and_the_preview_show_what_the_sink_would_write() {
    let standin = portal();
    let sink = mapped_sink(&standin, MAPPING).await;
    let lines = sink.mapping_lines().await.unwrap();
    for line in [
        "[tally] \"Company size\" -> contact.company_size (enumeration/select, one_to_ten | eleven_to_fifty (only))",
        "[typeform] \"start_date\" -> contact.start_date (date/date)",
        "[staticforms] \"utm_source\" -> ticket.source_channel (string/text, up to 65536 characters)",
        "[tally] constant -> ticket.hs_ticket_priority (enumeration/select) = \"HIGH\"",
    ] {
        assert!(lines.contains(&line.to_owned()), "{line}: {lines:#?}");
    }
    assert_eq!(lines.len(), 3 * 8);
    // The preview: a date that is none is left out, and kept in the ticket's content.
    let body = tests::forms::tally("r_hpreview").replace("2027-01-15", "next week");
    let lead = tests::forms::lead(Profile::Tally, &body);
    let shown = sink.preview(&lead, &receipt_key(Profile::Tally, &lead)).await.unwrap();
    let contact = &shown["contact"]["properties"];
    assert_eq!((contact["company_size"].as_str(), contact.get("start_date")), (Some("eleven_to_fifty"), None));
    assert!(shown["ticket"]["properties"]["content"].as_str().unwrap().contains("Start date: next week"));
    assert_eq!(shown["fieldsLeftOut"], serde_json::json!([{"field": "contact.start_date", "reason": "not_a_date"}]));
    let state = standin.state.lock().unwrap();
    assert!(state.tickets.is_empty() && state.contacts.is_empty(), "nothing sent");
}
