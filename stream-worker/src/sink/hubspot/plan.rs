//! What a HubSpot batch still has to write, decided without I/O from what its reads found:
//! the leads already done or held back, one contact input per person, the new tickets'
//! inputs, and each person's contact result.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use shared::lead::Lead;

use super::api::{
    contact_input, ticket_content, ticket_properties, CONTACT_CONFLICT, CONTACT_IDENTITY, CONTACT_PROPERTY_REFUSED,
};
use super::batch::{Found, Written};
use super::catalogue::LeadProperties;
use crate::sink::contract::SinkError;

/// A ticket answered under another case of its value (or a batch naming one ID in two cases):
/// another submission's (HubSpot does not document whether unique values compare without
/// case). The record waits: alone in a later batch it is read again, and on a portal that
/// folds case it waits for a person instead of overwriting the other submission's ticket.
pub(super) const ID_COLLISION: SinkError = SinkError::Retryable { reason: "sink_id_collision", retry_after: None };

/// Each lead's result so far and the leads still open (a contact, and a ticket or an
/// association, to make): a lead whose ticket exists with its contact is done (a replay changes
/// nothing); one whose read found another value, or whose ID another lead of the batch names
/// in another case, is held back ([`ID_COLLISION`]): both would be read as new and upserted
/// together, and a portal that folds case would write them into one ticket.
pub(super) fn open_leads(
    leads: &[&Lead],
    found: &BTreeMap<String, Found>,
    associated: &BTreeSet<String>,
) -> (Vec<Result<(), SinkError>>, Vec<usize>) {
    let mut results = vec![Ok(()); leads.len()];
    let mut open = Vec::new();
    let mut first_of: BTreeMap<String, &str> = BTreeMap::new();
    for (i, lead) in leads.iter().enumerate() {
        let id = lead.external_id.as_str();
        let first = *first_of.entry(id.to_lowercase()).or_insert(id);
        match found.get(id) {
            _ if first != id => results[i] = Err(ID_COLLISION),
            Some(Found::Collision) => results[i] = Err(ID_COLLISION),
            Some(Found::Ticket(ticket)) if associated.contains(ticket) => {}
            _ => open.push(i),
        }
    }
    (results, open)
}

/// One contact input per person among `leads` (those that gave an email), by the email in
/// lowercase (HubSpot compares emails without case and refuses a batch naming one record
/// twice): the trimmed email as the input's ID, and the latest lead's properties (with its
/// mapped ones).
pub(super) fn people<'a>(
    leads: impl Iterator<Item = (&'a Lead, &'a LeadProperties)>,
) -> BTreeMap<String, (String, Value)> {
    let mut people = BTreeMap::new();
    for (lead, mapped) in leads {
        if let Some((email, properties)) = contact_input(lead, mapped) {
            people.insert(email.to_lowercase(), (email.to_owned(), properties));
        }
    }
    people
}

/// The contacts' inputs to try once more at once, each with its index: one whose answer was a
/// conflict (a race with a concurrent create) as it was; one refused for another property than
/// its email and name ([`CONTACT_PROPERTY_REFUSED`]: a portal's validation rule, a mapped
/// value) with its email and name alone.
pub(super) fn second_tries(inputs: &[(String, Value)], written: &[Written]) -> Vec<(usize, (String, Value))> {
    let again = |i: usize| match &written[i] {
        Err(error) if *error == CONTACT_CONFLICT => Some((i, inputs[i].clone())),
        Err(error) if *error == CONTACT_PROPERTY_REFUSED => {
            let (id, mut properties) = inputs[i].clone();
            if let Some(properties) = properties.as_object_mut() {
                properties.retain(|name, _| CONTACT_IDENTITY.contains(&name.as_str()));
            }
            Some((i, (id, properties)))
        }
        _ => None,
    };
    (0..written.len().min(inputs.len())).filter_map(again).collect()
}

/// Each person's contact from its input's answer: the contact's ID, `None` when HubSpot refuses
/// the email for good (its content, or a conflict twice in a row: the contact is given up, the
/// ticket still written), or the error to retry.
pub(super) fn contact_results(
    people: impl Iterator<Item = String>,
    written: Vec<Written>,
) -> BTreeMap<String, Result<Option<String>, SinkError>> {
    people
        .zip(written)
        .map(|(email, result)| {
            let contact = match result {
                Ok(id) => Ok(Some(id)),
                Err(SinkError::Permanent { .. }) => Ok(None),
                Err(retryable) => Err(retryable),
            };
            (email, contact)
        })
        .collect()
}

/// Where a new ticket goes, and the property holding its submission ID.
pub(super) struct TicketSettings<'a> {
    pub id_property: &'a str,
    pub pipeline: &'a str,
    pub stage: &'a str,
}

/// A new ticket's properties (with the lead's `mapped` ones); when the lead's contact was given
/// up, the email as submitted is kept at the end of its content.
pub(super) fn new_ticket(
    lead: &Lead,
    mapped: &LeadProperties,
    contact_given_up: bool,
    place: &TicketSettings,
) -> Value {
    let mut properties = ticket_properties(lead, mapped, place.id_property, place.pipeline, place.stage);
    if contact_given_up && !lead.email.trim().is_empty() {
        let note = format!("\n\n(email as submitted: {})", lead.email.trim());
        properties["content"] = Value::String(ticket_content(lead, &mapped.ticket_shown, &note));
    }
    properties
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lead(id: &str, name: &str, email: &str) -> Lead {
        Lead {
            external_id: id.into(),
            name: name.into(),
            email: email.into(),
            message: "Hello".into(),
            ..Lead::default()
        }
    }

    #[test]
    fn done_held_back_and_open_leads_by_what_the_reads_found() {
        let leads = [lead("a", "", ""), lead("b", "", ""), lead("c", "", ""), lead("d", "", ""), lead("A", "", "")];
        let refs: Vec<&Lead> = leads.iter().collect();
        let found = BTreeMap::from([
            ("a".to_owned(), Found::Ticket("1".into())),
            ("b".to_owned(), Found::Ticket("2".into())),
            ("c".to_owned(), Found::Collision),
        ]);
        let associated = BTreeSet::from(["1".to_owned()]);
        let (results, open) = open_leads(&refs, &found, &associated);
        // a: written and associated; b: its association missing; c: another's; d: new; A: a's
        // ID in another case, held back.
        assert_eq!(results, [Ok(()), Ok(()), Err(ID_COLLISION), Ok(()), Err(ID_COLLISION)]);
        assert_eq!(open, [1, 3]);
    }

    #[test]
    fn one_contact_input_per_person_with_the_latest_name() {
        let leads = [
            lead("1", "Ada King", "ada@example.com"),
            lead("2", "", ""),
            lead("3", "Ada Lovelace", " ADA@example.com "),
        ];
        let none = LeadProperties::default();
        let people = people(leads.iter().map(|lead| (lead, &none)));
        assert_eq!(people.len(), 1, "{people:?}");
        let (id, properties) = &people["ada@example.com"];
        assert_eq!(id, "ADA@example.com", "the latest lead's trimmed email is the input's ID");
        assert_eq!(
            (properties["email"].as_str(), properties["lastname"].as_str()),
            (Some("ADA@example.com"), Some("Lovelace"))
        );
    }

    #[test]
    fn a_conflict_is_tried_again_and_a_refusal_gives_the_contact_up() {
        let unavailable = SinkError::Retryable { reason: "sink_unavailable", retry_after: None };
        let written = vec![Ok("7".to_owned()), Err(CONTACT_CONFLICT), Err(unavailable)];
        let input = |email: &str| {
            let properties = json!({"email": email, "phone": "12", "company": "Acme", "firstname": "Ada",
                "lastname": "King", "company_size": "11_50"});
            (email.to_owned(), properties)
        };
        let inputs = [input("a"), input("b"), input("c")];
        assert_eq!(second_tries(&inputs, &written), [(1, input("b"))]);
        let conflict = Err(CONTACT_CONFLICT);
        let tries = second_tries(&inputs, &[conflict.clone(), Ok("1".to_owned()), conflict]);
        assert_eq!(tries, [(0, input("a")), (2, input("c"))]);
        // A property refused: once more with the email and name alone; any other refusal: given up.
        let rejected = SinkError::Permanent { reason: "sink_rejected" };
        let tries = second_tries(&inputs, &[Err(CONTACT_PROPERTY_REFUSED), Err(rejected), Ok("1".to_owned())]);
        assert_eq!(tries, [(0, ("a".to_owned(), json!({"email": "a", "firstname": "Ada", "lastname": "King"})))]);
        let people = ["a", "b", "c"].map(String::from);
        let results = contact_results(people.into_iter(), written);
        assert_eq!(results["a"], Ok(Some("7".to_owned())));
        assert_eq!(results["b"], Ok(None), "a standing conflict costs the contact");
        assert_eq!(results["c"], Err(unavailable));
    }

    #[test]
    fn a_ticket_keeps_the_email_only_when_its_contact_was_given_up() {
        let place = TicketSettings { id_property: "p", pipeline: "0", stage: "1" };
        let none = LeadProperties::default();
        let with = new_ticket(&lead("s", "Ada", " ada@example.com "), &none, true, &place);
        assert_eq!(with["content"], "Hello\n\n(email as submitted: ada@example.com)");
        let without = new_ticket(&lead("s", "Ada", "ada@example.com"), &none, false, &place);
        assert_eq!(without["content"], "Hello");
        let no_email = new_ticket(&lead("s", "Ada", " "), &none, true, &place);
        assert_eq!(no_email["content"], "Hello");
        assert_eq!(with["p"], "s");
    }
}
