#!/usr/bin/env python3
"""Mutation testing (`make mutants`; the mutants of a change in `make test`): cargo-mutants
changes one piece of production code at a time and runs the tests that cover it; a mutant no
test catches is code whose breakage would go unnoticed.

Scopes and targets (README "Testing"):
  shared        every file of the core, against its unit and property tests      >= 95 % caught
  stream-worker the decision code (handler, receipt marking, sink classification and
                field mapping), against the worker's unit tests                   >= 90 % caught
Exclusions, each with its reason, are in .cargo/mutants.toml.

Usage:
  mutants.py                 every mutant of both scopes; writes target/mutants/summary.md
  mutants.py --in-diff BASE  only mutants in lines changed since git revision BASE, when there
                             are at most --budget of them (otherwise it says so and runs none)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "mutants"

SCOPES = {
    "shared": {"package": "webhook-shared", "files": [], "target": 95.0},
    "stream-worker": {
        "package": "stream-worker",
        "files": [
            "stream-worker/src/handler.rs",
            "stream-worker/src/receipts.rs",
            "stream-worker/src/sink/*.rs",
            "stream-worker/src/sink/salesforce/*.rs",
        ],
        "target": 90.0,
    },
}

OUTCOMES = {"CaughtMutant": "caught", "MissedMutant": "missed", "Unviable": "unviable", "Timeout": "timeout"}


def selection(scope: dict) -> list[str]:
    args = ["cargo", "mutants", "--package", scope["package"]]
    for pattern in scope["files"]:
        args += ["--file", pattern]
    return args


def cargo_mutants(scope: dict, out: Path, extra: list[str], jobs: int) -> list[str]:
    # Each job builds in its own copy of the tree, without the gitignored target/ (so from
    # scratch, once per job) and without node_modules/ and .tools/.
    run = ["--output", str(out), f"--jobs={jobs}", "--timeout=120", "--gitignore=true"]
    return selection(scope) + run + extra


def listed(scope: dict, extra: list[str]) -> int:
    """How many mutants `extra` selects in `scope`."""
    args = selection(scope) + ["--list"] + extra
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True)
    return len([line for line in result.stdout.splitlines() if line.strip()])


def summarize(name: str, outcomes_json: Path) -> tuple[list[str], float | None, list[str]]:
    """Rows per file, the share of viable mutants caught, and the missed mutants."""
    data = json.loads(outcomes_json.read_text())
    per_file: dict[str, Counter] = defaultdict(Counter)
    missed = []
    for outcome in data["outcomes"]:
        mutant = outcome["scenario"]
        if not isinstance(mutant, dict) or "Mutant" not in mutant:
            continue  # the unmutated baseline
        mutant = mutant["Mutant"]
        kind = OUTCOMES.get(outcome["summary"], outcome["summary"])
        per_file[mutant["file"]][kind] += 1
        if kind in ("missed", "timeout"):
            missed.append(f"{kind}: {mutant['name']}")
    rows, total = [], Counter()
    for file, counts in sorted(per_file.items()):
        total.update(counts)
        rows.append(row(file, counts))
    rows.append(row(f"**{name} total**", total))
    viable = total["caught"] + total["missed"] + total["timeout"]
    # A timeout is a mutant the tests stopped (an endless loop): caught, as cargo-mutants counts it.
    share = 100.0 * (total["caught"] + total["timeout"]) / viable if viable else None
    return rows, share, missed


def row(file: str, counts: Counter) -> str:
    viable = counts["caught"] + counts["missed"] + counts["timeout"]
    share = f"{100.0 * (counts['caught'] + counts['timeout']) / viable:.1f} %" if viable else "-"
    return f"| {file} | {counts['caught']} | {counts['missed']} | {counts['unviable']} | {counts['timeout']} | {share} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--in-diff", metavar="BASE", help="only mutants in lines changed since BASE")
    parser.add_argument("--budget", type=int, default=60, help="most mutants --in-diff runs (default 60)")
    parser.add_argument("--scope", choices=sorted(SCOPES), action="append", help="only this scope (repeatable)")
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    extra: list[str] = []
    jobs = 2
    if options.in_diff:
        # One job: a second would build the whole tree a second time for a handful of mutants.
        jobs = 1
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{options.in_diff}^{{commit}}"],
                               cwd=ROOT, capture_output=True)
        if known.returncode != 0:
            print(f"mutants: no revision {options.in_diff} in this clone: no change to mutate; NOT RUN")
            return 0
        diff = subprocess.run(
            ["git", "diff", options.in_diff, "--", "shared/src", "stream-worker/src"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
        if not diff.strip():
            print(f"mutants: no change to shared/ or stream-worker/ since {options.in_diff}: nothing to mutate")
            return 0
        (OUT / "change.diff").write_text(diff)
        extra = ["--in-diff", str(OUT / "change.diff")]
        counts = {name: listed(scope, extra) for name, scope in SCOPES.items() if name in (options.scope or SCOPES)}
        if sum(counts.values()) > options.budget:
            print(f"mutants: {counts} in the change since {options.in_diff}: over the budget of "
                  f"{options.budget} for make test; NOT RUN here. Run them all with `make mutants`.")
            return 0

    lines = ["| file | caught | missed | unviable | timeout | caught of viable |", "|---|---|---|---|---|---|"]
    failures, missed_all = [], []
    scopes = {name: scope for name, scope in SCOPES.items() if name in (options.scope or SCOPES)}
    for name, scope in scopes.items():
        out = OUT / name
        # No earlier run's results may stand in for this one's.
        shutil.rmtree(out, ignore_errors=True)
        print(f"\n==> mutants of {name} ({', '.join(scope['files']) or 'every file'})", flush=True)
        # Exit codes: 0 all caught, 2 some missed, 3 timeouts; anything else is a failure to run.
        # Property tests run 64 cases per mutant instead of 256: enough to meet the inputs they
        # aim at, and a quarter of the time.
        env = {**os.environ, "PROPTEST_CASES": os.environ.get("PROPTEST_CASES", "64")}
        code = subprocess.run(cargo_mutants(scope, out, extra, jobs), cwd=ROOT, env=env).returncode
        outcomes = out / "mutants.out" / "outcomes.json"
        if code not in (0, 2, 3) or not outcomes.exists():
            if code == 0 and extra:
                print(f"mutants: none in the changed lines of {name}")
                continue
            failures.append(f"{name}: cargo mutants exited {code}")
            continue
        rows, share, missed = summarize(name, outcomes)
        lines += rows
        missed_all += missed
        if share is not None and share < scope["target"]:
            failures.append(f"{name}: {share:.1f} % of viable mutants caught, the target is {scope['target']} %")

    summary = "\n".join(lines)
    if missed_all:
        summary += "\n\nMissed (kill with a test, or exclude in .cargo/mutants.toml with the reason):\n"
        summary += "\n".join(f"- {m}" for m in missed_all)
    (OUT / "summary.md").write_text(summary + "\n")
    print("\n" + summary)
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
