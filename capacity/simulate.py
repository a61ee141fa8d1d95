"""The simulation: deliveries, duplicates, the stream, the stream worker, the sink's limit,
retries, the mapping's maximum record age and the reconcile job, one second at a time.

Deterministic for a seed. Each second: deliveries arrive (Poisson), 30 % are duplicates the edge
answers 200 without a receipt; new receipts enter the stream. The stream worker takes the
oldest records first, as fast as its capacity and the sink's remaining budget allow; a share
of sink calls fail and are retried (they cost budget, not progress). A record older than the
mapping's maximum record age is given up by the stream and stays RECEIVED in the table; the
reconcile job, every 15 minutes, settles receipts waiting longer than its threshold, for at
most its timeout, through the same sink. Without a maximum record age, a record older than the
stream's 24 hours is trimmed from the stream: reconcile still finds its receipt, and without
reconcile it is lost.
"""
import math
import random
from collections import deque
from dataclasses import dataclass, field

from params import DUPLICATES, value as v


@dataclass
class Scenario:
    name: str
    base_rate: float            # deliveries per second
    burst_rate: float           # deliveries per second during the burst
    burst_start_s: int
    burst_seconds: int
    horizon_s: int
    stream_capacity: float      # records per second the stream worker can apply
    sink_capacity: float        # leads per second the sink's limit allows (stream and reconcile together)
    reconcile_capacity: float   # leads per second one reconcile run applies
    max_record_age_s: float | None = v("esm_max_record_age_s")
    reconcile: bool = True
    error_rate: float = 0.02    # sink calls answered 429/5xx and retried
    seed: int = 7
    tick_s: int = 1             # the model's step; a divisor of 900 (reconcile's period)


@dataclass
class Step:
    t: int
    accepted: int       # receipts stored (new deliveries)
    duplicates: int     # deliveries answered 200 from an existing receipt
    leads: int
    in_stream: int      # receipts waiting in the stream
    given_up: int       # receipts the stream gave up on, waiting for reconcile
    lost: int           # receipts no path will settle (trimmed from the stream, no reconcile)
    oldest_age_s: int   # the oldest waiting receipt's age

    @property
    def backlog(self):
        return self.in_stream + self.given_up


@dataclass
class Result:
    scenario: Scenario
    steps: list = field(default_factory=list)


def poisson(rng, mean):
    if mean <= 0:
        return 0
    if mean > 50:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def binomial(rng, n, p):
    if n > 50:
        return min(n, max(0, round(rng.gauss(n * p, math.sqrt(n * p * (1 - p))))))
    return sum(1 for _ in range(n) if rng.random() < p)


class Queue:
    """Waiting receipts in arrival order, as [arrival second, count] buckets, with their total."""

    def __init__(self):
        self.buckets, self.total = deque(), 0

    def add(self, arrival, count):
        if count:
            self.buckets.append([arrival, count])
            self.total += count

    def oldest(self):
        return self.buckets[0][0] if self.buckets else None

    def take(self, n, arrived_by=None):
        """Removes up to `n` from the front (only those that arrived by `arrived_by`, when
        given); returns how many."""
        taken = 0
        while self.buckets and taken < n and (arrived_by is None or self.buckets[0][0] <= arrived_by):
            moved = min(self.buckets[0][1], n - taken)
            self.buckets[0][1] -= moved
            taken += moved
            if self.buckets[0][1] == 0:
                self.buckets.popleft()
        self.total -= taken
        return taken


def attempt(rng, queue, budgets, error_rate, arrived_by=None):
    """Works through `queue` with the smallest of `budgets` (lists of one float, spent in place):
    a share of the calls fail and are retried later; returns the leads written."""
    want = int(min(b[0] for b in budgets))
    fails = binomial(rng, want, error_rate)
    done = queue.take(want - fails, arrived_by)
    spent = want if done == want - fails else done
    for b in budgets:
        b[0] -= spent
    return done


def simulate(s: Scenario, every=1):
    """Runs the scenario one tick at a time; keeps the step at every multiple of `every` seconds
    (and the last)."""
    rng = random.Random(s.seed)
    stream, given_up = Queue(), Queue()
    accepted = duplicates = leads = lost = 0
    # Rate budgets carry a fraction over, so a limit of 1.7 per second is 1.7 on average.
    sink, worker, reconciler = [0.0], [0.0], [0.0]
    reconcile_until, cutoff = -1, None
    every_reconcile = int(v("reconcile_every_s"))
    limit_age = s.max_record_age_s if s.max_record_age_s is not None else v("stream_retention_s")
    result = Result(s)
    tick = s.tick_s
    for t in range(0, s.horizon_s, tick):
        in_burst = s.burst_start_s <= t < s.burst_start_s + s.burst_seconds
        arrived = poisson(rng, (s.burst_rate if in_burst else s.base_rate) * tick)
        dup = binomial(rng, arrived, DUPLICATES)
        duplicates += dup
        accepted += arrived - dup
        stream.add(t, arrived - dup)

        # Past the maximum record age the stream gives a record up (its receipt waits for
        # reconcile); without one, past its retention the stream trims it.
        while stream.buckets and t - stream.oldest() > limit_age:
            arrival = stream.oldest()
            count = stream.take(stream.buckets[0][1])
            if s.max_record_age_s is not None or s.reconcile:
                given_up.add(arrival, count)
            else:
                lost += count

        if s.reconcile and t % every_reconcile < tick:
            reconcile_until, cutoff = t + int(v("reconcile_timeout_s")), t - v("reconcile_older_than_s")
        for budget, rate in ((sink, s.sink_capacity), (worker, s.stream_capacity), (reconciler, s.reconcile_capacity)):
            budget[0] = min(budget[0] + rate * tick, rate * tick + 1)
        if t < reconcile_until:
            leads += attempt(rng, given_up, (sink, reconciler), s.error_rate, arrived_by=cutoff)
            if given_up.oldest() is None or given_up.oldest() > cutoff:
                reconcile_until = t
        leads += attempt(rng, stream, (sink, worker), s.error_rate)

        waiting = [a for a in (stream.oldest(), given_up.oldest()) if a is not None]
        if t % every < tick or t + tick >= s.horizon_s:
            result.steps.append(Step(t, accepted, duplicates, leads, stream.total, given_up.total, lost,
                                     t - min(waiting) if waiting else 0))
    return result


def summary(result):
    """What a scenario shows: peak backlog and age, when the burst's backlog drained, whether
    the stream's 24 hours were crossed, and what was lost."""
    s, steps = result.scenario, result.steps
    burst_end = s.burst_start_s + s.burst_seconds
    peak = max(steps, key=lambda x: x.backlog)
    after = [x for x in steps if x.t >= burst_end]
    at_end = after[0] if after else steps[-1]
    drained = next((x for x in after if x.backlog <= max(1, 2 * s.base_rate) and x.t > peak.t), None)
    crossed = next((x for x in steps if x.oldest_age_s >= v("stream_retention_s") or x.lost), None)
    return {
        "peak_backlog": peak.backlog,
        "peak_at_s": peak.t,
        "backlog_at_burst_end": at_end.backlog,
        "oldest_age_peak_s": max(x.oldest_age_s for x in steps),
        "drained_after_burst_s": (drained.t - burst_end) if drained else None,
        "retention_crossed_at_s": crossed.t if crossed else None,
        "given_up_peak": max(x.given_up for x in steps),
        "lost": steps[-1].lost,
        "accepted": steps[-1].accepted,
        "leads": steps[-1].leads,
    }


def longest_burst_within_retention(s: Scenario):
    """The longest burst (seconds) after which no record waits past the stream's 24 hours when
    only the stream works (first in, first out): the record arriving at the burst's end waits
    longest, burst * (arrivals / capacity - 1). Infinite when the capacity keeps up."""
    arrivals = s.burst_rate * (1 - DUPLICATES)
    capacity = min(s.sink_capacity, s.stream_capacity) * (1 - s.error_rate)
    if arrivals <= capacity:
        return math.inf
    return v("stream_retention_s") / (arrivals / capacity - 1)


def predicted_drain_rate(s: Scenario):
    """How fast the backlog shrinks once the burst is over, while only the stream works on it
    (nothing given up yet): the stream's rate, within the sink's limit and less retried calls,
    minus the base load's new receipts."""
    new = s.base_rate * (1 - DUPLICATES)
    return min(s.sink_capacity, s.stream_capacity) * (1 - s.error_rate) - new
