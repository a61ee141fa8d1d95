//! Pacing to HubSpot's rate limits, from the headers every answer carries
//! (`X-HubSpot-RateLimit-Max`, `-Remaining`, `-Interval-Milliseconds`: the app's rolling window,
//! 100 or 190 requests per 10 s; `-Daily-Remaining`: the portal's day). No I/O and no clock:
//! the sink passes the time in and sleeps for what this says.
//!
//! A call goes when the window has room: the last answer's `Remaining` (minus the calls sent
//! since) is above zero and this worker's own calls of the last interval are below `Max`.
//! Otherwise it waits until the oldest own call of the window leaves it (or, when others used
//! the window up, until the answer that said so is an interval old).
//!
//! The day is paced too: calls are spaced so that the day's remaining calls
//! (`Daily-Remaining`, shared by every app and worker of the portal) would last 24 hours, the
//! longest the portal's midnight (in its own time zone, which answers do not say) can be away.
//! At 250,000 left that is one call per 0.35 s; a backlog then waits a little and goes in
//! fuller batches, instead of spending the day by noon and waiting for midnight. The spacing
//! is never over a minute (the last calls of a day go one a minute). A portal whose day is
//! used up (`Daily-Remaining: 0`, or a 429's `policyName: DAILY`) is called once a minute at
//! most, to learn when it is back. So is a portal whose day is down to its last tenth
//! (`Daily-Remaining` at most a tenth of `X-HubSpot-RateLimit-Daily`, the day's size as the
//! last answer that carried it said): the portal's other private apps keep it, as Salesforce's
//! 90 % stop keeps the org's; the spacing spreads the calls above it.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The window HubSpot documents when an answer does not say (10 seconds).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// How long a used-up day (or one down to its reserve) holds calls before one goes to see
/// whether it is back.
pub const DAY_PROBE_AFTER: Duration = Duration::from_secs(60);

/// The share of the portal's day, in percent, left to the portal's other integrations.
pub const DAY_RESERVE_PERCENT: u64 = 10;

/// The longest time the day's remaining calls must last.
pub const DAY: Duration = Duration::from_secs(86_400);

/// The longest pacing wait without a deadline (reconcile, redrive, the local poller): longer
/// ones hand the records back instead of holding the command.
pub const MAX_UNTIMED_WAIT: Duration = Duration::from_secs(30);

/// Whether a pacing wait of `wait` at `now` is waited: with a deadline (a Lambda invocation's),
/// the wait, one call at its timeout and the receipt's update must end by it; without one, the
/// wait must be at most [`MAX_UNTIMED_WAIT`].
pub fn wait_fits(wait: Duration, now: Instant, deadline: Option<Instant>) -> bool {
    match deadline {
        Some(deadline) => {
            now + wait + crate::sink::http::TIMEOUT + crate::sink::contract::RECEIPT_UPDATE_BUDGET <= deadline
        }
        None => wait <= MAX_UNTIMED_WAIT,
    }
}

/// What the rate-limit headers of one answer said; `None` for a header it did not carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub max: Option<u32>,
    pub remaining: Option<u32>,
    pub interval: Option<Duration>,
    pub daily_remaining: Option<u64>,
    /// The portal's day (`X-HubSpot-RateLimit-Daily`).
    pub daily: Option<u64>,
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
                "x-hubspot-ratelimit-daily" => limits.daily = value.parse().ok().filter(|day| *day > 0),
                _ => {}
            }
        }
        limits
    }

    /// The limits a 429 (and only a 429) says were hit, by its body's `policyName` ("API usage guidelines and
    /// limits": `DAILY` for the portal's day, `TEN_SECONDLY_ROLLING` for the window; the
    /// older `SECONDLY` read as the window too), over what its headers said: a 429 may carry
    /// none, and then the pacer would send the next call at once into the same refusal. A 429
    /// naming no policy it knows (or not HubSpot's JSON) holds the window when its headers do
    /// not say how much of it is left.
    pub fn refused_by(self, policy: Option<&str>) -> Limits {
        match policy {
            Some("DAILY") => Limits { daily_remaining: Some(0), ..self },
            _ => Limits { remaining: Some(self.remaining.unwrap_or(0)), ..self },
        }
    }
}

/// Whether a 429's `policyName` is the portal's day: used up until the portal's midnight.
pub fn is_daily(policy: Option<&str>) -> bool {
    policy == Some("DAILY")
}

/// Why no call may go now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Wait this long, then ask again.
    Wait(Duration),
    /// The portal's daily allocation is used up.
    DayUsedUp,
    /// The portal's day is down to its reserve ([`DAY_RESERVE_PERCENT`]).
    DayReserved,
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
    /// When an answer last said the day is used up, or down to its reserve, and which.
    day_closed: Option<(Instant, Hold)>,
    /// The portal's day, as the last answer that said it.
    daily: Option<u64>,
    /// The last answer's `Daily-Remaining`.
    daily_remaining: Option<u64>,
    /// When this worker sent its last call.
    last_sent: Option<Instant>,
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
        self.last_sent = Some(now);
        if let Some((left, _)) = &mut self.remaining {
            *left = left.saturating_sub(1);
        }
        Ok(())
    }

    /// Why a call at `now` may not go, if it may not.
    fn hold(&mut self, now: Instant) -> Option<Hold> {
        if let Some((at, closed)) = self.day_closed {
            if now < at + DAY_PROBE_AFTER {
                return Some(closed);
            }
            // The probe: nothing is known of the day until its answer.
            self.day_closed = None;
            self.daily_remaining = None;
        }
        let interval = self.interval();
        while self.sent.front().is_some_and(|sent| *sent + interval <= now) {
            self.sent.pop_front();
        }
        if self.remaining.is_some_and(|(_, at)| at + interval <= now) {
            // An answer an interval old says nothing about the window now.
            self.remaining = None;
        }
        // The day: the remaining calls above the reserve spread over 24 hours, and at least one
        // a minute.
        if let (Some(remaining), Some(last)) = (self.daily_remaining, self.last_sent) {
            let reserve = self.daily.map_or(0, |day| day.saturating_mul(DAY_RESERVE_PERCENT) / 100);
            let remaining = remaining.saturating_sub(reserve);
            let spacing = (DAY / u32::try_from(remaining.max(1)).unwrap_or(u32::MAX)).min(DAY_PROBE_AFTER);
            if now < last + spacing {
                return Some(Hold::Wait(last + spacing - now));
            }
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
        if limits.daily.is_some() {
            self.daily = limits.daily;
        }
        if let Some(left) = limits.daily_remaining {
            let reserved =
                self.daily.is_some_and(|day| left.saturating_mul(100) <= day.saturating_mul(DAY_RESERVE_PERCENT));
            self.day_closed = match left {
                0 => Some((now, Hold::DayUsedUp)),
                _ if reserved => Some((now, Hold::DayReserved)),
                _ => None,
            };
            self.daily_remaining = Some(left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u32, remaining: u32) -> Limits {
        Limits {
            max: Some(max),
            remaining: Some(remaining),
            interval: Some(DEFAULT_INTERVAL),
            daily_remaining: None,
            daily: None,
        }
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
        assert_eq!(read, Limits { daily_remaining: Some(249_990), daily: Some(250_000), ..limits(100, 7) });
        let odd = Limits::from_headers([
            ("x-hubspot-ratelimit-remaining", "-1"),
            ("x-hubspot-ratelimit-interval-milliseconds", "0"),
            ("x-hubspot-ratelimit-daily", "0"),
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
    fn without_a_remaining_count_the_own_calls_of_the_window_decide() {
        let start = Instant::now();
        let mut pacer = Pacer::default();
        let max_only = Limits { max: Some(2), interval: Some(DEFAULT_INTERVAL), ..Limits::default() };
        pacer.observe(start, max_only);
        assert_eq!(pacer.try_send(start), Ok(()));
        assert_eq!(pacer.try_send(start + Duration::from_secs(1)), Ok(()));
        assert_eq!(pacer.try_send(start + Duration::from_secs(2)), Err(Hold::Wait(Duration::from_secs(8))));
        // The first call leaves the window exactly an interval after it went.
        assert_eq!(pacer.try_send(start + DEFAULT_INTERVAL), Ok(()));
        assert_eq!(pacer.try_send(start + DEFAULT_INTERVAL), Err(Hold::Wait(Duration::from_secs(1))));
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
    fn the_days_remaining_calls_are_spread_over_24_hours() {
        let start = Instant::now();
        let mut pacer = Pacer::default();
        // 86,400 left: one call a second.
        pacer.observe(start, Limits { daily_remaining: Some(86_400), ..limits(100, 99) });
        assert_eq!(pacer.try_send(start), Ok(()));
        let half = Duration::from_millis(500);
        assert_eq!(pacer.try_send(start + half), Err(Hold::Wait(half)));
        assert_eq!(pacer.try_send(start + Duration::from_secs(1)), Ok(()));
        // 864,000 left: ten a second.
        pacer.observe(start, Limits { daily_remaining: Some(864_000), ..Limits::default() });
        assert_eq!(pacer.try_send(start + Duration::from_millis(1_100)), Ok(()));
        assert_eq!(pacer.try_send(start + Duration::from_millis(1_150)), Err(Hold::Wait(Duration::from_millis(50))));
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
        assert_eq!(pacer.try_send(probe + DAY_PROBE_AFTER), Ok(()), "back: 5 left, one a minute");
        // Used up again, then the probe a minute later is not held by the day's spacing.
        pacer.observe(probe + DAY_PROBE_AFTER, used_up);
        assert_eq!(pacer.try_send(probe + 2 * DAY_PROBE_AFTER), Ok(()), "the next probe goes");
    }

    #[test]
    fn the_last_tenth_of_the_portal_s_day_is_left_to_its_other_integrations() {
        let start = Instant::now();
        let day = |left: u64| Limits { daily_remaining: Some(left), daily: Some(250_000), ..Limits::default() };
        let mut pacer = Pacer::default();
        pacer.observe(start, day(25_001));
        assert_eq!(pacer.try_send(start), Ok(()), "above the tenth");
        pacer.observe(start, day(25_000));
        assert_eq!(pacer.try_send(start + Duration::from_secs(59)), Err(Hold::DayReserved), "a tenth left");
        let probe = start + DAY_PROBE_AFTER;
        assert_eq!(pacer.try_send(probe), Ok(()), "one call a minute asks whether the day is back");
        pacer.observe(probe, day(24_999));
        assert_eq!(pacer.try_send(probe + Duration::from_secs(1)), Err(Hold::DayReserved));
        // A new day (the portal's midnight): calls go again.
        pacer.observe(probe + DAY_PROBE_AFTER, day(250_000));
        assert_eq!(pacer.try_send(probe + 2 * DAY_PROBE_AFTER), Ok(()));
        // The day's size as the last answer that said it; an answer without it keeps it.
        pacer.observe(probe + 2 * DAY_PROBE_AFTER, Limits { daily_remaining: Some(100), ..Limits::default() });
        assert_eq!(pacer.try_send(probe + 2 * DAY_PROBE_AFTER + Duration::from_secs(1)), Err(Hold::DayReserved));
        // A used-up day is that, whatever the reserve.
        pacer.observe(probe + 3 * DAY_PROBE_AFTER, day(0));
        assert_eq!(pacer.try_send(probe + 3 * DAY_PROBE_AFTER), Err(Hold::DayUsedUp));
        // The calls above the reserve are what the spacing spreads over 24 hours: 26,000 left
        // of 250,000 is 1,000 usable, one per 86.4 s, at most a minute apart.
        let mut pacer = Pacer::default();
        pacer.observe(start, day(26_000));
        assert_eq!(pacer.try_send(start), Ok(()));
        assert_eq!(pacer.try_send(start + Duration::from_secs(1)), Err(Hold::Wait(Duration::from_secs(59))));
        pacer.observe(start, day(125_000));
        // 100,000 usable: one per 0.864 s.
        assert_eq!(pacer.try_send(start + Duration::from_millis(800)), Err(Hold::Wait(Duration::from_millis(64))));
        // Without the day's size (an OAuth app's answers carry none), only a used-up day holds.
        let mut pacer = Pacer::default();
        pacer.observe(start, Limits { daily_remaining: Some(1), ..Limits::default() });
        assert_eq!(pacer.try_send(start), Ok(()));
    }

    /// A 429 without rate-limit headers still holds the next call: by its `policyName`, the
    /// day until the probe a minute later, the window until it is an interval old.
    #[test]
    fn a_429_s_policy_holds_the_next_call_when_its_headers_say_nothing() {
        let start = Instant::now();
        let none = Limits::default();
        assert_eq!(none.refused_by(Some("DAILY")), Limits { daily_remaining: Some(0), ..none });
        assert_eq!(none.refused_by(Some("TEN_SECONDLY_ROLLING")), Limits { remaining: Some(0), ..none });
        assert_eq!(none.refused_by(Some("SECONDLY")), Limits { remaining: Some(0), ..none });
        assert_eq!(none.refused_by(Some("daily")), Limits { remaining: Some(0), ..none }, "HubSpot's names, exactly");
        assert_eq!(none.refused_by(None), Limits { remaining: Some(0), ..none }, "no policy: the window held");
        let said = Limits { remaining: Some(3), ..none };
        assert_eq!(said.refused_by(None), said, "the headers' word kept");
        // The day: held, then the probe.
        let mut pacer = Pacer::default();
        assert_eq!(pacer.try_send(start), Ok(()));
        pacer.observe(start, none.refused_by(Some("DAILY")));
        assert_eq!(pacer.try_send(start + Duration::from_secs(1)), Err(Hold::DayUsedUp));
        assert_eq!(pacer.try_send(start + DAY_PROBE_AFTER), Ok(()));
        // The window: held until the refusal is an interval old.
        let mut pacer = Pacer::default();
        assert_eq!(pacer.try_send(start), Ok(()));
        pacer.observe(start, none.refused_by(Some("TEN_SECONDLY_ROLLING")));
        assert_eq!(pacer.try_send(start + Duration::from_secs(1)), Err(Hold::Wait(Duration::from_secs(9))));
        assert_eq!(pacer.try_send(start + DEFAULT_INTERVAL), Ok(()));
        assert!(is_daily(Some("DAILY")) && !is_daily(Some("TEN_SECONDLY_ROLLING")) && !is_daily(None));
    }

    #[test]
    fn a_wait_is_waited_only_when_it_and_a_call_fit_before_the_deadline() {
        let now = Instant::now();
        let call = crate::sink::http::TIMEOUT + crate::sink::contract::RECEIPT_UPDATE_BUDGET;
        let wait = Duration::from_secs(5);
        assert!(wait_fits(wait, now, Some(now + wait + call)), "ending exactly at the deadline");
        assert!(!wait_fits(wait, now, Some(now + wait + call - Duration::from_millis(1))));
        assert!(wait_fits(MAX_UNTIMED_WAIT, now, None));
        assert!(!wait_fits(MAX_UNTIMED_WAIT + Duration::from_millis(1), now, None), "a command is not held");
    }

    #[test]
    fn the_last_calls_of_a_day_go_one_a_minute_not_hours_apart() {
        let start = Instant::now();
        let mut pacer = Pacer::default();
        pacer.observe(start, Limits { daily_remaining: Some(5), ..Limits::default() });
        assert_eq!(pacer.try_send(start), Ok(()));
        assert_eq!(pacer.try_send(start + Duration::from_secs(1)), Err(Hold::Wait(Duration::from_secs(59))));
        assert_eq!(pacer.try_send(start + DAY_PROBE_AFTER), Ok(()));
    }
}
