//! A CRM field's type as the sink learnt it from the CRM (its kind, length, digits, options),
//! and an answer converted to it, or the reason it cannot be: a value that does not convert
//! costs that field only, never the lead, and stays where a person sees it.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::decimal::Decimal;
use crate::json::{Json, Number};

/// What a field holds, as the sink writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text (also phone numbers, URLs and emails the CRM checks itself).
    Text,
    /// A decimal number (also currency and percent).
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
    /// A date and time with its offset (RFC 3339), or a date (midnight UTC).
    DateTime,
    /// One option of a list (a picklist, an enumeration).
    Choice,
    /// Several options of a list, `;`-joined (a multi-select picklist).
    Choices,
    /// The answer as the form sent it (text, a number, a list): a field of a receiver that
    /// reads JSON (the webhook sink's `fields`).
    AsSent,
}

/// One option of a choice field: what people see, and what is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The label shown.
    pub label: String,
    /// The value stored (the API name).
    pub value: String,
}

/// A field as the CRM describes it.
#[derive(Clone, Debug)]
pub struct FieldType {
    /// What it holds.
    pub kind: Kind,
    /// The longest text it takes, in UTF-16 code units, when limited.
    pub max_units: Option<usize>,
    /// The most digits before the point a number may have, when limited.
    pub whole_digits: Option<usize>,
    /// The options of a choice field (active ones only).
    pub options: Vec<Choice>,
    /// Whether only the options are accepted (a restricted picklist); otherwise another text
    /// is written as it is.
    pub restricted: bool,
    /// For an email field, the CRM's rule for the address (text it refuses is [`Unfit::NotAnEmail`]).
    pub email_rule: Option<fn(&str) -> bool>,
}

impl FieldType {
    /// A field of `kind` with no limits and no options.
    pub fn of(kind: Kind) -> FieldType {
        FieldType {
            kind,
            max_units: None,
            whole_digits: None,
            options: Vec::new(),
            restricted: false,
            email_rule: None,
        }
    }
}

/// Why an answer was not written to its field. Each has a stable reason code for logs, which
/// never hold the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfit {
    /// Longer than the field holds.
    TooLong,
    /// Not a number.
    NotANumber,
    /// A number with more digits before the point than the field holds, or a fraction where a
    /// whole number is needed.
    OutOfRange,
    /// Not a yes or a no.
    NotABoolean,
    /// Not a date (`YYYY-MM-DD`).
    NotADate,
    /// Not a date and time (RFC 3339).
    NotADateTime,
    /// Not one of the field's options.
    NoSuchOption,
    /// An email address the CRM refuses.
    NotAnEmail,
    /// Several values where the field takes one.
    SeveralValues,
    /// The CRM refused the value (after the sink's own checks passed it).
    Refused,
}

impl Unfit {
    /// The stable reason code.
    pub fn reason(self) -> &'static str {
        match self {
            Unfit::TooLong => "too_long",
            Unfit::NotANumber => "not_a_number",
            Unfit::OutOfRange => "out_of_range",
            Unfit::NotABoolean => "not_a_boolean",
            Unfit::NotADate => "not_a_date",
            Unfit::NotADateTime => "not_a_date_time",
            Unfit::NoSuchOption => "no_such_option",
            Unfit::NotAnEmail => "not_an_email",
            Unfit::SeveralValues => "several_values",
            Unfit::Refused => "refused_by_the_crm",
        }
    }
}

/// The texts an answer holds: a string or a number as itself, a list's items, a choice's labels
/// (`{"label": ..}`, `{"labels": [..], "other": ..}`), each trimmed; blank ones left out.
pub fn texts(answer: &Json) -> Vec<String> {
    let mut out = Vec::new();
    collect(answer, &mut out);
    out
}

fn collect(answer: &Json, out: &mut Vec<String>) {
    match answer {
        Json::String(text) if !text.trim().is_empty() => out.push(String::from(text.trim())),
        Json::Number(n) => out.push(String::from(n.as_str())),
        Json::Bool(b) => out.push(b.to_string()),
        Json::Array(items) => items.iter().for_each(|item| collect(item, out)),
        Json::Object(members) => {
            for key in ["label", "labels", "other"] {
                if let Some(value) = members.get(key) {
                    collect(value, out);
                }
            }
        }
        _ => {}
    }
}

/// Whether an answer holds nothing: null, blank text, or a list or object of blanks only.
fn blank(answer: &Json) -> bool {
    match answer {
        Json::Null => true,
        Json::String(text) => text.trim().is_empty(),
        Json::Array(items) => items.iter().all(blank),
        Json::Object(members) => members.values().all(blank),
        _ => false,
    }
}

/// `answer` as a value of `field`: `Ok(None)` when the answer is blank (a field is never
/// blanked by an empty answer), else the value to write, or why it does not fit.
///
/// - Text: the texts joined by `, `, within the length.
/// - Number, Integer: one number (JSON, or text such as `-12.50`), within the digits; an
///   Integer's fraction must be zero, and it is written without one.
/// - Boolean: `true`/`false`, or text `yes`/`no`, `y`/`n`, `on`/`off`, `1`/`0`,
///   `checked`/`unchecked` (any case), also as a choice's one option; a ticked checkbox (a list
///   of the options ticked, with other labels) is `true`.
/// - Date: `YYYY-MM-DD`, a real day. DateTime: RFC 3339 (`2026-12-07T10:30:00Z`, an offset,
///   seconds' fractions), or a date as its midnight UTC.
/// - Choice: one text matched to an option's label or value (any case): the option's value; in
///   an unrestricted field, other text as it is. Choices: each so, `;`-joined.
pub fn convert(answer: &Json, field: &FieldType) -> Result<Option<Json>, Unfit> {
    if field.kind == Kind::AsSent {
        // Any JSON the form sent (a file's `{"name", "url"}`, a payment's object) that holds
        // something: texts() reads only what a CRM field can take.
        return Ok((!blank(answer)).then(|| answer.clone()));
    }
    let texts = texts(answer);
    if texts.is_empty() {
        return Ok(None);
    }
    let one = || match texts.as_slice() {
        [one] => Ok(one.as_str()),
        _ => Err(Unfit::SeveralValues),
    };
    let value = match field.kind {
        Kind::Text => Json::String(texts.join(", ")),
        Kind::Number | Kind::Integer => Json::Number(number(one()?, field)?),
        // A yes or a no, also as a choice's one option (`["No"]`); a box ticked with another
        // label (`["I agree"]`) is a yes.
        Kind::Boolean => match (one().map(boolean), answer) {
            (Ok(Ok(yes)), _) => Json::Bool(yes),
            (_, Json::Array(_) | Json::Object(_)) => Json::Bool(true),
            _ => return Err(Unfit::NotABoolean),
        },
        Kind::Date => Json::String(date(one()?).ok_or(Unfit::NotADate)?),
        Kind::DateTime => Json::String(date_time(one()?).ok_or(Unfit::NotADateTime)?),
        Kind::Choice => Json::String(option(one()?, field)?),
        Kind::Choices => {
            let chosen: Result<Vec<String>, Unfit> = texts.iter().map(|t| option(t, field)).collect();
            Json::String(chosen?.join(";"))
        }
        Kind::AsSent => unreachable!("taken whole above"),
    };
    match (&value, field.max_units, field.email_rule) {
        (Json::String(text), _, Some(rule)) if !rule(text) => Err(Unfit::NotAnEmail),
        (Json::String(text), Some(max), _) if text.encode_utf16().count() > max => Err(Unfit::TooLong),
        _ => Ok(Some(value)),
    }
}

/// A number's text as a JSON number within the field's digits.
fn number(text: &str, field: &FieldType) -> Result<Number, Unfit> {
    let plain = text.strip_prefix('+').filter(|rest| !rest.starts_with('-')).unwrap_or(text);
    // JSON's syntax (no exponent needed by a form, no `1,000`), so the CRM reads it as sent.
    let number = Number::parse(plain).filter(|_| !plain.contains(['e', 'E'])).ok_or(Unfit::NotANumber)?;
    let decimal = Decimal::parse(number.as_str()).ok_or(Unfit::NotANumber)?;
    // A double holds 15 significant digits exactly; more would be rounded on the way.
    if decimal.digits.len() > MAX_DIGITS {
        return Err(Unfit::OutOfRange);
    }
    let whole = whole_digits(&decimal);
    if field.whole_digits.is_some_and(|max| whole > max) {
        return Err(Unfit::OutOfRange);
    }
    if field.kind == Kind::Integer {
        if fraction_digits(&decimal) > 0 {
            return Err(Unfit::OutOfRange);
        }
        // A whole number written as one (`42`, not `42.0`).
        let whole = number.as_str().split('.').next().unwrap_or_default();
        return Number::parse(whole).ok_or(Unfit::NotANumber);
    }
    Ok(number)
}

/// The most significant digits a number may have (a double's 15, which JSON readers use).
pub const MAX_DIGITS: usize = 15;

/// How many digits a number has before its point (none for `0.5`).
fn whole_digits(decimal: &Decimal) -> usize {
    match decimal.scientific_exponent() {
        Some(exponent) if exponent >= 0 => exponent as usize + 1,
        _ => 0,
    }
}

/// How many non-zero-ended digits a number has after its point.
fn fraction_digits(decimal: &Decimal) -> usize {
    let exponent = decimal.scientific_exponent().unwrap_or(0);
    let significant = decimal.digits.len() as i64;
    (significant - 1 - exponent).max(0) as usize
}

fn boolean(text: &str) -> Result<bool, Unfit> {
    let yes = ["true", "yes", "on", "1", "checked", "y"];
    let no = ["false", "no", "off", "0", "unchecked", "n"];
    if yes.iter().any(|y| y.eq_ignore_ascii_case(text)) {
        Ok(true)
    } else if no.iter().any(|n| n.eq_ignore_ascii_case(text)) {
        Ok(false)
    } else {
        Err(Unfit::NotABoolean)
    }
}

/// `YYYY-MM-DD` when it names a real day of the years [`MIN_YEAR`] to [`MAX_YEAR`].
pub fn date(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let digits = |range: core::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    ((MIN_YEAR..=MAX_YEAR).contains(&year) && (1..=days).contains(&day)).then(|| String::from(text))
}

/// The first year a date may have (Salesforce's dates run from 1700-01-01 to 4000-12-31).
pub const MIN_YEAR: u32 = 1700;
/// The last year a date may have.
pub const MAX_YEAR: u32 = 4000;

/// A date and time: `YYYY-MM-DD`, `T` (or a space), `HH:MM`, optional `:SS` with an optional
/// fraction, and `Z` or `±HH:MM`; a date alone is its midnight UTC. Written as Salesforce's
/// REST API documents its date-times (and RFC 3339 needs): `YYYY-MM-DDTHH:MM:SS`, the fraction
/// cut to milliseconds, `Z` or the offset.
pub fn date_time(text: &str) -> Option<String> {
    let day = text.get(..10).and_then(date)?;
    if text.len() == 10 {
        return Some(alloc::format!("{day}T00:00:00Z"));
    }
    let rest = text.get(10..)?.strip_prefix(['T', 't', ' '])?;
    let (clock, zone) = rest.split_at(rest.find(['Z', 'z', '+', '-'])?);
    let two = |part: &str, max: u32| {
        part.len() == 2 && part.bytes().all(|c| c.is_ascii_digit()) && part.parse::<u32>().is_ok_and(|n| n <= max)
    };
    let mut parts = clock.splitn(3, ':');
    let (hours, minutes) = (parts.next()?, parts.next()?);
    let (seconds, fraction) = match parts.next().map(|s| s.split_once('.').map_or((s, None), |(w, f)| (w, Some(f)))) {
        None => ("00", String::new()),
        Some((whole, None)) => (whole, String::new()),
        Some((whole, Some(digits))) if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) => {
            (whole, alloc::format!(".{}", &digits[..digits.len().min(3)]))
        }
        Some(_) => return None,
    };
    let zone_ok = zone.eq_ignore_ascii_case("z")
        || zone.get(1..).and_then(|z| z.split_once(':')).is_some_and(|(h, m)| two(h, 23) && two(m, 59));
    if !(two(hours, 23) && two(minutes, 59) && two(seconds, 59) && zone_ok) {
        return None;
    }
    let zone = if zone.eq_ignore_ascii_case("z") { "Z" } else { zone };
    Some(alloc::format!("{day}T{hours}:{minutes}:{seconds}{fraction}{zone}"))
}

/// The option `text` names (by its label or value, in any case), as its value; other text
/// as it is in an unrestricted field.
fn option(text: &str, field: &FieldType) -> Result<String, Unfit> {
    let named = |o: &&Choice| o.label.trim().eq_ignore_ascii_case(text) || o.value.trim().eq_ignore_ascii_case(text);
    match field.options.iter().find(named) {
        Some(choice) => Ok(choice.value.clone()),
        None if field.restricted || text.contains(';') && field.kind == Kind::Choices => Err(Unfit::NoSuchOption),
        None => Ok(String::from(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use alloc::vec;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn json(text: &str) -> Json {
        parse(text.as_bytes()).unwrap()
    }

    fn run(answer: &str, field: &FieldType) -> Result<Option<String>, Unfit> {
        convert(&json(answer), field).map(|v| v.map(|v| v.to_text()))
    }

    fn choices(kind: Kind, restricted: bool) -> FieldType {
        let option = |label: &str, value: &str| Choice { label: label.into(), value: value.into() };
        FieldType {
            options: vec![option("11 to 50", "11-50"), option("Email", "email"), option("Phone", "phone")],
            restricted,
            ..FieldType::of(kind)
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn each_reason_is_its_own_code() {
        let all = [
            (Unfit::TooLong, "too_long"),
            (Unfit::NotANumber, "not_a_number"),
            (Unfit::OutOfRange, "out_of_range"),
            (Unfit::NotABoolean, "not_a_boolean"),
            (Unfit::NotADate, "not_a_date"),
            (Unfit::NotADateTime, "not_a_date_time"),
            (Unfit::NoSuchOption, "no_such_option"),
            (Unfit::NotAnEmail, "not_an_email"),
            (Unfit::SeveralValues, "several_values"),
            (Unfit::Refused, "refused_by_the_crm"),
        ];
        for (unfit, reason) in all {
            assert_eq!(unfit.reason(), reason);
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn blank_answers_write_nothing() {
        for blank in ["null", "\"\"", "\"  \"", "[]", "{\"labels\":[]}", "[null,\" \"]", "{}"] {
            assert_eq!(run(blank, &FieldType::of(Kind::Text)), Ok(None), "{blank}");
            assert_eq!(run(blank, &FieldType::of(Kind::Boolean)), Ok(None), "{blank}");
            assert_eq!(run(blank, &FieldType::of(Kind::AsSent)), Ok(None), "{blank}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn as_sent_keeps_the_answer_s_own_json() {
        let as_sent = FieldType::of(Kind::AsSent);
        let sent = [
            "\" 12 people \"",
            "12.50",
            "0",
            "false",
            "[\"Email\",\"Fax\"]",
            "[\"\",\"A\"]",
            "{\"label\":\"London\",\"ref\":\"x\"}",
            // A Tally file upload, a Typeform payment, a whole hidden-fields object.
            "[{\"name\":\"cv.pdf\",\"url\":\"https://example.com/cv.pdf\"}]",
            "{\"amount\":\"10.00\",\"success\":true}",
            "{\"utm_source\":\"news\"}",
        ];
        for answer in sent {
            assert_eq!(run(answer, &as_sent), Ok(Some(answer.into())), "{answer}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn text_joins_a_list_and_keeps_within_its_length_in_utf16_units() {
        let text = FieldType { max_units: Some(4), ..FieldType::of(Kind::Text) };
        assert_eq!(run("[\"a\",\"b\"]", &text), Ok(Some("\"a, b\"".into())));
        assert_eq!(run("\" 😀😀 \"", &text), Ok(Some("\"😀😀\"".into())));
        assert_eq!(run("\"😀😀x\"", &text), Err(Unfit::TooLong));
        let any = FieldType::of(Kind::Text);
        assert_eq!(run("{\"label\":\"London\",\"ref\":\"x\"}", &any), Ok(Some("\"London\"".into())));
        assert_eq!(run("12", &any), Ok(Some("\"12\"".into())));
        let email = FieldType { email_rule: Some(|t| t.contains('@')), ..FieldType::of(Kind::Text) };
        assert_eq!(run("\" ada@example.com \"", &email), Ok(Some("\"ada@example.com\"".into())));
        assert_eq!(run("\"ada\"", &email), Err(Unfit::NotAnEmail));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn numbers_are_json_numbers_within_their_digits() {
        let number = FieldType { whole_digits: Some(3), ..FieldType::of(Kind::Number) };
        assert_eq!(run("\" -12.50 \"", &number), Ok(Some("-12.50".into())));
        assert_eq!(run("\"+7\"", &number), Ok(Some("7".into())));
        assert_eq!(run("999.99", &number), Ok(Some("999.99".into())));
        assert_eq!(run("0.001", &number), Ok(Some("0.001".into())));
        assert_eq!(run("1000", &number), Err(Unfit::OutOfRange));
        for bad in ["\"1,000\"", "\"12 people\"", "\"1e3\"", "\"0x10\"", "\"\u{664}\""] {
            assert_eq!(run(bad, &number), Err(Unfit::NotANumber), "{bad}");
        }
        assert_eq!(run("[\"1\",\"2\"]", &number), Err(Unfit::SeveralValues));
        assert_eq!(run("\"+-7\"", &number), Err(Unfit::NotANumber));
        let unlimited = FieldType::of(Kind::Number);
        assert_eq!(run("\"123456789012.345\"", &unlimited), Ok(Some("123456789012.345".into())));
        assert_eq!(run("\"1234567890123.456\"", &unlimited), Err(Unfit::OutOfRange), "16 digits");
        let integer = FieldType::of(Kind::Integer);
        assert_eq!(run("\"42\"", &integer), Ok(Some("42".into())));
        assert_eq!(run("\"42.0\"", &integer), Ok(Some("42".into())));
        assert_eq!(run("\"-7.00\"", &integer), Ok(Some("-7".into())));
        assert_eq!(run("\"42.5\"", &integer), Err(Unfit::OutOfRange));
        assert_eq!(run("\"4200\"", &integer), Ok(Some("4200".into())));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn booleans_from_checkboxes_and_words() {
        let boolean = FieldType::of(Kind::Boolean);
        for (answer, expected) in
            [("true", true), ("\"Yes\"", true), ("\"on\"", true), ("\"0\"", false), ("false", false)]
        {
            assert_eq!(run(answer, &boolean), Ok(Some(expected.to_string())), "{answer}");
        }
        assert_eq!(run("[\"I agree to be contacted\"]", &boolean), Ok(Some("true".into())));
        // A choice of yes or no is its answer, never a tick.
        assert_eq!(run("[\"No\"]", &boolean), Ok(Some("false".into())));
        assert_eq!(run("{\"label\":\"no\",\"ref\":\"r\"}", &boolean), Ok(Some("false".into())));
        assert_eq!(run("[\"Yes\"]", &boolean), Ok(Some("true".into())));
        assert_eq!(run("[\"A\",\"B\"]", &boolean), Ok(Some("true".into())));
        assert_eq!(run("\"maybe\"", &boolean), Err(Unfit::NotABoolean));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn dates_are_real_days_and_date_times_carry_their_offset() {
        let day = FieldType::of(Kind::Date);
        assert_eq!(run("\"2024-02-29\"", &day), Ok(Some("\"2024-02-29\"".into())));
        for bad in [
            "\"2023-02-29\"",
            "\"2026-13-01\"",
            "\"2026-04-31\"",
            "\"07/12/2026\"",
            "\"2026-1-7\"",
            "\"2026-00-10\"",
            "\"2026-01-00\"",
            "\"2026/01/01\"",
            "\"2026-01-011\"",
            "\"2026-01/01\"",
            "\"1900-02-29\"",
        ] {
            assert_eq!(run(bad, &day), Err(Unfit::NotADate), "{bad}");
        }
        for good in ["2026-04-30", "2023-02-28", "2000-02-29", "2026-12-31", "2026-11-30"] {
            assert_eq!(run(&alloc::format!("\"{good}\""), &day), Ok(Some(alloc::format!("\"{good}\""))), "{good}");
        }
        // Salesforce's years only: 1700 to 4000.
        assert_eq!(run("\"1700-01-01\"", &day), Ok(Some("\"1700-01-01\"".into())));
        assert_eq!(run("\"4000-12-31\"", &day), Ok(Some("\"4000-12-31\"".into())));
        assert_eq!(run("\"1699-12-31\"", &day), Err(Unfit::NotADate));
        assert_eq!(run("\"4001-01-01\"", &day), Err(Unfit::NotADate));
        // Written as Salesforce documents date-times: seconds always, milliseconds at most, Z.
        let at = FieldType::of(Kind::DateTime);
        for (answer, written) in [
            ("2026-12-07", "2026-12-07T00:00:00Z"),
            ("2026-12-07 10:30:00.250+01:00", "2026-12-07T10:30:00.250+01:00"),
            ("2026-12-07T10:30Z", "2026-12-07T10:30:00Z"),
            ("2026-12-07t10:30:59.123456z", "2026-12-07T10:30:59.123Z"),
            ("2026-12-07T10:30:05-05:30", "2026-12-07T10:30:05-05:30"),
        ] {
            assert_eq!(
                run(&alloc::format!("\"{answer}\""), &at),
                Ok(Some(alloc::format!("\"{written}\""))),
                "{answer}"
            );
        }
        for bad in [
            "\"2026-12-07T24:00:00Z\"",
            "\"2026-12-07T10:30:00\"",
            "\"2026-12-07T10:30:00+1:00\"",
            "\"2026-12-07T10:30:00.Z\"",
            "\"2026-12-07T10:30:60Z\"",
            "\"2026-12-07T10:60Z\"",
            "\"2026-12-07T10:30:00+24:00\"",
            "\"2026-12-07T10:30:00+01:60\"",
            "\"2026-12-07X10:30:00Z\"",
            "\"1699-12-31T10:30:00Z\"",
        ] {
            assert_eq!(run(bad, &at), Err(Unfit::NotADateTime), "{bad}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn choices_match_labels_or_values_and_a_restricted_list_refuses_others() {
        let restricted = choices(Kind::Choice, true);
        assert_eq!(run("\"11 TO 50\"", &restricted), Ok(Some("\"11-50\"".into())));
        assert_eq!(run("{\"label\":\"11-50\",\"id\":\"o1\"}", &restricted), Ok(Some("\"11-50\"".into())));
        assert_eq!(run("\"500+\"", &restricted), Err(Unfit::NoSuchOption));
        assert_eq!(run("\"500+\"", &choices(Kind::Choice, false)), Ok(Some("\"500+\"".into())));
        assert_eq!(run("[\"Email\",\"Phone\"]", &restricted), Err(Unfit::SeveralValues));
        let many = choices(Kind::Choices, true);
        assert_eq!(run("[\"Email\",\"phone\"]", &many), Ok(Some("\"email;phone\"".into())));
        assert_eq!(run("[\"Email\",\"Fax\"]", &many), Err(Unfit::NoSuchOption));
        assert_eq!(run("[\"Email\",\"Fax;Telex\"]", &choices(Kind::Choices, false)), Err(Unfit::NoSuchOption));
        assert_eq!(run("[\"Email\",\"Fax\"]", &choices(Kind::Choices, false)), Ok(Some("\"email;Fax\"".into())));
    }
}
