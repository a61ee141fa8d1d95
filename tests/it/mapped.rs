//! A lead mapping (`LEAD_MAPPING`) through the Salesforce sink to its strict stand-in org with
//! typed custom fields: a Static Forms, a Typeform and a Tally submission, each answer in its
//! typed field by the profile's mapping, replays included, one Lead each; a value that does not
//! fit (before sending, or refused by the org) costs that field only, and is kept in
//! `Description`; a form's own mapping takes the fields it names; a mapping naming a field the org lacks refuses to start, naming its line.

use serde_json::Value;
use shared::profile::Profile;
use stream_worker::sink::{BatchItem, CheckError, LeadSink, Sink, SinkError};
use tests::crm::{OrgField, SalesforceStandIn};
use tests::forms::{leads, receipt_key};

const SF_FIELD: &str = "Static_Forms_Submission_Id__c";

/// The same answers, by each profile's stable identity: Static Forms' field names, Typeform's
/// refs (hidden fields as `hidden.*`), Tally's labels.
const MAPPING: &str = r#"
[staticforms.fields]
companySize = "Size__c"
consent = "Consent__c"
startDate = "Start__c"
interests = "Interests__c"
utm_source = "LeadSource"
utm_campaign = "Campaign__c"

[staticforms.constants]
Rating = "warm"

[typeform.fields]
company_size = "Size__c"
consent = "Consent__c"
start_date = "Start__c"
interests = "Interests__c"
"hidden.utm_source" = "LeadSource"
"hidden.utm_campaign" = "Campaign__c"

[typeform.constants]
Rating = "warm"

[tally.fields]
"Company size" = "Size__c"
"I agree to be contacted" = "Consent__c"
"Start date" = "Start__c"
Interests = "Interests__c"
utm_source = "LeadSource"
utm_campaign = "Campaign__c"

[tally.constants]
Rating = "warm"

# One Tally form of its own: its Leads' source is fixed, whatever the UTM fields say.
[tally.forms.w4Nd.constants]
LeadSource = "Partners"
"#;

/// The org's fields the mapping names: a restricted picklist, a checkbox, a date, a restricted
/// multi-select, the standard `LeadSource` (a picklist that takes other values) and `Rating`
/// (restricted), and a text field too short for the campaign (`launch`, 6 characters).
fn org() -> SalesforceStandIn {
    let standin = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", SF_FIELD);
    let mut campaign = OrgField::new("Campaign__c", "string");
    campaign.length = 5;
    standin.state.lock().unwrap().org_fields = vec![
        OrgField::new("Size__c", "picklist").options(&[("1 to 10", "1-10"), ("11 to 50", "11-50")], true),
        OrgField::new("Consent__c", "boolean"),
        OrgField::new("Start__c", "date"),
        OrgField::new("Interests__c", "multipicklist").options(&[("Engines", "engines"), ("Poetry", "poetry")], true),
        OrgField::new("LeadSource", "picklist").options(&[("Web", "Web")], false),
        OrgField::new("Rating", "picklist").options(&[("Hot", "Hot"), ("Warm", "Warm")], true),
        campaign,
        OrgField::new("Owner_Region__c", "reference"),
    ];
    standin
}

async fn mapped_sink(standin: &SalesforceStandIn, mapping: &str) -> Sink {
    let mapping = stream_worker::mapping::parse(mapping, "LEAD_MAPPING").unwrap();
    Sink::connect(&standin.sink_config()).await.unwrap().with_mapping(mapping).unwrap()
}

#[tokio::test]
async fn salesforce_each_profile_s_answers_land_in_their_typed_fields_once_and_a_bad_value_costs_its_field() {
    let standin = org();
    let sink = mapped_sink(&standin, MAPPING).await;
    sink.check_configuration().await.unwrap();
    let leads = leads("map");
    let keys: Vec<String> = leads.iter().map(|(profile, lead)| receipt_key(*profile, lead)).collect();
    // A stream batch, then its replay one by one (reconcile's collections of one).
    let items: Vec<BatchItem> =
        leads.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    for item in &items {
        sink.upsert(item.lead, item.receipt_key).await.unwrap();
    }
    let state = standin.state.lock().unwrap();
    assert_eq!(state.leads.len(), 3, "one Lead per submission, replays included");
    // The campaign too long for its field is left out before sending: one call for the batch
    // (then one per replay, each found by a query), never a second for the value.
    assert_eq!((state.collections.as_slice(), state.queries), (&[3, 1, 1, 1][..], 3));
    for (profile, lead) in &leads {
        let record: &Value = &state.leads[&lead.external_id];
        // The Tally form's own mapping fixes its source, so its utm_source stays an answer.
        let source = if *profile == Profile::Tally { "Partners" } else { "newsletter" };
        for (field, value) in [
            ("Size__c", Value::from("11-50")),
            ("Consent__c", Value::from(true)),
            ("Start__c", Value::from("2027-01-15")),
            ("Interests__c", Value::from("engines;poetry")),
            ("LeadSource", Value::from(source)),
            ("Rating", Value::from("Warm")),
            ("LastName", Value::from("Lovelace")),
        ] {
            assert_eq!(record[field], value, "{profile:?} {field}: {record}");
        }
        // The campaign does not fit its field: left out, kept in Description; the answers
        // written whole are not repeated there.
        assert_eq!(record.get("Campaign__c"), None, "{profile:?}");
        let description = record["Description"].as_str().unwrap();
        assert!(description.contains(": launch"), "{profile:?}: {description}");
        for shown in ["11-50", "2027-01-15", "Engines"] {
            assert!(!description.contains(shown), "{profile:?}: {shown} is in its field: {description}");
        }
        assert_eq!(description.contains(": newsletter"), *profile == Profile::Tally, "{profile:?}: {description}");
    }
}

#[tokio::test]
async fn salesforce_a_value_the_org_refuses_after_the_start_costs_that_field_never_the_lead() {
    let standin = org();
    let sink = mapped_sink(&standin, MAPPING).await;
    sink.check_configuration().await.unwrap();
    // An administrator retires the option `11-50` after the start: the sink's types still
    // take it, the org refuses it (INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST, per record).
    standin.state.lock().unwrap().org_fields[0].options[1].2 = false;
    let leads = leads("retired");
    let keys: Vec<String> = leads.iter().map(|(profile, lead)| receipt_key(*profile, lead)).collect();
    let items: Vec<BatchItem> =
        leads.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    for result in sink.upsert_batch(&items, None).await {
        result.unwrap();
    }
    let state = standin.state.lock().unwrap();
    for (profile, lead) in &leads {
        let record = &state.leads[&lead.external_id];
        assert_eq!(record.get("Size__c"), None, "{profile:?}");
        assert_eq!(record["Consent__c"], true, "{profile:?}: the other fields stay");
        let description = record["Description"].as_str().unwrap();
        assert!(description.contains(": 11-50"), "{profile:?}: the refused value is kept: {description}");
    }
}

#[tokio::test]
async fn salesforce_a_required_field_the_org_refuses_from_the_mapping_gets_its_default_back() {
    let standin = org();
    // A validation rule shown at LastName refuses a comma in it.
    standin.state.lock().unwrap().field_rule = Some(("LastName", ','));
    let sink =
        mapped_sink(&standin, &format!("{MAPPING}[typeform.forms.lT4Z3j.fields]\ninterests = \"LastName\"\n")).await;
    sink.check_configuration().await.unwrap();
    let (profile, lead) = &leads("last")[1];
    sink.upsert(lead, &receipt_key(*profile, lead)).await.unwrap();
    let state = standin.state.lock().unwrap();
    let record = &state.leads[&lead.external_id];
    assert_eq!(
        (record["LastName"].as_str(), record["Size__c"].as_str()),
        (Some("Lovelace"), Some("11-50")),
        "{record}"
    );
    // The answer refused as the last name is still in its own field.
    assert_eq!(record["Interests__c"], "engines;poetry", "{record}");
}

#[tokio::test]
async fn salesforce_a_field_s_type_or_visibility_changed_after_the_start_never_fails_a_lead() {
    let standin = org();
    let sink = mapped_sink(&standin, MAPPING).await;
    sink.check_configuration().await.unwrap();
    let leads = leads("changed");
    let keys: Vec<String> = leads.iter().map(|(profile, lead)| receipt_key(*profile, lead)).collect();
    let items: Vec<BatchItem> =
        leads.iter().zip(&keys).map(|((_, lead), key)| BatchItem { lead, receipt_key: key }).collect();
    // Start__c becomes a number: the date fails the reading of the whole call
    // (JSON_PARSER_ERROR), so the collection goes once more without its mapped fields, and the
    // describe is read again before the next.
    standin.state.lock().unwrap().org_fields[2].ty = "double";
    for result in sink.upsert_batch(&items[..2], None).await {
        result.unwrap();
    }
    {
        let state = standin.state.lock().unwrap();
        let record = &state.leads[&leads[0].1.external_id];
        assert_eq!((record.get("Size__c"), record.get("Start__c")), (None, None), "{record}");
        assert!(record["Description"].as_str().unwrap().contains(": 11-50"), "{record}");
    }
    // The next Lead has the new type: the date is left out before sending, the rest written.
    sink.upsert(items[2].lead, items[2].receipt_key).await.unwrap();
    {
        let state = standin.state.lock().unwrap();
        let record = &state.leads[&leads[2].1.external_id];
        assert_eq!((record["Size__c"].as_str(), record.get("Start__c")), (Some("11-50"), None), "{record}");
    }
    // A mapped field hidden from the integration user: the whole call is INVALID_FIELD. Retried
    // (never FAILED) while the mapping names it; once it is visible again, written, Phone too.
    let more = tests::forms::leads("hidden");
    let (profile, lead) = &more[2];
    let key = receipt_key(*profile, lead);
    standin.state.lock().unwrap().hidden_fields.insert("Consent__c");
    let retried = |reason| Err(SinkError::Retryable { reason, retry_after: None });
    assert_eq!(sink.upsert(lead, &key).await, retried("sink_config_invalid"));
    assert_eq!(sink.upsert(lead, &key).await, retried("sink_mapping_refused"));
    standin.state.lock().unwrap().hidden_fields.clear();
    sink.upsert(lead, &key).await.unwrap();
    let state = standin.state.lock().unwrap();
    let record = &state.leads[&lead.external_id];
    assert_eq!(
        (record["Consent__c"].as_bool(), record["Phone"].as_str()),
        (Some(true), Some("+442079460000")),
        "{record}"
    );
}

#[tokio::test]
async fn salesforce_the_describe_read_before_the_first_create_gets_a_new_token_when_the_session_ended() {
    let standin = org();
    let sink = mapped_sink(&standin, MAPPING).await;
    // The start-up check logs in, then the describe answers 503: the worker starts unchecked.
    standin.fail_next(tests::stub_http::FailNext::new(1, 503));
    assert!(matches!(sink.check_configuration().await, Err(CheckError::Unreachable(_))));
    // Hours later the session has ended: the describe before the first create logs in again.
    standin.expire_tokens();
    let (profile, lead) = &leads("late_token")[0];
    sink.upsert(lead, &receipt_key(*profile, lead)).await.unwrap();
    let state = standin.state.lock().unwrap();
    assert_eq!((state.issued, state.leads[&lead.external_id]["Size__c"].as_str()), (2, Some("11-50")));
}

#[tokio::test]
async fn salesforce_a_mapping_naming_a_field_the_org_lacks_or_cannot_take_refuses_to_start() {
    let standin = org();
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
    let text = refused("[tally.fields]\nutm_source = \"LeadSource\"\nsize = \"Company_Size__c\"\n").await;
    assert!(
        text.starts_with("LEAD_MAPPING line 3 ([tally]): the Lead field \"Company_Size__c\" does not exist"),
        "{text}"
    );
    assert!(refused("[tally.fields]\nregion = \"Owner_Region__c\"\n").await.contains("its type (reference)"));
    assert!(refused("[tally.constants]\nRating = \"Lukewarm\"\n")
        .await
        .contains("cannot take the constant (no_such_option)"));
    // A field field-level security hides from the integration user is one it lacks.
    standin.state.lock().unwrap().hidden_fields.insert("Start__c");
    assert!(refused(MAPPING)
        .await
        .contains("\"Start__c\" does not exist on Lead, or the integration user cannot see it"));
    // Without the start-up check (the org unreachable then), the first create reads the
    // describe, and a wrong mapping is retried, never a Lead without its fields.
    let sink = mapped_sink(&standin, MAPPING).await;
    let (_, lead) = &leads("late")[2];
    assert_eq!(
        sink.upsert(lead, &receipt_key(Profile::Tally, lead)).await,
        Err(SinkError::Retryable { reason: "sink_mapping_refused", retry_after: None })
    );
    standin.state.lock().unwrap().hidden_fields.clear();
    sink.upsert(lead, &receipt_key(Profile::Tally, lead)).await.unwrap();
    assert_eq!(standin.state.lock().unwrap().leads[&lead.external_id]["Start__c"], "2027-01-15");
}

#[tokio::test]
async fn mapping_check_prints_each_field_with_its_salesforce_type() {
    let standin = org();
    let sink = mapped_sink(&standin, MAPPING).await;
    let lines = sink.mapping_lines().await.unwrap();
    assert!(
        lines.contains(
            &"[tally] \"Company size\" -> Size__c (picklist, up to 255 characters, 1-10 | 11-50 (only))".to_owned()
        ),
        "{lines:#?}"
    );
    assert!(lines.contains(&"[typeform] \"start_date\" -> Start__c (date)".to_owned()), "{lines:#?}");
    assert!(lines.contains(&"[staticforms] constant -> Rating (picklist) = \"Warm\"".to_owned()), "{lines:#?}");
    assert!(
        lines.contains(&"[tally.forms.w4Nd] constant -> LeadSource (picklist) = \"Partners\"".to_owned()),
        "{lines:#?}"
    );
    assert_eq!(lines.len(), 3 * 7 + 1);
}

/// `stream-worker mapping check` with the Salesforce stand-in's settings and `mapping` in a
/// file (`LEAD_MAPPING_FILE`).
fn mapping_check(standin: &SalesforceStandIn, mapping: &str) -> std::process::Output {
    mapping_check_with(standin, mapping, &[])
}

/// [`mapping_check`] with more settings.
fn mapping_check_with(standin: &SalesforceStandIn, mapping: &str, more: &[(&str, &str)]) -> std::process::Output {
    let dir = tests::TempDir::new("mapping-check");
    let path = dir.0.join("mapping.toml");
    std::fs::write(&path, mapping).unwrap();
    std::process::Command::new(tests::stream_worker_binary())
        .args(["mapping", "check"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1")
        .env("RECEIPTS_TABLE", "receipts")
        .env("LEAD_SINK", "salesforce")
        .env("SALESFORCE_INSTANCE_URL", standin.server.url())
        .env("SALESFORCE_CLIENT_ID", "sf-client")
        .env("SALESFORCE_CLIENT_SECRET", "sf-secret")
        .env("SALESFORCE_EXTERNAL_ID_FIELD", SF_FIELD)
        .env("LEAD_MAPPING_FILE", &path)
        .envs(more.iter().copied())
        .output()
        .unwrap()
}

/// A Standard Webhooks form's own mapping applies to the leads whose payload names that form,
/// where `STANDARD_WEBHOOKS_LEAD_FIELDS` points at it (`form=`); another form's leads get the
/// profile's.
#[tokio::test]
async fn salesforce_a_standard_webhooks_form_s_mapping_applies_through_the_form_pointer() {
    use shared::headers::Headers;
    use shared::mapping::LeadPointers;
    use shared::profile::registry::{lead_from_receipt, LeadMapping};
    let standin = org();
    let mapping = "[standard-webhooks.constants]\nRating = \"Warm\"\n[standard-webhooks.forms.contact-us.constants]\nRating = \"Hot\"\n";
    let sink = mapped_sink(&standin, mapping).await;
    let pointed = LeadMapping { standard_webhooks: LeadPointers::parse("form=/data/form_id").unwrap() };
    for (id, form, rating) in [("msg_form_a", " contact-us ", "Hot"), ("msg_form_b", "newsletter", "Warm")] {
        let body = format!(
            r#"{{"type":"contact","data":{{"name":"Ada Lovelace","email":"ada@example.com","form_id":"{form}"}}}}"#
        );
        let headers = Headers::new(vec![("webhook-id".to_owned(), id.to_owned())]);
        let envelope = Profile::StandardWebhooks.read(&headers, body.as_bytes()).unwrap();
        let key = Profile::StandardWebhooks.key(&envelope.submission_id);
        let lead =
            lead_from_receipt(&shared::receipt::Receipt::new(&envelope, key.clone(), "r", 0, 1), &pointed).unwrap();
        sink.upsert(&lead, &key).await.unwrap();
        assert_eq!(standin.state.lock().unwrap().leads[&lead.external_id]["Rating"], rating, "{form}");
    }
}

/// A Standard Webhooks form's own mapping starts only where the payload's form is pointed at.
#[tokio::test]
async fn a_standard_webhooks_form_s_mapping_needs_the_form_s_pointer() {
    let standin = org();
    let mapping = "[standard-webhooks.forms.contact-us.constants]\nLeadSource = \"Web\"\n";
    let output = mapping_check(&standin, mapping);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("[standard-webhooks.forms.contact-us] needs the form's pointer"), "{stderr}");
    let pointed = [("STANDARD_WEBHOOKS_LEAD_FIELDS", "form=/data/form_id")];
    let output = mapping_check_with(&standin, mapping, &pointed);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("[standard-webhooks.forms.contact-us] constant -> LeadSource (picklist)"), "{stdout}");
}

#[tokio::test]
async fn the_mapping_check_command_prints_the_fields_and_fails_on_any_problem() {
    let standin = org();
    let output = mapping_check(&standin, MAPPING);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains(
            "[tally] \"Interests\" -> Interests__c (multipicklist, up to 4099 characters, engines | poetry (only))\n"
        ),
        "{stdout}"
    );
    // The whole start-up check runs: a warning is a first line, no mapping says so.
    standin.state.lock().unwrap().required_fields.insert("Region__c");
    let output = mapping_check(&standin, "");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("note: Salesforce's Lead: the org requires \"Region__c\""), "{stdout}");
    assert_eq!(lines[1..], ["no LEAD_MAPPING: every profile gets the default fields (docs/mapping.md)"]);
    standin.state.lock().unwrap().field_not_unique = true;
    let output = mapping_check(&standin, MAPPING);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("is not Unique"), "{stderr}");
    standin.state.lock().unwrap().field_not_unique = false;
    for (mapping, expected) in [
        ("[tally.fields]\nsize = \"Size_c\"\n", "line 2 ([tally]): the Lead field \"Size_c\" does not exist"),
        ("[tally.fields]\nsize = \"Size__c\n", "line 2: "),
        ("[tallie.fields]\nsize = \"Size__c\"\n", "line 1: no sender profile \"tallie\""),
    ] {
        let output = mapping_check(&standin, mapping);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(expected), "{mapping}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn receipts_show_as_lead_prints_what_the_sink_would_send_and_sends_nothing() {
    let w = crate::operate::world();
    let body = tests::forms::tally("r_preview").replace("2027-01-15", "next week");
    let envelope = Profile::Tally.read(&shared::headers::Headers::default(), body.as_bytes()).unwrap();
    let receipt =
        shared::receipt::Receipt::new(&envelope, Profile::Tally.key("r_preview"), "req", tests::now_millis(), 30);
    tests::aws::put_item(&w.store, "receipts", &receipt.to_item());
    let standin = org();
    let url = standin.server.url();
    let settings = [
        ("LEAD_SINK", "salesforce"),
        ("SALESFORCE_INSTANCE_URL", url.as_str()),
        ("SALESFORCE_CLIENT_ID", "sf-client"),
        ("SALESFORCE_CLIENT_SECRET", "sf-secret"),
        ("SALESFORCE_EXTERNAL_ID_FIELD", SF_FIELD),
        ("LEAD_MAPPING", MAPPING),
    ];
    let mut command = w.command(&["receipts", "show", "r_preview", "--profile", "tally", "--as-lead"]);
    command.envs(settings);
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    let record = &shown["record"];
    assert_eq!((record["Size__c"].as_str(), record["LeadSource"].as_str()), (Some("11-50"), Some("Partners")));
    assert_eq!(record["Static_Forms_Submission_Id__c"], "tally:r_preview");
    assert_eq!(record["Phone"], "+442079460000", "as the worker writes it, after its start-up check");
    assert_eq!(record.get("Start__c"), None, "the date that is none is left out");
    assert!(record["Description"].as_str().unwrap().contains("Start date: next week"), "{record}");
    assert_eq!(
        shown["fieldsLeftOut"],
        serde_json::json!([{"field": "Start__c", "reason": "not_a_date"}, {"field": "Campaign__c", "reason": "too_long"}])
    );
    {
        let state = standin.state.lock().unwrap();
        assert!(state.leads.is_empty() && state.collections.is_empty(), "nothing sent");
    }
    // The SQL sinks (here SQLite) read no mapping: the preview is the lead as its row holds it.
    let output = w.json(&["receipts", "show", "r_preview", "--profile", "tally", "--as-lead"]);
    assert_eq!(output["externalId"], "tally:r_preview");
    assert_eq!(output["extra"]["Start date"], "next week");
}

#[tokio::test]
async fn salesforce_assignment_rules_run_as_the_mapping_says_once_per_lead() {
    let leads = leads("assign");
    let (profile, lead) = &leads[2];
    let key = receipt_key(*profile, lead);
    let mut runs = Vec::new();
    for setting in ["", "[salesforce]\nassignment = \"false\"\n", "[salesforce]\nassignment = \"01QD0000000K3YzAAK\"\n"]
    {
        let standin = org();
        let sink = mapped_sink(&standin, &format!("{MAPPING}{setting}")).await;
        sink.check_configuration().await.unwrap();
        // Created, then replayed: the replay writes nothing, so no rule runs again.
        sink.upsert(lead, &key).await.unwrap();
        sink.upsert(lead, &key).await.unwrap();
        let state = standin.state.lock().unwrap();
        assert_eq!(state.leads[&lead.external_id]["Size__c"], "11-50", "{setting}");
        runs.push((
            state.assignments.get(&lead.external_id).copied(),
            state.assignment_rules.get(&lead.external_id).cloned(),
        ));
    }
    assert_eq!(
        runs,
        [(Some(1), None), (None, None), (Some(1), Some(String::from("01QD0000000K3YzAAK")))],
        "the org's active rule by default; none with FALSE; the named rule"
    );
}
