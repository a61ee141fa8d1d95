//! A lead as a CRM's standard fields when no mapping says otherwise: the name in first and last
//! parts (by one rule for every CRM), the company and phone answers, and every other answer as
//! lines of text for the record's notes, so nothing a visitor typed is dropped.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::Json;
use crate::lead::{Lead, Role};

/// The fields a form's CAPTCHA adds (reCAPTCHA, hCaptcha, Cloudflare Turnstile): a token the
/// visitor never typed, hundreds of characters long.
pub const CAPTCHA_TOKENS: [&str; 3] = ["g-recaptcha-response", "h-captcha-response", "cf-turnstile-response"];

/// The heading of the block of answers no field holds, at the end of a record's notes.
pub const OTHER_ANSWERS: &str = "Other answers:";

/// The lead's first and last names: the answers asked on their own when the form had them and
/// either is not blank (the other may then be empty); else the name split at its last space (a
/// family name is one word; given names may be several), trimmed, so `Ada King Lovelace` is
/// `Ada King` and `Lovelace`, and one word is the first name (what a visitor asked for a name
/// most often types; a later submission with it never blanks a contact's last name).
pub fn name_parts(lead: &Lead) -> (String, String) {
    let (first, last) = (role_text(lead, Role::FirstName), role_text(lead, Role::LastName));
    if first.is_some() || last.is_some() {
        return (first.unwrap_or_default(), last.unwrap_or_default());
    }
    let name = lead.name.trim();
    match name.rsplit_once(char::is_whitespace) {
        Some((first, last)) => (first.trim_end().to_owned(), last.to_owned()),
        None => (name.to_owned(), String::new()),
    }
}

/// The text of the answer with `role`, trimmed; `None` when no answer has it or it is blank.
pub fn role_text(lead: &Lead, role: Role) -> Option<String> {
    let value = lead.extra.get(lead.roles.get(&role)?)?;
    let text = scalar_text(value)?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The answers in `extra` but those whose roles are in `shown` (their fields hold them), as
/// `(label, text)` lines in `extra`'s order: a list as its items joined by `, `; a choice
/// (`{"label": ..}`, `{"labels": [..], "other": ..}`, with only the option's IDs and refs
/// beside) as its labels; any other object as one line per member (`hidden.utm_source`). Blank
/// answers and a CAPTCHA's token ([`CAPTCHA_TOKENS`]) are left out, and so are the lines
/// labelled as a key in `mapped` (the answers a mapping wrote whole: [`crate::field_map`]).
pub fn other_answers(lead: &Lead, shown: &[Role], mapped: &[String]) -> Vec<(String, String)> {
    let in_fields: Vec<&String> = shown.iter().filter_map(|role| lead.roles.get(role)).collect();
    let mut lines = Vec::new();
    let answer = |key: &String| !in_fields.contains(&key) && !CAPTCHA_TOKENS.contains(&key.as_str());
    for (key, value) in lead.extra.iter().filter(|(key, _)| answer(key)) {
        push_lines(&mut lines, key.clone(), value);
    }
    lines.retain(|(label, _)| !mapped.contains(label));
    lines
}

/// `lines` as the block that ends a record's notes: [`OTHER_ANSWERS`], then `label: text` per
/// line; empty when there are none.
pub fn answers_block(lines: &[(String, String)]) -> String {
    let mut block = String::new();
    if lines.is_empty() {
        return block;
    }
    block.push_str(OTHER_ANSWERS);
    for (label, text) in lines {
        block.push('\n');
        block.push_str(label);
        block.push_str(": ");
        block.push_str(text);
    }
    block
}

/// `message` and `block` as a record's notes: the message, a blank line, the block; either alone
/// when the other is empty.
pub fn notes(message: &str, block: &str) -> String {
    match (message.is_empty(), block.is_empty()) {
        (_, true) => message.to_owned(),
        (true, false) => block.to_owned(),
        (false, false) => alloc::format!("{message}\n\n{block}"),
    }
}

fn push_lines(lines: &mut Vec<(String, String)>, label: String, value: &Json) {
    match value {
        // A choice as Typeform sends it: the option's label (or labels), and the text of an
        // "Other" choice, rather than its IDs.
        Json::Object(members) if is_choice(members) => {
            let chosen = [members.get("label"), members.get("labels"), members.get("other")];
            let mut items = Vec::new();
            for value in chosen.into_iter().flatten() {
                match value {
                    Json::Array(more) => items.extend(more.iter().cloned()),
                    value => items.push(value.clone()),
                }
            }
            push_lines(lines, label, &Json::Array(items));
        }
        Json::Object(members) => {
            for (member, value) in members {
                push_lines(lines, alloc::format!("{label}.{member}"), value);
            }
        }
        Json::Array(items) => {
            let texts: Vec<String> = items.iter().map(item_text).filter(|t| !t.trim().is_empty()).collect();
            if !texts.is_empty() {
                lines.push((label, texts.join(", ")));
            }
        }
        value => {
            if let Some(text) = scalar_text(value).filter(|t| !t.trim().is_empty()) {
                lines.push((label, text));
            }
        }
    }
}

/// Whether an object is a choice as Typeform sends it: a `label` or `labels`, beside nothing but
/// the option's `id`/`ids`, `ref`/`refs` and an "Other" choice's `other`.
fn is_choice(members: &alloc::collections::BTreeMap<String, Json>) -> bool {
    let known = ["label", "labels", "id", "ids", "ref", "refs", "other"];
    (members.contains_key("label") || members.contains_key("labels"))
        && members.keys().all(|k| known.contains(&k.as_str()))
}

/// An item of a list as text: a scalar's text, anything else as JSON.
fn item_text(item: &Json) -> String {
    scalar_text(item).unwrap_or_else(|| item.to_text())
}

/// A string as it is; a number or a boolean as its JSON text; `None` for anything else.
fn scalar_text(value: &Json) -> Option<String> {
    match value {
        Json::String(text) => Some(text.clone()),
        Json::Number(_) | Json::Bool(_) => Some(value.to_text()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use alloc::collections::BTreeMap;
    use alloc::vec;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn lead(name: &str, extra: &str, roles: &[(Role, &str)]) -> Lead {
        let Json::Object(extra) = parse(extra.as_bytes()).unwrap() else { panic!("an object") };
        let roles: BTreeMap<Role, String> = roles.iter().map(|(r, k)| (*r, String::from(*k))).collect();
        Lead { name: name.into(), extra, roles, ..Lead::default() }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn names_split_at_the_last_space_unless_the_form_asked_the_parts() {
        let split = |name: &str| name_parts(&lead(name, "{}", &[]));
        assert_eq!(split("Ada King Lovelace"), ("Ada King".into(), "Lovelace".into()));
        assert_eq!(split("  Cher "), ("Cher".into(), "".into()));
        assert_eq!(split("Ada  \tLovelace"), ("Ada".into(), "Lovelace".into()));
        assert_eq!(split(""), ("".into(), "".into()));
        let parts =
            lead("Ada Lovelace", r#"{"F":" Ada ","L":"Lovelace"}"#, &[(Role::FirstName, "F"), (Role::LastName, "L")]);
        assert_eq!(name_parts(&parts), ("Ada".into(), "Lovelace".into()));
        let only_first = lead("Ada", r#"{"F":"Ada"}"#, &[(Role::FirstName, "F")]);
        assert_eq!(name_parts(&only_first), ("Ada".into(), "".into()), "a first name is never the last name");
        let blank_parts = lead("Ada Lovelace", r#"{"F":" ","L":""}"#, &[(Role::FirstName, "F"), (Role::LastName, "L")]);
        assert_eq!(name_parts(&blank_parts), ("Ada".into(), "Lovelace".into()), "blank parts: the name split");
        let only_last = lead("Lovelace", r#"{"L":"Lovelace"}"#, &[(Role::LastName, "L")]);
        assert_eq!(name_parts(&only_last), ("".into(), "Lovelace".into()), "a last name is never the first name");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn every_answer_no_field_holds_is_a_line_of_the_block() {
        let lead = lead(
            "",
            r#"{"Company":"Acme","Consent":true,"Size":50,"Topics":["A","B",""],"empty":" ","none":null,
                "g-recaptcha-response":"03AGdBq2","cf-turnstile-response":"0.x","h-captcha-response":"P1_e",
                "hidden":{"utm_source":"news","utm_campaign":"fall"},"Phone":"+1 555",
                "Size2":{"id":"x","label":"11-50","ref":"r"},"Where":{"labels":["A"],"other":"Mars"},
                "Work":{"label":"Office","number":"12"}}"#,
            &[(Role::Company, "Company"), (Role::Phone, "Phone")],
        );
        assert_eq!(role_text(&lead, Role::Company).as_deref(), Some("Acme"));
        assert_eq!(role_text(&lead, Role::LastName), None);
        let lines = other_answers(&lead, &[Role::Company], &[]);
        let text = |l: &[(String, String)]| l.iter().map(|(a, b)| alloc::format!("{a}={b}")).collect::<Vec<_>>();
        assert_eq!(
            text(&lines),
            vec![
                "Consent=true",
                "Phone=+1 555",
                "Size=50",
                "Size2=11-50",
                "Topics=A, B",
                "Where=A, Mars",
                "Work.label=Office",
                "Work.number=12",
                "hidden.utm_campaign=fall",
                "hidden.utm_source=news"
            ]
        );
        // The answers a mapping wrote whole are not repeated, a member of an object by its line.
        let mapped = [String::from("Size2"), String::from("hidden.utm_source")];
        let fewer = text(&other_answers(&lead, &[Role::Company], &mapped));
        assert_eq!(fewer.len(), lines.len() - 2);
        assert!(!fewer.iter().any(|l| l.starts_with("Size2=") || l.starts_with("hidden.utm_source=")), "{fewer:?}");
        assert_eq!(answers_block(&lines[..2]), "Other answers:\nConsent: true\nPhone: +1 555");
        assert_eq!(answers_block(&[]), "");
        assert_eq!(notes("Hi", "B"), "Hi\n\nB");
        assert_eq!(notes("", "B"), "B");
        assert_eq!(notes("Hi", ""), "Hi");
    }
}
