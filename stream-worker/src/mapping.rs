//! The lead mapping, read once at start: `LEAD_MAPPING` (a TOML document) or
//! `LEAD_MAPPING_FILE` (the path of one), in Lambda inside the sink secret. Per sender profile,
//! which answers fill which CRM fields, and the constants each record gets (`docs/mapping.md`):
//!
//! ```toml
//! [tally.fields]
//! "Company size" = "NumberOfEmployees"
//! "utm_source" = "LeadSource"
//!
//! [tally.constants]
//! LeadSource = "Web"
//! ```
//!
//! `[salesforce] assignment = "FALSE"` (or `TRUE`, or an assignment rule's ID) sets the org's
//! assignment rules on each new Lead (`Sforce-Auto-Assign`). Errors name the line and the
//! field, never a value. Whether each field exists and what it
//! takes is the sink's start-up check, against the CRM.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use shared::field_map::{Constant, FieldMapping, Link, ProfileMap};
use shared::json::{Json, Number};
use shared::mapping::LeadMapping;
use shared::profile::Profile;
use toml::Spanned;

/// The setting that holds the mapping's text.
pub const LEAD_MAPPING: &str = "LEAD_MAPPING";
/// The setting that holds the mapping's path.
pub const LEAD_MAPPING_FILE: &str = "LEAD_MAPPING_FILE";

/// Why the mapping was refused: the setting, the line when there is one, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingError(pub String);

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MappingError {}

/// A top-level table: a profile's (`fields`, `constants`, `forms`), or `[salesforce]`'s
/// (`assignment`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileTable {
    #[serde(default)]
    fields: Fields,
    #[serde(default)]
    constants: Constants,
    #[serde(default)]
    forms: BTreeMap<Spanned<String>, FormTable>,
    assignment: Option<Spanned<String>>,
}

/// The profiles whose payloads name the form (`Lead::form`): Tally's `formId`, Typeform's
/// `form_id`, and a Standard Webhooks payload's where `STANDARD_WEBHOOKS_LEAD_FIELDS` has a
/// `form=` pointer ([`check_forms`]).
const FORM_PROFILES: [Profile; 3] = [Profile::Tally, Profile::Typeform, Profile::StandardWebhooks];

/// The table of the Salesforce sink's own settings.
const SALESFORCE: &str = "salesforce";

/// One form's mapping: as a profile's, without forms of its own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FormTable {
    #[serde(default)]
    fields: Fields,
    #[serde(default)]
    constants: Constants,
}

/// Reads the mapping through `lookup` (a setting's name to its value): empty when neither
/// setting is given.
pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<FieldMapping, MappingError> {
    let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    match (get(LEAD_MAPPING), get(LEAD_MAPPING_FILE)) {
        (None, None) => Ok(FieldMapping::default()),
        (Some(_), Some(_)) => Err(MappingError(format!("give {LEAD_MAPPING} or {LEAD_MAPPING_FILE}, not both"))),
        (Some(text), None) => parse(&text, LEAD_MAPPING),
        (None, Some(path)) => {
            let path = path.trim();
            let text = std::fs::read_to_string(path)
                .map_err(|e| MappingError(format!("{LEAD_MAPPING_FILE}: {path:?} could not be read ({})", e.kind())))?;
            parse(&text, path)
        }
    }
}

/// Reads a mapping's text; `origin` (the setting or the file) begins each error.
pub fn parse(text: &str, origin: &str) -> Result<FieldMapping, MappingError> {
    let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let error = |at: usize, what: String| MappingError(format!("{origin} line {}: {what}", line(at)));
    let tables: BTreeMap<Spanned<String>, Spanned<ProfileTable>> = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        // toml's message names the key and what it expected (it may quote the mapping, which
        // holds no form's answers).
        error(at, e.message().trim().to_owned())
    })?;
    let mut mapping = FieldMapping::default();
    for (name, table) in tables {
        if name.get_ref() == SALESFORCE {
            let at = name.span().start;
            let table = table.into_inner();
            if !(table.fields.is_empty() && table.constants.is_empty() && table.forms.is_empty()) {
                return Err(error(
                    at,
                    format!("[{SALESFORCE}] takes assignment only (a profile's tables are [<profile>.fields])"),
                ));
            }
            if let Some(assignment) = table.assignment {
                let value = assignment.get_ref().trim();
                mapping.assignment = Some(auto_assign(value).ok_or_else(|| {
                    error(assignment.span().start, format!("[{SALESFORCE}] assignment: {value:?} is not TRUE, FALSE or an assignment rule's ID (01Q...)"))
                })?);
            }
            continue;
        }
        let profile = Profile::ALL.iter().copied().find(|p| p.name() == name.get_ref());
        let profile = profile.ok_or_else(|| {
            let known: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
            error(name.span().start, format!("no sender profile {:?} (one of {})", name.get_ref(), known.join(", ")))
        })?;
        let table = table.into_inner();
        if let Some(assignment) = &table.assignment {
            return Err(error(assignment.span().start, format!("assignment belongs in [{SALESFORCE}]")));
        }
        let mut map = read_map(profile.name(), table.fields, table.constants, &error, &line)?;
        for (form, table) in table.forms {
            let at = form.span().start;
            if !FORM_PROFILES.contains(&profile) {
                return Err(error(
                    at,
                    format!(
                        "[{}.forms]: only tally, typeform and standard-webhooks deliveries name their form",
                        profile.name()
                    ),
                ));
            }
            if form.get_ref().trim().is_empty() {
                return Err(error(at, format!("[{}.forms]: a form's ID is empty", profile.name())));
            }
            let name = format!("{}.forms.{}", profile.name(), form.get_ref());
            let form_map = read_map(&name, table.fields, table.constants, &error, &line)?;
            map.forms.push((form.into_inner(), form_map));
        }
        mapping.profiles.push((profile, map));
    }
    Ok(mapping)
}

/// Refuses forms of `standard-webhooks` when its payloads' form is not pointed at
/// (`form=` in `STANDARD_WEBHOOKS_LEAD_FIELDS`): every lead would have no form, and the
/// forms' mappings would never apply.
pub fn check_forms(mapping: &FieldMapping, leads: &LeadMapping) -> Result<(), MappingError> {
    let forms = mapping.profiles.iter().filter(|(p, _)| *p == Profile::StandardWebhooks).flat_map(|(_, m)| &m.forms);
    match forms.map(|(id, _)| id).next() {
        Some(id) if leads.standard_webhooks.form.is_none() => Err(MappingError(format!(
            "{LEAD_MAPPING}: [standard-webhooks.forms.{id}] needs the form's pointer: add form=<JSON pointer> (such as form=/data/form_id) to STANDARD_WEBHOOKS_LEAD_FIELDS"
        ))),
        _ => Ok(()),
    }
}

type Fields = BTreeMap<Spanned<String>, Spanned<String>>;
type Constants = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// A profile's (or form's, `table` its name) fields and constants, checked: each answer's key
/// not empty, each field an API name filled by one answer at most, each constant a value.
fn read_map(
    table: &str,
    fields: Fields,
    constants: Constants,
    error: &dyn Fn(usize, String) -> MappingError,
    line: &dyn Fn(usize) -> usize,
) -> Result<ProfileMap, MappingError> {
    let mut map = ProfileMap::default();
    for (answer, field) in fields {
        let at = answer.span().start;
        if answer.get_ref().trim().is_empty() {
            return Err(error(at, format!("[{table}.fields]: an answer's key is empty")));
        }
        check_field_name(field.get_ref()).map_err(|why| error(at, why))?;
        if let Some(other) = map.fields.iter().find(|l| l.field.eq_ignore_ascii_case(field.get_ref())) {
            return Err(error(
                at,
                format!("the field {:?} is filled by two answers (and on line {})", field.get_ref(), other.line),
            ));
        }
        map.fields.push(Link { answer: answer.into_inner(), field: field.into_inner(), line: line(at) });
    }
    for (field, value) in constants {
        let at = field.span().start;
        check_field_name(field.get_ref()).map_err(|why| error(at, why))?;
        let value = constant(value.get_ref()).ok_or_else(|| {
            error(at, format!("the constant for {:?} is not text, a number or a boolean", field.get_ref()))
        })?;
        map.constants.push(Constant { field: field.into_inner(), value, line: line(at) });
    }
    Ok(map)
}

/// `Sforce-Auto-Assign`'s value (Salesforce REST API, "Assignment Rule Header"): `TRUE` or
/// `FALSE` (any case), or an assignment rule's 15- or 18-character ID (key prefix `01Q`).
fn auto_assign(value: &str) -> Option<String> {
    if value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("false") {
        return Some(value.to_ascii_uppercase());
    }
    let id =
        matches!(value.len(), 15 | 18) && value.starts_with("01Q") && value.chars().all(|c| c.is_ascii_alphanumeric());
    id.then(|| value.to_owned())
}

/// A CRM field's API name: letters, digits and `_`, starting with a letter; for HubSpot,
/// `contact.` or `ticket.` before it names the object.
fn check_field_name(name: &str) -> Result<(), String> {
    let bare = name.strip_prefix("contact.").or_else(|| name.strip_prefix("ticket.")).unwrap_or(name);
    let ok = bare.starts_with(|c: char| c.is_ascii_alphabetic())
        && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?} is not a field's API name (letters, digits and _, such as Company_Size__c)"))
    }
}

/// A constant's value as JSON: text, a number, a boolean, or a date or time as its text.
fn constant(value: &toml::Value) -> Option<Json> {
    Some(match value {
        toml::Value::String(text) => Json::string(text),
        toml::Value::Integer(n) => Json::Number(Number::from_i64(*n)),
        // `inf` and `nan` are no JSON number.
        toml::Value::Float(f) => Json::Number(Number::parse(&f.to_string())?),
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(at) => Json::string(&at.to_string()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_name_answers_to_fields_and_constants() {
        let text = "# Tally\n[tally.fields]\n\"Company size\" = \"Size__c\"\n\"hidden.utm_source\" = \"LeadSource\"\n\n[tally.constants]\nLeadSource = \"Web\"\nRating__c = 3\nOpt_In__c = true\n\n[typeform]\nfields = { consent = \"Consent__c\" }\n";
        let mapping = parse(text, LEAD_MAPPING).unwrap();
        let (profile, tally) = &mapping.profiles[0];
        assert_eq!(*profile, Profile::Tally);
        let fields: Vec<(&str, &str, usize)> =
            tally.fields.iter().map(|l| (l.answer.as_str(), l.field.as_str(), l.line)).collect();
        assert_eq!(fields, [("Company size", "Size__c", 3), ("hidden.utm_source", "LeadSource", 4)]);
        let constants: Vec<(&str, String, usize)> =
            tally.constants.iter().map(|c| (c.field.as_str(), c.value.to_text(), c.line)).collect();
        assert_eq!(
            constants,
            [("LeadSource", "\"Web\"".into(), 7), ("Opt_In__c", "true".into(), 9), ("Rating__c", "3".into(), 8)]
        );
        assert_eq!(mapping.profiles[1].0, Profile::Typeform);
        // Numbers, decimals and date-times as constants; inf is none.
        let text = "[tally.constants]\nBudget__c = 12.5\nAt__c = 2026-12-07T10:30:00Z\n";
        let constants = &parse(text, "m").unwrap().profiles[0].1.constants;
        assert_eq!(constants[0].value.to_text(), "\"2026-12-07T10:30:00Z\"");
        assert_eq!(constants[1].value.to_text(), "12.5");
        let error = parse("[tally.constants]\nBudget__c = inf\n", "m").unwrap_err();
        assert!(error.to_string().starts_with("m line 2: the constant for \"Budget__c\""), "{error}");
        assert!(parse("", LEAD_MAPPING).unwrap().is_empty());
        // A form's own mapping, on top of its profile's.
        let text = "[tally.fields]\nsize = \"Size__c\"\n[tally.forms.w4Nd.fields]\nteam = \"Size__c\"\n[tally.forms.w4Nd.constants]\nLeadSource = \"Partners\"\n";
        let mapping = parse(text, LEAD_MAPPING).unwrap();
        let (id, form) = &mapping.profiles[0].1.forms[0];
        assert_eq!((id.as_str(), form.fields[0].answer.as_str(), form.fields[0].line), ("w4Nd", "team", 4));
        assert_eq!(form.constants[0].value, Json::string("Partners"));
    }

    #[test]
    fn salesforce_s_assignment_is_true_false_or_a_rule_s_id() {
        let assignment = |value: &str| parse(&format!("[salesforce]\nassignment = \"{value}\"\n"), "m");
        assert_eq!(assignment("false").unwrap().assignment.as_deref(), Some("FALSE"));
        assert_eq!(assignment("TRUE").unwrap().assignment.as_deref(), Some("TRUE"));
        assert_eq!(assignment("01QD0000000K3Yz").unwrap().assignment.as_deref(), Some("01QD0000000K3Yz"));
        assert_eq!(assignment("01QD0000000K3YzAAK").unwrap().assignment.as_deref(), Some("01QD0000000K3YzAAK"));
        assert!(!assignment("false").unwrap().is_empty(), "an assignment alone is a mapping");
        for wrong in ["yes", "01QD0000000K3Y", "00QD0000000K3Yz", "01QD0000000K3Y!"] {
            let error = assignment(wrong).unwrap_err().0;
            assert!(error.starts_with("m line 2: [salesforce] assignment: "), "{wrong}: {error}");
        }
        let error = parse("[salesforce.fields]\na = \"B__c\"\n", "m").unwrap_err().0;
        assert!(error.starts_with("m line 1: [salesforce] takes assignment only"), "{error}");
        let error = parse("[tally]\n\nassignment = \"FALSE\"\n", "m").unwrap_err().0;
        assert!(error.starts_with("m line 3: assignment belongs in [salesforce]"), "{error}");
    }

    #[test]
    fn a_wrong_mapping_names_its_line_and_field_never_a_value() {
        let refused = |text: &str| parse(text, LEAD_MAPPING).unwrap_err().0;
        let error = refused("[tally.fields]\nsize = \"Size__c\"\n\n[talley.fields]\nx = \"Y__c\"\n");
        assert!(error.starts_with("LEAD_MAPPING line 4: no sender profile \"talley\""), "{error}");
        let error = refused("[tally.fields]\nsize = \"Size c\"\n");
        assert!(error.starts_with("LEAD_MAPPING line 2: \"Size c\" is not a field's API name"), "{error}");
        let hubspot = parse("[tally.fields]\na = \"ticket.source\"\nb = \"contact.size\"\n", "m").unwrap();
        assert_eq!(hubspot.profiles[0].1.fields[0].field, "ticket.source");
        for wrong in ["deal.amount", "ticket.", "ticket.a.b", ".size", "contact.1x"] {
            let error = refused(&format!("[tally.fields]\nsize = \"{wrong}\"\n"));
            assert!(error.contains("is not a field's API name"), "{wrong}: {error}");
        }
        let error = refused("[tally.fields]\na = \"Size__c\"\nb = \"size__C\"\n");
        assert!(
            error.starts_with("LEAD_MAPPING line 3: the field \"size__C\" is filled by two answers (and on line 2)"),
            "{error}"
        );
        let error = refused("[tally]\nfeilds = { a = \"B\" }\n");
        assert!(error.starts_with("LEAD_MAPPING line 2: unknown field `feilds`"), "{error}");
        let error = refused("[tally.constants]\n\nLeadSource = [\"secret-value\"]\n");
        assert!(error.starts_with("LEAD_MAPPING line 3: the constant for \"LeadSource\""), "{error}");
        assert!(!error.contains("secret-value"));
        let error = refused("[tally.fields]\nsize = \"Size__c\n");
        assert!(error.starts_with("LEAD_MAPPING line 2: "), "{error}");
        let error = refused("[tally.fields]\n\"\" = \"Size__c\"\n");
        assert!(error.starts_with("LEAD_MAPPING line 2: [tally.fields]: an answer's key is empty"), "{error}");
        let error = refused("[tally.forms.f1.fields]\na = \"B__c\"\n\"\" = \"C__c\"\n");
        assert!(error.starts_with("LEAD_MAPPING line 3: [tally.forms.f1.fields]: an answer's key is empty"), "{error}");
        let error = refused("[webflow.forms.f1.fields]\na = \"B__c\"\n");
        assert!(
            error.starts_with("LEAD_MAPPING line 1: [webflow.forms]: only tally, typeform and standard-webhooks"),
            "{error}"
        );
        let error = refused("[tally.forms.f1]\nforms = {}\n");
        assert!(error.starts_with("LEAD_MAPPING line 2: unknown field `forms`"), "{error}");
    }

    #[test]
    fn standard_webhooks_forms_need_the_form_s_pointer() {
        let text = "[standard-webhooks.fields]\nsize = \"size\"\n[standard-webhooks.forms.contact-us.constants]\nsource = \"Contact\"\n";
        let mapping = parse(text, LEAD_MAPPING).unwrap();
        assert_eq!(mapping.profiles[0].1.forms[0].0, "contact-us");
        let error = check_forms(&mapping, &LeadMapping::default()).unwrap_err().0;
        assert!(
            error.starts_with("LEAD_MAPPING: [standard-webhooks.forms.contact-us] needs the form's pointer"),
            "{error}"
        );
        let pointed = shared::mapping::LeadPointers::parse("form=/data/form_id").unwrap();
        assert_eq!(check_forms(&mapping, &LeadMapping { standard_webhooks: pointed }), Ok(()));
        // Without forms, or forms of other profiles only, nothing to point at.
        let plain =
            parse("[standard-webhooks.fields]\nsize = \"size\"\n[tally.forms.f1.fields]\na = \"b\"\n", "m").unwrap();
        assert_eq!(check_forms(&plain, &LeadMapping::default()), Ok(()));
    }

    #[test]
    fn the_mapping_is_given_as_text_or_a_file_never_both() {
        let text = "[tally.fields]\nsize = \"Size__c\"\n";
        let path = std::env::temp_dir().join(format!("lead-mapping-{}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let path = path.to_string_lossy().into_owned();
        let settings = |pairs: &[(&str, &str)]| {
            let pairs: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            load(move |name| pairs.get(name).cloned())
        };
        let from_text = settings(&[(LEAD_MAPPING, text)]).unwrap();
        assert_eq!(settings(&[(LEAD_MAPPING_FILE, &path)]).unwrap(), from_text);
        assert!(settings(&[]).unwrap().is_empty());
        assert!(settings(&[(LEAD_MAPPING, text), (LEAD_MAPPING_FILE, &path)]).unwrap_err().0.contains("not both"));
        let missing = settings(&[(LEAD_MAPPING_FILE, "/nonexistent/mapping.toml")]).unwrap_err().0;
        assert!(missing.starts_with("LEAD_MAPPING_FILE: \"/nonexistent/mapping.toml\" could not be read"), "{missing}");
        let error = settings(&[(LEAD_MAPPING_FILE, &path.replace(".toml", ".missing"))]);
        assert!(error.is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
