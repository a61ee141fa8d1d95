//! Pacing to HubSpot's rate limits, from the headers every answer carries
//! (`X-HubSpot-RateLimit-Max`, `-Remaining`, `-Interval-Milliseconds`: the app's rolling window,
//! 100 or 190 requests per 10 s; `-Daily-Remaining`: the portal's day). No I/O and no clock:
//! the sink passes the time in and sleeps for what this says.
//!
//! A call goes when the window has room: the last answer's `Remaining` (minus the calls sent
//! since) is above zero and this worker's own calls of the last interval are below `Max`.
//! Otherwise it waits until the oldest own call of the window leaves it (or, when others used
//! the window up, until the answer that said so is an interval old). A portal whose day is
//! used up (`Daily-Remaining: 0`) is called once a minute at most, to learn when it is back.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The window HubSpot documents when an answer does not say (10 seconds).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// How long a used-up day holds calls before one goes to see whether it is back.
pub const DAY_PROBE_AFTER: Duration = Duration::from_secs(60);

/// What the rate-limit headers of one answer said; `None` for a header it did not carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub max: Option<u32>,
    pub remaining: Option<u32>,
    pub interval: Option<Duration>,
    pub daily_remaining: Option<u64>,
}

impl Limits {
    /// The limits in an answer's headers, by name (any case).
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Limits {
        let mut limits = Limits::default();
        for (name, value) in headers {
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "x-hubspot-ratelimit-max" => limits.max = value.parse().ok(),
                "x-hubspot-ratelimit-remaining" => limits.remaining = value.parse().ok(),
                "x-hubspot-ratelimit-interval-milliseconds" => {
                    limits.interval = value.parse().ok().filter(|ms| *ms > 0).map(Duration::from_millis)
                }
                "x-hubspot-ratelimit-daily-remaining" => limits.daily_remaining = value.parse().ok(),
                _ => {}
            }
        }
        limits
    }
}

/// Why no call may go now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Wait this long, then ask again.
    Wait(Duration),
    /// The portal's daily allocation is used up.
    DayUsedUp,
}

/// The state of the window as this worker knows it.
#[derive(Debug, Default)]
pub struct Pacer {
    max: Option<u32>,
    interval: Option<Duration>,
    /// When this worker sent each call of the current window, oldest first.
    sent: VecDeque<Instant>,
    /// The last answer's `Remaining`, less the calls sent since, and when it came.
    remaining: Option<(u32, Instant)>,
    /// When an answer last said the day is used up.
    day_used_up: Option<Instant>,
}

impl Pacer {
    fn interval(&self) -> Duration {
        self.interval.unwrap_or(DEFAULT_INTERVAL)
    }

    /// Whether a call may go at `now` (then it is counted as sent), or how long to hold it.
    pub fn try_send(&mut self, now: Instant) -> Result<(), Hold> {
        if let Some(hold) = self.hold(now) {
            return Err(hold);
        }
        self.sent.push_back(now);
        if let Some((left, _)) = &mut self.remaining {
            *left = left.saturating_sub(1);
        }
        Ok(())
    }

    /// Why a call at `now` may not go, if it may not.
    fn hold(&mut self, now: Instant) -> Option<Hold> {
        if let Some(at) = self.day_used_up {
            if now < at + DAY_PROBE_AFTER {
                return Some(Hold::DayUsedUp);
            }
            self.day_used_up = None;
        }
        let interval = self.interval();
        while self.sent.front().is_some_and(|sent| *sent + interval <= now) {
            self.sent.pop_front();
        }
        if self.remaining.is_some_and(|(_, at)| at + interval <= now) {
            // An answer an interval old says nothing about the window now.
            self.remaining = None;
        }
        let own_full = self.max.is_some_and(|max| self.sent.len() >= max as usize);
        let window_used_up = self.remaining.is_some_and(|(left, _)| left == 0);
        if !(own_full || window_used_up) {
            return None;
        }
        let frees_at = match (self.sent.front(), self.remaining) {
            (Some(oldest), _) => *oldest + interval,
            (None, Some((_, at))) => at + interval,
            (None, None) => now,
        };
        Some(Hold::Wait(frees_at.saturating_duration_since(now).max(Duration::from_millis(1))))
    }

    /// What an answer that came at `now` said.
    pub fn observe(&mut self, now: Instant, limits: Limits) {
        if limits.max.is_some() {
            self.max = limits.max;
        }
        if limits.interval.is_some() {
            self.interval = limits.interval;
        }
        if let Some(remaining) = limits.remaining {
            self.remaining = Some((remaining, now));
        }
        if let Some(daily) = limits.daily_remaining {
            self.day_used_up = (daily == 0).then_some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u32, remaining: u32) -> Limits {
        Limits { max: Some(max), remaining: Some(remaining), interval: Some(DEFAULT_INTERVAL), daily_remaining: None }
    }

    #[test]
    fn headers_are_read_by_name_in_any_case_and_odd_values_are_ignored() {
        let read = Limits::from_headers([
            ("X-HubSpot-RateLimit-Max", "100"),
            ("x-hubspot-ratelimit-remaining", " 7 "),
            ("X-HUBSPOT-RATELIMIT-INTERVAL-MILLISECONDS", "10000"),
            ("X-HubSpot-RateLimit-Daily-Remaining", "249990"),
            ("X-HubSpot-RateLimit-Daily", "250000"),
        ]);
        assert_eq!(read, Limits { daily_remaining: Some(249_990), ..limits(100, 7) });
        let odd = Limits::from_headers([
            ("x-hubspot-ratelimit-remaining", "-1"),
            ("x-hubspot-ratelimit-interval-milliseconds", "0"),
        ]);
        assert_eq!(odd, Limits::default());
    }

    #[test]
    fn calls_go_while_the_window_has_room_and_wait_for_its_oldest_call_to_leave_it() {
        let start = Instant::now();
        let mut pacer = Pacer::default();
        // Nothing known yet: the first call goes, and its answer says 3 left of 4.
        assert_eq!(pacer.try_send(start), Ok(()));
        pacer.observe(start, limits(4, 3));
        for second in 1..=3 {
            assert_eq!(pacer.try_send(start + Duration::from_secs(second)), Ok(()), "call {second}");
        }
        // 4 sent at 0, 1, 2, 3 s: the fifth waits until the first leaves the window at 10 s.
        let at = start + Duration::from_secs(4);
        assert_eq!(pacer.try_send(at), Err(Hold::Wait(Duration::from_secs(6))));
        assert_eq!(pacer.try_send(start + Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn a_window_others_used_up_is_waited_out_from_the_answer_that_said_so() {
        let start = Instant::now();
        let mut pacer = Pacer::default();
        pacer.observe(start, limits(100, 0));
        assert_eq!(pacer.try_send(start + Duration::from_secs(2)), Err(Hold::Wait(Duration::from_secs(8))));
        assert_eq!(pacer.try_send(start + Duration::from_secs(10)), Ok(()), "an interval later it says nothing");
    }

    #[test]
    fn a_used_up_day_holds_calls_but_one_a_minute_that_asks_whether_it_is_back() {
        let start = Instant::now();
        let mut pacer = Pacer::default();
        let used_up = Limits { daily_remaining: Some(0), ..Limits::default() };
        pacer.observe(start, used_up);
        assert_eq!(pacer.try_send(start + Duration::from_secs(59)), Err(Hold::DayUsedUp));
        let probe = start + DAY_PROBE_AFTER;
        assert_eq!(pacer.try_send(probe), Ok(()), "one call goes to ask");
        pacer.observe(probe, used_up);
        assert_eq!(pacer.try_send(probe + Duration::from_secs(1)), Err(Hold::DayUsedUp), "still used up");
        pacer.observe(probe, Limits { daily_remaining: Some(5), ..Limits::default() });
        assert_eq!(pacer.try_send(probe + Duration::from_secs(1)), Ok(()), "back");
    }
}
