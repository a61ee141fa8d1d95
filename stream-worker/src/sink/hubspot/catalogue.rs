//! The contact and ticket properties as HubSpot's properties API shows them to the private app
//! (`GET /crm/v3/properties/{contacts,tickets}`), a lead mapping checked against them, and one
//! lead's mapped values as HubSpot takes them.
//!
//! A mapped target is `contact.<property>` or `ticket.<property>` (a bare name is the
//! contact's). Each must exist, be writable (not read-only, not calculated) and have a type a
//! form's answer converts to ([`shared::typed`]); the sink's own properties (the contact's
//! `email`, the ticket's submission ID, `content`, pipeline and stage) are refused as targets.
//! Errors name the line and the property, never a value.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Map, Value};
use shared::field_map::{FieldMapping, Mapped};
use shared::json::Json;
use shared::typed::{Choice, FieldType, Kind, Unfit};

use crate::sink::typed_map::{self, Typed};

/// The longest value of a HubSpot string property, in characters.
pub const MAX_PROPERTY_CHARS: usize = 65_536;

/// The mapping typed by the portal's properties: the maps, and each mapped property's kind
/// (by its full target, `contact.x` or `ticket.x`), which decides how a value is written, and
/// its HubSpot type as `mapping check` prints it (`type/fieldType`).
#[derive(Debug, Default)]
pub struct Catalogued {
    pub maps: Typed,
    pub kinds: BTreeMap<String, Kind>,
    pub types: BTreeMap<String, String>,
}

/// The properties of `object` (`contact` or `ticket`) among the portal's.
fn of_object<'a>(object: &str, contacts: &'a [Value], tickets: &'a [Value]) -> &'a [Value] {
    if object == "ticket" {
        tickets
    } else {
        contacts
    }
}

/// The object a target names, and the property: `ticket.x` is the ticket's, `contact.x` and a
/// bare `x` the contact's.
pub fn target(field: &str) -> (&'static str, &str) {
    match field.split_once('.') {
        Some(("ticket", name)) => ("ticket", name),
        Some(("contact", name)) => ("contact", name),
        _ => ("contact", field),
    }
}

/// The properties the sink writes itself, by object: no answer may fill them.
fn own(object: &str, name: &str, id_property: &str) -> bool {
    match object {
        "contact" => name == "email",
        _ => name == id_property || ["content", "hs_pipeline", "hs_pipeline_stage"].contains(&name),
    }
}

/// A property's type as a form's answer converts to it, or why it cannot be written from one.
///
/// `string` (text, text area, phone number) within [`MAX_PROPERTY_CHARS`]; `number`; `bool`;
/// `date`; `datetime`; `enumeration` as one of its options (`select`, `radio`), several
/// (`checkbox`, `;`-joined), or a yes or no (`booleancheckbox`), restricted (HubSpot refuses
/// another value, `INVALID_OPTION`), matched by label or internal value; but an enumeration
/// whose options live elsewhere (`externalOptions`: owners, pipeline stages) lists none, and
/// takes its text as it is, for HubSpot to check.
pub fn property_type(property: &Value) -> Result<FieldType, String> {
    let ty = property["type"].as_str().unwrap_or_default();
    let field_type = property["fieldType"].as_str().unwrap_or_default();
    if property["calculated"] == Value::Bool(true) || field_type.starts_with("calculation") {
        return Err(String::from("is calculated by HubSpot"));
    }
    let kind = match (ty, field_type) {
        (_, "file") => return Err(String::from("holds files, which a form's answer cannot give")),
        ("string" | "phone_number", _) => Kind::Text,
        ("number", _) => Kind::Number,
        ("bool", _) | ("enumeration", "booleancheckbox") => Kind::Boolean,
        ("date", _) => Kind::Date,
        ("datetime", _) => Kind::DateTime,
        ("enumeration", "checkbox") => Kind::Choices,
        ("enumeration", _) => Kind::Choice,
        (other, _) => return Err(format!("its type ({other}) cannot be written from a form's answer")),
    };
    let options = property["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let value = o["value"].as_str()?;
            Some(Choice { label: o["label"].as_str().unwrap_or(value).to_owned(), value: value.to_owned() })
        })
        .collect();
    let mut typed = FieldType::of(kind);
    typed.max_units = (kind == Kind::Text).then_some(MAX_PROPERTY_CHARS);
    let external = property["externalOptions"] == Value::Bool(true);
    typed.restricted = matches!(kind, Kind::Choice | Kind::Choices) && !external;
    typed.options = if external { Vec::new() } else { options };
    Ok(typed)
}

/// `mapping` checked against the portal's `contacts` and `tickets` properties (the properties
/// API's `results`), typed; `id_property` is the ticket property holding submission IDs.
pub fn resolve(
    mapping: &FieldMapping,
    contacts: &[Value],
    tickets: &[Value],
    id_property: &str,
) -> Result<Catalogued, String> {
    let found = RefCell::new((BTreeMap::new(), BTreeMap::new()));
    let described = |field: &str| -> Result<(String, FieldType), String> {
        let (object, name) = target(field);
        let properties = of_object(object, contacts, tickets);
        let Some(property) =
            properties.iter().find(|p| p["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
        else {
            return Err(format!("does not exist on HubSpot {object}s, or the private app cannot read it"));
        };
        let name = property["name"].as_str().unwrap_or(name);
        if own(object, name, id_property) {
            return Err(String::from("is written by the sink itself"));
        }
        if property["modificationMetadata"]["readOnlyValue"] == Value::Bool(true) {
            return Err(String::from("is read-only in HubSpot"));
        }
        let ty = property_type(property)?;
        let full = format!("{object}.{name}");
        let shown =
            format!("{}/{}", property["type"].as_str().unwrap_or("?"), property["fieldType"].as_str().unwrap_or("?"));
        let mut found = found.borrow_mut();
        found.0.insert(full.clone(), ty.kind);
        found.1.insert(full.clone(), shown);
        Ok((full, ty))
    };
    let maps = typed_map::resolve(mapping, "the HubSpot property", &described)?;
    let (kinds, types) = found.into_inner();
    Ok(Catalogued { maps, kinds, types })
}

/// One lead's mapped values, as HubSpot takes them: the contact's and the ticket's
/// properties, the answers the ticket's properties show whole (they need not be repeated in
/// its content), and the mapped properties left out, each with why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeadProperties {
    pub contact: Map<String, Value>,
    pub ticket: Map<String, Value>,
    pub ticket_shown: Vec<String>,
    pub left_out: Vec<(String, Unfit)>,
}

impl LeadProperties {
    /// `mapped` (targets `contact.x` / `ticket.x`) with each value written for its kind.
    pub fn of(mapped: &Mapped, kinds: &BTreeMap<String, Kind>) -> LeadProperties {
        let mut out = LeadProperties { left_out: mapped.left_out.clone(), ..LeadProperties::default() };
        for (field, value) in &mapped.values {
            let (object, name) = target(field);
            let value = hubspot_value(value, kinds.get(field).copied().unwrap_or(Kind::Text));
            let properties = if object == "ticket" { &mut out.ticket } else { &mut out.contact };
            properties.insert(name.to_owned(), value);
        }
        let on_ticket = |field: &String| target(field).0 == "ticket";
        out.ticket_shown = mapped.shown.iter().filter(|(_, field)| on_ticket(field)).map(|(a, _)| a.clone()).collect();
        out
    }

    /// Leaves out every mapped property of `object` (`contact` or `ticket`), each as refused
    /// by HubSpot: their answers are in the ticket's content.
    pub fn leave_out_all(&mut self, object: &str) {
        let properties = if object == "ticket" { &mut self.ticket } else { &mut self.contact };
        for name in properties.keys() {
            self.left_out.push((format!("{object}.{name}"), Unfit::Refused));
        }
        properties.clear();
        if object == "ticket" {
            self.ticket_shown.clear();
        }
    }
}

/// A converted value as HubSpot's documentation asks for it: a boolean as `true` or `false`, a
/// date as its midnight UTC in milliseconds ("must be set to midnight UTC"), a date-time in
/// milliseconds, anything else as its text (a number's as written).
pub fn hubspot_value(value: &Json, kind: Kind) -> Value {
    let text = match value {
        Json::String(text) => text.clone(),
        other => other.to_text(),
    };
    let ms = match kind {
        Kind::Date => midnight_ms(&text),
        Kind::DateTime => instant_ms(&text),
        _ => None,
    };
    Value::String(ms.map_or(text, |ms| ms.to_string()))
}

/// A date-time as [`shared::typed::date_time`] writes it (`YYYY-MM-DDTHH:MM:SS[.SSS]` then `Z`
/// or `±HH:MM`), in milliseconds since 1970 UTC.
pub fn instant_ms(text: &str) -> Option<i64> {
    let (day, time) = text.split_once('T')?;
    let zone_at = time.find(['Z', '+', '-'])?;
    let (clock, zone) = time.split_at(zone_at);
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hours, minutes, seconds) = (parts.next()??, parts.next()??, parts.next()??);
    let millis = format!("{fraction:0<3}").get(..3)?.parse::<i64>().ok()?;
    let offset = match zone {
        "Z" => 0,
        signed => {
            let sign = if signed.starts_with('-') { -1 } else { 1 };
            let (h, m) = signed.get(1..)?.split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?) * 60_000
        }
    };
    Some(midnight_ms(day)? + ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis - offset)
}

/// A `YYYY-MM-DD` date's midnight UTC, in milliseconds since 1970 (negative before).
pub fn midnight_ms(date: &str) -> Option<i64> {
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (parts.next()??, parts.next()??, parts.next()??);
    // Days from 1970-01-01 in the proleptic Gregorian calendar (years from March).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some((era * 146_097 + day_of_era - 719_468) * 86_400_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::field_map::{Constant, Link, ProfileMap};
    use shared::profile::Profile;
    use shared::typed::convert;

    fn contacts() -> Vec<Value> {
        vec![
            json!({"name": "email", "type": "string", "fieldType": "text"}),
            json!({"name": "company_size", "type": "enumeration", "fieldType": "select",
                   "options": [{"label": "11 to 50", "value": "11_50"}, {"label": "51+", "value": "51_plus"}]}),
            json!({"name": "interests", "type": "enumeration", "fieldType": "checkbox",
                   "options": [{"label": "Engines", "value": "engines"}]}),
            json!({"name": "consent", "type": "enumeration", "fieldType": "booleancheckbox",
                   "options": [{"label": "Yes", "value": "true"}, {"label": "No", "value": "false"}]}),
            json!({"name": "start_date", "type": "date", "fieldType": "date"}),
            json!({"name": "seats", "type": "number", "fieldType": "number"}),
            json!({"name": "hs_lead_status", "type": "enumeration", "fieldType": "radio",
                   "options": [{"label": "New", "value": "NEW"}]}),
            json!({"name": "score", "type": "number", "fieldType": "calculation_equation"}),
            json!({"name": "createdate", "type": "datetime", "fieldType": "date",
                   "modificationMetadata": {"readOnlyValue": true}}),
            json!({"name": "resume", "type": "string", "fieldType": "file"}),
            json!({"name": "geo", "type": "object_coordinates", "fieldType": "text"}),
        ]
    }

    fn tickets() -> Vec<Value> {
        vec![
            json!({"name": "hs_ticket_priority", "type": "enumeration", "fieldType": "select",
                   "options": [{"label": "High", "value": "HIGH"}]}),
            json!({"name": "content", "type": "string", "fieldType": "textarea"}),
            json!({"name": "sub_id", "type": "string", "fieldType": "text"}),
        ]
    }

    fn mapping(fields: &[(&str, &str)], constants: &[(&str, Json)]) -> FieldMapping {
        let fields =
            fields.iter().enumerate().map(|(i, (a, f))| Link { answer: (*a).into(), field: (*f).into(), line: i + 2 });
        let constants = constants.iter().map(|(f, v)| Constant { field: (*f).into(), value: v.clone(), line: 20 });
        let map = ProfileMap { fields: fields.collect(), constants: constants.collect(), forms: vec![] };
        FieldMapping { profiles: vec![(Profile::Tally, map)], assignment: None }
    }

    #[test]
    fn each_hubspot_type_becomes_what_a_form_s_answer_converts_to() {
        let contacts = contacts();
        let ty = |name: &str| property_type(contacts.iter().find(|p| p["name"] == name).unwrap());
        let size = ty("company_size").unwrap();
        assert_eq!((size.kind, size.restricted, size.options.len()), (Kind::Choice, true, 2));
        assert_eq!(convert(&Json::string("11 TO 50"), &size), Ok(Some(Json::string("11_50"))), "label to value");
        assert_eq!(ty("interests").unwrap().kind, Kind::Choices);
        assert!(ty("interests").unwrap().restricted);
        assert_eq!(ty("consent").unwrap().kind, Kind::Boolean);
        assert_eq!(ty("start_date").unwrap().kind, Kind::Date);
        assert_eq!(ty("seats").unwrap().kind, Kind::Number);
        assert_eq!(ty("email").unwrap().max_units, Some(MAX_PROPERTY_CHARS));
        assert_eq!(ty("hs_lead_status").unwrap().kind, Kind::Choice);
        assert_eq!(ty("score").unwrap_err(), "is calculated by HubSpot");
        assert!(ty("resume").unwrap_err().contains("files"));
        assert!(ty("geo").unwrap_err().contains("(object_coordinates)"));
        let bool_property = json!({"name": "b", "type": "bool", "fieldType": "booleancheckbox"});
        assert_eq!(property_type(&bool_property).unwrap().kind, Kind::Boolean);
        let calculated = json!({"name": "c", "type": "string", "fieldType": "text", "calculated": true});
        assert!(property_type(&calculated).is_err());
        // An owner: options elsewhere, none listed; any text goes, for HubSpot to check.
        let owner = json!({"name": "hubspot_owner_id", "type": "enumeration", "fieldType": "select",
            "externalOptions": true, "options": []});
        let owner = property_type(&owner).unwrap();
        assert!(!owner.restricted && owner.options.is_empty());
        assert_eq!(convert(&Json::string("12345"), &owner), Ok(Some(Json::string("12345"))));
    }

    #[test]
    fn a_mapping_is_typed_by_the_portal_s_properties_and_each_wrong_one_is_named_with_its_line() {
        let (contacts, tickets) = (contacts(), tickets());
        let typed = resolve(
            &mapping(
                &[("Size", "company_size"), ("Urgency", "ticket.HS_TICKET_PRIORITY")],
                &[("contact.hs_lead_status", Json::string("new"))],
            ),
            &contacts,
            &tickets,
            "sub_id",
        )
        .unwrap();
        let (_, map) = &typed.maps[0];
        assert_eq!(map.fields[0].field, "contact.company_size");
        assert_eq!(map.fields[1].field, "ticket.hs_ticket_priority", "HubSpot's spelling");
        assert_eq!(map.constants, [(String::from("contact.hs_lead_status"), Json::string("NEW"))]);
        assert_eq!(typed.kinds["ticket.hs_ticket_priority"], Kind::Choice);
        assert_eq!(typed.kinds.len(), 3);
        let refused =
            |fields: &[(&str, &str)]| resolve(&mapping(fields, &[]), &contacts, &tickets, "sub_id").unwrap_err();
        assert_eq!(
            refused(&[("a", "seats"), ("b", "region")]),
            "LEAD_MAPPING line 3 ([tally]): the HubSpot property \"region\" does not exist on HubSpot contacts, or the private app cannot read it"
        );
        assert!(refused(&[("a", "ticket.company_size")]).contains("does not exist on HubSpot tickets"));
        for own in ["email", "contact.email", "ticket.content", "ticket.sub_id"] {
            assert!(refused(&[("a", own)]).contains("is written by the sink itself"), "{own}");
        }
        assert!(refused(&[("a", "createdate")]).contains("is read-only"));
        assert!(refused(&[("a", "score")]).contains("is calculated"));
        let constant = resolve(&mapping(&[], &[("hs_lead_status", Json::string("Gone"))]), &contacts, &tickets, "p");
        assert!(constant.unwrap_err().contains("cannot take the constant (no_such_option)"));
        let lines = typed_map::lines(&typed.maps, &|f: &str| typed.types[f].clone());
        assert_eq!(lines[0], "[tally] \"Size\" -> contact.company_size (enumeration/select, 11_50 | 51_plus (only))");
        assert_eq!(lines[2], "[tally] constant -> contact.hs_lead_status (enumeration/radio) = \"NEW\"");
    }

    #[test]
    fn values_are_written_as_hubspot_documents_them() {
        assert_eq!(midnight_ms("1970-01-01"), Some(0));
        assert_eq!(midnight_ms("2027-01-15"), Some(1_799_971_200_000));
        assert_eq!(midnight_ms("2000-02-29"), Some(951_782_400_000));
        assert_eq!(midnight_ms("1700-01-01"), Some(-8_520_336_000_000));
        assert_eq!(midnight_ms("2027-01"), None);
        assert_eq!(hubspot_value(&Json::string("2027-01-15"), Kind::Date), json!("1799971200000"));
        assert_eq!(hubspot_value(&Json::string("2027-01-15"), Kind::Text), json!("2027-01-15"));
        assert_eq!(hubspot_value(&Json::Bool(true), Kind::Boolean), json!("true"));
        assert_eq!(hubspot_value(&Json::Bool(false), Kind::Boolean), json!("false"));
        let number = shared::json::parse(b"12.50").unwrap();
        assert_eq!(hubspot_value(&number, Kind::Number), json!("12.50"));
        assert_eq!(hubspot_value(&Json::string("a;b"), Kind::Choices), json!("a;b"));
        let date_time = "2027-01-15T09:30:00+01:00";
        let at = 1_799_971_200_000 + (8 * 60 + 30) * 60_000;
        assert_eq!(hubspot_value(&Json::string(date_time), Kind::DateTime), json!(at.to_string()));
        assert_eq!(instant_ms("2027-01-15T08:30:00Z"), Some(at));
        assert_eq!(instant_ms("2027-01-15T08:30:00.250Z"), Some(at + 250));
        assert_eq!(instant_ms("2027-01-15T08:30:00.5Z"), Some(at + 500));
        assert_eq!(instant_ms("2027-01-14T23:00:00-09:30"), Some(at));
        assert_eq!(instant_ms("1969-12-31T23:59:59Z"), Some(-1000));
        assert_eq!(instant_ms("2027-01-15"), None);
    }

    #[test]
    fn a_lead_s_mapped_values_are_split_between_its_contact_and_its_ticket() {
        let mapped = Mapped {
            values: vec![
                ("contact.start_date".into(), Json::string("2027-01-15")),
                ("ticket.hs_ticket_priority".into(), Json::string("HIGH")),
            ],
            left_out: vec![("contact.seats".into(), Unfit::NotANumber)],
            shown: vec![
                ("Start".into(), "contact.start_date".into()),
                ("Urgency".into(), "ticket.hs_ticket_priority".into()),
            ],
        };
        let kinds = BTreeMap::from([(String::from("contact.start_date"), Kind::Date)]);
        let mut properties = LeadProperties::of(&mapped, &kinds);
        assert_eq!(Value::Object(properties.contact.clone()), json!({"start_date": "1799971200000"}));
        assert_eq!(Value::Object(properties.ticket.clone()), json!({"hs_ticket_priority": "HIGH"}));
        assert_eq!(properties.ticket_shown, ["Urgency"], "only the ticket's own show in it");
        properties.leave_out_all("ticket");
        assert!(properties.ticket.is_empty() && properties.ticket_shown.is_empty());
        assert_eq!(properties.left_out[1], (String::from("ticket.hs_ticket_priority"), Unfit::Refused));
        properties.leave_out_all("contact");
        assert!(properties.contact.is_empty());
        assert_eq!(properties.left_out.len(), 3);
    }
}
