//! A lead as a Salesforce Lead record: its default fields and the lead mapping's over them,
//! within Salesforce's lengths (UTF-16 code units), an email only when Salesforce's rules
//! accept it, the answers no field shows in `Description`, and the external ID's value.

use serde_json::json;
use shared::default_fields::{answers_block, name_parts, notes, other_answers, role_text};
use shared::field_map::Mapped;
use shared::lead::{Lead, Role};

use crate::sink::contract::fit_utf16;

/// What Salesforce requires on a Lead when the form did not supply it.
pub const NOT_PROVIDED: &str = "[not provided]";

/// The Lead's standard fields' lengths, in UTF-16 code units (Salesforce's "characters":
/// Object Reference, Lead): `FirstName` 40, `LastName` 80, `Company` 255, `Email` 80, `Phone`
/// 40, `Description` (Long Text Area) 32,000.
pub const LENGTHS: [(&str, usize); 6] =
    [("FirstName", 40), ("LastName", 80), ("Company", 255), ("Email", 80), ("Phone", 40), ("Description", 32_000)];

fn length(field: &str) -> usize {
    LENGTHS.iter().find(|(name, _)| *name == field).map_or(0, |(_, max)| *max)
}

/// What ends a `Description` that had to be cut to fit.
pub const CUT_NOTE: &str = "\n[cut: the rest did not fit in Description]";

/// The Lead's fields, by the default mapping ([`shared::default_fields`]): the name in its
/// parts, `Company` and `Phone` from the answers with those roles, the email, and the message
/// in `Description` with every other answer after it. `LastName` and `Company` are required by
/// Salesforce.
///
/// `Phone` only when `phone_writable` (the start-up check saw the integration user may write it:
/// an org's field-level security that hides it would refuse every Lead with a phone);
/// otherwise the phone is in `Description` (as it is when Salesforce refuses it: [`without`]).
/// Each value fits its field's length, since one value
/// over its field refuses the whole Lead; a phone that does not fit, or a company that had to
/// be cut, is kept whole in `Description`.
/// An email Salesforce would refuse ([`email_accepted`]) is left out of `Email` and kept at the
/// end of `Description` instead ([`without`]).
///
/// Then the mapping's fields ([`Mapped`], checked against the org at start), over the defaults:
/// an answer it wrote whole is not repeated in `Description`; one it left out is there.
pub fn fields(lead: &Lead, phone_writable: bool, mapped: &Mapped) -> serde_json::Value {
    let (first, last) = name_parts(lead);
    // A blank optional input arrives as "" or spaces: Salesforce reads that as no value and
    // refuses the Lead (REQUIRED_FIELD_MISSING) on every attempt (`role_text` is never blank).
    let company = role_text(lead, Role::Company);
    let phone = role_text(lead, Role::Phone).filter(|p| phone_writable && p.encode_utf16().count() <= length("Phone"));
    let email = lead.email.trim();
    let mut fields = json!({
        "FirstName": fit_utf16(&first, length("FirstName")),
        "LastName": fit_utf16(if last.is_empty() { NOT_PROVIDED } else { &last }, length("LastName")),
        "Company": fit_utf16(company.as_deref().unwrap_or(NOT_PROVIDED), length("Company")),
    });
    if let Some(phone) = phone {
        fields["Phone"] = json!(phone);
    }
    if email_accepted(email) {
        fields["Email"] = json!(email);
    }
    for (field, value) in &mapped.values {
        // The describe's spelling; a default field of another spelling gives way.
        if let Some(object) = fields.as_object_mut() {
            object.retain(|name, _| !name.eq_ignore_ascii_case(field));
        }
        fields[field.as_str()] = serde_json::from_str(&value.to_text()).unwrap_or_default();
    }
    described(lead, fields, mapped)
}

/// `fields` with `Description` made for them: the answers no field of theirs shows, then the
/// email as submitted when they have no `Email` (after the message and the other answers,
/// which are cut first so the address stays whole).
fn described(lead: &Lead, mut fields: serde_json::Value, mapped: &Mapped) -> serde_json::Value {
    let email = lead.email.trim();
    // The address as submitted, when `Email` does not hold it (refused, or filled by the
    // mapping from another answer).
    let held = fields.get("Email").and_then(|e| e.as_str()).is_some_and(|e| e.eq_ignore_ascii_case(email));
    let mut note = match held || email.is_empty() {
        false => format!("\n\n(email as submitted: {})", fit_utf16(email, 1_000)),
        true => String::new(),
    };
    // A whole name (no first and last name answers, which are in `extra`) the mapping put no
    // part of in FirstName or LastName is in no field: kept as submitted.
    let parts_asked = lead.roles.contains_key(&Role::FirstName) || lead.roles.contains_key(&Role::LastName);
    let name = lead.name.trim();
    if !name.is_empty() && !parts_asked && (mapped.writes("FirstName") || mapped.writes("LastName")) {
        note = format!("\n\n(name as submitted: {}){note}", fit_utf16(name, 1_000));
    }
    let shown = shown_roles(lead, fields.get("Phone").is_some(), mapped);
    let written: Vec<&str> = fields.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    let unwritten: Vec<&str> = mapped.values.iter().map(|(f, _)| f.as_str()).filter(|f| !written.contains(f)).collect();
    fields["Description"] = json!(description(lead, &shown, &mapped.shown_but(&unwritten), &note));
    fields
}

/// `fields` without those `left` out (`Email`, `Phone`, fields the mapping filled), their values
/// kept in `Description` instead: for values Salesforce refuses, so the Lead is still written
/// ([`described`]).
/// A field Salesforce requires (`LastName`, `Company`) left out gets its default back.
pub fn without(lead: &Lead, mut fields: serde_json::Value, left: &[&str], mapped: &Mapped) -> serde_json::Value {
    let gone = |name: &str| left.iter().any(|l| l.eq_ignore_ascii_case(name));
    if let Some(object) = fields.as_object_mut() {
        object.retain(|name, _| !gone(name));
    }
    let defaults = self::fields(lead, false, &Mapped::default());
    for required in ["LastName", "Company"].into_iter().filter(|r| gone(r)) {
        fields[required] = defaults[required].clone();
    }
    described(lead, fields, mapped)
}

/// `Description`: the message, then the answers no field shows ([`answers_block`]), then
/// `note` kept whole; cut to 32,000 UTF-16 units from the end of the answers, saying so.
fn description(lead: &Lead, shown: &[Role], mapped: &[String], note: &str) -> String {
    let text = notes(&lead.message, &answers_block(&other_answers(lead, shown, mapped)));
    let room = length("Description").saturating_sub(note.encode_utf16().count());
    if text.encode_utf16().count() <= room {
        return format!("{text}{note}");
    }
    let cut = fit_utf16(&text, room.saturating_sub(CUT_NOTE.encode_utf16().count()));
    format!("{cut}{CUT_NOTE}{note}")
}

/// The roles a Lead's own fields show whole (the rest are in `Description`): the name's parts,
/// the company when it fits `Company` uncut, the phone when it is written (`phone_written`).
/// A role whose field the mapping fills from another answer is not shown by it.
fn shown_roles(lead: &Lead, phone_written: bool, mapped: &Mapped) -> Vec<Role> {
    let mut shown = vec![Role::FirstName, Role::LastName];
    if role_text(lead, Role::Company).is_some_and(|c| c.encode_utf16().count() <= length("Company")) {
        shown.push(Role::Company);
    }
    if phone_written {
        shown.push(Role::Phone);
    }
    let field = |role: &Role| match role {
        Role::FirstName => "FirstName",
        Role::LastName => "LastName",
        Role::Company => "Company",
        Role::Phone => "Phone",
    };
    let by_mapping = |role: &Role| {
        let key = lead.roles.get(role);
        mapped.writes(field(role)) && !mapped.shown.iter().any(|(answer, _)| Some(answer) == key)
    };
    shown.retain(|role| !by_mapping(role));
    shown
}

/// Whether the sink sends `email` as the Lead's `Email`: only when Salesforce's documented
/// rules accept it (Salesforce Help 000384328, "Email Address Format Technical Standards
/// Validation", and 000001145, "How does Salesforce qualify an email address?"), read
/// conservatively: an address this refuses still reaches the Lead, in `Description`, and one
/// Salesforce refuses anyway is sent once more without `Email`.
/// - at most 80 characters, exactly one `@`;
/// - a local part of 1 to 64 ASCII letters, digits, ``.!#$%&'*/=?^_+-`{|}~``, not starting
///   with `.` (Salesforce allows `..` in the middle and at the end, unlike the RFCs); no
///   quoted forms or comments;
/// - a domain of two or more labels of ASCII letters, digits and `-` (no `_`, which is why
///   `ada@exa_mple.com` is refused), each 1 to 63 long, never starting or ending with `-`
///   (so no `..`), the last of letters only or an internationalised one as `xn--...`;
/// - ASCII only: internationalised addresses need the org's EAI setting, which the sink
///   cannot see.
pub fn email_accepted(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    if email.len() > length("Email") || domain.contains('@') {
        return false;
    }
    let local_char = |c: char| c.is_ascii_alphanumeric() || ".!#$%&'*/=?^_+-`{|}~".contains(c);
    let local_ok = (1..=64).contains(&local.len()) && !local.starts_with('.') && local.chars().all(local_char);
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |label: &&str| {
        (1..=63).contains(&label.len())
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    // A top-level domain of letters, or an internationalised one in its ASCII form (`xn--`).
    let top_ok = labels
        .last()
        .is_some_and(|top| (top.len() >= 2 && top.chars().all(|c| c.is_ascii_alphabetic())) || top.starts_with("xn--"));
    local_ok && labels.len() >= 2 && labels.iter().all(label_ok) && top_ok
}

/// The longest external ID value a Salesforce Text field holds, in UTF-16 code units.
pub const MAX_EXTERNAL_ID_UNITS: usize = 255;

/// The value of the external ID field for a submission ID: the ID itself, or, for an ID no
/// Text field can hold or no URL path could carry, `sha256-` and the hex SHA-256 of the ID:
/// over 255 UTF-16 code units; holding a `.` (from when the sink upserted by a URL path, where
/// `.` and `..` are dot segments and some extensions such as `.inc` answer 404: kept, so a
/// replay of a submission written then finds its Lead); starting or ending in a space (or a
/// control): Salesforce trims text values as Java's `String.trim` does, so `a ` would be
/// stored as `a`, its replay would not find it and `a` would share it. Deterministic, so a replay names the same Lead; distinct IDs never
/// share a value (the field must be case sensitive: checked at start).
pub fn external_id(submission_id: &str) -> std::borrow::Cow<'_, str> {
    use sha2::{Digest, Sha256};
    let trimmed = submission_id.trim_matches(|c: char| c <= ' ') == submission_id;
    let fits = submission_id.encode_utf16().count() <= MAX_EXTERNAL_ID_UNITS && !submission_id.contains('.') && trimmed;
    // A short ID that itself looks like a digest value is hashed too, so it cannot collide
    // with one.
    if fits && !submission_id.starts_with("sha256-") {
        return std::borrow::Cow::Borrowed(submission_id);
    }
    let digest = Sha256::digest(submission_id.as_bytes());
    std::borrow::Cow::Owned(format!("sha256-{}", shared::hex::encode(&digest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default fields, with no mapping.
    fn fields(lead: &Lead, phone_writable: bool) -> serde_json::Value {
        super::fields(lead, phone_writable, &Mapped::default())
    }

    fn without(lead: &Lead, fields: serde_json::Value, field: &str) -> serde_json::Value {
        super::without(lead, fields, &[field], &Mapped::default())
    }

    fn lead(name: &str, email: &str, company: Option<&str>) -> Lead {
        let extra =
            company.map(|c| (String::from("company"), shared::json::Json::String(c.into()))).into_iter().collect();
        let roles = company.map(|_| (Role::Company, String::from("company"))).into_iter().collect();
        Lead {
            external_id: String::from("sub_1"),
            name: name.to_owned(),
            email: email.to_owned(),
            message: String::from("Hello"),
            extra,
            roles,
            form: String::new(),
        }
    }

    /// A lead of the default profile's shape with `answers` (an object) beside its message.
    fn lead_with(answers: &str) -> Lead {
        let serde_json::Value::Object(answers) = serde_json::from_str(answers).unwrap() else { panic!("an object") };
        let extra = answers.into_iter().map(|(k, v)| (k, shared::json::parse(v.to_string().as_bytes()).unwrap()));
        let mut lead = Lead { name: String::from("Ada Lovelace"), message: String::from("Hello"), ..Lead::default() };
        lead.extra = extra.collect();
        for key in lead.extra.keys() {
            if let Some(role) = shared::lead::role_of_label(key) {
                lead.roles.entry(role).or_insert_with(|| key.clone());
            }
        }
        lead
    }

    #[test]
    fn phone_company_and_every_other_answer_reach_the_lead() {
        let f = fields(
            &lead_with(
                r#"{"Company":"Acme","Phone":"+44 20 7946 0000","Size":"11-50","Consent":true,"Topics":["A","B"]}"#,
            ),
            true,
        );
        assert_eq!((&f["Company"], &f["Phone"]), (&json!("Acme"), &json!("+44 20 7946 0000")));
        assert_eq!(f["Description"], "Hello\n\nOther answers:\nConsent: true\nSize: 11-50\nTopics: A, B");
        // The form's own name parts win over the split name.
        let parts = fields(&lead_with(r#"{"First name":"Ada King","Last name":"Lovelace"}"#), true);
        assert_eq!(
            (&parts["FirstName"], &parts["LastName"], &parts["Description"]),
            (&json!("Ada King"), &json!("Lovelace"), &json!("Hello"))
        );
        let first_only = fields(&lead_with(r#"{"First name":"Ada"}"#), true);
        assert_eq!((&first_only["FirstName"], &first_only["LastName"]), (&json!("Ada"), &json!(NOT_PROVIDED)));
        // A phone the integration user may not write is in the description.
        let hidden = fields(&lead_with(r#"{"Phone":"+44 20 7946 0000"}"#), false);
        assert_eq!(hidden.get("Phone"), None);
        assert_eq!(hidden["Description"], "Hello\n\nOther answers:\nPhone: +44 20 7946 0000");
        // A phone over 40 units costs the field only: kept whole in the description.
        let long = "1".repeat(41);
        let f = fields(&lead_with(&format!(r#"{{"phone":"{long}"}}"#)), true);
        assert_eq!(f.get("Phone"), None);
        assert_eq!(f["Description"], format!("Hello\n\nOther answers:\nphone: {long}"));
        // A company cut to fit is whole in the description too.
        let company = "c".repeat(256);
        let f = fields(&lead_with(&format!(r#"{{"company":"{company}"}}"#)), true);
        assert_eq!(f["Description"], format!("Hello\n\nOther answers:\ncompany: {company}"));
    }

    #[test]
    fn without_email_the_description_still_leaves_out_what_the_fields_show() {
        let mut lead = lead_with(r#"{"Company":"Acme","Phone":"+1 555","Size":"11-50"}"#);
        lead.email = String::from("ada@exa_mple.com");
        let f = fields(&lead, true);
        assert_eq!((&f["Company"], &f["Phone"]), (&json!("Acme"), &json!("+1 555")));
        let expected = "Hello\n\nOther answers:\nSize: 11-50\n\n(email as submitted: ada@exa_mple.com)";
        assert_eq!(f["Description"], expected);
        let hidden = fields(&lead, false);
        assert!(hidden["Description"].as_str().unwrap().contains("Phone: +1 555\nSize"), "{hidden}");
        // A phone Salesforce refused: sent again without it, the phone before the email's note.
        let refused = without(&lead, fields(&lead, true), "Phone");
        assert_eq!(refused.get("Phone"), None);
        let expected = "Hello\n\nOther answers:\nPhone: +1 555\nSize: 11-50\n\n(email as submitted: ada@exa_mple.com)";
        assert_eq!(refused["Description"], expected);
        let company = "c".repeat(256);
        lead.extra.insert(String::from("Company"), shared::json::Json::String(company.clone()));
        let cut = fields(&lead, true);
        assert!(cut["Description"].as_str().unwrap().contains(&format!("Company: {company}\n")), "{cut}");
    }

    #[test]
    fn a_description_too_long_is_cut_from_the_end_and_says_so() {
        let mut lead = lead_with(&format!(r#"{{"notes":"{}"}}"#, "n".repeat(40_000)));
        lead.email = String::from("ada@exa_mple.com");
        let f = fields(&lead, true);
        let description = f["Description"].as_str().unwrap();
        assert!(description.starts_with("Hello\n\nOther answers:\nnotes: nnn"));
        assert!(description.ends_with(&format!("…{CUT_NOTE}\n\n(email as submitted: ada@exa_mple.com)")));
        assert_eq!(description.encode_utf16().count(), 32_000);
    }

    #[test]
    fn a_mapped_field_takes_the_place_of_the_default_and_the_role_s_answer_stays_visible() {
        let lead = lead_with(r#"{"Company":"Analytical Engines","Employer":"Babbage & Co","Phone":"+1 555"}"#);
        let mapped = Mapped {
            values: vec![("company".into(), shared::json::Json::string("Babbage & Co"))],
            shown: vec![("Employer".into(), "company".into())],
            ..Mapped::default()
        };
        let f = super::fields(&lead, true, &mapped);
        // One Company, the mapping's, spelt as the describe spells it.
        assert_eq!((f.get("Company"), f["company"].as_str()), (None, Some("Babbage & Co")));
        let description = f["Description"].as_str().unwrap();
        assert!(description.contains("Company: Analytical Engines"), "the role's answer is no field's: {description}");
        assert!(!description.contains("Employer"), "the mapped answer is in its field: {description}");
        // Refused by the org: Company gets its default back, and the answer is in Description.
        let mut refused = mapped.clone();
        refused.leave_out(&["company"], shared::typed::Unfit::Refused);
        let again = super::without(&lead, f, &["company"], &refused);
        assert_eq!(again["Company"], "Analytical Engines");
        let description = again["Description"].as_str().unwrap();
        assert!(description.contains("Employer: Babbage & Co") && !description.contains("Company:"), "{description}");
    }

    #[test]
    fn a_name_the_mapping_replaced_is_kept_as_submitted() {
        let mut lead = lead_with(r#"{"Preferred name":"Ada"}"#);
        lead.name = String::from("Augusta Ada King");
        let mapped = Mapped {
            values: vec![("FirstName".into(), shared::json::Json::string("Ada"))],
            shown: vec![("Preferred name".into(), "FirstName".into())],
            ..Mapped::default()
        };
        let f = super::fields(&lead, true, &mapped);
        assert_eq!(f["FirstName"], "Ada");
        assert!(f["Description"].as_str().unwrap().ends_with("(name as submitted: Augusta Ada King)"), "{f}");
        let same = super::fields(&lead, true, &Mapped::default());
        assert!(!same["Description"].as_str().unwrap().contains("as submitted"), "{same}");
    }

    #[test]
    fn an_email_the_mapping_replaced_is_kept_as_submitted() {
        let mut lead = lead_with(r#"{"Work email":"ada@work.example"}"#);
        lead.email = String::from("ada@example.com");
        let mapped = Mapped {
            values: vec![("Email".into(), shared::json::Json::string("ada@work.example"))],
            shown: vec![("Work email".into(), "Email".into())],
            ..Mapped::default()
        };
        let f = super::fields(&lead, true, &mapped);
        assert_eq!(f["Email"], "ada@work.example");
        assert!(f["Description"].as_str().unwrap().ends_with("(email as submitted: ada@example.com)"), "{f}");
        let same = super::fields(&lead, true, &Mapped::default());
        assert!(!same["Description"].as_str().unwrap().contains("as submitted"), "{same}");
    }

    #[test]
    fn a_lead_maps_to_the_lead_object_s_fields() {
        // The last space splits the name: a family name is one word, given names may be several.
        let all = fields(&lead("Ada King Lovelace", " ada@example.com ", Some("Analytical Engines")), true);
        assert_eq!(
            all,
            json!({"FirstName": "Ada King", "LastName": "Lovelace", "Company": "Analytical Engines",
                   "Description": "Hello", "Email": "ada@example.com"})
        );
        // One word is the first name; LastName and Company are required, so never empty.
        let one = fields(&lead("Cher", "", None), true);
        assert_eq!(
            (&one["FirstName"], &one["LastName"], &one["Company"]),
            (&json!("Cher"), &json!(NOT_PROVIDED), &json!(NOT_PROVIDED))
        );
        assert_eq!(one.get("Email"), None);
        assert_eq!(one["Description"], "Hello", "no email, no note");
        assert_eq!(fields(&lead("", "", None), true)["LastName"], NOT_PROVIDED);
        // A blank company (an optional input left empty) is no company: required, so filled.
        for blank in ["", "   "] {
            assert_eq!(fields(&lead("Ada Lovelace", "", Some(blank)), true)["Company"], NOT_PROVIDED, "{blank:?}");
        }
        assert_eq!(fields(&lead("Ada \t", "", None), true)["FirstName"], "Ada", "a name ending in spaces");
        assert_eq!(fields(&lead(" \t ", "", None), true)["LastName"], NOT_PROVIDED, "a name of spaces");
        assert_eq!(fields(&lead("Ada  King", "", None), true)["FirstName"], "Ada");
        // Each value within its field's length.
        let long = fields(&lead(&format!("{} {}", "f".repeat(50), "l".repeat(90)), "", Some(&"c".repeat(300))), true);
        let units = |v: &serde_json::Value| v.as_str().unwrap().encode_utf16().count();
        assert_eq!((units(&long["FirstName"]), units(&long["LastName"]), units(&long["Company"])), (40, 80, 255));
    }

    #[test]
    fn lengths_are_utf16_code_units_as_salesforce_counts_them() {
        // 30 emoji: 30 characters, 60 code units; FirstName holds 40 units.
        let emoji = "😀".repeat(30);
        let f = fields(&lead(&format!("{emoji} {emoji}"), "", Some(&"😀".repeat(200))), true);
        for (field, max) in [("FirstName", 40), ("LastName", 80), ("Company", 255)] {
            let value = f[field].as_str().unwrap();
            assert!(value.encode_utf16().count() <= max, "{field}: {}", value.encode_utf16().count());
            assert!(value.starts_with('😀'), "{field}: whole characters");
        }
        assert_eq!(f["LastName"], emoji, "60 units fit in 80");
        let mut long = lead("A B", "ada@example.com", None);
        long.message = "😀".repeat(16_001);
        assert!(fields(&long, true)["Description"].as_str().unwrap().encode_utf16().count() <= 32_000);
    }

    #[test]
    fn emails_salesforce_accepts_are_sent_as_the_email() {
        // 80 characters, with the longest local part (64).
        let at_limit = format!("{}@abcdefghijk.com", "a".repeat(64));
        assert_eq!(at_limit.len(), 80);
        for good in [
            "ada@example.com",
            "Ada.King+forms@mail.example.co.uk",
            "o'brien@example.ie",
            "a-b_c!#$%&*/=?^`{|}~@x-y.example.com",
            "1@2.io",
            // Salesforce allows dots in a row in the local part, except at its start.
            "a..a@test.jp",
            "a..@test.jp",
            // An internationalised domain in its ASCII form.
            "ivan@xn--80ak6aa92e.xn--p1ai",
            at_limit.as_str(),
        ] {
            assert!(email_accepted(good), "{good}");
        }
    }

    #[test]
    fn emails_outside_salesforce_s_rules_are_kept_in_the_description_instead() {
        let over = format!("{}@abcdefghijkl.com", "a".repeat(64));
        let long_local = format!("{}@x.io", "a".repeat(65));
        for bad in [
            over.as_str(),
            long_local.as_str(),
            "no-at-sign",
            "@example.com",
            "ada@localhost",
            "ada lovelace@example.com",
            "ada@exa_mple.com",
            "ada@gmail..com",
            "a@b@example.com",
            ".ada@example.com",
            "ada@-example.com",
            "ada@example-.com",
            "ada@example.c0m",
            "ada@example.com.",
            "\"ada\"@example.com",
            "adä@example.com",
            "ada@exämple.com",
            "ada@[127.0.0.1]",
        ] {
            assert!(!email_accepted(bad), "{bad}");
            let f = fields(&lead("A B", bad, None), true);
            assert_eq!(f.get("Email"), None, "{bad}");
            assert_eq!(f["Description"], format!("Hello\n\n(email as submitted: {bad})"), "{bad}");
        }
    }

    #[test]
    fn without_the_email_the_address_stays_whole_after_a_cut_message() {
        let mut long = lead("A B", "ada@example.com", None);
        long.message = "m".repeat(40_000);
        let f = without(&long, fields(&long, true), "Email");
        let description = f["Description"].as_str().unwrap();
        assert_eq!(f.get("Email"), None);
        assert!(
            description.ends_with(&format!("…{CUT_NOTE}\n\n(email as submitted: ada@example.com)")),
            "{}",
            &description[31_900..]
        );
        assert_eq!(description.encode_utf16().count(), 32_000);
    }

    #[test]
    fn ids_a_text_field_or_a_path_cannot_hold_become_digests() {
        assert_eq!(external_id("sub_1"), "sub_1");
        let longest = "é".repeat(MAX_EXTERNAL_ID_UNITS);
        assert_eq!(external_id(&longest), longest.as_str());
        // 128 emoji are 128 characters but 256 UTF-16 code units: over the field.
        let emoji = "😀".repeat(128);
        let too_long = "x".repeat(MAX_EXTERNAL_ID_UNITS + 1);
        let odd_ones = [".", "..", "lead@example.inc", "sub.1", too_long.as_str(), "sha256-abc", emoji.as_str()];
        for odd in odd_ones.into_iter().chain([" a", "a ", "\ta", "a\n"]) {
            let value = external_id(odd);
            assert!(value.starts_with("sha256-") && value.len() == 71, "{odd}: {value}");
            assert_eq!(external_id(odd), value, "deterministic");
        }
        assert_eq!(external_id(&"😀".repeat(127)), "😀".repeat(127), "254 units fit");
        assert_ne!(external_id("."), external_id(".."));
        assert_ne!(external_id("a "), external_id(" a"));
        assert_eq!(external_id("a b"), "a b", "white space inside is kept");
        // Only what Salesforce trims: a no-break space or an ideographic one stays.
        assert_eq!(external_id("\u{a0}a\u{3000}"), "\u{a0}a\u{3000}");
        // printf '.' | sha256sum
        assert_eq!(external_id("."), "sha256-cdb4ee2aea69cc6a83331bbe96dc2caa9a299d21329efb0336fc02a82e1839a8");
    }
}
