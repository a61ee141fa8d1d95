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
//! - a field that is not `createable`: `INVALID_FIELD_FOR_INSERT_UPDATE`.
//!
//! A value of another type (text for a number, anything but `true`/`false` for a checkbox, a
//! date not `YYYY-MM-DD`, a date-time not `YYYY-MM-DDTHH:MM:SS[.SSS](Z|±HH:MM)`, a list for a
//! multi-select, a fraction for an `int`) is refused while the request's JSON is read, before
//! any record: the whole call is 400 `JSON_PARSER_ERROR` ("Cannot deserialize instance of
//! double from VALUE_STRING ...", as REST clients report it), never an error per record
//! ([`OrgField::shape`]).

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

    /// Whether `value` reads as this field's type when the request's JSON is read: `Err` with
    /// the type's name (the whole call is then `JSON_PARSER_ERROR`).
    pub fn shape(&self, value: &Value) -> Result<(), &'static str> {
        let ok = match (self.ty, value) {
            (_, Value::Null) => true,
            ("boolean", Value::Bool(_)) => true,
            ("boolean", Value::String(s)) => s == "true" || s == "false",
            ("double" | "currency" | "percent", Value::Number(_)) => true,
            ("double" | "currency" | "percent", Value::String(s)) => s.trim().parse::<f64>().is_ok(),
            ("int", Value::Number(n)) => n.is_i64(),
            ("int", Value::String(s)) => s.trim().parse::<i64>().is_ok(),
            ("date", Value::String(s)) => is_date(s),
            ("datetime", Value::String(s)) => is_date_time(s),
            (_, Value::String(_)) => self.is_text(),
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(self.ty)
        }
    }

    /// `value` (of the right [`OrgField::shape`]) as the org stores it, or the error code and
    /// message a save answers for its record.
    pub fn check(&self, value: &Value, email_valid: fn(&str) -> bool) -> Result<Value, (&'static str, String)> {
        let name = self.name;
        if !self.createable {
            return Err(("INVALID_FIELD_FOR_INSERT_UPDATE", format!("Unable to create/update fields: {name}")));
        }
        if value.is_null() {
            return Ok(Value::Null);
        }
        if self.is_text() {
            let text = value.as_str().unwrap_or_default().trim();
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
        if matches!(self.ty, "double" | "currency" | "percent" | "int") {
            let text = match value {
                Value::String(s) => s.trim().to_owned(),
                other => other.to_string(),
            };
            let whole = text.trim_start_matches(['-', '+']).split('.').next().unwrap_or("").trim_start_matches('0');
            let room = if self.ty == "int" { self.precision } else { self.precision - self.scale };
            if whole.len() > room {
                return Err(("NUMBER_OUTSIDE_VALID_RANGE", format!("{name}: number outside valid range")));
            }
        }
        Ok(match value {
            Value::String(s) if self.ty == "boolean" => json!(s == "true"),
            other => other.clone(),
        })
    }
}

/// `YYYY-MM-DDTHH:MM:SS`, an optional fraction of up to three digits, then `Z` or `±HH:MM`, as
/// Salesforce's REST API documents date-times.
fn is_date_time(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| text.get(range).is_some_and(|p| p.bytes().all(|c| c.is_ascii_digit()));
    if b.len() < 20 || !is_date(&text[..10]) || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return false;
    }
    if !(digits(11..13) && digits(14..16) && digits(17..19)) {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=3).contains(&n) {
            return false;
        }
        rest = &fraction[n..];
    }
    rest == "Z" || (rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && rest.as_bytes()[3] == b':')
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
