"""Edge CPU, side by side in one run: the built Worker, the workers-rs floor and the JavaScript
floor, each in its own `workerd serve`, against the same SigV4-checking store.

CPU per delivery is the workerd process's CPU time (every thread, from /proc) over a run
divided by the deliveries it answered; the contenders take turns, run by run, so a noisy
moment hits all of them. The edge additionally runs in-place phases (health check, a wrong
token, duplicates only) that show where its time goes without another build.
"""
import json
import os
import random
import time

from harness import REGION, ROOT, TABLE, Workerd, percentile, run_load, say, sigv4, summary

TOKEN = "bench-token-0123456789abcdef"
TARGET = "DynamoDB_20120810.PutItem"


def delivery(submission_id, size):
    """A Static Forms delivery for `submission_id`, its message padded to about `size` bytes."""
    body = {
        "event": "form.submitted",
        "timestamp": int(time.time()),
        "data": {
            "submissionId": submission_id,
            "formData": {"name": "Bench Visitor", "email": "visitor@example.com", "message": "Hello"},
            "apiKey": "sf_bench_key",
            "recipientEmail": "owner@example.com",
            "attachments": [],
        },
    }
    pad = size - len(json.dumps(body))
    if pad > 0:
        body["data"]["formData"]["message"] += "x" * pad
    return json.dumps(body).encode()


def deliveries(prefix, count, size, seed):
    """`count` requests, 30 % of them duplicates: half race their original (next to it in the
    list, so they run at the same time), half are retries sent after every original."""
    rng = random.Random(seed)
    duplicates = int(count * 0.3)
    originals = count - duplicates
    racing = set(rng.sample(range(originals), duplicates // 2))
    retried = rng.sample(range(originals), duplicates - len(racing))
    out = []

    def request(i):
        sid = f"{prefix}{i:06d}"
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Idempotency-Key": f"staticforms:form.submitted:{sid}"}
        return headers, delivery(sid, size)
    for i in range(originals):
        out.append(request(i))
        if i in racing:
            out.append(request(i))
    out += [request(i) for i in retried]
    return out, originals


def hostile(count, kib=256):
    """Requests an attacker (or an odd sender) might send, `count` of each kind, the large ones
    about `kib` KiB: at two sizes, CPU that grows with the size and not with its square shows
    no quadratic path."""
    def headers(sid, token=TOKEN):
        return {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                "Idempotency-Key": f"staticforms:form.submitted:{sid}"}

    def envelope(sid, form_text):
        return ('{"event":"form.submitted","timestamp":1,"data":{"submissionId":"%s","formData":%s}}'
                % (sid, form_text)).encode()
    limit = kib * 1024 - 400
    many_keys = "{" + ",".join(f'"k{i:06d}":{i}' for i in range(limit // 16)) + "}"
    escapes = '{"m":"' + "\\u00e9\\n" * (limit // 8) + '"}'
    # formData at level 3: 25 objects, an array, then elements 3 deep reach level 31, the limit.
    elements = ["[1,[2,[3]]]"] * (limit // 12)
    arrays = '{"k":' * 25 + "[" + ",".join(elements) + "]" + "}" * 25
    too_deep = '{"k":' * 25 + "[" + ",".join(elements[:-1] + ["[1,[2,[[3]]]]"]) + "]" + "}" * 25
    return [
        ("POST, a 10,000-character wrong token: 401",
         [(headers(f"hostile-token-{kib}-{i}", "t" * 10_000), envelope(f"hostile-token-{kib}-{i}", "{}")) for i in range(count)]),
        (f"POST, {kib} KiB, one level too deep at its very end: 400",
         [(headers(f"hostile-deep-{kib}-{i}"), envelope(f"hostile-deep-{kib}-{i}", too_deep)) for i in range(count)]),
        (f"POST, {kib} KiB of {limit // 16:,} keys: 202",
         [(headers(f"hostile-keys-{kib}-{i}"), envelope(f"hostile-keys-{kib}-{i}", many_keys)) for i in range(count)]),
        (f"POST, {kib} KiB of escapes: 202",
         [(headers(f"hostile-escapes-{kib}-{i}"), envelope(f"hostile-escapes-{kib}-{i}", escapes)) for i in range(count)]),
        (f"POST, {kib} KiB of arrays nested to the limit: 202",
         [(headers(f"hostile-arrays-{kib}-{i}"), envelope(f"hostile-arrays-{kib}-{i}", arrays)) for i in range(count)]),
    ]


def edge_bindings(store):
    """The Worker's configuration, as wrangler.toml and its secrets would give it."""
    return {"RECEIPTS_TABLE": TABLE, "AWS_REGION": REGION, "DYNAMODB_ENDPOINT": store.endpoint,
            "AWS_ACCESS_KEY_ID": store.access_key_id, "AWS_SECRET_ACCESS_KEY": store.secret_access_key,
            "WEBHOOK_BEARER_TOKENS": TOKEN, "MAX_BODY_BYTES": "262144", "STORE_TIMEOUT_MS": "5000",
            "RETENTION_DAYS": "30"}


def contenders(store):
    floor_body = json.dumps({"TableName": TABLE, "Item": {"pk": {"S": "bench#floor"},
                                                          "submissionId": {"S": "floor-constant"}}})
    signed = sigv4(store.endpoint, store.access_key_id, store.secret_access_key, TARGET, floor_body)
    floor_bindings = {"STORE_URL": store.endpoint + "/", "PUT_CONTENT_TYPE": signed["content-type"],
                      "PUT_TARGET": TARGET, "PUT_DATE": signed["x-amz-date"],
                      "PUT_AUTHORIZATION": signed["authorization"], "PUT_BODY": floor_body}

    def built(crate):
        return [("index.js", "esModule", os.path.join(ROOT, crate, "build/index.js")),
                ("index_bg.wasm", "wasm", os.path.join(ROOT, crate, "build/index_bg.wasm"))]
    plans = [("js-floor", [("worker.js", "esModule", os.path.join(ROOT, "bench/floor-js/worker.js"))], floor_bindings),
             ("rs-floor", built("bench/floor-rs"), floor_bindings),
             ("edge", built("edge"), edge_bindings(store))]
    started = {}
    try:
        for name, modules, bindings in plans:
            started[name] = Workerd(name, modules, bindings)
    except BaseException:
        for worker in started.values():
            worker.stop()
        raise
    return started


def measure(worker, requests, concurrency, time_limit, path="/webhooks/staticforms", method="POST"):
    before = worker.process.cpu_ns()
    statuses, latencies, wall = run_load(worker.url, path, requests, concurrency, time_limit, method)
    spent = worker.process.cpu_ns() - before
    answered = len(statuses)
    return {
        "answered": answered,
        "cpu_us_per_request": spent / 1000 / max(answered, 1),
        "requests_per_s": answered / wall,
        "p50_ms": (percentile(latencies, 50) or 0) * 1000,
        "p99_ms": (percentile(latencies, 99) or 0) * 1000,
        "statuses": {str(k): statuses.count(k) for k in sorted(set(statuses), key=str)},
        "rss_kib": worker.process.rss_kib(),
    }


def run(store, count, concurrency, runs, size, time_limit):
    workers = contenders(store)
    try:
        names = list(workers)
        say(f"edge CPU: warming up {', '.join(names)}")
        for name, worker in workers.items():
            warm, _ = deliveries(f"warm-{name}-", 300, size, seed=1)
            measure(worker, warm, concurrency, time_limit)
        results = {name: [] for name in names}
        checks = []
        for r in range(runs):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                prefix = f"run{r}-{name}-"
                requests, distinct = deliveries(prefix, count, size, seed=r)
                figures = measure(workers[name], requests, concurrency, time_limit)
                results[name].append(figures)
                say(f"edge CPU: run {r + 1}/{runs} {name}: {figures['cpu_us_per_request']:.0f} µs/delivery, "
                    f"{figures['requests_per_s']:.0f} req/s, statuses {figures['statuses']}")
                if name != "edge" and set(figures["statuses"]) != {"202"}:
                    # A floor that answers anything else is measuring an error path.
                    checks.append({"run": r, "contender": name, "statuses": figures["statuses"], "holds": False})
                if name == "edge":
                    stored = store.count_receipts(prefix)
                    ok = set(figures["statuses"]) <= {"200", "202"}
                    checks.append({"run": r, "contender": name, "distinct": distinct, "receipts": stored,
                                   "answered": figures["answered"], "only_2xx": ok,
                                   "holds": stored == distinct and ok and figures["answered"] == len(requests)})
        # Where the edge's time goes, in place: the same Worker, requests that stop earlier.
        edge = workers["edge"]
        phases = {}
        say("edge CPU: in-place phases (health, wrong token, duplicates only)")
        health = [({}, None)] * count
        phases["GET /healthz (routing, cached config, render, log)"] = measure(
            edge, health, concurrency, time_limit, path="/healthz", method="GET")
        wrong, _ = deliveries("wrong-", count, size, seed=7)
        wrong = [({**h, "Authorization": "Bearer wrong-token"}, b) for h, b in wrong]
        phases["POST, wrong token: 401 (+ headers, body read, auth)"] = measure(edge, wrong, concurrency, time_limit)
        dupes, _ = deliveries("run0-edge-", count, size, seed=0)
        phases["POST, all duplicates: 200 (+ parse, key, sign, store round trip)"] = measure(
            edge, dupes, concurrency, time_limit)
        fresh, _ = deliveries("fresh-", count, size, seed=9)
        phases["POST, all new: 202 (the full path)"] = measure(edge, fresh, concurrency, time_limit)
        # Hostile but bounded: each must cost about what its size costs, never a quadratic path.
        say("edge CPU: hostile inputs (CPU must stay bounded)")
        few = 50
        for kib in (64, 256):
            for name, requests in hostile(few, kib):
                if kib == 256 or "token" not in name:
                    phases[name] = measure(edge, requests, concurrency, time_limit)
        return {"contenders": results, "receipt_checks": checks, "edge_phases": phases,
                "logs": {name: w.process.log_path for name, w in workers.items()}}
    finally:
        for worker in workers.values():
            worker.stop()


def summarise(raw):
    table = {}
    for name, runs in raw["contenders"].items():
        table[name] = {key: summary([r[key] for r in runs]) for key in
                       ("cpu_us_per_request", "requests_per_s", "p50_ms", "p99_ms")}
    edge, rs, js = (table[n]["cpu_us_per_request"]["median"] for n in ("edge", "rs-floor", "js-floor"))
    ratios = {"edge_over_rs_floor": edge / rs, "edge_over_js_floor": edge / js, "rs_floor_over_js_floor": rs / js}
    return table, ratios

