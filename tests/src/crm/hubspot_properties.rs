//! The stand-in portal's contact and ticket properties with their HubSpot types, as the
//! properties API lists them (`GET /crm/v3/properties/{objectType}`: `results[]` with `name`,
//! `type`, `fieldType`, `options[]` of `label`/`value`, `externalOptions`, `calculated`,
//! `modificationMetadata.readOnlyValue`), and a value checked as an upsert checks it, each input
//! on its own, its verdict in HubSpot's `Property values were not valid: [...]` form:
//! - an `enumeration`'s value that is not one of its options' internal values (exactly as
//!   spelt; a `checkbox`'s each `;`-separated one): `INVALID_OPTION`;
//! - a `number` that is not a number: `INVALID_INTEGER`;
//! - a `bool` (or `booleancheckbox`) other than `true`/`false`: `INVALID_BOOLEAN`;
//! - a `date` that is not a midnight UTC in milliseconds ("If you try to set a value that is not
//!   midnight UTC, you will receive an error") nor `YYYY-MM-DD`, or a `datetime` that is not
//!   milliseconds nor ISO 8601: `INVALID_DATE`;
//! - a property whose value is read-only (or calculated): `READ_ONLY_VALUE`.
//!
//! Sources: developers.hubspot.com "CRM API | Properties" (types and field types), "How should
//! timestamps be formatted for HubSpot's APIs?" (dates), "Using object APIs" (the verdicts).

use serde_json::{json, Value};

/// A property of the portal's beyond the default ones the stand-in always has.
#[derive(Clone, Debug)]
pub struct PortalProperty {
    /// `contacts` or `tickets`.
    pub object: &'static str,
    pub name: &'static str,
    /// HubSpot's `type`: `string`, `number`, `bool`, `date`, `datetime`, `enumeration`.
    pub ty: &'static str,
    /// HubSpot's `fieldType`: `text`, `textarea`, `number`, `booleancheckbox`, `date`,
    /// `select`, `radio`, `checkbox`, `calculation_equation`, ...
    pub field_type: &'static str,
    /// (label, internal value).
    pub options: Vec<(&'static str, &'static str)>,
    pub read_only: bool,
}

impl PortalProperty {
    /// A writable property of `object` with this type and field type, no options.
    pub fn new(object: &'static str, name: &'static str, ty: &'static str, field_type: &'static str) -> PortalProperty {
        PortalProperty { object, name, ty, field_type, options: Vec::new(), read_only: false }
    }

    /// With these options.
    pub fn options(mut self, options: &[(&'static str, &'static str)]) -> PortalProperty {
        self.options = options.to_vec();
        self
    }

    /// The properties API's entry.
    pub fn listed(&self) -> Value {
        let options: Vec<Value> = self
            .options
            .iter()
            .enumerate()
            .map(|(i, (label, value))| json!({"label": label, "value": value, "displayOrder": i, "hidden": false}))
            .collect();
        json!({
            "name": self.name, "label": self.name, "type": self.ty, "fieldType": self.field_type,
            "groupName": "form_answers", "options": options, "hasUniqueValue": false,
            "calculated": self.field_type.starts_with("calculation"),
            "externalOptions": false,
            "modificationMetadata": {"archivable": true, "readOnlyDefinition": false, "readOnlyValue": self.read_only},
        })
    }

    /// The verdict on `value` for this property: `None` when HubSpot takes it, else the error
    /// code and a message (which, as HubSpot's, repeats the value).
    pub fn check(&self, value: &Value) -> Option<(&'static str, String)> {
        if self.read_only || self.field_type.starts_with("calculation") {
            return Some(("READ_ONLY_VALUE", format!("{} is a read only property", self.name)));
        }
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => other.to_string(),
        };
        if text.is_empty() {
            return None;
        }
        let valid = match (self.ty, self.field_type) {
            ("bool", _) | ("enumeration", "booleancheckbox") => ["true", "false"].contains(&text.as_str()),
            ("enumeration", "checkbox") => text.split(';').all(|v| self.options.iter().any(|(_, o)| *o == v)),
            ("enumeration", _) => self.options.iter().any(|(_, o)| *o == text),
            ("number", _) => text.parse::<f64>().is_ok_and(f64::is_finite),
            ("date", _) => midnight(&text),
            ("datetime", _) => text.parse::<i64>().is_ok() || iso_date_time(&text),
            _ => true,
        };
        if valid {
            return None;
        }
        let code = match (self.ty, self.field_type) {
            ("bool", _) | ("enumeration", "booleancheckbox") => "INVALID_BOOLEAN",
            ("enumeration", _) => "INVALID_OPTION",
            ("number", _) => "INVALID_INTEGER",
            _ => "INVALID_DATE",
        };
        Some((code, format!("{text} was not a valid value for {}", self.name)))
    }
}

/// A date property's value: milliseconds at a midnight UTC, or `YYYY-MM-DD`.
fn midnight(text: &str) -> bool {
    match text.parse::<i64>() {
        Ok(ms) => ms.rem_euclid(86_400_000) == 0,
        Err(_) => {
            let parts: Vec<&str> = text.split('-').collect();
            parts.len() == 3 && [4, 2, 2].iter().zip(&parts).all(|(n, p)| p.len() == *n && p.parse::<u32>().is_ok())
        }
    }
}

/// An ISO 8601 date-time (`YYYY-MM-DDTHH:MM:SS` with a zone).
fn iso_date_time(text: &str) -> bool {
    text.split_once('T').is_some_and(|(day, time)| midnight(day) && time.len() >= 8 && time.as_bytes()[2] == b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_takes_what_hubspot_documents_and_refuses_the_rest_with_its_code() {
        let size = PortalProperty::new("contacts", "size", "enumeration", "select").options(&[("11 to 50", "11_50")]);
        assert_eq!(size.check(&json!("11_50")), None);
        assert_eq!(size.check(&json!("11 to 50")).unwrap().0, "INVALID_OPTION", "the label is not the value");
        let many = PortalProperty::new("contacts", "m", "enumeration", "checkbox").options(&[("A", "a"), ("B", "b")]);
        assert_eq!(many.check(&json!("a;b")), None);
        assert_eq!(many.check(&json!("a;c")).unwrap().0, "INVALID_OPTION");
        let yes = PortalProperty::new("contacts", "b", "bool", "booleancheckbox");
        assert_eq!((yes.check(&json!("true")), yes.check(&json!("yes")).unwrap().0), (None, "INVALID_BOOLEAN"));
        let date = PortalProperty::new("contacts", "d", "date", "date");
        assert_eq!(date.check(&json!("1799971200000")), None);
        assert_eq!(date.check(&json!("2027-01-15")), None);
        assert_eq!(date.check(&json!("1799971200001")).unwrap().0, "INVALID_DATE", "not midnight UTC");
        let number = PortalProperty::new("contacts", "n", "number", "number");
        assert_eq!(
            (number.check(&json!("12.5")), number.check(&json!("twelve")).unwrap().0),
            (None, "INVALID_INTEGER")
        );
        let at = PortalProperty::new("tickets", "t", "datetime", "date");
        assert_eq!((at.check(&json!("1799971200123")), at.check(&json!("soon")).unwrap().0), (None, "INVALID_DATE"));
        let mut fixed = PortalProperty::new("contacts", "f", "string", "text");
        fixed.read_only = true;
        assert_eq!(fixed.check(&json!("x")).unwrap().0, "READ_ONLY_VALUE");
    }
}
