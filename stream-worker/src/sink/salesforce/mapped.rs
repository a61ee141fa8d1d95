//! A collection's leads through the lead mapping: each item's mapped fields (by its receipt's
//! profile, and its form), the mapped fields a refusal of the org's names (a value it does not
//! take costs that field, never the lead), and the log line of the fields left out.

use serde_json::{json, Value};
use shared::field_map::{apply, of_key, Mapped};
use shared::lead::Lead;

use super::catalogue::Typed;
use super::refusals::Refusal;
use crate::sink::contract::BatchItem;

/// The codes of a refusal of one field's value: the value is left out (the org's restricted
/// picklist, a type, a length, a range, an address, a validation rule shown at the field, a
/// date out of Salesforce's range). A refusal of a mapped field for another reason (its
/// uniqueness, the integration user's permissions) is the org's setup, as for any field.
pub const VALUE_CODES: [&str; 7] = [
    "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
    "INVALID_TYPE_ON_FIELD_IN_RECORD",
    "STRING_TOO_LONG",
    "NUMBER_OUTSIDE_VALID_RANGE",
    "INVALID_EMAIL_ADDRESS",
    "FIELD_CUSTOM_VALIDATION_EXCEPTION",
    "FIELD_INTEGRITY_EXCEPTION",
];

/// Each item's lead through its profile's mapping (none: the default fields only).
pub fn mapped(items: &[BatchItem<'_>], typed: Option<&Typed>) -> Vec<Mapped> {
    let map = |key: &str| of_key(typed?, key);
    items.iter().map(|item| map(item.receipt_key).map(|m| apply(item.lead, m)).unwrap_or_default()).collect()
}

/// The fields of `mapped` in `record` that `errors` refuse for their values ([`VALUE_CODES`],
/// naming the field).
pub fn refused(errors: &[Refusal], record: &Value, mapped: &Mapped) -> Vec<String> {
    let names = |field: &str| {
        errors
            .iter()
            .any(|e| VALUE_CODES.contains(&e.code.as_str()) && e.fields.iter().any(|f| f.eq_ignore_ascii_case(field)))
    };
    let written = |field: &str| record.as_object().is_some_and(|o| o.keys().any(|k| k.eq_ignore_ascii_case(field)));
    mapped.values.iter().map(|(field, _)| field).filter(|f| written(f) && names(f)).cloned().collect()
}

/// The fields a record sent again for the `time`th time (1 or 2) leaves out: those `refused`,
/// and the second time every field `mapped` still fills too, so a third refusal is never about
/// a mapped value.
pub fn to_leave_out(refused: &[String], mapped: &Mapped, time: u8) -> Vec<String> {
    let mut names = refused.to_vec();
    if time >= 2 {
        names.extend(mapped.values.iter().map(|(field, _)| field.clone()).filter(|f| !refused.contains(f)));
    }
    names
}

/// Logs [`left_out_line`], when there is one.
pub fn log_left_out(lead: &Lead, mapped: &Mapped) {
    if let Some(line) = left_out_line(lead, mapped) {
        eprintln!("{line}");
    }
}

/// The log line of a Lead created without some mapped fields: the submission, and each field
/// left out with why, never its value (the value is in the Lead's `Description`).
pub fn left_out_line(lead: &Lead, mapped: &Mapped) -> Option<String> {
    if mapped.left_out.is_empty() {
        return None;
    }
    Some(
        json!({"submissionId": lead.external_id, "action": "sink_fields_left_out", "fieldsLeftOut": left_out(mapped)})
            .to_string(),
    )
}

/// The fields left out, each `{"field", "reason"}`.
pub fn left_out(mapped: &Mapped) -> Vec<Value> {
    mapped.left_out.iter().map(|(field, unfit)| json!({"field": field, "reason": unfit.reason()})).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::json::Json;
    use shared::typed::Unfit;

    #[test]
    fn the_fields_left_out_are_logged_by_name_and_reason_never_their_values() {
        let Json::Object(extra) = shared::json::parse(br#"{"Start":"2026-02-30","Size":"Huge"}"#).unwrap() else {
            unreachable!()
        };
        let lead = Lead { external_id: "tally:r1".into(), extra, ..Lead::default() };
        assert_eq!(left_out_line(&lead, &Mapped::default()), None);
        let mapped = Mapped {
            left_out: vec![("Start__c".into(), Unfit::NotADate), ("Size__c".into(), Unfit::Refused)],
            ..Mapped::default()
        };
        let line = left_out_line(&lead, &mapped).unwrap();
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

    #[test]
    fn the_second_time_every_mapped_field_is_left_out() {
        let mapped = Mapped {
            values: vec![("Size__c".into(), Json::string("Huge")), ("Badge__c".into(), Json::string("b"))],
            ..Mapped::default()
        };
        let refused = [String::from("Size__c"), String::from("Email")];
        assert_eq!(to_leave_out(&refused, &mapped, 1), ["Size__c", "Email"]);
        assert_eq!(to_leave_out(&refused, &mapped, 2), ["Size__c", "Email", "Badge__c"]);
        assert_eq!(to_leave_out(&[], &mapped, 3), ["Size__c", "Badge__c"]);
    }

    #[test]
    fn only_a_refusal_of_a_mapped_field_s_value_leaves_it_out() {
        let mapped = Mapped {
            values: vec![("Size__c".into(), Json::string("Huge")), ("Badge__c".into(), Json::string("b"))],
            ..Mapped::default()
        };
        let record = json!({"size__c": "Huge", "Badge__c": "b", "Email": "a@b.co"});
        let refusal = |code: &str, field: &str| Refusal { code: code.into(), fields: vec![field.into()] };
        for code in VALUE_CODES {
            assert_eq!(refused(&[refusal(code, "Size__c")], &record, &mapped), ["Size__c"], "{code}");
        }
        // Its uniqueness or the user's permissions are the org's setup; a field it did not map,
        // or one no longer in the record, is not left out.
        for code in ["DUPLICATE_VALUE", "INVALID_FIELD_FOR_INSERT_UPDATE", "REQUIRED_FIELD_MISSING"] {
            assert!(refused(&[refusal(code, "Badge__c")], &record, &mapped).is_empty(), "{code}");
        }
        assert!(refused(&[refusal("STRING_TOO_LONG", "Email")], &record, &mapped).is_empty());
        assert!(refused(&[refusal("STRING_TOO_LONG", "Size__c")], &json!({"Email": "a@b.co"}), &mapped).is_empty());
        let unnamed = Refusal { code: "STRING_TOO_LONG".into(), fields: vec![] };
        assert!(refused(&[unnamed], &record, &mapped).is_empty());
    }
}
