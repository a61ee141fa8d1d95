//! How long a record that keeps being refused for a reason that stands waits before its next
//! try.
//!
//! A refusal an administrator must fix (a deleted pipeline stage, a validation rule, a required
//! field, a revoked token), or a used-up daily allocation, refuses every try alike; retried at
//! once, it would cost calls every few seconds per shard until it changes. Each consecutive
//! refusal of the same record doubles the wait, from [`FIRST`] up to [`CAP`], with "equal
//! jitter" (half the wait fixed, half random) so shards do not retry in step: a standing fault
//! then costs one try every 60 to 120 seconds, and a fault fixed early is tried again within a
//! second. The caller passes the randomness in.

use core::time::Duration;

/// The wait's ceiling after the first refusal.
pub const FIRST: Duration = Duration::from_secs(1);

/// The longest ceiling: a standing fault is tried every 60 to 120 seconds.
pub const CAP: Duration = Duration::from_secs(120);

/// The wait before the next try of a record refused `streak` times in a row (1 after the
/// first refusal), given a `random` number: between half the ceiling and the ceiling, which is
/// `first` ([`FIRST`]; tests pass less) doubled per refusal after the first, at most [`CAP`].
pub fn delay(first: Duration, streak: u32, random: u64) -> Duration {
    let doublings = streak.saturating_sub(1).min(24);
    let ceiling = (first.as_millis() as u64).saturating_mul(1 << doublings).min(CAP.as_millis() as u64);
    let half = ceiling / 2;
    Duration::from_millis(half + random % (ceiling - half + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_a_second_to_two_minutes_half_of_it_random() {
        let ms = |d: Duration| d.as_millis() as u64;
        // A random 0 gives half the ceiling, half the ceiling more gives the ceiling.
        assert_eq!(ms(delay(FIRST, 1, 0)), 500);
        assert_eq!(ms(delay(FIRST, 1, 500)), 1_000, "the ceiling itself");
        assert_eq!(ms(delay(FIRST, 1, 501)), 500, "and round again");
        assert_eq!(ms(delay(FIRST, 2, 0)), 1_000);
        assert_eq!(ms(delay(FIRST, 2, 1_000)), 2_000);
        assert_eq!(ms(delay(FIRST, 7, 0)), 32_000);
        assert_eq!(ms(delay(FIRST, 8, 0)), 60_000, "128 s capped at 120");
        assert_eq!(ms(delay(FIRST, 8, 60_000)), 120_000);
        for streak in [8, 9, 40, u32::MAX] {
            assert_eq!(ms(delay(FIRST, streak, 0)), 60_000, "{streak}");
            for random in [1, 59_999, 60_000, 60_001, u64::MAX] {
                let wait = ms(delay(FIRST, streak, random));
                assert!((60_000..=120_000).contains(&wait), "{streak} {random}: {wait}");
            }
        }
        assert_eq!(delay(FIRST, 0, 0), delay(FIRST, 1, 0), "no refusal yet reads as the first");
        assert_eq!(ms(delay(Duration::from_millis(10), 3, 0)), 20, "a shorter first wait doubles alike");
        assert_eq!(ms(delay(Duration::from_millis(10), 40, 0)), 60_000, "up to the same cap");
    }
}
