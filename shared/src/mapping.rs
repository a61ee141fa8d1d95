//! How receipts become leads where that is configuration: the JSON pointers that say where a
//! `standard-webhooks` payload keeps a lead's fields. The other profiles' mappings are fixed by
//! their senders' payloads. Plain values, low in the house: the sender trait's `lead` takes them.

use alloc::string::String;

/// The lead mappings the stream worker is configured with, one per configurable profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeadMapping {
    /// Where a `standard-webhooks` payload keeps the lead's fields.
    pub standard_webhooks: LeadPointers,
}

/// Where a Standard Webhooks payload keeps a lead's fields: a JSON Pointer (RFC 6901) for each
/// named field, one for the object whose other members become `extra`, and optionally one for
/// the form's ID (a lead mapping's `[standard-webhooks.forms.<id>]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeadPointers {
    /// The name's pointer (default `/data/name`).
    pub name: String,
    /// The email's pointer (default `/data/email`).
    pub email: String,
    /// The message's pointer (default `/data/message`).
    pub message: String,
    /// The object whose members, but for the named ones, are `extra` (default `/data`).
    pub extra: String,
    /// The form's ID (`Lead::form`), when the payload names one (default: none).
    pub form: Option<String>,
}

impl Default for LeadPointers {
    fn default() -> LeadPointers {
        LeadPointers {
            name: String::from("/data/name"),
            email: String::from("/data/email"),
            message: String::from("/data/message"),
            extra: String::from("/data"),
            form: None,
        }
    }
}

/// Why a pointer list was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeadPointersError;

impl LeadPointers {
    /// Reads `name=/data/full_name,email=/data/contact/email`: any of `name`, `email`,
    /// `message`, `extra`, `form`, each at most once, each a JSON Pointer (`""` or starting
    /// with `/`; the form's a member, never `""`, the whole payload); the ones not given keep
    /// their defaults.
    pub fn parse(text: &str) -> Result<LeadPointers, LeadPointersError> {
        let mut pointers = LeadPointers::default();
        let mut seen = [false; 5];
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, pointer) = part.split_once('=').ok_or(LeadPointersError)?;
            let pointer = pointer.trim();
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                return Err(LeadPointersError);
            }
            if field.trim() == "form" {
                if pointer.is_empty() || core::mem::replace(&mut seen[4], true) {
                    return Err(LeadPointersError);
                }
                pointers.form = Some(String::from(pointer));
                continue;
            }
            let (index, slot) = match field.trim() {
                "name" => (0, &mut pointers.name),
                "email" => (1, &mut pointers.email),
                "message" => (2, &mut pointers.message),
                "extra" => (3, &mut pointers.extra),
                _ => return Err(LeadPointersError),
            };
            if core::mem::replace(&mut seen[index], true) {
                return Err(LeadPointersError);
            }
            *slot = String::from(pointer);
        }
        Ok(pointers)
    }
}
