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
