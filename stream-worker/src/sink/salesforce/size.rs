//! How many Leads one sObject Collections call carries: up to 200, fewer after a call that ran
//! too long, for the client (its timeout) or for Salesforce (`REQUEST_RUNNING_TOO_LONG`): an
//! org whose Lead automation makes 200 records one slow transaction gets 50, then 10, and the
//! same records are not sent again whole into the same timeout. Ten calls in a row that did
//! not run too long take it back up a step.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// The sizes, largest first: Salesforce takes up to 200 records per call.
pub const STEPS: [usize; 3] = [200, 50, 10];

/// Calls in a row that did not run too long before the size goes back up a step.
pub const GROW_AFTER: u32 = 10;

/// The size now, as this process's calls have found the org.
#[derive(Debug, Default)]
pub struct CollectionSize {
    /// The index in [`STEPS`].
    step: AtomicUsize,
    /// Calls in a row that did not run too long, at this step.
    in_a_row: AtomicU32,
}

impl CollectionSize {
    /// Records per call now.
    pub fn current(&self) -> usize {
        STEPS[self.step.load(Ordering::Relaxed)]
    }

    /// Notes one call: whether it ran too long.
    pub fn note(&self, too_long: bool) {
        if too_long {
            let smaller = |step: usize| Some((step + 1).min(STEPS.len() - 1));
            let _ = self.step.fetch_update(Ordering::Relaxed, Ordering::Relaxed, smaller);
            self.in_a_row.store(0, Ordering::Relaxed);
        } else if self.in_a_row.fetch_add(1, Ordering::Relaxed) + 1 >= GROW_AFTER {
            self.in_a_row.store(0, Ordering::Relaxed);
            let _ = self.step.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |step| step.checked_sub(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_runs_too_long_makes_the_next_smaller_and_ten_that_do_not_make_it_larger() {
        let size = CollectionSize::default();
        assert_eq!(size.current(), 200);
        size.note(true);
        assert_eq!(size.current(), 50);
        size.note(true);
        size.note(true);
        assert_eq!(size.current(), 10, "never below 10");
        for _ in 0..GROW_AFTER - 1 {
            size.note(false);
        }
        assert_eq!(size.current(), 10, "nine are not enough");
        size.note(false);
        assert_eq!(size.current(), 50);
        // One too long resets the count.
        for _ in 0..GROW_AFTER - 1 {
            size.note(false);
        }
        size.note(true);
        assert_eq!(size.current(), 10);
        for _ in 0..GROW_AFTER - 1 {
            size.note(false);
        }
        assert_eq!(size.current(), 10, "counted afresh after the one too long");
        size.note(false);
        for _ in 0..GROW_AFTER {
            size.note(false);
        }
        assert_eq!(size.current(), 200);
        for _ in 0..GROW_AFTER {
            size.note(false);
        }
        assert_eq!(size.current(), 200, "never above 200");
    }
}
