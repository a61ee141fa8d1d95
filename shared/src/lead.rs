//! The lead a receipt becomes: what a CRM or database row is keyed and filled with.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::Json;
use crate::profile::Profile;
use crate::receipt::Receipt;

/// Form fields that become the lead's own columns; every other field goes to `extra`.
pub const NAMED_FIELDS: [&str; 3] = ["name", "email", "message"];

/// An answer a CRM has a standard field for, beside the lead's name, email and message: found by
/// the sender's field type or by the answer's common labels ([`role_of_label`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// A first (given) name asked on its own.
    FirstName,
    /// A last (family) name asked on its own.
    LastName,
    /// The visitor's company or organisation.
    Company,
    /// A phone number.
    Phone,
}

/// One lead, keyed by the submission that produced it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lead {
    /// The submission ID: the unique key downstream, so a redelivery updates, never duplicates.
    pub external_id: String,
    /// `formData.name`, as text; empty when absent.
    pub name: String,
    /// `formData.email`, as text; empty when absent.
    pub email: String,
    /// `formData.message`, as text; empty when absent.
    pub message: String,
    /// Every other form field, unchanged.
    pub extra: BTreeMap<String, Json>,
    /// The answers in `extra` that fill a CRM's standard field, by their key in `extra` (where
    /// each stays, so a database row or a webhook still has every answer). At most one per role.
    pub roles: BTreeMap<Role, String>,
    /// The form the submission answered, where the payload names it (Typeform `form_id`, Tally
    /// `formId`, a Standard Webhooks payload's `form` pointer); empty otherwise. It chooses a lead mapping's part for that form.
    pub form: String,
}

/// Why a receipt cannot become a lead. Permanent: retrying the same receipt cannot help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadError {
    /// The stored payload's `data.submissionId` differs from the receipt's.
    SubmissionIdMismatch,
    /// `data.formData` is present but not an object.
    FormDataNotObject,
    /// A form backend's answers or fields are present but not an array.
    AnswersNotArray,
}

impl LeadError {
    /// A stable reason code, stored on the receipt when it is marked `FAILED`.
    pub fn reason(self) -> &'static str {
        match self {
            LeadError::SubmissionIdMismatch => "submission_id_mismatch",
            LeadError::FormDataNotObject => "form_data_not_object",
            LeadError::AnswersNotArray => "answers_not_array",
        }
    }
}

impl Lead {
    /// Each role with the key of its answer in `extra`, in role order (for tests' assertions).
    #[cfg(test)]
    pub(crate) fn role_keys(&self) -> Vec<(Role, &str)> {
        self.roles.iter().map(|(role, key)| (*role, key.as_str())).collect()
    }

    /// The lead as JSON: `{"externalId","name","email","message","extra":{..}}`, for HTTP sinks.
    pub fn to_json(&self) -> Json {
        Json::Object(BTreeMap::from([
            (String::from("externalId"), Json::string(&self.external_id)),
            (String::from("name"), Json::string(&self.name)),
            (String::from("email"), Json::string(&self.email)),
            (String::from("message"), Json::string(&self.message)),
            (String::from("extra"), Json::Object(self.extra.clone())),
        ]))
    }
}

/// The lead of a Static Forms receipt: `formData`'s `name`, `email` and `message`, the rest as
/// `extra`.
pub(crate) fn static_forms_lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    let payload_id = receipt.payload.get("data").and_then(|d| d.get("submissionId")).and_then(Json::as_str);
    if payload_id != Some(receipt.submission_id.as_str()) {
        return Err(LeadError::SubmissionIdMismatch);
    }
    let mut extra = match receipt.form_data() {
        None | Some(Json::Null) => BTreeMap::new(),
        Some(Json::Object(fields)) => fields.clone(),
        Some(_) => return Err(LeadError::FormDataNotObject),
    };
    let mut take = |field: &str| extra.remove(field).map(as_text).unwrap_or_default();
    let mut lead = Lead {
        external_id: static_forms_lead_key(receipt),
        name: take(NAMED_FIELDS[0]),
        email: take(NAMED_FIELDS[1]),
        message: take(NAMED_FIELDS[2]),
        extra,
        roles: BTreeMap::new(),
        form: String::new(),
    };
    complete(&mut lead);
    Ok(lead)
}

/// A Static Forms lead's key: the bare submission ID, as before profiles existed, unless the ID
/// starts like another profile's lead key (`tally:...`: any receipt key prefix), when it is the
/// receipt's own key. Every other profile's lead key is its receipt key, so no two profiles'
/// leads ever share a key.
fn static_forms_lead_key(receipt: &Receipt) -> String {
    let id = receipt.submission_id.as_str();
    if Profile::ALL.iter().any(|p| id.starts_with(p.key_prefix())) {
        receipt.key.clone()
    } else {
        String::from(id)
    }
}

/// One of a lead's named fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Named {
    /// `name`.
    Name,
    /// `email`.
    Email,
    /// `message`.
    Message,
}

/// A lead being filled from a sender's answers: each named field takes the first answer that
/// fits it; every other answer goes to `extra` under the first key it is given. A first or last
/// name asked on its own is not the name: it goes to `extra` with its role, and the parts joined
/// are the name when no answer was the whole name.
pub(crate) struct Fields {
    lead: Lead,
    taken: [bool; 3],
}

impl Fields {
    /// An empty lead keyed `external_id`.
    pub(crate) fn new(external_id: String) -> Fields {
        Fields { lead: Lead { external_id, ..Lead::default() }, taken: [false; 3] }
    }

    /// Puts `value` in the first of `candidates` still empty and returns `None`; when every
    /// candidate is taken (or there is none), hands `value` back for `extra`.
    pub(crate) fn fill(&mut self, candidates: &[Named], value: Json) -> Option<Json> {
        let Some(&field) = candidates.iter().find(|f| !self.taken[**f as usize]) else { return Some(value) };
        self.taken[field as usize] = true;
        let slot = match field {
            Named::Name => &mut self.lead.name,
            Named::Email => &mut self.lead.email,
            Named::Message => &mut self.lead.message,
        };
        *slot = as_text(value);
        None
    }

    /// The extra fields so far.
    pub(crate) fn extra(&mut self) -> &mut BTreeMap<String, Json> {
        &mut self.lead.extra
    }

    /// The form the answers are to (`id` trimmed; empty: none).
    pub(crate) fn form(&mut self, id: Option<&str>) {
        self.lead.form = String::from(id.unwrap_or_default().trim());
    }

    /// Gives the answer under `key` in `extra` the role `role`, unless another answer has it.
    pub(crate) fn role(&mut self, role: Role, key: &str) {
        self.lead.roles.entry(role).or_insert_with(|| String::from(key));
    }

    /// Puts `value` in `extra` under `key`, with `role` when it has one, unless an answer is
    /// there under that key already (the first one stays).
    pub(crate) fn keep(&mut self, key: &str, value: Json, role: Option<Role>) {
        if self.lead.extra.contains_key(key) {
            return;
        }
        self.lead.extra.insert(String::from(key), value);
        if let Some(role) = role {
            self.role(role, key);
        }
    }

    /// The lead, completed ([`complete`]).
    pub(crate) fn finish(mut self) -> Lead {
        complete(&mut self.lead);
        self.lead
    }
}

/// Completes a lead read from its answers: gives each role no answer has yet to the first
/// answer in `extra` whose key is one of its labels ([`role_of_label`]) and whose value is text
/// or a number, then, when no answer was the whole name, makes the first and last name parts
/// joined the name.
pub(crate) fn complete(lead: &mut Lead) {
    for (key, value) in &lead.extra {
        if let (Some(role), Json::String(_) | Json::Number(_)) = (role_of_label(key), value) {
            lead.roles.entry(role).or_insert_with(|| key.clone());
        }
    }
    if lead.name.is_empty() {
        let part = |role| lead.roles.get(&role).and_then(|key| lead.extra.get(key)).map(|v| as_text(v.clone()));
        let parts = [part(Role::FirstName), part(Role::LastName)];
        let joined: Vec<String> =
            parts.into_iter().flatten().map(|p| String::from(p.trim())).filter(|p| !p.is_empty()).collect();
        lead.name = joined.join(" ");
    }
}

/// The role an answer's label gives it, compared as [`label`] does (any case, spacing and
/// punctuation): `First name`, `Given name`, `Forename`; `Last name`, `Surname`, `Family name`;
/// `Company`, `Company name`, `Organisation`, `Organization`; `Phone`, `Phone number`,
/// `Telephone`, `Telephone number`, `Mobile`, `Mobile phone`, `Mobile number`.
pub fn role_of_label(text: &str) -> Option<Role> {
    match label(text).as_str() {
        "firstname" | "givenname" | "forename" => Some(Role::FirstName),
        "lastname" | "surname" | "familyname" => Some(Role::LastName),
        "company" | "companyname" | "organisation" | "organization" => Some(Role::Company),
        "phone" | "phonenumber" | "telephone" | "telephonenumber" | "mobile" | "mobilephone" | "mobilenumber" => {
            Some(Role::Phone)
        }
        _ => None,
    }
}

/// The lead of a form backend that sends its answers as one object, field name to value
/// (Webflow, Framer, Basin, Formspree, Formstack), keyed `external_id`: the name, email and
/// message from the fields their common labels name, in any case and spacing (`Name`,
/// `Full name`, or `First name` with `Last name`; `Email`, `E-mail`, `Email address`;
/// `Message`, `Comments`), every other field but those in `skip` in `extra` under its own name.
/// A value with a type beside it (`{"value": .., "field_type": ..}`, Formstack) is the value; a
/// name in parts (`{"first": .., "last": ..}`) is its parts joined.
pub(crate) fn object_lead(external_id: String, fields: &BTreeMap<String, Json>, skip: &[&str]) -> Lead {
    let mut lead = Fields::new(external_id);
    for (field, value) in fields.iter().filter(|(field, _)| !skip.contains(&field.as_str())) {
        let candidates: &[Named] = match label(field).as_str() {
            "name" | "fullname" | "yourname" => &[Named::Name],
            "email" | "emailaddress" | "youremail" | "youremailaddress" => &[Named::Email],
            "message" | "yourmessage" | "comments" | "comment" => &[Named::Message],
            _ => &[],
        };
        if let Some(value) = lead.fill(candidates, plain(value)) {
            lead.extra().insert(field.clone(), value);
        }
    }
    lead.finish()
}

/// A field's label as compared: lowercase letters and digits only.
fn label(field: &str) -> String {
    field.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// A field's value without the sender's wrapping: `{"value": v, "field_type": t}` is `v`; a name
/// in parts (`{"first": .., "last": ..}`, maybe with `prefix`, `initial`, `middle`, `suffix`) is its parts
/// joined by spaces; anything else as it is.
fn plain(value: &Json) -> Json {
    let Json::Object(members) = value else { return value.clone() };
    if let (Some(inner), Some(_)) = (members.get("value"), members.get("field_type")) {
        return plain(inner);
    }
    let name_parts = ["prefix", "first", "initial", "middle", "last", "suffix"];
    if members.contains_key("first") && members.keys().all(|k| name_parts.contains(&k.as_str()) || k == "field_type") {
        let joined: Vec<&str> = name_parts
            .iter()
            .filter_map(|part| members.get(*part).and_then(Json::as_str))
            .filter(|part| !part.is_empty())
            .collect();
        return Json::String(joined.join(" "));
    }
    value.clone()
}

/// A field's value as text: strings as they are, `null` as empty, anything else as JSON.
pub(crate) fn as_text(value: Json) -> String {
    match value {
        Json::String(s) => s,
        Json::Null => String::new(),
        other => other.to_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::parse_envelope;
    use crate::json::parse;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn receipt(body: &str) -> Receipt {
        let envelope = parse_envelope(body.as_bytes()).unwrap();
        Receipt::new(&envelope, "k".into(), "r", 0, 1)
    }

    fn lead_from_receipt_default(receipt: &Receipt) -> Result<Lead, LeadError> {
        static_forms_lead(receipt)
    }

    fn check(body: &str, expected: Result<(&str, &str, &str, &str), LeadError>) {
        let got = lead_from_receipt_default(&receipt(body));
        let got = got.as_ref().map(|l| (l.name.as_str(), l.email.as_str(), l.message.as_str(), l.extra.clone()));
        let expected = expected.map(|(n, e, m, extra)| {
            (
                n,
                e,
                m,
                match parse(extra.as_bytes()).unwrap() {
                    Json::Object(map) => map,
                    _ => panic!("extra is an object"),
                },
            )
        });
        assert_eq!(got.map_err(|e| *e), expected, "{body}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn maps_fields() {
        check(
            include_str!("../tests/fixtures/delivery.json"),
            Ok(("Ada Lovelace", "ada@example.com", "Hello", r#"{"company":"Analytical Engines"}"#)),
        );
        check(r#"{"event":"form.submitted","data":{"submissionId":"s"}}"#, Ok(("", "", "", "{}")));
        check(
            r#"{"event":"form.submitted","data":{"submissionId":"s","formData":{"name":7,"email":null,"message":["a"],"x":1e400}}}"#,
            Ok(("7", "", "[\"a\"]", r#"{"x":1e400}"#)),
        );
        assert_eq!(
            lead_from_receipt_default(&receipt(r#"{"event":"form.submitted","data":{"submissionId":"s"}}"#))
                .map(|l| l.external_id),
            Ok("s".into())
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn an_object_of_answers_by_its_common_labels() {
        let check = |fields: &str, expected: (&str, &str, &str, &str)| {
            let Json::Object(fields) = parse(fields.as_bytes()).unwrap() else { panic!("an object") };
            let lead = object_lead("k".into(), &fields, &["id"]);
            let got =
                (lead.name.as_str(), lead.email.as_str(), lead.message.as_str(), Json::Object(lead.extra).to_text());
            assert_eq!(got, (expected.0, expected.1, expected.2, String::from(expected.3)), "{fields:?}");
        };
        // Labels in any case and spacing; the first of each wins; the skipped field nowhere.
        check(
            r#"{"id":"1","E-mail":"a@x","Your Name":"Ada","full_name":"Other","COMMENTS":"hi","Email address":"b@x"}"#,
            ("Ada", "a@x", "hi", r#"{"Email address":"b@x","full_name":"Other"}"#),
        );
        // A full name wins over the parts, which stay in `extra`.
        check(
            r#"{"Name":"Ada Lovelace","First name":"A","Last name":"L"}"#,
            ("Ada Lovelace", "", "", r#"{"First name":"A","Last name":"L"}"#),
        );
        // Parts joined: the first of each kind; empty parts left out.
        check(
            r#"{"First name":"Ada","Given name":"B","Surname":"Lovelace","last_name":"D"}"#,
            ("Ada Lovelace", "", "", r#"{"First name":"Ada","Given name":"B","Surname":"Lovelace","last_name":"D"}"#),
        );
        check(r#"{"firstname":"","lastname":"Hopper"}"#, ("Hopper", "", "", r#"{"firstname":"","lastname":"Hopper"}"#));
        // Values unwrapped only as a sender wraps them.
        check(
            r#"{"Name":{"first":"Ada","middle":"","last":"Lovelace","field_type":"name"},"Email":{"value":"a@x","field_type":"email"},"v":{"value":1},"p":{"first":"x","other":"y"},"q":{"last":"z"}}"#,
            ("Ada Lovelace", "a@x", "", r#"{"p":{"first":"x","other":"y"},"q":{"last":"z"},"v":{"value":1}}"#),
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn labels_give_answers_their_roles_and_only_text_or_numbers_take_them() {
        for (text, role) in [
            ("First name", Some(Role::FirstName)),
            ("given_name", Some(Role::FirstName)),
            ("SURNAME", Some(Role::LastName)),
            ("Family-name", Some(Role::LastName)),
            ("Company name", Some(Role::Company)),
            ("organisation", Some(Role::Company)),
            ("Phone number", Some(Role::Phone)),
            ("mobile", Some(Role::Phone)),
            ("Name", None),
            ("Company size", None),
        ] {
            assert_eq!(role_of_label(text), role, "{text}");
        }
        let Json::Object(fields) =
            parse(br#"{"Company":["x"],"company_name":"Acme","Phone":12025550123,"tel":"1","Mobile":"2"}"#).unwrap()
        else {
            panic!("an object")
        };
        let lead = object_lead("k".into(), &fields, &[]);
        let roles = lead.role_keys();
        assert_eq!(roles, [(Role::Company, "company_name"), (Role::Phone, "Mobile")], "a list is no company");
        assert_eq!(lead.extra.len(), 5, "every answer stays in extra");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_static_forms_lead_s_answers_take_roles_and_its_name_parts_make_the_name() {
        let body = r#"{"event":"form.submitted","data":{"submissionId":"s","formData":{"email":"a@x",
            "firstName":"Ada","lastName":" Lovelace ","company":"Acme","Phone":"+1 555","companySize":"11-50"}}}"#;
        let lead = lead_from_receipt_default(&receipt(body)).unwrap();
        assert_eq!(lead.name, "Ada Lovelace");
        let roles = lead.role_keys();
        assert_eq!(
            roles,
            [
                (Role::FirstName, "firstName"),
                (Role::LastName, "lastName"),
                (Role::Company, "company"),
                (Role::Phone, "Phone")
            ]
        );
        let named = r#"{"event":"form.submitted","data":{"submissionId":"s","formData":{"name":"Grace Hopper","firstName":"Ada"}}}"#;
        assert_eq!(lead_from_receipt_default(&receipt(named)).unwrap().name, "Grace Hopper", "a whole name wins");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn lead_json() {
        let lead = lead_from_receipt_default(&receipt(include_str!("../tests/fixtures/delivery.json"))).unwrap();
        assert_eq!(
            lead.to_json().to_text(),
            r#"{"email":"ada@example.com","externalId":"sub_8fK2qLw9Xc","extra":{"company":"Analytical Engines"},"message":"Hello","name":"Ada Lovelace"}"#
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn unmappable_receipts_say_why() {
        let mut r = receipt(r#"{"event":"form.submitted","data":{"submissionId":"s"}}"#);
        r.submission_id = "other".into();
        assert_eq!(lead_from_receipt_default(&r), Err(LeadError::SubmissionIdMismatch));
        let mut r = receipt(r#"{"event":"form.submitted","data":{"submissionId":"s"}}"#);
        r.payload = parse(br#"{"data":{"submissionId":"s","formData":[1]}}"#).unwrap();
        assert_eq!(lead_from_receipt_default(&r), Err(LeadError::FormDataNotObject));
    }
}
