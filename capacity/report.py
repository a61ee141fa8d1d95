"""The report (`target/capacity/report.md`) and its chart (`backlog.svg`): the model's tables at
each rate, the costs, and the simulated bursts."""
import math

import model
import simulate
from params import DUPLICATES, FIGURES, RATES, READ_ON, value as v  # noqa: F401


def number(x, digits=0):
    if x is None:
        return "-"
    if x == math.inf:
        return "no limit"
    if abs(x) >= 100 or digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def ratio(headroom):
    return "<0.01x" if headroom < 0.01 else f"{number(headroom, 2)}x"


def duration(seconds):
    if seconds is None:
        return "-"
    if seconds == math.inf:
        return "any"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min"


def limits(sink):
    """A sink's limits as token buckets in leads, at full batches (a backlog is worked through
    in full batches): its rate limit (10 seconds' worth), its daily allocation (a day's worth)."""
    per_lead = model.calls_per_lead(None, sink)
    buckets = []
    if sink.calls_per_s != math.inf:
        rate = sink.calls_per_s / per_lead
        buckets.append((rate, rate * 10 + 1))
    if sink.calls_per_day != math.inf:
        daily = sink.calls_per_day / per_lead
        # HubSpot's pacer spreads the day over 24 hours: no day's worth to burst from.
        buckets.append((daily / 86_400, daily / 86_400 * 10 + 1 if sink.paces_daily else daily))
    return tuple(buckets)


def scenarios(seed):
    """The bursts the report simulates, each above the sink's limit at full batches (HubSpot's
    burst limit carries about 72 leads/s, Salesforce's allocation about 174): the chart's two
    (an hour above HubSpot's limit, twelve hours above Salesforce's daily allocation), an hour
    Salesforce absorbs, and a long one with and without the reconcile job, the stream keeping
    records up to its 24 hours."""
    hubspot, salesforce = model.SINKS[2], model.SINKS[3]
    day = 86_400

    def limited(name, sink, burst_rate, burst_seconds, horizon, **changes):
        return simulate.Scenario(
            name=name, base_rate=1, burst_rate=burst_rate, burst_start_s=3_600, burst_seconds=burst_seconds,
            horizon_s=horizon,
            stream_capacity=model.shards(1) * v("esm_parallelization") * model.invocation_rate(sink),
            limits=limits(sink), reconcile_capacity=1 / model.record_seconds(sink),
            calls_per_lead=model.calls_per_lead(None, sink), seed=seed, tick_s=10, **changes)

    return [
        limited("HubSpot Free/Starter, 150/s for 1 h", hubspot, 150, 3_600, 12 * 3_600),
        limited("Salesforce 150,000 calls/day, 1,000/s for 12 h", salesforce, 1_000, 12 * 3_600, 3 * day),
        limited("Salesforce 150,000 calls/day, 600/s for 1 h", salesforce, 600, 3_600, day),
        limited("HubSpot, 150/s for 30 h, no maximum record age, reconcile on", hubspot, 150, 30 * 3_600, 6 * day,
                max_record_age_s=None),
        limited("HubSpot, 150/s for 30 h, no maximum record age, no reconcile", hubspot, 150, 30 * 3_600,
                6 * day, max_record_age_s=None, reconcile=False),
    ]


def panel(results, value, title, unit, top, height, width=760, left=70, right=20, bottom=30):
    """One chart panel: `value(step)` over time for each result, hours on x."""
    horizon = max(r.scenario.horizon_s for r in results)
    peak = max(value(x) for r in results for x in r.steps) or 1
    scale_y = 10 ** math.floor(math.log10(peak))
    top_y = math.ceil(peak / scale_y) * scale_y
    base = top + height - bottom
    px = lambda t: left + (width - left - right) * t / horizon  # noqa: E731
    py = lambda n: base - (height - bottom - 20) * n / top_y  # noqa: E731
    out = [f'<text x="{left}" y="{top + 12}" font-size="13">{title}</text>']
    hours = int(horizon // 3600)
    for i in range(0, hours + 1, max(1, hours // 12)):
        x = px(i * 3600)
        out.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{top + 20}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{i} h</text>')
    for k in range(0, 5):
        n = top_y * k / 4
        y = py(n)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{number(n)}{unit}</text>')
    out.append(f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{base}" x2="{left}" y2="{top + 20}" stroke="black"/>')
    for result, colour in zip(results, COLOURS):
        points = " ".join(f"{px(x.t):.1f},{py(value(x)):.1f}" for x in result.steps)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
    return out


COLOURS = ["#1f77b4", "#d62728"]


def chart(results):
    """An SVG of the backlog and of the oldest waiting receipt's age over time, one line per
    scenario (the report's first two)."""
    width, height = 760, 600
    shown = results[:2]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, result in enumerate(shown):
        out.append(f'<text x="{width - 400}" y="{16 + 16 * i}" fill="{COLOURS[i]}">{result.scenario.name}</text>')
    out += panel(shown, lambda x: x.backlog, "Receipts waiting for their lead (backlog)", "", 40, 280)
    out += panel(shown, lambda x: x.oldest_age_s / 3600, "The oldest waiting receipt's age", " h", 320, 280)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render(seed=7):
    """(report markdown, chart SVG) for `seed`."""
    lines = [f"# Capacity and cost: `make capacity` (seed {seed})", "",
             f"Deliveries with {DUPLICATES:.0%} duplicates. Figures from `capacity/params.py` "
             f"(pages read {READ_ON}; docs/capacity.md explains the model). Headroom = limit / load; "
             "below 1 the stage is overloaded.", ""]

    webhook = model.SINKS[0]
    lines += ["## Every stage at each rate", "",
              "| stage | " + " | ".join(f"{r:,}/s" for r in RATES) + " |",
              "|---|" + "---|" * len(RATES)]
    for i, row in enumerate(model.stages(1, webhook)[:-1]):
        cells = []
        for rate in RATES:
            _, load, limit, unit, _ = model.stages(rate, webhook)[i]
            cells.append(f"{number(load, 1)} / {number(limit, 1)} {unit} ({ratio(limit / load)})")
        lines.append(f"| {row[0]} | " + " | ".join(cells) + " |")
    lines += ["", "Stream shards (one per partition, assumed): " +
              ", ".join(f"{model.shards(r)} at {r:,}/s" for r in RATES) + ".", ""]

    lines += ["## The first bottleneck, per sink", "",
              "| sink | " + " | ".join(f"{r:,}/s" for r in RATES) + " | configure there |",
              "|---|" + "---|" * len(RATES) + "---|"]
    for sink in model.SINKS:
        found = [model.first_bottleneck(rate, sink) for rate in RATES]
        cells = [f"{name} ({ratio(headroom)})" for name, headroom, _ in found]
        # What to configure at the first rate that overloads it (else where it is tightest).
        overloaded = [f for f in found if f[1] < 1]
        advice = (overloaded[0] if overloaded else min(found, key=lambda f: f[1]))[2]
        lines.append(f"| {sink.name} | " + " | ".join(cells) + f" | {advice} |")
    lines += ["", "Sink limits: " + "; ".join(f"{s.name}: {s.limit_name}" for s in model.SINKS) + ".",
              "", "Leads per second each sink sustains (stream worker or sink limit, whichever is lower), "
              "at 1 delivery/s (4 shards) and ParallelizationFactor 1: " +
              ", ".join(f"{s.name} {number(model.capacity(s), 1)}" for s in model.SINKS) + ".", "",
              "The CRM and SQL sinks take a stream batch's leads in batch calls (HubSpot 4 calls per batch of "
              "up to 100, Salesforce 1 per collection of up to 200, PostgreSQL 1 statement per 25 leads); the "
              "table counts their calls at full batches. "
              "Below the limit a batch carries what a shard gathers in the batching window (" +
              f"{number(v('esm_batching_window_s'))} s): " +
              "; ".join(f"{s.name} {number(model.records_per_write(r, s), 1)} leads and "
                        f"{number(model.calls_per_lead(r, s), 2)} calls per lead at {r:,}/s"
                        for s in model.SINKS if s.batch_max > 1 for r in (1, 10)) +
              ". Near the limit the CRM sinks pace themselves (HubSpot spreads the day's remaining calls over "
              "24 hours; Salesforce stops at 90 % of its allocation), records wait, and batches fill: "
              "a lead waits seconds longer, none is lost.", ""]

    lines += ["## Cost per million deliveries (USD, webhook sink)", "",
              "| term | " + " | ".join(f"{r:,}/s" for r in RATES) + " |", "|---|" + "---|" * len(RATES)]
    costs = {rate: model.cost_per_million(rate, webhook) for rate in RATES}
    for term in costs[RATES[0]]:
        lines.append(f"| {term} | " + " | ".join(f"{costs[r][term]:.2f}" for r in RATES) + " |")
    lines.append("| **total** | " + " | ".join(f"**{sum(costs[r].values()):.2f}**" for r in RATES) + " |")
    lines.append("| dominant term | " + " | ".join(max(costs[r], key=costs[r].get) for r in RATES) + " |")
    lines.append("")

    results = [simulate.simulate(s, every=60) for s in scenarios(seed)]
    lines += ["## Bursts, simulated", "",
              "Base load 1 delivery/s, a burst above the sink's limit at full batches (HubSpot 150/s, "
              "Salesforce 1,000/s for 12 h; with 30 % duplicates, 105 and 700 new leads/s); the stream worker and the reconcile job share the sink's "
              "limits (a daily allocation starts with what the base load left of the past 24 hours). "
              "The chart (`backlog.svg`) shows the first two.", "",
              "| scenario | leads/s it sustains | peak backlog | oldest waiting | drained after the burst in | "
              "a record 24 h in the stream, after the burst's start | longest burst within 24 h (stream only) | "
              "given up to reconcile (peak) | lost |",
              "|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        s, m = result.scenario, simulate.summary(result)
        crossed = duration(m["retention_crossed_at_s"]) if m["retention_crossed_at_s"] is not None else "no"
        drained = (duration(m["drained_after_burst_s"]) if m["drained_after_burst_s"] is not None
                   else "never" if m["lost"] else f"not within {duration(m['horizon_after_burst_s'])}")
        lines.append(f"| {s.name} | {number(min(s.sink_rate(), s.stream_capacity), 2)} | {number(m['peak_backlog'])} | "
                     f"{duration(m['oldest_age_peak_s'])} | {drained} | {crossed} | "
                     f"{duration(simulate.longest_burst_within_retention(s))} | "
                     f"{number(m['given_up_peak'])} | {number(m['lost'])} |")
    lines.append("")

    lines += ["## Figures used", "", "| figure | value | unit | kind | source |", "|---|---|---|---|---|"]
    for name, f in FIGURES.items():
        note = f" ({f.note})" if f.note else ""
        lines.append(f"| `{name}` | {f.value:g} | {f.unit} | {f.kind} | {f.source}{note} |")
    lines.append("")
    return "\n".join(lines), chart(results)
