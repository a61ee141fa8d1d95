//! The error both shells report for a configuration variable that is missing or malformed.
//!
//! Loading configuration is the shells' job (they read the environment); the error is shared
//! so that every message has the same shape: the variable and what it should hold, never its
//! value, which may be a secret.

use core::fmt;

/// A configuration variable that is missing or malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable's name.
    pub variable: &'static str,
    /// What it should hold.
    pub expected: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} must be {}", self.variable, self.expected)
    }
}

impl core::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn names_the_variable_and_never_a_value() {
        let error = ConfigError { variable: "RETENTION_DAYS", expected: "whole days from 1 to 3650" };
        assert_eq!(error.to_string(), "RETENTION_DAYS must be whole days from 1 to 3650");
    }
}
