//! A collection's records and the lead mapping: the mapped fields a refusal of the org's names
//! (a value it does not take costs that field, never the lead), and what a record sent again
//! leaves out. Each item's mapped fields and the log line of those left out:
//! [`crate::sink::typed_map`].

use serde_json::Value;
use shared::field_map::Mapped;

use super::refusals::Refusal;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::json::Json;

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
