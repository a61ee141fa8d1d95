//! A lead mapping: which answers go to which CRM fields, per sender profile, and the constants
//! every record of the profile gets; then a lead's answers put into those fields by their types
//! ([`crate::typed`]), each answer that does not fit named with why, so it stays in the record's
//! notes instead.

use alloc::string::String;
use alloc::vec::Vec;

use crate::json::Json;
use crate::lead::Lead;
use crate::profile::Profile;
use crate::typed::{convert, FieldType, Unfit};

/// An answer and the field it fills, as configured: `line` is where the mapping says so (for
/// errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The answer's key in the lead: the form's field name (Static Forms, Webflow, ...), a
    /// Typeform field's `ref`, a Tally field's label (or key), `hidden.utm_source` for a member
    /// of an object answer; `name`, `email`, `message` for the lead's own.
    pub answer: String,
    /// The CRM field's API name.
    pub field: String,
    /// The mapping's line (1-based).
    pub line: usize,
}

/// A constant every record gets: a field, its value as written in the mapping, and the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constant {
    /// The CRM field's API name.
    pub field: String,
    /// The value (text, a number or a boolean).
    pub value: Json,
    /// The mapping's line (1-based).
    pub line: usize,
}

/// One profile's mapping as configured, or one form's within it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileMap {
    /// Answers to fields.
    pub fields: Vec<Link>,
    /// Constants.
    pub constants: Vec<Constant>,
    /// The forms with mappings of their own (by the form ID [`Lead::form`] holds), each on top
    /// of the profile's: a field it maps takes its answer or constant instead.
    pub forms: Vec<(String, ProfileMap)>,
}

/// The configured mapping: the profiles it names. A profile it does not name keeps the sink's
/// default fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldMapping {
    /// Each named profile's mapping.
    pub profiles: Vec<(Profile, ProfileMap)>,
    /// Salesforce's assignment rules on each new Lead (`Sforce-Auto-Assign`): `TRUE`, `FALSE`
    /// or the ID of an assignment rule; `None` leaves the header out (Salesforce: `TRUE`).
    pub assignment: Option<String>,
}

impl FieldMapping {
    /// Whether it says nothing: no profile, no assignment.
    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty() && self.assignment.is_none()
    }
}

/// A mapped field with its type, as the CRM described it at start.
#[derive(Clone, Debug)]
pub struct TypedLink {
    /// The answer's key ([`Link::answer`]).
    pub answer: String,
    /// The field's API name, as the CRM spells it.
    pub field: String,
    /// The field's type.
    pub ty: FieldType,
}

/// One profile's (or form's) mapping checked against the CRM: typed fields and converted
/// constants.
#[derive(Clone, Debug, Default)]
pub struct TypedMap {
    /// Answers to typed fields.
    pub fields: Vec<TypedLink>,
    /// Constants, converted to their fields' types.
    pub constants: Vec<(String, Json)>,
    /// The forms' own mappings ([`ProfileMap::forms`]).
    pub forms: Vec<(String, TypedMap)>,
}

/// What a mapping makes of one lead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mapped {
    /// The fields to write, with their values (constants first, then answers).
    pub values: Vec<(String, Json)>,
    /// The fields an answer was mapped to but not written, and why (never the value).
    pub left_out: Vec<(String, Unfit)>,
    /// The answers written whole to a field, by key, with the field (they need not be in the
    /// notes while that field is written).
    pub shown: Vec<(String, String)>,
}

impl Mapped {
    /// Whether `field` is written (compared without case, as CRMs name fields).
    pub fn writes(&self, field: &str) -> bool {
        self.values.iter().any(|(name, _)| name.eq_ignore_ascii_case(field))
    }

    /// Leaves `fields` out (those it writes), each for `why`: their answers are no longer
    /// shown, so they go back to the record's notes.
    pub fn leave_out(&mut self, fields: &[&str], why: Unfit) {
        let named = |field: &String| fields.iter().any(|f| f.eq_ignore_ascii_case(field));
        for (field, _) in self.values.iter().filter(|(field, _)| named(field)) {
            self.left_out.push((field.clone(), why));
        }
        self.values.retain(|(field, _)| !named(field));
        self.shown.retain(|(_, field)| !named(field));
    }

    /// The keys of the answers written whole, but those written to a field in `except`.
    pub fn shown_but(&self, except: &[&str]) -> Vec<String> {
        let kept = |field: &String| !except.iter().any(|e| e.eq_ignore_ascii_case(field));
        self.shown.iter().filter(|(_, field)| kept(field)).map(|(answer, _)| answer.clone()).collect()
    }
}

/// The mapping of the profile whose receipt key `receipt_key` is, among `maps`.
pub fn of_key<'a>(maps: &'a [(Profile, TypedMap)], receipt_key: &str) -> Option<&'a TypedMap> {
    let (profile, _) = Profile::of_key(receipt_key)?;
    maps.iter().find(|(p, _)| *p == profile).map(|(_, map)| map)
}

/// The answer `key` names in `lead`: the answer under that key, else a member of an object
/// answer (`hidden.utm_source`), else the lead's own `name`, `email` or `message`.
pub fn answer(lead: &Lead, key: &str) -> Option<Json> {
    if let Some(value) = lead.extra.get(key) {
        return Some(value.clone());
    }
    if let Some(value) = key.split_once('.').and_then(|(head, member)| lead.extra.get(head)?.get(member)) {
        return Some(value.clone());
    }
    match key {
        "name" => Some(Json::string(&lead.name)),
        "email" => Some(Json::string(&lead.email)),
        "message" => Some(Json::string(&lead.message)),
        _ => None,
    }
}

/// `lead` through `map` (and its form's part, when the lead's form has one): each constant,
/// then each mapped answer converted to its field's type; a blank or absent answer writes
/// nothing, one that does not fit is left out with its reason.
pub fn apply(lead: &Lead, map: &TypedMap) -> Mapped {
    let form = map.forms.iter().find(|(id, _)| !lead.form.is_empty() && *id == lead.form).map(|(_, form)| form);
    let by_form = |field: &str| {
        form.is_some_and(|f| {
            f.fields.iter().any(|l| l.field.eq_ignore_ascii_case(field))
                || f.constants.iter().any(|(name, _)| name.eq_ignore_ascii_case(field))
        })
    };
    let constants = map.constants.iter().filter(|(field, _)| !by_form(field));
    let constants = constants.chain(form.into_iter().flat_map(|f| &f.constants));
    let mut mapped = Mapped { values: constants.cloned().collect(), ..Mapped::default() };
    let links = map.fields.iter().filter(|l| !by_form(&l.field));
    for link in links.chain(form.into_iter().flat_map(|f| &f.fields)) {
        let Some(value) = answer(lead, &link.answer) else { continue };
        match convert(&value, &link.ty) {
            Ok(None) => {}
            Ok(Some(converted)) => {
                mapped.values.retain(|(name, _)| !name.eq_ignore_ascii_case(&link.field));
                mapped.values.push((link.field.clone(), converted));
                mapped.shown.push((link.answer.clone(), link.field.clone()));
            }
            Err(unfit) => mapped.left_out.push((link.field.clone(), unfit)),
        }
    }
    mapped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use crate::typed::{Choice, Kind};
    use alloc::vec;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn link(answer: &str, field: &str, ty: FieldType) -> TypedLink {
        TypedLink { answer: answer.into(), field: field.into(), ty }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn answers_fill_typed_fields_and_an_unfit_one_is_named_not_written() {
        let extra = r#"{"Company size":"11 to 50","Consent":["I agree"],"hidden":{"utm_source":"news"},"Start":"2026-02-30","Other":"x"}"#;
        let Json::Object(extra) = parse(extra.as_bytes()).unwrap() else { unreachable!() };
        let lead = Lead {
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            message: "Hello".into(),
            extra,
            ..Lead::default()
        };
        // The lead's own name, email and message by those keys.
        for (key, value) in [("name", "Ada Lovelace"), ("email", "ada@example.com"), ("message", "Hello")] {
            assert_eq!(answer(&lead, key), Some(Json::string(value)), "{key}");
        }
        assert_eq!(answer(&lead, "hidden.utm_source"), Some(Json::string("news")));
        assert_eq!(answer(&lead, "hidden.nothing"), None);
        let size = FieldType {
            options: vec![Choice { label: "11 to 50".into(), value: "11-50".into() }],
            restricted: true,
            ..FieldType::of(Kind::Choice)
        };
        let map = TypedMap {
            fields: vec![
                link("Company size", "Size__c", size),
                link("Consent", "Consent__c", FieldType::of(Kind::Boolean)),
                link("hidden.utm_source", "LeadSource", FieldType::of(Kind::Text)),
                link("Start", "Start__c", FieldType::of(Kind::Date)),
                link("email", "Work_Email__c", FieldType::of(Kind::Text)),
                link("Absent", "Absent__c", FieldType::of(Kind::Text)),
            ],
            constants: vec![("LeadSource".into(), Json::string("Web")), ("Rating".into(), Json::string("Warm"))],
            forms: vec![],
        };
        let mapped = apply(&lead, &map);
        let values: Vec<(&str, String)> = mapped.values.iter().map(|(f, v)| (f.as_str(), v.to_text())).collect();
        assert_eq!(
            values,
            vec![
                ("Rating", "\"Warm\"".into()),
                ("Size__c", "\"11-50\"".into()),
                ("Consent__c", "true".into()),
                ("LeadSource", "\"news\"".into()),
                ("Work_Email__c", "\"ada@example.com\"".into()),
            ]
        );
        assert_eq!(mapped.left_out, vec![(String::from("Start__c"), Unfit::NotADate)]);
        assert_eq!(mapped.shown_but(&[]), ["Company size", "Consent", "hidden.utm_source", "email"]);
        assert_eq!(mapped.shown_but(&["consent__C", "Start__c"]), ["Company size", "hidden.utm_source", "email"]);
        // Left out after the CRM refused them: neither written nor shown, named with why.
        let mut refused = mapped.clone();
        refused.leave_out(&["size__c", "Nowhere__c"], Unfit::Refused);
        assert!(!refused.writes("Size__c") && refused.writes("Consent__c"));
        assert_eq!(refused.shown_but(&[]), ["Consent", "hidden.utm_source", "email"]);
        assert_eq!(refused.left_out[1..], [(String::from("Size__c"), Unfit::Refused)]);
        assert!(mapped.writes("leadsource") && !mapped.writes("Start__c"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_mapping_of_nothing_is_empty_and_an_assignment_alone_is_not() {
        assert!(FieldMapping::default().is_empty());
        let assignment = FieldMapping { assignment: Some("FALSE".into()), ..FieldMapping::default() };
        assert!(!assignment.is_empty());
        let profile = FieldMapping { profiles: vec![(Profile::Tally, ProfileMap::default())], assignment: None };
        assert!(!profile.is_empty());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_receipt_s_profile_chooses_its_mapping() {
        let maps = vec![
            (Profile::Tally, TypedMap::default()),
            (Profile::Typeform, TypedMap { forms: vec![("f".into(), TypedMap::default())], ..TypedMap::default() }),
        ];
        assert!(of_key(&maps, &Profile::Typeform.key("f:t")).is_some_and(|m| m.forms.len() == 1));
        assert!(of_key(&maps, &Profile::Tally.key("r")).is_some_and(|m| m.forms.is_empty()));
        assert!(of_key(&maps, &Profile::StaticForms.key("s")).is_none());
        assert!(of_key(&maps, "k").is_none());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_form_s_own_mapping_takes_the_fields_it_names_from_the_profile_s() {
        let Json::Object(extra) = parse(br#"{"Size":"11-50","Team":"8"}"#).unwrap() else { unreachable!() };
        let text = || FieldType::of(Kind::Text);
        let form = TypedMap {
            fields: vec![link("Team", "Size__c", text())],
            constants: vec![("LeadSource".into(), Json::string("Partner form"))],
            forms: vec![],
        };
        let map = TypedMap {
            fields: vec![link("Size", "Size__c", text()), link("Size", "Other__c", text())],
            constants: vec![("LeadSource".into(), Json::string("Web")), ("Rating".into(), Json::string("Warm"))],
            forms: vec![("f2".into(), form)],
        };
        let text_of = |lead: &Lead| -> Vec<(String, String)> {
            apply(lead, &map).values.iter().map(|(f, v)| (f.clone(), v.to_text())).collect()
        };
        let mut lead = Lead { extra, form: "f1".into(), ..Lead::default() };
        let pair = |f: &str, v: &str| (String::from(f), String::from(v));
        let profile_s = vec![
            pair("LeadSource", "\"Web\""),
            pair("Rating", "\"Warm\""),
            pair("Size__c", "\"11-50\""),
            pair("Other__c", "\"11-50\""),
        ];
        assert_eq!(text_of(&lead), profile_s);
        lead.form = "f2".into();
        assert_eq!(
            text_of(&lead),
            vec![
                pair("Rating", "\"Warm\""),
                pair("LeadSource", "\"Partner form\""),
                pair("Other__c", "\"11-50\""),
                pair("Size__c", "\"8\""),
            ]
        );
        lead.form = String::new();
        assert_eq!(text_of(&lead), profile_s, "no form: the profile's");
    }
}
