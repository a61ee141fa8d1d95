//! The decimal value of a number literal: DynamoDB's range check and one canonical form.

use alloc::string::String;
use core::fmt::Write as _;

/// Most significant digits a DynamoDB number holds.
pub const DYNAMO_MAX_DIGITS: usize = 38;
/// Smallest and largest decimal exponent (of the form `d.ddd × 10^e`) DynamoDB holds.
pub const DYNAMO_EXPONENT_RANGE: core::ops::RangeInclusive<i64> = -130..=125;

/// Exponents are clamped to this size while reading: anything past it is far outside every
/// range this crate cares about, and clamping keeps the arithmetic from overflowing.
const EXPONENT_CLAMP: i64 = 1 << 40;

/// A number as `sign × digits × 10^exp10`, with `digits` free of leading and trailing zeros
/// (empty for zero).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decimal {
    /// True for a negative, non-zero value.
    pub negative: bool,
    /// The significant digits, ASCII `1-9` first and last; empty for zero.
    pub digits: String,
    /// The power of ten that `digits` is multiplied by.
    pub exp10: i64,
}

impl Decimal {
    /// Reads a decimal number: optional sign, digits with an optional point (`.5`, `5.` are
    /// allowed), optional exponent. This accepts every JSON number and everything DynamoDB
    /// returns as `N`.
    pub fn parse(text: &str) -> Option<Decimal> {
        let bytes = text.as_bytes();
        let mut i = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let mut all = String::new();
        let mut fraction_len: i64 = 0;
        let mut seen_point = false;
        let mut seen_digit = false;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'0'..=b'9' => {
                    seen_digit = true;
                    // Leading zeros carry no value; skipping them keeps `all` short.
                    if !(all.is_empty() && b == b'0') {
                        all.push(b as char);
                    }
                    if seen_point {
                        fraction_len += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            i += 1;
        }
        if !seen_digit {
            return None;
        }
        let mut exponent: i64 = 0;
        if let Some(b'e' | b'E') = bytes.get(i) {
            i += 1;
            let exp_negative = match bytes.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while let Some(&b @ b'0'..=b'9') = bytes.get(i) {
                exponent = (exponent * 10 + i64::from(b - b'0')).min(EXPONENT_CLAMP);
                i += 1;
            }
            if i == start {
                return None;
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        if i != bytes.len() {
            return None;
        }
        let trimmed_len = all.trim_end_matches('0').len();
        let trailing = (all.len() - trimmed_len) as i64;
        all.truncate(trimmed_len);
        if all.is_empty() {
            return Some(Decimal::default());
        }
        // fraction_len counts at most the input length, so this cannot overflow.
        let exp10 = exponent - fraction_len + trailing;
        Some(Decimal { negative, digits: all, exp10 })
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// The exponent `e` of the value written as `d.ddd × 10^e`.
    pub fn scientific_exponent(&self) -> i64 {
        self.exp10 + self.digits.len() as i64 - 1
    }

    /// True if DynamoDB's number type holds this value exactly: at most 38 significant digits
    /// and a magnitude between 1E-130 and 9.99…E+125 (or zero).
    pub fn fits_dynamodb(&self) -> bool {
        self.is_zero()
            || (self.digits.len() <= DYNAMO_MAX_DIGITS && DYNAMO_EXPONENT_RANGE.contains(&self.scientific_exponent()))
    }

    /// Writes the canonical form: `0`, or `[-]digits` with `e<exp10>` when `exp10 != 0`.
    /// Equal values always give equal text, and the text is a valid JSON number.
    pub fn write_canonical(&self, out: &mut String) {
        if self.is_zero() {
            out.push('0');
            return;
        }
        if self.negative {
            out.push('-');
        }
        out.push_str(&self.digits);
        if self.exp10 != 0 {
            let _ = write!(out, "e{}", self.exp10);
        }
    }

    /// The canonical form as a new string.
    pub fn canonical(&self) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(input: &str, expected: Option<(&str, bool)>) {
        let got = Decimal::parse(input).map(|d| (d.canonical(), d.fits_dynamodb()));
        assert_eq!(got.as_ref().map(|(c, f)| (c.as_str(), *f)), expected, "input: {input}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn canonical_forms_and_dynamodb_range() {
        check("0", Some(("0", true)));
        check("-0.000", Some(("0", true)));
        check("100", Some(("1e2", true)));
        check("1.50", Some(("15e-1", true)));
        check("+.5", Some(("5e-1", true)));
        check("5.", Some(("5", true)));
        check("-12.5E+3", Some(("-125e2", true)));
        check("1E-130", Some(("1e-130", true)));
        check("1E-131", Some(("1e-131", false)));
        check(
            "9.9999999999999999999999999999999999999E+125",
            Some(("99999999999999999999999999999999999999e88", true)),
        );
        check("1E+126", Some(("1e126", false)));
        check("12345678901234567890123456789012345678", Some(("12345678901234567890123456789012345678", true)));
        check("123456789012345678901234567890123456789", Some(("123456789012345678901234567890123456789", false)));
        check("1234567890123456789012345678901234567800000", Some(("12345678901234567890123456789012345678e5", true)));
        check("1e99999999999999999999999", Some(("1e1099511627776", false)));
        check("", None);
        check("-", None);
        check("1e", None);
        check("1.2.3", None);
        check("1 ", None);
    }
}
