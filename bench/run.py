#!/usr/bin/env python3
"""`make bench`: every benchmark, on 127.0.0.1, bounded in time, with progress.

1. Builds: the Worker, the workers-rs floor, the Worker with names kept (for the profile and
   `make size`), the core path for Wasm.
2. Upload size (`wrangler deploy --dry-run`) and what the Wasm is made of (bench/size.py).
3. Edge CPU side by side (bench/edge.py), then a CPU profile of the Worker under the same load
   (bench/profile.mjs) and the core path alone, natively (criterion) and in Wasm (Node).
4. The stream worker against the store's own ceiling (`cargo bench -p tests --bench stream`).

Writes target/bench/report.md, target/bench/report.json and target/bench/cpu.svg.
`BENCH_QUICK=1` (or --quick) runs fewer deliveries and runs, for trying the harness out.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import edge  # noqa: E402
import report  # noqa: E402
import size  # noqa: E402
from harness import OUT, ROOT, Store, Workerd, free_port, say  # noqa: E402

WASM_OPT_FEATURES = ["--enable-mutable-globals", "--enable-sign-ext", "--enable-nontrapping-float-to-int",
                     "--enable-bulk-memory", "--enable-multivalue", "--enable-reference-types",
                     "--enable-exception-handling"]


def run(argv, **kwargs):
    return subprocess.run(argv, cwd=ROOT, check=True, **kwargs)


def quiet(argv, **kwargs):
    """Runs a build step, showing its output only if it fails."""
    done = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode != 0:
        sys.stdout.write(done.stdout.decode(errors="replace"))
        raise SystemExit(f"bench: {' '.join(argv)} failed")
    return done.stdout.decode(errors="replace")


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    def version(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "unknown"
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "workerd": version([os.path.join(ROOT, "node_modules/.bin/workerd"), "--version"]),
            "rustc": version(["rustc", "--version"]), "node": version(["node", "--version"])}


def build():
    say("building the Worker, the workers-rs floor and the core path for Wasm")
    quiet(["scripts/build-edge.sh"])
    quiet(["scripts/build-edge.sh", "bench/floor-rs"])
    quiet(["cargo", "build", "--release", "--target", "wasm32-unknown-unknown", "-p", "bench-core"])
    out = os.path.join(OUT, "core-wasm")
    quiet(["wasm-bindgen", "--target", "nodejs", "--out-dir", out,
           "target/wasm32-unknown-unknown/release/bench_core.wasm"])
    wasm = os.path.join(out, "bench_core_bg.wasm")
    # The Worker's own wasm-opt pass (worker-build runs `wasm-opt -O` with these features).
    quiet([os.path.join(ROOT, "node_modules/binaryen/bin/wasm-opt"), "-O", *WASM_OPT_FEATURES, wasm, "-o", wasm])
    say("building the Worker with names kept (for the profile and the size report)")
    size.build_named()


def upload():
    say("upload size: wrangler deploy --dry-run")
    env = dict(os.environ, WRANGLER_SEND_METRICS="false", CLOUDFLARE_CF_FETCH_ENABLED="false")
    text = quiet([os.path.join(ROOT, "node_modules/.bin/wrangler"), "deploy", "--dry-run", "--outdir",
                  "target/bench/wrangler-dry-run"], env=env)
    match = re.search(r"Total Upload: ([\d.]+) KiB / gzip: ([\d.]+) KiB", text)
    if not match:
        raise SystemExit("bench: wrangler printed no upload size")
    return {"total_kib": float(match.group(1)), "gzip_kib": float(match.group(2)), "budget_gzip_kib": 128}


def profile(store, seconds, concurrency):
    """Self time by function of the Worker (names kept) under the edge benchmark's load."""
    say(f"edge profile: sampling the Worker for {seconds} s under load")
    port = free_port()
    worker = Workerd("edge-profile", [("index.js", "esModule", os.path.join(size.NAMED, "index.js")),
                                      ("index_bg.wasm", "wasm", os.path.join(size.NAMED, "index_bg.wasm"))],
                     edge.edge_bindings(store), inspector_port=port)
    out = os.path.join(OUT, "profile.json")
    sampler = None
    try:
        warm, _ = edge.deliveries("profile-warm-", 300, 1024, seed=3)
        edge.measure(worker, warm, concurrency, 60)
        sampler = subprocess.Popen(["node", "--experimental-websocket", os.path.join(ROOT, "bench/profile.mjs"),
                                    f"127.0.0.1:{port}", str(seconds), out], stdout=subprocess.PIPE, cwd=ROOT)
        # The sampler prints PROFILING once it samples; a watchdog ends it if it never does.
        watchdog = threading.Timer(30, sampler.kill)
        watchdog.start()
        started = sampler.stdout.readline().strip() == b"PROFILING"
        watchdog.cancel()
        if not started:
            raise SystemExit("bench: the profiler did not start")
        load, _ = edge.deliveries("profile-", 20_000, 1024, seed=4)
        edge.measure(worker, load, concurrency, seconds)
        if sampler.wait(60) != 0:
            raise SystemExit("bench: the profiler failed")
    finally:
        if sampler is not None and sampler.poll() is None:
            sampler.kill()
            sampler.wait()
        worker.stop()
    with open(out) as f:
        data = json.load(f)
    busy = [r for r in data["functions"] if r["name"] not in ("(idle)",)]
    total = sum(r["us"] for r in busy) or 1
    return [{"function": r["name"], "share_of_busy": r["us"] / total} for r in busy[:25]]


def core(quick):
    say("core path: criterion (native)")
    run(["cargo", "bench", "-p", "bench-core", "--bench", "core", "--", "--noplot"] +
        (["--quick"] if quick else []), stdout=subprocess.DEVNULL)
    native = {}
    for path in glob.glob(os.path.join(ROOT, "target/criterion/core_*/*/new/estimates.json")):
        parts = path.split(os.sep)
        size_label, step = parts[-4].split("_", 1)[1], parts[-3]
        with open(path) as f:
            estimate = json.load(f)["median"]
        native.setdefault(size_label, {})[step] = {
            "median_us": estimate["point_estimate"] / 1000,
            "low_us": estimate["confidence_interval"]["lower_bound"] / 1000,
            "high_us": estimate["confidence_interval"]["upper_bound"] / 1000}
    say("core path: Wasm in Node (V8)")
    wasm = {}
    for label, size_bytes in (("1KiB", 1024), ("200KiB", 200 * 1024)):
        out = subprocess.run(["node", os.path.join(ROOT, "bench/core/run.mjs"), os.path.join(OUT, "core-wasm"),
                              str(size_bytes), "300" if quick else "800"],
                             capture_output=True, text=True, check=True, cwd=ROOT).stdout
        for line in out.splitlines():
            row = json.loads(line)
            wasm.setdefault(label, {})[row["step"]] = {"median_us": row["us_per_iteration"],
                                                       "iterations": row["iterations"]}
    return {"native": native, "wasm": wasm}


def stream(quick):
    """The stream bench, built with `BENCH_STREAM_PROFILE`: by default `bench` (optimised, as the
    deployed worker is; about 8 minutes to build on 2 cores the first time), since the handler's
    CPU per record competes with the store's on this machine and an unoptimised build would
    measure its debug overhead; `dev` reuses the build `make test` made, for a quicker look."""
    profile_name = os.environ.get("BENCH_STREAM_PROFILE", "bench")
    say(f"stream worker: records/s against the store's ceiling (cargo bench --profile {profile_name} "
        "-p tests --bench stream)")
    out = os.path.join(OUT, "stream.json")
    env = dict(os.environ, BENCH_STREAM_OUT=out, BENCH_QUICK="1" if quick else "")
    # The handler's log lines (one per record, on stderr) go to a file; progress on stdout.
    with open(os.path.join(OUT, "stream.log"), "wb") as log:
        run(["cargo", "bench", "--profile", profile_name, "-p", "tests", "--bench", "stream"], env=env, stderr=log,
            timeout=1800)
    with open(out) as f:
        figures = json.load(f)
    figures["profile"] = profile_name
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", default=bool(os.environ.get("BENCH_QUICK")))
    args = parser.parse_args()
    quick = args.quick
    count, runs, concurrency = (600, 1, 8) if quick else (2000, 5, 8)
    started = time.monotonic()
    os.makedirs(OUT, exist_ok=True)
    result = {"machine": machine(), "parameters": {
        "deliveries_per_run": count, "runs": runs, "concurrency": concurrency, "duplicates": 0.3,
        "racing_duplicates": 0.15, "delivery_bytes": 1024, "quick": quick}}
    build()
    result["upload"] = upload()
    say(f"upload: {result['upload']['gzip_kib']} KiB gzip (budget 128)")
    result["size"] = size.analyse(os.path.join(size.NAMED, "index_bg.wasm"), top=15)
    store = Store()
    try:
        raw = edge.run(store, count=count, concurrency=concurrency, runs=runs, size=1024, time_limit=120)
        table, ratios = edge.summarise(raw)
        result["edge"] = {"contenders": table, "ratios": ratios, "receipt_checks": raw["receipt_checks"],
                          "phases": {k: {"cpu_us_per_request": v["cpu_us_per_request"],
                                         "requests_per_s": v["requests_per_s"], "statuses": v["statuses"]}
                                     for k, v in raw["edge_phases"].items()},
                          "runs": raw["contenders"]}
        result["profile"] = profile(store, 8 if quick else 15, concurrency)
    finally:
        store.stop()
    result["core"] = core(quick)
    result["stream_worker"] = stream(quick)
    result["elapsed_s"] = time.monotonic() - started
    report.write(result)
    held = all(c["holds"] for c in result["edge"]["receipt_checks"]) and result["stream_worker"].get("holds", False)
    say(f"done in {result['elapsed_s']:.0f} s: target/bench/report.md, report.json, cpu.svg")
    if not held:
        raise SystemExit("bench: a correctness check failed (see the report)")


if __name__ == "__main__":
    main()
