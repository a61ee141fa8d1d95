//! Timestamps the caller passes in, rendered as ISO-8601 UTC. This module reads no clock.

use alloc::string::String;
use core::fmt::Write as _;

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch (years 1970 to 9999).
pub fn iso8601_millis(unix_millis: u64) -> String {
    let secs = unix_millis / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = String::with_capacity(24);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_millis % 1000
    );
    out
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn known_instants() {
        // Values from `date -u -d @<secs> +%FT%T`.
        for (millis, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_796_019_713_123, "2026-11-30T06:21:53.123Z"),
            (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
            // Century and 400-year boundaries, where the algorithm's correction terms act.
            (951_868_799_000, "2000-02-29T23:59:59.000Z"),
            (951_868_800_000, "2000-03-01T00:00:00.000Z"),
            (3_981_312_000_000, "2096-02-29T00:00:00.000Z"),
            (4_107_456_000_000, "2100-02-28T00:00:00.000Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (13_569_465_599_000, "2399-12-31T23:59:59.000Z"),
            (13_574_563_200_000, "2400-02-29T00:00:00.000Z"),
            (13_601_001_600_000, "2400-12-31T00:00:00.000Z"),
            (253_402_300_799_000, "9999-12-31T23:59:59.000Z"),
        ] {
            assert_eq!(iso8601_millis(millis), text);
        }
    }
}
