//! The org's daily API allocation, read from `Sforce-Limit-Info: api-usage=<used>/<limit>` on
//! every answer (Salesforce REST API, "Limit Info Header"). The allocation is shared by every
//! integration and user of the org, so the sink leaves them the last tenth: at 90 % used it
//! stops calling and hands its records back (retried as `sink_allocation_reserved`), and calls
//! once a minute to learn when the rolling 24-hour count has come down. No I/O and no clock.

use std::time::Duration;

use tokio::time::Instant;

/// The part of the allocation the sink may use, as a fraction (90 %).
pub const USABLE: (u64, u64) = (9, 10);

/// How long a reading over the usable part holds calls before one goes to read it again.
pub const RECHECK_AFTER: Duration = Duration::from_secs(60);

/// `(used, limit)` from an `api-usage=used/limit` header value. Salesforce separates entries
/// with `;` (`api-usage=25/5000; per-app-api-usage=17/250(appName=x)`, `api-bursts=1/750`);
/// other entries are ignored, and so is anything after the limit's digits.
pub fn api_usage(header: &str) -> Option<(u64, u64)> {
    header.split([';', ',']).find_map(|entry| {
        let (used, limit) = entry.trim().strip_prefix("api-usage=")?.split_once('/')?;
        let digits = limit.trim_start().split(|c: char| !c.is_ascii_digit()).next()?;
        Some((used.trim().parse().ok()?, digits.parse().ok()?))
    })
}

/// The last reading and when it came.
#[derive(Debug, Default)]
pub struct Allocation {
    last: Option<(u64, u64, Instant)>,
}

impl Allocation {
    /// Notes a reading that came at `now`.
    pub fn observe(&mut self, now: Instant, (used, limit): (u64, u64)) {
        self.last = Some((used, limit, now));
    }

    /// Whether a call may go at `now`: the last reading leaves room, or it is old enough to
    /// be read again.
    pub fn allows(&self, now: Instant) -> bool {
        match self.last {
            Some((used, limit, at)) if used * USABLE.1 >= limit * USABLE.0 => now >= at + RECHECK_AFTER,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_read_among_other_entries_and_odd_values_are_ignored() {
        assert_eq!(api_usage("api-usage=18/15000"), Some((18, 15_000)));
        // Salesforce's documented forms: entries separated by `;`.
        assert_eq!(api_usage("api-usage=25/5000; per-app-api-usage=17/250(appName=sample-app)"), Some((25, 5_000)));
        assert_eq!(api_usage("per-app-api-usage=17/250(appName=x); api-usage=20/15000"), Some((20, 15_000)));
        assert_eq!(api_usage("api-usage=10018/100000; api-bursts=1/750"), Some((10_018, 100_000)));
        for odd in ["", "api-usage=", "api-usage=1", "api-usage=a/5", "usage=1/5"] {
            assert_eq!(api_usage(odd), None, "{odd:?}");
        }
    }

    #[test]
    fn calls_stop_at_nine_tenths_and_one_a_minute_reads_the_allocation_again() {
        let start = Instant::now();
        let mut allocation = Allocation::default();
        assert!(allocation.allows(start), "nothing read yet");
        allocation.observe(start, (899, 1000));
        assert!(allocation.allows(start));
        allocation.observe(start, (900, 1000));
        assert!(!allocation.allows(start + Duration::from_secs(59)));
        assert!(allocation.allows(start + RECHECK_AFTER), "one call goes to read it again");
        allocation.observe(start + RECHECK_AFTER, (500, 1000));
        assert!(allocation.allows(start + RECHECK_AFTER));
    }
}
