"""`make bench`'s report: target/bench/report.json (every figure, with its unit), report.md (the
tables a person reads) and cpu.svg (CPU per delivery by contender)."""
import json
import os

from harness import OUT

EDGE_TARGET = 1.25
UPLOAD_BUDGET_KIB = 128
STREAM_TARGET = 0.85
# Issue 27's targets for the CRM sinks' batch runs: leads/s and API calls per lead.
HUBSPOT_LEADS_PER_S, HUBSPOT_CALLS_PER_LEAD, SALESFORCE_CALLS_PER_LEAD = 30, 0.1, 0.05


def svg(contenders):
    """Horizontal bars: median CPU µs per delivery, with a line from the fastest to the slowest run."""
    names = list(contenders)
    top = max(c["cpu_us_per_request"]["max"] for c in contenders.values()) * 1.15
    width, left, bar, gap = 640, 110, 26, 18
    height = 50 + len(names) * (bar + gap)
    scale = (width - left - 30) / top
    colours = {"js-floor": "#8da0cb", "rs-floor": "#66c2a5", "edge": "#fc8d62"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="{left}" y="18" font-size="14">CPU per delivery (µs, median of runs; line: fastest to slowest)</text>']
    for i, name in enumerate(names):
        figures = contenders[name]["cpu_us_per_request"]
        y = 34 + i * (bar + gap)
        w = figures["median"] * scale
        parts.append(f'<text x="{left - 8}" y="{y + bar / 2 + 4}" text-anchor="end">{name}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar}" fill="{colours.get(name, "#999")}"/>')
        x0, x1 = left + figures["min"] * scale, left + figures["max"] * scale
        parts.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{y + bar / 2}" y2="{y + bar / 2}" stroke="#333"/>')
        parts.append(f'<text x="{left + w + 6:.1f}" y="{y + bar / 2 + 4}">{figures["median"]:.0f}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def verdict(ok):
    return "met" if ok else "**missed**"


def share_of(run, s):
    """A run's share of the store's ceiling: the median of each round's run over that round's
    ceiling when the bench paired them, else over the median ceiling."""
    return run.get("share_of_ceiling", run["records_per_s"] / s["store_ceiling_updates_per_s"])


def markdown(r):
    m, p = r["machine"], r["parameters"]
    e, ratios = r["edge"], r["edge"]["ratios"]
    lines = ["# `make bench` report", "",
             f"{m['date']} on {m['cpu']} ({m['cores']} cores, Linux {m['kernel']}); {m['workerd']}, {m['rustc']}, "
             f"Node {m['node']}. {r['elapsed_s']:.0f} s in all." + (" **Quick run** (fewer deliveries)." if p["quick"] else ""),
             "", "## Targets", "",
             "| target | measured | |", "|---|---|---|"]
    lines.append(f"| edge CPU ≤ {EDGE_TARGET}x the workers-rs floor | {ratios['edge_over_rs_floor']:.2f}x "
                 f"({ratios['edge_over_js_floor']:.2f}x the JavaScript floor) | {verdict(ratios['edge_over_rs_floor'] <= EDGE_TARGET)} |")
    up = r["upload"]
    lines.append(f"| upload ≤ {UPLOAD_BUDGET_KIB} KiB gzip | {up['gzip_kib']} KiB ({up['total_kib']} KiB raw) | "
                 f"{verdict(up['gzip_kib'] <= UPLOAD_BUDGET_KIB)} |")
    s = r["stream_worker"]
    best = max((x for x in s["runs"] if x["mode"] == "concurrent"), key=lambda x: x["records_per_s"])
    serial = next((x for x in s["runs"] if x["mode"] == "one-at-a-time"), None)
    for sink in ("sqlite", "postgres"):
        runs = [x for x in s["runs"] if x["mode"] == "concurrent" and x["sink"] == sink]
        if not runs:
            continue
        top = max(runs, key=lambda x: share_of(x, s))
        share = share_of(top, s)
        lines.append(f"| stream worker ({sink}) ≥ {STREAM_TARGET:.0%} of the store's ceiling | {share:.0%} "
                     f"(batch {top['batch']}) | {verdict(share >= STREAM_TARGET)} |")
    if serial:
        speedup = best["records_per_s"] / serial["records_per_s"]
        lines.append(f"| stream worker ≥ 2x the one-at-a-time loop | {speedup:.1f}x | {verdict(speedup >= 2)} |")
    crm = {(x["sink"], x["mode"]): x for x in s.get("crm_runs", [])}
    if ("hubspot", "batched") in crm:
        h = crm[("hubspot", "batched")]
        ok = h["leads_per_s"] >= HUBSPOT_LEADS_PER_S and h["calls_per_lead"] <= HUBSPOT_CALLS_PER_LEAD
        lines.append(f"| HubSpot ≥ {HUBSPOT_LEADS_PER_S} leads/s, ≤ {HUBSPOT_CALLS_PER_LEAD} calls per lead | "
                     f"{h['leads_per_s']:.0f} leads/s, {h['calls_per_lead']:.3f} calls/lead, "
                     f"{h['throttled_429']} 429s, {h['duplicates']} duplicates | {verdict(ok and not h['duplicates'])} |")
    if ("salesforce", "batched") in crm:
        f_ = crm[("salesforce", "batched")]
        ok = f_["calls_per_lead"] <= SALESFORCE_CALLS_PER_LEAD
        lines.append(f"| Salesforce ≤ {SALESFORCE_CALLS_PER_LEAD} calls per lead | {f_['calls_per_lead']:.3f} calls/lead, "
                     f"{f_['leads_per_s']:.0f} leads/s, {f_['duplicates']} duplicates | {verdict(ok and not f_['duplicates'])} |")
    checks = e["receipt_checks"]
    lines.append(f"| edge runs: receipts == distinct submissions, only 2xx; floors: only 202 | "
                 f"{sum(c['holds'] for c in checks)}/{len(checks)} runs | {verdict(all(c['holds'] for c in checks))} |")
    lines.append(f"| stream runs: every receipt completed, one lead each | {'yes' if s['holds'] else 'no'} | "
                 f"{verdict(s['holds'])} |")

    lines += ["", "## Edge CPU, side by side", "",
              f"{p['deliveries_per_run']} deliveries of about {p['delivery_bytes']} bytes per run, concurrency "
              f"{p['concurrency']}, 30 % duplicates (half racing their original, half retried after), "
              f"{p['runs']} runs interleaved. CPU is the workerd process's (all threads, /proc) over the run, "
              "per delivery answered. Each contender runs in its own `workerd serve` (capnp config, no "
              "wrangler) against the same SigV4-checking store on 127.0.0.1.", "",
              "| contender | CPU µs/delivery (median, min–max) | requests/s | p50 ms | p99 ms |",
              "|---|---:|---:|---:|---:|"]
    for name, c in e["contenders"].items():
        cpu = c["cpu_us_per_request"]
        lines.append(f"| {name} | {cpu['median']:.0f} ({cpu['min']:.0f}–{cpu['max']:.0f}) | "
                     f"{c['requests_per_s']['median']:.0f} | {c['p50_ms']['median']:.1f} | {c['p99_ms']['median']:.1f} |")
    lines += ["", "![CPU per delivery](cpu.svg)", "",
              "- `js-floor`: a JavaScript Worker that reads one header and the body, sends one constant, "
              "pre-signed PutItem and maps the status (bench/floor-js/worker.js).",
              "- `rs-floor`: the same through workers-rs (bench/floor-rs): what the Rust binding costs.",
              "- `edge`: this project's Worker (authentication, envelope, key, fingerprint, receipt, "
              "SigV4, the conditional PutItem, the decision, one log line).", "",
              "## Where the edge's time goes", "",
              "In place: the same Worker, with requests that stop earlier on the path.", "",
              "| requests | CPU µs/request | requests/s | statuses |", "|---|---:|---:|---|"]
    for name, phase in e["phases"].items():
        lines.append(f"| {name} | {phase['cpu_us_per_request']:.0f} | {phase['requests_per_s']:.0f} | "
                     f"{phase['statuses']} |")
    lines += ["", "A CPU profile of the Worker under the same load (V8's sampling profiler through "
              "workerd's inspector, a build with Wasm names kept), self time as a share of busy time:", "",
              "| share | function |", "|---:|---|"]
    lines += [f"| {row['share_of_busy']:.1%} | `{row['function'][:110]}` |" for row in r["profile"][:20]]
    lines += ["", "The core path alone (the same functions, same configuration): natively with criterion, "
              "and in Wasm (the Worker's release profile, `wasm-opt -O`) timed from Node:", "",
              "| delivery | step | native µs | Wasm µs |", "|---|---|---:|---:|"]
    core = r["core"]
    for label in ("1KiB", "200KiB"):
        for step in ("parse", "receive", "sign", "path"):
            native = core["native"].get(label, {}).get(step, {}).get("median_us")
            wasm = core["wasm"].get(label, {}).get(step, {}).get("median_us")
            lines.append(f"| {label} | {step} | {native if native is None else f'{native:.1f}'} | "
                         f"{wasm if wasm is None else f'{wasm:.1f}'} |")
    lines += ["", "`parse`: the JSON parser; `receive`: every check and the PutItem (parse, authenticate, "
              "envelope, key, fingerprint, receipt, item size, PutItem body); `sign`: SigV4 (body hash, "
              "canonical request, one HMAC with the day's cached key); `path`: receive then sign.", "",
              "## Upload", "",
              f"`wrangler deploy --dry-run`: **{up['gzip_kib']} KiB gzip** ({up['total_kib']} KiB). "
              f"The Wasm by crate (`make size` lists more; names kept, so larger than the upload):", "",
              "| crate | code bytes |", "|---|---:|"]
    lines += [f"| {c['crate']} | {c['bytes']:,} |" for c in r["size"]["by_crate"][:12]]
    lines += ["", "## Stream worker", "",
              f"{s['records_per_run']} receipts per run, written to the store as the edge writes them, then "
              "fed to the handler in batches as Lambda feeds it; each becomes a lead and a `COMPLETED` "
              f"receipt. Records of different receipts run {s['concurrency']} at a time. The store's "
              "ceiling: the same number of conditional `UpdateItem`s from a bare SDK client. The ceiling and "
              f"the runs are interleaved in {s.get('rounds', 1)} round(s); records/s is the median of a run's "
              "rounds, its share of the ceiling the median of each round's run over that round's ceiling.", "",
              f"Store ceiling: **{s['store_ceiling_updates_per_s']:.0f} updates/s** at concurrency "
              f"{s['concurrency']} (the client's CPU: {s['store_ceiling_cpu_us_per_update']:.0f} µs per update), "
              f"{s['store_ceiling_one_at_a_time_updates_per_s']:.0f} one at a time.", "",
              "| sink | mode | batch | records/s | share of ceiling | CPU µs/record | completed |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for x in s["runs"]:
        lines.append(f"| {x['sink']} | {x['mode']} | {x['batch']} | {x['records_per_s']:.0f} | "
                     f"{share_of(x, s):.0%} | {x['cpu_us_per_record']:.0f} | "
                     f"{x['completed']}/{x['records']} |")
    if s.get("crm_runs"):
        lines += ["", "CRM sinks against their stand-ins with the documented limits on (HubSpot 100 requests "
                  "per rolling 10 s, 429 beyond; Salesforce's API allocation counted), fed as Lambda feeds them "
                  "(stream batches of 100). One-by-one is the same sinks one lead per call, as they wrote before "
                  "batching (HubSpot four calls a lead, Salesforce one, a token aside), paced alike; batched is "
                  "one call per kind per batch.", "",
                  "| sink | mode | leads | leads/s | API calls/lead | 429s | duplicates | completed |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for x in s["crm_runs"]:
            lines.append(f"| {x['sink']} | {x['mode']} | {x['leads']} | {x['leads_per_s']:.1f} | "
                         f"{x['calls_per_lead']:.3f} | {x['throttled_429']} | {x['duplicates']} | "
                         f"{x['completed']}/{x['leads']} |")
    built = ("the `dev` profile (unoptimised: CPU per record overstates a release build; "
             "`BENCH_STREAM_PROFILE=bench` for optimised figures)" if s.get("profile") == "dev" else
             f"the `{s.get('profile')}` profile (our crates at the release opt-level, dependencies at "
             "opt-level 1, no LTO)")
    lines += ["", "CPU per record is the bench process's (handler, SDK, sink client; not the store's or "
              f"PostgreSQL's), from /proc in 10 ms ticks. Built with {built}. The store is a Python "
              f"server on the same {m['cores']} cores, and the store's CPU is what limits both: the "
              f"handler spends {best['cpu_us_per_record'] / s['store_ceiling_cpu_us_per_update']:.1f}x the "
              "bare client's CPU per record (the sink's write, the stream record's JSON, the lead, the "
              "log line), and every one of those microseconds is taken from the store.", ""]
    return "\n".join(lines)


def write(result):
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(OUT, "cpu.svg"), "w") as f:
        f.write(svg(result["edge"]["contenders"]))
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write(markdown(result))
