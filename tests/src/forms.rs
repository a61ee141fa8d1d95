//! One visitor's answers as a Static Forms, a Typeform and a Tally submission (name parts,
//! email, phone, company, a company size (a choice), consent (a checkbox), a date, a
//! multi-select, UTM hidden fields and a message), and the leads the stream worker makes of
//! them, each with its receipt key.

use shared::headers::Headers;
use shared::lead::Lead;
use shared::profile::registry::{lead_from_receipt, LeadMapping};
use shared::profile::Profile;
use shared::receipt::Receipt;

/// The answers every form below carries, as the CRM should show them.
pub const OTHER_VALUES: [&str; 6] = ["11-50", "true", "2027-01-15", "Engines, Poetry", "newsletter", "launch"];

pub fn static_forms(id: &str) -> String {
    format!(
        r#"{{"event":"form.submitted","data":{{"submissionId":"{id}","formData":{{
        "firstName":"Ada","lastName":"Lovelace","email":"ada@example.com","phone":"+44 20 7946 0000",
        "company":"Analytical Engines","companySize":"11-50","consent":true,"startDate":"2027-01-15",
        "interests":["Engines","Poetry"],"utm_source":"newsletter","utm_campaign":"launch","message":"Hello"}}}}}}"#
    )
}

pub fn typeform(token: &str) -> String {
    format!(
        r#"{{"event_id":"e","event_type":"form_response","form_response":{{"form_id":"lT4Z3j","token":"{token}",
        "definition":{{"fields":[{{"id":"f1","title":"First name","type":"short_text"}},
            {{"id":"f2","title":"Last name","type":"short_text"}},{{"id":"f5","title":"Company","type":"short_text"}}]}},
        "answers":[
        {{"type":"text","text":"Ada","field":{{"id":"f1","type":"short_text","ref":"01HXA"}}}},
        {{"type":"text","text":"Lovelace","field":{{"id":"f2","type":"short_text","ref":"01HXB"}}}},
        {{"type":"email","email":"ada@example.com","field":{{"id":"f3","type":"email","ref":"email"}}}},
        {{"type":"phone_number","phone_number":"+442079460000","field":{{"id":"f4","type":"phone_number","ref":"phone"}}}},
        {{"type":"text","text":"Analytical Engines","field":{{"id":"f5","type":"short_text","ref":"01HXC"}}}},
        {{"type":"choice","choice":{{"id":"c2","label":"11-50","ref":"size-2"}},"field":{{"id":"f6","type":"multiple_choice","ref":"company_size"}}}},
        {{"type":"boolean","boolean":true,"field":{{"id":"f7","type":"legal","ref":"consent"}}}},
        {{"type":"date","date":"2027-01-15","field":{{"id":"f8","type":"date","ref":"start_date"}}}},
        {{"type":"choices","choices":{{"labels":["Engines","Poetry"]}},"field":{{"id":"f9","type":"multiple_choice","ref":"interests"}}}},
        {{"type":"text","text":"Hello","field":{{"id":"f10","type":"long_text","ref":"message"}}}}],
        "hidden":{{"utm_source":"newsletter","utm_campaign":"launch"}}}}}}"#
    )
}

pub fn tally(id: &str) -> String {
    format!(
        r#"{{"eventId":"e","eventType":"FORM_RESPONSE","data":{{"responseId":"{id}","formId":"w4Nd","fields":[
        {{"key":"q1","label":"First name","type":"INPUT_TEXT","value":"Ada"}},
        {{"key":"q2","label":"Last name","type":"INPUT_TEXT","value":"Lovelace"}},
        {{"key":"q3","label":"Email","type":"INPUT_EMAIL","value":"ada@example.com"}},
        {{"key":"q4","label":"Phone number","type":"INPUT_PHONE_NUMBER","value":"+442079460000"}},
        {{"key":"q5","label":"Company","type":"INPUT_TEXT","value":"Analytical Engines"}},
        {{"key":"q6","label":"Company size","type":"MULTIPLE_CHOICE","value":["o2"],
          "options":[{{"id":"o1","text":"1-10"}},{{"id":"o2","text":"11-50"}}]}},
        {{"key":"q7","label":"I agree to be contacted","type":"CHECKBOX","value":true}},
        {{"key":"q8","label":"Start date","type":"INPUT_DATE","value":"2027-01-15"}},
        {{"key":"q9","label":"Interests","type":"CHECKBOXES","value":["o3","o4"],
          "options":[{{"id":"o3","text":"Engines"}},{{"id":"o4","text":"Poetry"}}]}},
        {{"key":"q10","label":"utm_source","type":"HIDDEN_FIELDS","value":"newsletter"}},
        {{"key":"q11","label":"utm_campaign","type":"HIDDEN_FIELDS","value":"launch"}},
        {{"key":"q12","label":"Message","type":"TEXTAREA","value":"Hello"}}]}}}}"#
    )
}

/// The lead the stream worker makes of `body` delivered to `profile`'s route.
pub fn lead(profile: Profile, body: &str) -> Lead {
    let envelope = profile.read(&Headers::new(Vec::<(String, String)>::new()), body.as_bytes()).unwrap();
    let key = profile.key(&envelope.submission_id);
    lead_from_receipt(&Receipt::new(&envelope, key, "r", 0, 1), &LeadMapping::default()).unwrap()
}

pub fn leads(suffix: &str) -> Vec<(Profile, Lead)> {
    vec![
        (Profile::StaticForms, lead(Profile::StaticForms, &static_forms(&format!("sub_{suffix}")))),
        (Profile::Typeform, lead(Profile::Typeform, &typeform(&format!("tok_{suffix}")))),
        (Profile::Tally, lead(Profile::Tally, &tally(&format!("r_{suffix}")))),
    ]
}

/// The receipt key of `lead`, made by `profile` (its mapping is chosen by it).
pub fn receipt_key(profile: Profile, lead: &Lead) -> String {
    if lead.external_id.starts_with(profile.key_prefix()) {
        lead.external_id.clone()
    } else {
        profile.key(&lead.external_id)
    }
}
