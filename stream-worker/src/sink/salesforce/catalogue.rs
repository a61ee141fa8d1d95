//! The Lead fields as the org's describe shows them to the integration user, and a lead mapping
//! checked against them: each mapped field must exist, be createable and have a type a form's
//! answer converts to ([`shared::typed`]); each constant must convert. Errors name the mapping's
//! line and the field, never a value.

use serde_json::Value;
use shared::field_map::FieldMapping;
use shared::typed::{Choice, FieldType, Kind};

use super::lead::email_accepted;
use crate::sink::typed_map::{self, Typed};

/// The describe's entry for `name` (API names compare without case, as Salesforce does).
pub fn find<'a>(fields: &'a [Value], name: &str) -> Option<&'a Value> {
    fields.iter().find(|f| f["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
}

/// A described field's type, or why a form's answer cannot be written to it (its Salesforce
/// type, such as `reference`).
///
/// Text (`string`, `textarea`, `phone`, `url`, `encryptedstring`) within its `length` in
/// UTF-16 units; `email` as Salesforce's rules take it ([`email_accepted`]); `picklist` and
/// `multipicklist` with their active values, restricted when `restrictedPicklist`; `combobox`
/// a picklist that takes other text; `double`, `currency`, `percent` within `precision` less
/// `scale` whole digits; `int` within `digits`, `long`; `boolean`, `date`, `datetime`.
pub fn field_type(field: &Value) -> Result<FieldType, String> {
    let ty = field["type"].as_str().unwrap_or_default();
    let number = |name: &str| field[name].as_u64().map(|n| n as usize);
    let length = number("length").filter(|n| *n > 0);
    let kind = match ty {
        "string" | "textarea" | "phone" | "url" | "encryptedstring" | "email" => Kind::Text,
        "picklist" | "combobox" => Kind::Choice,
        "multipicklist" => Kind::Choices,
        // A custom Number field with no decimal places is a double of scale 0.
        "double" if number("scale") == Some(0) => Kind::Integer,
        "double" | "currency" | "percent" => Kind::Number,
        "int" | "long" => Kind::Integer,
        "boolean" => Kind::Boolean,
        "date" => Kind::Date,
        "datetime" => Kind::DateTime,
        other => return Err(format!("its type ({other}) cannot be written from a form's answer")),
    };
    let whole_digits = match ty {
        "double" | "currency" | "percent" => {
            number("precision").filter(|p| *p > 0).map(|p| p.saturating_sub(number("scale").unwrap_or(0)))
        }
        "int" => number("digits").filter(|d| *d > 0),
        _ => None,
    };
    let options = field["picklistValues"]
        .as_array()
        .map(|values| {
            values
                .iter()
                .filter(|v| v["active"] != Value::Bool(false))
                .filter_map(|v| {
                    let value = v["value"].as_str()?;
                    Some(Choice { label: v["label"].as_str().unwrap_or(value).to_owned(), value: value.to_owned() })
                })
                .collect()
        })
        .unwrap_or_default();
    let restricted = matches!(ty, "picklist" | "multipicklist") && field["restrictedPicklist"] == Value::Bool(true);
    let max_units = if matches!(kind, Kind::Text | Kind::Choice | Kind::Choices) { length } else { None };
    let email_rule = (ty == "email").then_some(email_accepted as fn(&str) -> bool);
    Ok(FieldType { kind, max_units, whole_digits, options, restricted, email_rule })
}

/// `mapping` checked against the describe's `fields`, typed; `external_id_field` is the sink's
/// own and no answer may fill it. The error names the line and the field.
pub fn resolve(mapping: &FieldMapping, fields: &[Value], external_id_field: &str) -> Result<Typed, String> {
    let described = |name: &str| -> Result<(String, FieldType), String> {
        let Some(field) = find(fields, name) else {
            return Err(String::from("does not exist on Lead, or the integration user cannot see it"));
        };
        if name.eq_ignore_ascii_case(external_id_field) {
            return Err(String::from("is the external ID field, which the sink fills itself"));
        }
        if name.eq_ignore_ascii_case("Description") {
            return Err(String::from(
                "holds the message and every answer no field holds, which the sink writes itself",
            ));
        }
        if field["createable"] != Value::Bool(true) {
            return Err(String::from(
                "cannot be set on a new Lead (read-only, or the integration user may not edit it)",
            ));
        }
        let ty = field_type(field)?;
        Ok((field["name"].as_str().unwrap_or(name).to_owned(), ty))
    };
    typed_map::resolve(mapping, "the Lead field", &described)
}

/// Each mapped field with its Salesforce type and what it will take, one line each, for
/// `stream-worker mapping check`.
pub fn describe_lines(typed: &Typed, fields: &[Value]) -> Vec<String> {
    let type_of = |name: &str| find(fields, name).and_then(|f| f["type"].as_str()).unwrap_or("?").to_owned();
    typed_map::lines(typed, &type_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::field_map::{Constant, Link, ProfileMap};
    use shared::json::Json;
    use shared::profile::Profile;
    use shared::typed::convert;

    fn describe() -> Vec<Value> {
        let yes = |name: &str, ty: &str, extra: Value| {
            let mut field = json!({"name": name, "type": ty, "createable": true});
            field.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            field
        };
        vec![
            yes("Company", "string", json!({"length": 255})),
            yes("Email", "email", json!({"length": 80})),
            yes(
                "Size__c",
                "picklist",
                json!({"restrictedPicklist": true, "length": 255, "picklistValues": [
                {"label": "11 to 50", "value": "11-50", "active": true},
                {"label": "Retired", "value": "old", "active": false}]}),
            ),
            yes(
                "Topics__c",
                "multipicklist",
                json!({"picklistValues": [{"label": "A", "value": "a", "active": true}]}),
            ),
            yes("Budget__c", "currency", json!({"precision": 8, "scale": 2})),
            yes("Employees__c", "double", json!({"precision": 6, "scale": 0})),
            yes("Description", "textarea", json!({"length": 32000})),
            yes("Seats__c", "int", json!({"digits": 4})),
            yes("Start__c", "date", json!({})),
            yes("Consent__c", "boolean", json!({})),
            yes(
                "LeadSource",
                "picklist",
                json!({"picklistValues": [{"label": "Web", "value": "Web", "active": true}]}),
            ),
            yes("Static_Forms_Submission_Id__c", "string", json!({"length": 255})),
            yes("OwnerId", "reference", json!({})),
            json!({"name": "Score__c", "type": "double", "createable": false}),
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
    fn each_salesforce_type_becomes_what_a_form_s_answer_converts_to() {
        let fields = describe();
        let ty = |name: &str| field_type(find(&fields, name).unwrap()).unwrap();
        let size = ty("Size__c");
        assert_eq!(
            (size.kind, size.restricted, size.options.len(), size.max_units),
            (Kind::Choice, true, 1, Some(255))
        );
        assert_eq!(ty("Topics__c").kind, Kind::Choices);
        assert!(!ty("Topics__c").restricted && !ty("LeadSource").restricted);
        assert_eq!((ty("Budget__c").kind, ty("Budget__c").whole_digits), (Kind::Number, Some(6)));
        assert_eq!((ty("Seats__c").kind, ty("Seats__c").whole_digits), (Kind::Integer, Some(4)));
        assert_eq!((ty("Employees__c").kind, ty("Employees__c").whole_digits), (Kind::Integer, Some(6)));
        // A decimal double is a number; a describe without lengths or digits limits none.
        let plain =
            |ty: &str| field_type(&json!({"name": "X__c", "type": ty, "length": 0, "precision": 0, "digits": 0}));
        let double = field_type(&json!({"name": "X__c", "type": "double", "precision": 5, "scale": 2})).unwrap();
        assert_eq!((double.kind, double.whole_digits), (Kind::Number, Some(3)));
        assert_eq!(plain("string").unwrap().max_units, None);
        assert_eq!(plain("double").unwrap().whole_digits, None);
        assert_eq!(plain("int").unwrap().whole_digits, None);
        assert_eq!(ty("Start__c").kind, Kind::Date);
        assert_eq!(ty("Consent__c").kind, Kind::Boolean);
        let email = ty("Email");
        assert_eq!(convert(&Json::string("ada@exa_mple.com"), &email), Err(shared::typed::Unfit::NotAnEmail));
        assert!(field_type(find(&fields, "OwnerId").unwrap()).unwrap_err().contains("(reference)"));
    }

    #[test]
    fn a_mapping_is_typed_by_the_describe_and_each_wrong_field_is_named_with_its_line() {
        let fields = describe();
        let field = "Static_Forms_Submission_Id__c";
        let typed =
            resolve(&mapping(&[("Company size", "size__c")], &[("LeadSource", Json::string("web"))]), &fields, field)
                .unwrap();
        let (profile, map) = &typed[0];
        assert_eq!((*profile, map.fields[0].field.as_str()), (Profile::Tally, "Size__c"));
        assert_eq!(map.constants, [(String::from("LeadSource"), Json::string("Web"))]);
        let refused = |fields_: &[(&str, &str)], constants: &[(&str, Json)]| {
            resolve(&mapping(fields_, constants), &fields, field).unwrap_err()
        };
        assert_eq!(
            refused(&[("a", "Company"), ("b", "Sizes__c")], &[]),
            "LEAD_MAPPING line 3 ([tally]): the Lead field \"Sizes__c\" does not exist on Lead, or the integration user cannot see it"
        );
        assert!(refused(&[("a", "Score__c")], &[]).contains("\"Score__c\" cannot be set on a new Lead"));
        assert!(refused(&[("a", "OwnerId")], &[]).contains("its type (reference) cannot be written"));
        assert!(refused(&[("a", field)], &[]).contains("is the external ID field"));
        assert!(refused(&[("a", "description")], &[]).contains("holds the message"));
        let error = refused(&[], &[("Size__c", Json::string("Huge"))]);
        assert_eq!(
            error,
            "LEAD_MAPPING line 20 ([tally]): the Lead field \"Size__c\" cannot take the constant (no_such_option)"
        );
        assert!(refused(&[], &[("Start__c", Json::string(""))]).contains("is given an empty constant"));
        let lines = describe_lines(&typed, &fields);
        assert_eq!(lines[0], "[tally] \"Company size\" -> Size__c (picklist, up to 255 characters, 11-50 (only))");
        assert_eq!(lines[1], "[tally] constant -> LeadSource (picklist) = \"Web\"");
    }
}
