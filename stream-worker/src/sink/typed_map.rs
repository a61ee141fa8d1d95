//! A lead mapping typed by a CRM's own description of its fields, whichever CRM (or the
//! webhook sink's, every field as sent): each mapped
//! field looked up (the CRM's part: [`resolve`]'s `described`), each constant converted; each
//! batch item's lead through its profile's map; `mapping check`'s lines; and the log line of
//! the fields a record was written without. Errors and logs name lines and fields, never a
//! value.

use serde_json::{json, Value};
use shared::field_map::{apply, of_key, FieldMapping, Mapped, ProfileMap, TypedLink, TypedMap};
use shared::lead::Lead;
use shared::profile::Profile;
use shared::typed::{convert, FieldType, Unfit};

use super::contract::BatchItem;

/// The mapping of each profile it names, typed.
pub type Typed = Vec<(Profile, TypedMap)>;

/// A CRM's lookup of one mapped field: its name as the CRM spells it and its type, or what is
/// wrong with it.
pub type Described<'a> = &'a dyn Fn(&str) -> Result<(String, FieldType), String>;

/// `mapping` typed field by field: `described(name)` is the CRM's name for the field and its
/// type, or what is wrong with it (said after `noun` and the field, as in "the Lead field
/// \"X\" does not exist"). The error names the mapping's line and table.
pub fn resolve(mapping: &FieldMapping, noun: &str, described: Described) -> Result<Typed, String> {
    let mut typed = Vec::new();
    for (profile, map) in &mapping.profiles {
        let mut out = resolve_map(profile.name(), map, noun, described)?;
        for (form, form_map) in &map.forms {
            let table = format!("{}.forms.{form}", profile.name());
            out.forms.push((form.clone(), resolve_map(&table, form_map, noun, described)?));
        }
        typed.push((*profile, out));
    }
    Ok(typed)
}

/// One profile's (or form's, `table` its name) fields and constants, typed.
fn resolve_map(table: &str, map: &ProfileMap, noun: &str, described: Described) -> Result<TypedMap, String> {
    let at =
        |line: usize, field: &str, what: &str| format!("LEAD_MAPPING line {line} ([{table}]): {noun} {field:?} {what}");
    let mut out = TypedMap::default();
    for link in &map.fields {
        let (field, ty) = described(&link.field).map_err(|why| at(link.line, &link.field, &why))?;
        out.fields.push(TypedLink { answer: link.answer.clone(), field, ty });
    }
    for constant in &map.constants {
        let (field, ty) = described(&constant.field).map_err(|why| at(constant.line, &constant.field, &why))?;
        match convert(&constant.value, &ty) {
            Ok(Some(value)) => out.constants.push((field, value)),
            Ok(None) => return Err(at(constant.line, &field, "is given an empty constant")),
            Err(unfit) => {
                return Err(at(constant.line, &field, &format!("cannot take the constant ({})", unfit.reason())))
            }
        }
    }
    Ok(out)
}

/// Each mapped field with its CRM type (`type_of`, by the field's name) and what it will take,
/// one line each, for `stream-worker mapping check`.
pub fn lines(typed: &Typed, type_of: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut lines = Vec::new();
    for (profile, map) in typed {
        map_lines(profile.name(), map, type_of, &mut lines);
        for (form, form_map) in &map.forms {
            map_lines(&format!("{}.forms.{form}", profile.name()), form_map, type_of, &mut lines);
        }
    }
    lines
}

fn map_lines(table: &str, map: &TypedMap, type_of: &dyn Fn(&str) -> String, lines: &mut Vec<String>) {
    for link in &map.fields {
        let ty = type_of(&link.field);
        lines.push(format!("[{table}] {:?} -> {} ({ty}{})", link.answer, link.field, limits(&link.ty)));
    }
    for (field, value) in &map.constants {
        lines.push(format!("[{table}] constant -> {field} ({}) = {}", type_of(field), value.to_text()));
    }
}

fn limits(ty: &FieldType) -> String {
    let mut out = String::new();
    if let Some(max) = ty.max_units {
        out.push_str(&format!(", up to {max} characters"));
    }
    if let Some(digits) = ty.whole_digits {
        out.push_str(&format!(", up to {digits} digits before the point"));
    }
    if !ty.options.is_empty() {
        let values: Vec<&str> = ty.options.iter().map(|o| o.value.as_str()).collect();
        let which = if ty.restricted { "only" } else { "or other text" };
        out.push_str(&format!(", {} ({which})", values.join(" | ")));
    }
    out
}

/// Each item's lead through its profile's mapping (none: the default fields only).
pub fn mapped(items: &[BatchItem<'_>], typed: Option<&Typed>) -> Vec<Mapped> {
    let map = |key: &str| of_key(typed?, key);
    items.iter().map(|item| map(item.receipt_key).map(|m| apply(item.lead, m)).unwrap_or_default()).collect()
}

/// Logs [`left_out_line`], when there is one.
pub fn log_left_out(lead: &Lead, left: &[(String, Unfit)]) {
    if let Some(line) = left_out_line(lead, left) {
        eprintln!("{line}");
    }
}

/// The log line of a record written without some mapped fields: the submission, and each field
/// left out with why, never its value (the value is in the record's notes).
pub fn left_out_line(lead: &Lead, left: &[(String, Unfit)]) -> Option<String> {
    if left.is_empty() {
        return None;
    }
    Some(
        json!({"submissionId": lead.external_id, "action": "sink_fields_left_out", "fieldsLeftOut": left_out(left)})
            .to_string(),
    )
}

/// The fields left out, each `{"field", "reason"}`.
pub fn left_out(left: &[(String, Unfit)]) -> Vec<Value> {
    left.iter().map(|(field, unfit)| json!({"field": field, "reason": unfit.reason()})).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::json::Json;

    #[test]
    fn the_fields_left_out_are_logged_by_name_and_reason_never_their_values() {
        let Json::Object(extra) = shared::json::parse(br#"{"Start":"2026-02-30","Size":"Huge"}"#).unwrap() else {
            unreachable!()
        };
        let lead = Lead { external_id: "tally:r1".into(), extra, ..Lead::default() };
        assert_eq!(left_out_line(&lead, &[]), None);
        let mapped = Mapped {
            left_out: vec![("Start__c".into(), Unfit::NotADate), ("Size__c".into(), Unfit::Refused)],
            ..Mapped::default()
        };
        let line = left_out_line(&lead, &mapped.left_out).unwrap();
        assert_eq!(
            line,
            r#"{"action":"sink_fields_left_out","fieldsLeftOut":[{"field":"Start__c","reason":"not_a_date"},{"field":"Size__c","reason":"refused_by_the_crm"}],"submissionId":"tally:r1"}"#
        );
    }

    #[test]
    fn each_item_is_mapped_by_its_receipt_s_profile() {
        use shared::field_map::{TypedLink, TypedMap};
        use shared::profile::Profile;
        use shared::typed::{FieldType, Kind};
        let Json::Object(extra) = shared::json::parse(br#"{"Size":"11-50"}"#).unwrap() else { unreachable!() };
        let lead = Lead { extra, ..Lead::default() };
        let link = TypedLink { answer: "Size".into(), field: "Size__c".into(), ty: FieldType::of(Kind::Text) };
        let typed: Typed = vec![(Profile::Tally, TypedMap { fields: vec![link], ..TypedMap::default() })];
        let (tally, typeform) = (Profile::Tally.key("r1"), Profile::Typeform.key("f:t"));
        let items = [BatchItem { lead: &lead, receipt_key: &tally }, BatchItem { lead: &lead, receipt_key: &typeform }];
        let out = mapped(&items, Some(&typed));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].values, [(String::from("Size__c"), Json::string("11-50"))]);
        assert!(out[1].values.is_empty(), "a profile the mapping does not name keeps the default");
        assert!(mapped(&items, None).iter().all(|m| m.values.is_empty()));
    }
}
