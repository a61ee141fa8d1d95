//! The decimal value of a number literal: DynamoDB's range check and one canonical form.

use alloc::string::String;
use core::fmt::Write as _;

/// Most significant digits a DynamoDB number holds.
pub const DYNAMO_MAX_DIGITS: usize = 38;
/// Smallest and largest decimal exponent (of the form `d.ddd × 10^e`) DynamoDB holds.
pub const DYNAMO_EXPONENT_RANGE: core::ops::RangeInclusive<i64> = -130..=125;

/// Exponents below this size (in magnitude) are held as an `i64`; larger ones as their
/// digits. JSON puts no bound on an exponent's length, and the canonical form must stay exact
/// however long it is: equal values give equal text, different values different text.
const SMALL_EXPONENT_LIMIT: u64 = 1_000_000_000_000_000_000;

/// A power of ten, exact at any size. Private, so that every value has one form: `Small`
/// exactly when the magnitude is below 10^18, and `Huge` digits without a leading zero.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Exponent {
    /// Magnitude below 10^18.
    Small(i64),
    /// Magnitude 10^18 or more: the sign and the decimal digits (no leading zero). Far outside
    /// every range this crate checks, so only written, never computed with.
    Huge {
        /// True for a negative exponent.
        negative: bool,
        /// The magnitude's decimal digits.
        magnitude: String,
    },
}

impl Default for Exponent {
    fn default() -> Exponent {
        Exponent::Small(0)
    }
}

impl Exponent {
    /// The exponent `sign × magnitude + delta`, `magnitude` being decimal digits without
    /// leading zeros (empty for zero) and `delta` small (bounded by the literal's length).
    fn from_parts(negative: bool, magnitude: &str, delta: i64) -> Exponent {
        if magnitude.len() < 19 {
            // Below 10^19, and delta is far below 2^62: no overflow in i128.
            let value = magnitude.parse::<i128>().unwrap_or(0);
            let value = if negative { -value } else { value } + i128::from(delta);
            return match i64::try_from(value) {
                Ok(small) if small.unsigned_abs() < SMALL_EXPONENT_LIMIT => Exponent::Small(small),
                _ => Exponent::from_magnitude(value < 0, &alloc::format!("{}", value.unsigned_abs())),
            };
        }
        // At least 10^18 in magnitude and |delta| far smaller: the sign stays, the magnitude
        // moves by |delta| toward or away from zero.
        let away = (delta > 0) != negative;
        Exponent::from_magnitude(negative, &add_to_digits(magnitude, delta.unsigned_abs(), away))
    }

    /// The exponent `sign × magnitude` in its one form: `Small` below the limit, else `Huge`.
    fn from_magnitude(negative: bool, magnitude: &str) -> Exponent {
        let magnitude = magnitude.trim_start_matches('0');
        if magnitude.is_empty() {
            return Exponent::Small(0);
        }
        match magnitude.parse::<u64>() {
            Ok(small) if small < SMALL_EXPONENT_LIMIT => {
                let small = small as i64;
                Exponent::Small(if negative { -small } else { small })
            }
            _ => Exponent::Huge { negative, magnitude: String::from(magnitude) },
        }
    }
}

/// Decimal digits plus (`add`) or minus `delta`. Subtracting, the digits must be the larger
/// (the caller's are at least 10^18, `delta` far smaller); should they not be, the result
/// stops at the digits' length rather than borrowing forever.
fn add_to_digits(digits: &str, delta: u64, add: bool) -> String {
    let mut out: alloc::vec::Vec<u8> = digits.bytes().rev().map(|b| b - b'0').collect();
    let mut carry = delta;
    let mut i = 0;
    while carry > 0 {
        if i == out.len() {
            if !add {
                break;
            }
            out.push(0);
        }
        let digit = u64::from(out[i]);
        let step = carry % 10;
        carry /= 10;
        let value = if add { digit + step } else { digit + 10 - step };
        out[i] = (value % 10) as u8;
        // Carry into the next digit: one more to add, or one more to borrow.
        let overflow = if add { value >= 10 } else { value < 10 };
        carry += u64::from(overflow);
        i += 1;
    }
    out.iter().rev().map(|d| char::from(b'0' + d)).collect()
}

/// A number as `sign × digits × 10^exp10`, with `digits` free of leading and trailing zeros
/// (empty for zero).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decimal {
    /// True for a negative, non-zero value.
    pub negative: bool,
    /// The significant digits, ASCII `1-9` first and last; empty for zero.
    pub digits: String,
    /// The power of ten that `digits` is multiplied by.
    exp10: Exponent,
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
        let mut exponent = String::new();
        let mut exp_negative = false;
        if let Some(b'e' | b'E') = bytes.get(i) {
            i += 1;
            exp_negative = match bytes.get(i) {
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
                if !(exponent.is_empty() && b == b'0') {
                    exponent.push(b as char);
                }
                i += 1;
            }
            if i == start {
                return None;
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
        // Both count at most the literal's length.
        let exp10 = Exponent::from_parts(exp_negative, &exponent, trailing - fraction_len);
        Some(Decimal { negative, digits: all, exp10 })
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// The exponent `e` of the value written as `d.ddd × 10^e`; `None` when it is at least
    /// 10^18 in magnitude (far outside every range).
    pub fn scientific_exponent(&self) -> Option<i64> {
        match self.exp10 {
            Exponent::Small(e) => Some(e + self.digits.len() as i64 - 1),
            Exponent::Huge { .. } => None,
        }
    }

    /// True if DynamoDB's number type holds this value exactly: at most 38 significant digits
    /// and a magnitude between 1E-130 and 9.99…E+125 (or zero).
    pub fn fits_dynamodb(&self) -> bool {
        self.is_zero()
            || (self.digits.len() <= DYNAMO_MAX_DIGITS
                && self.scientific_exponent().is_some_and(|e| DYNAMO_EXPONENT_RANGE.contains(&e)))
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
        match &self.exp10 {
            Exponent::Small(0) => {}
            Exponent::Small(e) => {
                let _ = write!(out, "e{e}");
            }
            Exponent::Huge { negative, magnitude } => {
                out.push_str(if *negative { "e-" } else { "e" });
                out.push_str(magnitude);
            }
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
        check("1e99999999999999999999999", Some(("1e99999999999999999999999", false)));
        // Exact however long the exponent (found by fuzzing: a clamp made equal values write
        // different text, and different values the same).
        check("562910e197800000656107", Some(("56291e197800000656108", false)));
        check("56291e197800000656108", Some(("56291e197800000656108", false)));
        check("1e1099511627777", Some(("1e1099511627777", false)));
        check("10e1099511627776", Some(("1e1099511627777", false)));
        check("1.5e-99999999999999999999", Some(("15e-100000000000000000000", false)));
        check("100e-1000000000000000002", Some(("1e-1000000000000000000", false)));
        check("1000e-1000000000000000002", Some(("1e-999999999999999999", false)));
        check("0.001e999999999999999999", Some(("1e999999999999999996", false)));
        check("0.1e1000000000000000000", Some(("1e999999999999999999", false)));
        check("1e0000000000000000000000000000000012", Some(("1e12", true)));
        check("1e-0", Some(("1", true)));
        check("99.9e999999999999999998", Some(("999e999999999999999997", false)));
        // One form per value: the same exponent reached by either path is the same Decimal.
        let same = |a: &str, b: &str| assert_eq!(Decimal::parse(a), Decimal::parse(b), "{a} and {b}");
        same("10e999999999999999999", "1e1000000000000000000");
        same("1e999999999999999999", "0.1e1000000000000000000");
        same("-10e-999999999999999999", "-1e-999999999999999998");
        same("1e-999999999999999999", "0.1e-999999999999999998");
        same("1000e-1000000000000000002", "1e-999999999999999999");
        same("1e0000000000000000000000000000000000999999999999999999", "1e999999999999999999");
        same("100000e999999999999999999", "1e1000000000000000004");
        assert_ne!(Decimal::parse("1e1000000000000000000"), Decimal::parse("1e999999999999999999"));
        // Past 10^18 an exponent is out of every range; below it, it is computed with.
        let exponent = |text: &str| Decimal::parse(text).and_then(|d| d.scientific_exponent());
        assert_eq!(exponent("0.1e1000000000000000000"), Some(999_999_999_999_999_999));
        assert_eq!(exponent("12e999999999999999997"), Some(999_999_999_999_999_998));
        assert_eq!(exponent("1e1000000000000000000"), None);
        assert_eq!(exponent("10e999999999999999999"), None);
        assert_eq!(exponent("-1e-1000000000000000001"), None);
        // 18 digits that become 19, either way.
        check("10e999999999999999999", Some(("1e1000000000000000000", false)));
        check("0.1e-999999999999999999", Some(("1e-1000000000000000000", false)));
        check("-1e-1000000000000000000", Some(("-1e-1000000000000000000", false)));
        check("", None);
        check("-", None);
        check("1e", None);
        check("1.2.3", None);
        check("1 ", None);
    }
}
