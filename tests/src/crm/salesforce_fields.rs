//! The stand-in org's custom Lead fields (and standard ones such as `LeadSource`) with their
//! Salesforce types: as the describe shows them (Object Reference, "Field Types";
//! `DescribeFieldResult`: `type`, `length`, `precision`, `scale`, `digits`, `picklistValues`
//! with `active`, `restrictedPicklist`, `createable`), and a value checked as a save checks it,
//! each record on its own (REST API "Status Codes and Error Responses", SOAP `StatusCode`):
//! - text over its `length` in UTF-16 units: `STRING_TOO_LONG`;
//! - an `email` field's address Salesforce refuses: `INVALID_EMAIL_ADDRESS`;
//! - a restricted picklist's value that is not one of its active values (exactly as spelt), in
//!   a multi-select each `;`-separated one: `INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST`;
//! - a number with more digits before the point than `precision - scale` (`digits` for `int`):
//!   `NUMBER_OUTSIDE_VALID_RANGE`;
//! - a value of another type (text for a number, a boolean or a date, a fraction for an `int`,
//!   a date not `YYYY-MM-DD`): `INVALID_TYPE_ON_FIELD_IN_RECORD`;
//! - a field that is not `createable`: `INVALID_FIELD_FOR_INSERT_UPDATE`.

use serde_json::{json, Value};

/// A Lead field of the org's beyond the six standard ones the stand-in always has.
#[derive(Clone, Debug)]
pub struct OrgField {
    pub name: &'static str,
    /// Salesforce's type name: `string`, `textarea`, `email`, `phone`, `url`, `picklist`,
    /// `multipicklist`, `boolean`, `double`, `currency`, `percent`, `int`, `date`, `datetime`,
    /// `reference`.
    pub ty: &'static str,
    pub length: usize,
    pub precision: usize,
    pub scale: usize,
    /// (label, value, active).
    pub options: Vec<(&'static str, &'static str, bool)>,
    pub restricted: bool,
    pub createable: bool,
}

impl OrgField {
    /// A createable field of type `ty` (text 255 long, a multi-select 4,099 as Salesforce
    /// describes its values joined; numbers 18 digits, 2 after the point).
    pub fn new(name: &'static str, ty: &'static str) -> OrgField {
        let length = if ty == "multipicklist" { 4_099 } else { 255 };
        OrgField { name, ty, length, precision: 18, scale: 2, options: Vec::new(), restricted: false, createable: true }
    }

    /// With these options, all active.
    pub fn options(mut self, options: &[(&'static str, &'static str)], restricted: bool) -> OrgField {
        self.options = options.iter().map(|(label, value)| (*label, *value, true)).collect();
        self.restricted = restricted;
        self
    }

    /// The describe's entry.
    pub fn describe(&self) -> Value {
        let options: Vec<Value> = self
            .options
            .iter()
            .map(|(label, value, active)| json!({"label": label, "value": value, "active": active, "defaultValue": false}))
            .collect();
        let mut entry = json!({
            "name": self.name, "type": self.ty, "custom": self.name.ends_with("__c"),
            "createable": self.createable, "updateable": self.createable, "nillable": true, "defaultedOnCreate": false,
            "length": if self.is_text() { self.length } else { 0 },
            "precision": if self.is_number() { self.precision } else { 0 },
            "scale": if self.is_number() { self.scale } else { 0 },
            "digits": if self.ty == "int" { self.precision } else { 0 },
            "picklistValues": options,
            "restrictedPicklist": self.restricted,
        });
        if self.ty == "boolean" {
            entry["nillable"] = json!(false);
            entry["defaultedOnCreate"] = json!(true);
        }
        entry
    }

    fn is_text(&self) -> bool {
        matches!(self.ty, "string" | "textarea" | "email" | "phone" | "url" | "picklist" | "multipicklist")
    }

    fn is_number(&self) -> bool {
        matches!(self.ty, "double" | "currency" | "percent")
    }

    /// `value` as the org stores it, or the error code and message a save answers.
    pub fn check(&self, value: &Value, email_valid: fn(&str) -> bool) -> Result<Value, (&'static str, String)> {
        let name = self.name;
        let wrong_type = || Err(("INVALID_TYPE_ON_FIELD_IN_RECORD", format!("{name}: value not of required type")));
        if !self.createable {
            return Err(("INVALID_FIELD_FOR_INSERT_UPDATE", format!("Unable to create/update fields: {name}")));
        }
        if value.is_null() {
            return Ok(Value::Null);
        }
        if self.is_text() {
            let Some(text) = value.as_str() else { return wrong_type() };
            let text = text.trim();
            if text.encode_utf16().count() > self.length {
                return Err(("STRING_TOO_LONG", format!("{name}: data value too large")));
            }
            if self.ty == "email" && !email_valid(text) {
                return Err(("INVALID_EMAIL_ADDRESS", format!("{name}: invalid email address")));
            }
            let allowed = |v: &str| self.options.iter().any(|(_, value, active)| *active && *value == v);
            let values: Vec<&str> = if self.ty == "multipicklist" { text.split(';').collect() } else { vec![text] };
            if self.restricted && !values.iter().all(|v| allowed(v)) {
                return Err((
                    "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
                    format!("{name}: bad value for restricted picklist field"),
                ));
            }
            return Ok(json!(text));
        }
        match self.ty {
            "boolean" => match value {
                Value::Bool(_) => Ok(value.clone()),
                Value::String(s) if s == "true" || s == "false" => Ok(json!(s == "true")),
                _ => wrong_type(),
            },
            "double" | "currency" | "percent" | "int" => {
                let text = match value {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => return wrong_type(),
                };
                let Ok(number) = text.parse::<f64>() else { return wrong_type() };
                let whole = text.trim_start_matches(['-', '+']).split('.').next().unwrap_or("").trim_start_matches('0');
                if self.ty == "int" && number.fract() != 0.0 {
                    return wrong_type();
                }
                let room = if self.ty == "int" { self.precision } else { self.precision - self.scale };
                if whole.len() > room {
                    return Err(("NUMBER_OUTSIDE_VALID_RANGE", format!("{name}: number outside valid range")));
                }
                Ok(value.clone())
            }
            "date" => match value.as_str() {
                Some(day) if is_date(day) => Ok(value.clone()),
                _ => wrong_type(),
            },
            "datetime" => match value.as_str() {
                Some(at) if at.len() > 10 && is_date(&at[..10]) && at.as_bytes()[10] == b'T' => Ok(value.clone()),
                _ => wrong_type(),
            },
            _ => wrong_type(),
        }
    }
}

/// `YYYY-MM-DD`, a real day.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else { return false };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return false;
    }
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else { return false };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    (1..=12).contains(&m) && d >= 1 && d <= days[(m - 1) as usize]
}
