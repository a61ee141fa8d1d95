//! Spacing the tries of a record the sink keeps refusing for a reason that stands until
//! something changes ([`crate::sink::contract::stands`]: the org's rules, a missing property,
//! the credentials, a used-up day): each record's refusals in a row and when it may be tried
//! again ([`shared::backoff::delay`]). Kept per process (a Lambda execution environment, the
//! local poller) by receipt key, so best-effort: a retry that lands in another environment
//! starts from the first wait. The handler holds a batch back while its first record waits
//! (`handler/hold.rs`).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::sink::contract::stands;

/// Records remembered at most; past it, those whose wait is over are forgotten.
const MAX_REMEMBERED: usize = 10_000;

/// The records refused for reasons that stand, by receipt key.
pub struct Backoff {
    refused: Mutex<HashMap<String, Refused>>,
    /// This process's randomness for the waits' jitter.
    random: RandomState,
    /// The wait's ceiling after a record's first refusal.
    first: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::starting_at(shared::backoff::FIRST)
    }
}

/// A record's refusals in a row, the last one's reason, and when it may be tried again.
#[derive(Clone, Copy)]
struct Refused {
    streak: u32,
    reason: &'static str,
    until: Instant,
}

impl Backoff {
    /// Waits that start at `first` (tests that refuse a record many times pass milliseconds),
    /// doubling up to the same cap.
    pub fn starting_at(first: Duration) -> Backoff {
        Backoff { refused: Mutex::default(), random: RandomState::new(), first }
    }

    /// Until when the record of `key` waits at `now`, and the reason it was refused for.
    pub fn waiting(&self, key: &str, now: Instant) -> Option<(Instant, &'static str)> {
        let refused = self.refused.lock().ok()?;
        refused.get(key).filter(|r| r.until > now).map(|r| (r.until, r.reason))
    }

    /// Notes what came of the record of `key` at `now`: refused for a `reason` that stands, it waits
    /// longer than after its last refusal; anything else (done, or retried for a passing
    /// condition) forgets it.
    pub fn note(&self, key: &str, reason: Option<&'static str>, now: Instant) {
        let Ok(mut refused) = self.refused.lock() else { return };
        let Some(reason) = reason.filter(|r| stands(r)) else {
            refused.remove(key);
            return;
        };
        if refused.len() >= MAX_REMEMBERED && !refused.contains_key(key) {
            refused.retain(|_, r| r.until > now);
            if refused.len() >= MAX_REMEMBERED {
                return;
            }
        }
        let streak = refused.get(key).map_or(1, |r| r.streak.saturating_add(1));
        let until = now + shared::backoff::delay(self.first, streak, self.random.hash_one((key, streak)));
        refused.insert(key.to_owned(), Refused { streak, reason, until });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setup refusal in a row waits longer; anything else forgets the record.
    #[test]
    fn refusals_in_a_row_wait_longer_and_anything_else_forgets_the_record() {
        let backoff = Backoff::default();
        let now = Instant::now();
        let wait = |backoff: &Backoff| backoff.waiting("k", now).map(|(until, reason)| (until - now, reason));
        assert_eq!(wait(&backoff), None);
        backoff.note("k", Some("sink_org_validation_rule"), now);
        let (first, reason) = wait(&backoff).unwrap();
        assert!((Duration::from_millis(500)..=Duration::from_secs(1)).contains(&first), "{first:?}");
        assert_eq!(reason, "sink_org_validation_rule");
        backoff.note("k", Some("sink_unauthorized"), now);
        let (second, reason) = wait(&backoff).unwrap();
        assert!((Duration::from_secs(1)..=Duration::from_secs(2)).contains(&second), "{second:?}");
        assert_eq!(reason, "sink_unauthorized", "the last refusal's reason");
        assert_eq!(backoff.waiting("k", now + second), None, "the wait is over at its end");
        // A refusal that passes by itself, or the lead taken: forgotten, the next refusal
        // starts again from the first wait.
        for outcome in [Some("sink_unavailable"), None] {
            backoff.note("k", Some("sink_org_automation"), now);
            backoff.note("k", outcome, now);
            assert_eq!(wait(&backoff), None, "{outcome:?}");
        }
        backoff.note("k", Some("sink_org_automation"), now);
        assert!(wait(&backoff).unwrap().0 <= Duration::from_secs(1));
        assert_eq!(backoff.waiting("other", now), None, "by receipt key");
    }

    /// At most [`MAX_REMEMBERED`] records: a new one past it is remembered only once others'
    /// waits are over; one already remembered still waits longer.
    #[test]
    fn at_most_so_many_records_are_remembered() {
        let backoff = Backoff::default();
        let now = Instant::now();
        for i in 0..MAX_REMEMBERED {
            backoff.note(&i.to_string(), Some("sink_org_permissions"), now);
        }
        backoff.note("new", Some("sink_org_permissions"), now);
        assert_eq!(backoff.waiting("new", now), None, "every other record still waits");
        let (before, _) = backoff.waiting("7", now).unwrap();
        backoff.note("7", Some("sink_org_permissions"), now);
        assert!(backoff.waiting("7", now).unwrap().0 - now >= Duration::from_secs(1), "{before:?}");
        let later = now + Duration::from_secs(5);
        backoff.note("new", Some("sink_org_permissions"), later);
        assert!(backoff.waiting("new", later).is_some(), "the records whose wait was over are forgotten");
        assert!(backoff.waiting("7", now).is_none(), "forgotten with them: its wait ended before 5 s");
        // A wait that ends at the very instant of the next refusal is over too.
        let backoff = Backoff::starting_at(Duration::ZERO);
        for i in 0..MAX_REMEMBERED {
            backoff.note(&i.to_string(), Some("sink_org_permissions"), now);
        }
        let just_before = now - Duration::from_millis(1);
        assert!(backoff.waiting("0", just_before).is_some());
        backoff.note("new", Some("sink_org_permissions"), now);
        assert!(backoff.waiting("new", just_before).is_some(), "the waits ending now were forgotten");
    }
}
