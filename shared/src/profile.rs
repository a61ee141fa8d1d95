//! Sender profiles' identities: the name, the route, the receipt key's prefix and the headers
//! each profile reads. Nothing here depends on another module of the crate: the identity sits
//! low in the house, beside `key`. Each sender's parsing and lead mapping is a module beside
//! this one that implements [`sender::Sender`], above `envelope`, `receipt` and `lead`;
//! [`registry`] lists them. Adding a sender is its module, its row in the `profiles!` table
//! below (which also declares the module), and its line in [`registry`]'s `with_sender!`
//! (ARCHITECTURE.md, "Adding a sender profile").
//!
//! Receipt keys are namespaced by profile (`tally:<responseId>`, ...), so identities from
//! different senders never collide. `staticforms` keeps the key it always had
//! (`staticforms:form.submitted:<submissionId>`), so receipts stored before profiles existed are
//! still found by their retries.

use alloc::string::String;

#[cfg(test)]
mod contract;
pub mod registry;
pub mod sender;

/// The request headers the `staticforms` profile's checks read, besides its custom
/// authentication header ([`crate::receive::Policy::header_names`]). A shell may collect only
/// these: each header it collects costs it a crossing from the runtime.
pub const HEADERS_READ: [&str; 6] =
    ["content-type", "authorization", "idempotency-key", "webhook-id", "webhook-timestamp", "webhook-signature"];

/// The header Typeform signs its deliveries in.
pub const TYPEFORM_SIGNATURE_HEADER: &str = "typeform-signature";

/// The header Tally signs its deliveries in.
pub const TALLY_SIGNATURE_HEADER: &str = "tally-signature";

/// Which 2xx answers a new receipt: what the profile's sender counts as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acknowledgement {
    /// 202 Accepted: stored, to be delivered (the default).
    Accepted,
    /// 200 OK, for a sender that retries any other answer (Webflow).
    Ok,
}

impl Acknowledgement {
    /// The status.
    pub fn status(self) -> u16 {
        match self {
            Acknowledgement::Accepted => 202,
            Acknowledgement::Ok => 200,
        }
    }
}

/// The header Webflow signs its deliveries in.
pub const WEBFLOW_SIGNATURE_HEADER: &str = "x-webflow-signature";
/// The header that carries Webflow's signing time, in milliseconds.
pub const WEBFLOW_TIMESTAMP_HEADER: &str = "x-webflow-timestamp";
/// The header Framer signs its deliveries in.
pub const FRAMER_SIGNATURE_HEADER: &str = "framer-signature";
/// The header that carries Framer's submission ID.
pub const FRAMER_SUBMISSION_HEADER: &str = "framer-webhook-submission-id";
/// The header Basin signs its deliveries in.
pub const BASIN_SIGNATURE_HEADER: &str = "x-basin-signature";
/// The header Formspree signs its deliveries in.
pub const FORMSPREE_SIGNATURE_HEADER: &str = "formspree-signature";
/// The header Formstack signs its deliveries in, unless the webhook names another.
pub const FORMSTACK_SIGNATURE_HEADER: &str = "x-fs-signature";

/// `"a, b, c"` from the literals `"a", "b", "c"`.
macro_rules! names {
    ($first:literal $(, $rest:literal)*) => {
        concat!($first $(, ", ", $rest)*)
    };
}

/// Declares the profiles: one row each, `Variant(module): "name", "key prefix", [headers
/// read];`, under its documentation. The row declares the profile's module (`profile/<module>.rs`)
/// and gives the enum its variant and the profile its identity (the route is
/// `/webhooks/<name>`); what the profile does is its module's [`sender::Sender`], listed in
/// [`registry`] (its `with_sender!`).
macro_rules! profiles {
    ($($(#[$doc:meta])* $variant:ident($module:ident): $name:literal, $prefix:literal, $headers:expr;)*) => {
        $(pub mod $module;)*

        /// A sender profile.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Profile {
            $($(#[$doc])* $variant,)*
        }

        impl Profile {
            /// Every profile, in the order the documentation lists them.
            pub const ALL: [Profile; [$($name),*].len()] = [$(Profile::$variant),*];

            /// What a list of profile names may hold, for configuration errors.
            pub const EXPECTED: &'static str = concat!("comma-separated profiles: ", names!($($name),*));

            /// The name in routes, configuration and receipts.
            pub fn name(self) -> &'static str {
                match self {
                    $(Profile::$variant => $name,)*
                }
            }

            /// The route its deliveries are posted to: `/webhooks/<name>`.
            pub fn path(self) -> &'static str {
                match self {
                    $(Profile::$variant => concat!("/webhooks/", $name),)*
                }
            }

            /// What every receipt key of this profile starts with. No prefix is a prefix of
            /// another's, so a key names one profile and one identity.
            pub fn key_prefix(self) -> &'static str {
                match self {
                    $(Profile::$variant => $prefix,)*
                }
            }

            /// The headers this profile's checks read, besides the staticforms custom
            /// authentication header (see [`crate::receive::Policy::header_names`]).
            pub fn headers_read(self) -> &'static [&'static str] {
                match self {
                    $(Profile::$variant => &$headers,)*
                }
            }
        }
    };
}

profiles! {
    /// Static Forms (`../shared/SENDER.md`): the `form.submitted` envelope and the
    /// `Idempotency-Key` header; Bearer, Basic, a custom header or Standard Webhooks signatures.
    StaticForms(static_forms): "staticforms", "staticforms:form.submitted:", HEADERS_READ;
    /// Any sender that signs per the Standard Webhooks specification: identity `webhook-id`,
    /// fingerprint the raw body, the lead from configured JSON pointers.
    StandardWebhooks(standard_webhooks): "standard-webhooks", "standard-webhooks:",
        ["content-type", "webhook-id", "webhook-timestamp", "webhook-signature"];
    /// Typeform's `form_response` webhooks, signed with `Typeform-Signature`.
    Typeform(typeform): "typeform", "typeform:", ["content-type", TYPEFORM_SIGNATURE_HEADER];
    /// Tally's `FORM_RESPONSE` webhooks, signed with `Tally-Signature`.
    Tally(tally): "tally", "tally:", ["content-type", TALLY_SIGNATURE_HEADER];
    /// Webflow's `form_submission` webhooks, signed with `x-webflow-signature` and timed.
    Webflow(webflow): "webflow", "webflow:", ["content-type", WEBFLOW_SIGNATURE_HEADER, WEBFLOW_TIMESTAMP_HEADER];
    /// Framer forms' webhooks, signed with `Framer-Signature`, identified by a header.
    Framer(framer): "framer", "framer:", ["content-type", FRAMER_SIGNATURE_HEADER, FRAMER_SUBMISSION_HEADER];
    /// Basin's form webhooks (JSON, data-wrapped JSON or form-encoded), signed with
    /// `X-Basin-Signature`.
    Basin(basin): "basin", "basin:", ["content-type", BASIN_SIGNATURE_HEADER];
    /// Formspree's form webhooks, signed with `Formspree-Signature`; the form carries the ID.
    Formspree(formspree): "formspree", "formspree:", ["content-type", FORMSPREE_SIGNATURE_HEADER];
    /// Formstack's form webhooks (form-encoded or JSON), signed with `X-FS-Signature` or a
    /// header of the user's choosing.
    Formstack(formstack): "formstack", "formstack:", ["content-type", FORMSTACK_SIGNATURE_HEADER];
}

impl Profile {
    /// The profile called `name`.
    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The profile whose route is `path`.
    pub fn of_path(path: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.path() == path)
    }

    /// The receipt key of the delivery whose identity is `id`.
    pub fn key(self, id: &str) -> String {
        let mut key = String::from(self.key_prefix());
        key.push_str(id);
        key
    }

    /// The profile and identity a receipt key holds (the identity may itself hold `:`).
    pub fn of_key(key: &str) -> Option<(Profile, &str)> {
        Profile::ALL
            .into_iter()
            .find_map(|p| key.strip_prefix(p.key_prefix()).map(|id| (p, id)))
            .filter(|(_, id)| !id.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn names_routes_and_keys_name_one_profile_each() {
        for profile in Profile::ALL {
            assert_eq!(Profile::parse(profile.name()), Some(profile));
            assert_eq!(Profile::of_path(profile.path()), Some(profile));
            assert_eq!(profile.path().strip_prefix("/webhooks/"), Some(profile.name()));
            assert_eq!(Profile::of_key(&profile.key("a:b")), Some((profile, "a:b")));
            assert_eq!(Profile::of_key(profile.key_prefix()), None, "an empty identity");
            for other in Profile::ALL.into_iter().filter(|o| *o != profile) {
                assert!(!other.key_prefix().starts_with(profile.key_prefix()), "{profile:?} {other:?}");
            }
        }
        assert_eq!(Profile::StaticForms.key("sub_1"), "staticforms:form.submitted:sub_1");
        assert_eq!(Profile::parse("StaticForms"), None);
        assert_eq!(Profile::of_path("/webhooks/"), None);
        assert_eq!(Profile::of_path("/webhooks/typeform/"), None);
        assert_eq!(Profile::of_key("other:x"), None);
    }
}
