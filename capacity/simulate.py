"""The simulation: deliveries, duplicates, the stream, the stream worker, the sink's limits,
retried calls, the mapping's maximum record age and the reconcile job, one tick at a time.

Deterministic for a seed. Each tick: deliveries arrive (Poisson), 30 % are duplicates the edge
answers 200 without a receipt; new receipts enter the stream. The stream worker takes the
oldest records first, as fast as its capacity and the sink's limits allow. A sink's limits are
token buckets in leads: a rate limit (HubSpot's 100 calls per 10 s) is a small bucket, a daily
allocation (Salesforce's calls per 24 hours, HubSpot's per day) a large one that starts with
what the base load left of the day. A share of sink calls fail and are retried later (they
cost the budget, not progress). A record older than the mapping's maximum record age is given
up by the stream: its receipt stays RECEIVED in the table, where only reconcile finds it. A
record older than the stream's 24 hours is trimmed from the stream, the same way. Reconcile,
every 15 minutes for at most its timeout, one receipt at a time, settles every receipt waiting
longer than its threshold (in the stream or given up) through the same sink. Without
reconcile, a receipt given up or trimmed is lost: no path settles it.
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
    stream_capacity: float      # records per second the stream worker applies (shards x factor x rate)
    limits: tuple               # the sink's token buckets: ((leads per second, bucket size in leads), ...)
    reconcile_capacity: float   # leads per second one reconcile run applies (one at a time)
    max_record_age_s: float | None = v("esm_max_record_age_s")
    reconcile: bool = True
    error_rate: float = 0.02    # sink calls answered 429/5xx and retried
    calls_per_lead: float = 1   # a lead fails when any of its calls does
    seed: int = 7
    tick_s: int = 1             # the model's step; a divisor of 900 (reconcile's period)

    def sink_rate(self):
        """Leads per second the sink takes once its buckets are empty."""
        return min(rate for rate, _ in self.limits)

    def lead_error_rate(self):
        return 1 - (1 - self.error_rate) ** self.calls_per_lead


@dataclass
class Step:
    t: int
    accepted: int       # receipts stored (new deliveries)
    duplicates: int     # deliveries answered 200 from an existing receipt
    leads: int
    in_stream: int      # receipts waiting in the stream
    given_up: int       # receipts the stream gave up on (or trimmed), waiting for reconcile
    lost: int           # receipts no path will settle (given up or trimmed, no reconcile)
    oldest_age_s: int   # the oldest waiting receipt's age
    stream_age_s: int   # the oldest record still in the stream

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
    """Works through `queue` within the smallest of `budgets` (lists of one float, spent in
    place): a failed lead costs its budget and stays; returns the leads written."""
    want = int(min(b[0] for b in budgets))
    fails = binomial(rng, min(want, queue.total), error_rate)
    done = queue.take(want - fails, arrived_by)
    spent = done + (fails if done or queue.total else 0)
    for b in budgets:
        b[0] -= spent
    return done


def simulate(s: Scenario, every=1):
    """Runs the scenario one tick at a time; keeps the step at every multiple of `every` seconds
    (and the last)."""
    if 900 % s.tick_s:
        raise ValueError("tick_s must divide 900, reconcile's period")
    rng = random.Random(s.seed)
    stream, given_up = Queue(), Queue()
    accepted = duplicates = leads = lost = 0
    tick = s.tick_s
    # Each bucket: [tokens], its rate and size. A daily allocation starts with what the base
    # load left of the past 24 hours; a rate limit starts full.
    base_new = s.base_rate * (1 - DUPLICATES)
    buckets = [([max(1.0, size - base_new * 86_400) if size > rate * 60 else size], rate, size)
               for rate, size in s.limits]
    worker, reconciler = [0.0], [0.0]
    reconcile_until, cutoff = -1, None
    every_reconcile = int(v("reconcile_every_s"))
    retention = v("stream_retention_s")
    give_up_age = min(s.max_record_age_s, retention) if s.max_record_age_s is not None else retention
    lead_error = s.lead_error_rate()
    result = Result(s)
    for t in range(0, s.horizon_s, tick):
        in_burst = s.burst_start_s <= t < s.burst_start_s + s.burst_seconds
        arrived = poisson(rng, (s.burst_rate if in_burst else s.base_rate) * tick)
        dup = binomial(rng, arrived, DUPLICATES)
        duplicates += dup
        accepted += arrived - dup
        stream.add(t, arrived - dup)

        # Past the maximum record age (or the stream's 24 hours) the stream lets a record go:
        # its receipt waits in the table for reconcile, or for nothing.
        while stream.buckets and t - stream.oldest() > give_up_age:
            arrival = stream.oldest()
            count = stream.take(stream.buckets[0][1])
            if s.reconcile:
                given_up.add(arrival, count)
            else:
                lost += count

        if s.reconcile and t % every_reconcile < tick:
            reconcile_until, cutoff = t + int(v("reconcile_timeout_s")), t - v("reconcile_older_than_s")
        for tokens, rate, size in buckets:
            tokens[0] = min(tokens[0] + rate * tick, size)
        for budget, rate in ((worker, s.stream_capacity), (reconciler, s.reconcile_capacity)):
            budget[0] = min(budget[0] + rate * tick, rate * tick + 1)
        sink = [min(tokens[0] for tokens, _, _ in buckets)]
        before = sink[0]
        if t < reconcile_until:
            # Every receipt waiting longer than the threshold: given up, or still in the stream.
            for queue in (given_up, stream):
                leads += attempt(rng, queue, (sink, reconciler), lead_error, arrived_by=cutoff)
            if all(q.oldest() is None or q.oldest() > cutoff for q in (given_up, stream)):
                reconcile_until = t
        leads += attempt(rng, stream, (sink, worker), lead_error)
        for tokens, _, _ in buckets:
            tokens[0] -= before - sink[0]

        if t % every < tick or t + tick >= s.horizon_s:
            waiting = [a for a in (stream.oldest(), given_up.oldest()) if a is not None]
            in_stream = t - stream.oldest() if stream.oldest() is not None else 0
            result.steps.append(Step(t, accepted, duplicates, leads, stream.total, given_up.total, lost,
                                     t - min(waiting) if waiting else 0, in_stream))
    return result


def summary(result):
    """What a scenario shows: peak backlog and age, when the burst's backlog drained (with nothing
    lost meanwhile), when a record first stayed in the stream 24 hours, and what was lost. Times
    are from the burst's start."""
    s, steps = result.scenario, result.steps
    burst_end = s.burst_start_s + s.burst_seconds
    peak = max(steps, key=lambda x: x.backlog)
    after = [x for x in steps if x.t >= burst_end]
    at_end = after[0] if after else steps[-1]
    drained = next((x for x in after if x.backlog <= max(1, 2 * s.base_rate) and x.t > peak.t), None)
    if drained is not None and drained.lost > at_end.lost:
        drained = None
    crossed = next((x for x in steps if x.stream_age_s >= v("stream_retention_s")), None)
    return {
        "peak_backlog": peak.backlog,
        "peak_at_s": peak.t,
        "backlog_at_burst_end": at_end.backlog,
        "oldest_age_peak_s": max(x.oldest_age_s for x in steps),
        "drained_after_burst_s": (drained.t - burst_end) if drained else None,
        "retention_crossed_at_s": (crossed.t - s.burst_start_s) if crossed else None,
        "given_up_peak": max(x.given_up for x in steps),
        "lost": steps[-1].lost,
        "accepted": steps[-1].accepted,
        "leads": steps[-1].leads,
        "horizon_after_burst_s": s.horizon_s - burst_end,
    }


def longest_burst_within_retention(s: Scenario):
    """The longest burst (seconds) after which no record waits past the stream's 24 hours when
    only the stream works (first in, first out): the record arriving at the burst's end waits
    longest, burst * (arrivals / capacity - 1). Infinite when the capacity keeps up."""
    arrivals = s.burst_rate * (1 - DUPLICATES)
    capacity = min(s.sink_rate(), s.stream_capacity) * (1 - s.lead_error_rate())
    if arrivals <= capacity:
        return math.inf
    return v("stream_retention_s") / (arrivals / capacity - 1)


def predicted_drain_rate(s: Scenario):
    """How fast the backlog shrinks once the burst is over, while only the stream works on it
    (nothing given up) and the sink's buckets are empty: the stream's rate, within the sink's
    limit and less retried calls, minus the base load's new receipts."""
    new = s.base_rate * (1 - DUPLICATES)
    return min(s.sink_rate(), s.stream_capacity) * (1 - s.lead_error_rate()) - new
