#!/usr/bin/env python3
"""Mutation testing (`make mutants`; the mutants of the change since CI last passed, in
`make test`): cargo-mutants changes one piece of production code at a time and runs the tests
that cover it; a mutant no test catches is code whose breakage would go unnoticed.

Scopes, each against its crate's unit and property tests (docs/testing.md):
  shared        every file of the core
  stream-worker every file: the decisions (handler, receipt marking, the sinks' answers and
                field mapping) and the operator's commands (operate, inventory, cli, metrics,
                config, secrets, poll's checkpoints and lineage)
  edge          the Worker's configuration and SigV4 signer (the runtime shell runs in workerd)
Exclusions, each with its reason, are in .cargo/mutants.toml. `make mutants` fails below
TARGET % caught of viable mutants in any scope.

Usage:
  mutants.py                  every mutant of every scope; writes target/mutants/summary.md
  mutants.py --since-verified the mutants in lines changed since the last commit a fresh-clone
                              CI run passed on (recorded in .ci/verified; uncommitted edits
                              count), all of them up to --budget, otherwise a sample of about
                              --budget (one round-robin shard, chosen by HEAD's hash); fails on
                              any missed mutant, and when the recorded commit is not in the clone
  mutants.py --in-diff BASE   the same against another base
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

TARGET = 97.0
SCOPES = {
    "shared": {"package": "webhook-shared", "files": []},
    "stream-worker": {"package": "stream-worker", "files": []},
    "edge": {"package": "edge", "files": []},
}
# The last commit a fresh-clone `.ci/run` passed on: the base of make test's mutants.
VERIFIED = ROOT / ".ci" / "verified"
CHANGED = ["shared/src", "stream-worker/src", "edge/src"]

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


def verified_commit() -> str:
    """The commit recorded in .ci/verified (its first line that is not a comment)."""
    for line in VERIFIED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            return line.split()[0]
    raise SystemExit(f"mutants: {VERIFIED} names no commit")


def have_commit(rev: str) -> bool:
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=ROOT, capture_output=True)
    return found.returncode == 0


def ensure_history(base: str) -> bool:
    """True when `base` is in this clone, fetching the whole history first if it is shallow."""
    if have_commit(base):
        return True
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True)
    if shallow.stdout.strip() == "true":
        print(f"mutants: {base} is not in this shallow clone; fetching its history", flush=True)
        subprocess.run(["git", "fetch", "--quiet", "--unshallow"], cwd=ROOT)
    return have_commit(base)


def change_since(base: str, scopes: dict, budget: int) -> tuple[list[str], dict] | None:
    """cargo-mutants arguments selecting the mutants changed since `base` (a sample of about
    `budget` when there are more), and how many each scope has; None when nothing changed."""
    # Plain a/ b/ prefixes whatever the user's git configuration (cargo-mutants reads b/ paths;
    # with diff.mnemonicPrefix it would find nothing and pass).
    plain = ["--no-ext-diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/"]
    diff = subprocess.run(["git", "diff", *plain, base, "--", *CHANGED], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    if not diff.strip():
        return None
    (OUT / "change.diff").write_text(diff)
    extra = ["--in-diff", str(OUT / "change.diff")]
    counts = {name: listed(scope, extra) for name, scope in scopes.items()}
    total = sum(counts.values())
    files = sorted({line[6:] for line in diff.splitlines() if line.startswith("+++ b/") and line.endswith(".rs")})
    print(f"mutants: the change since {base} touches {len(files)} Rust file(s): {', '.join(files) or 'none'}")
    if total > budget:
        # One round-robin shard of n: every n-th mutant of each scope, the offset chosen by
        # HEAD, so successive commits sample different mutants of a long change.
        shards = -(-total // budget)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        shard = int(head.stdout.strip()[:8], 16) % shards
        print(f"mutants: {counts} in the change since {base}: over the budget of {budget}; "
              f"SAMPLED: shard {shard} of {shards} (about {total // shards}); `make mutants` runs them all")
        extra += ["--shard", f"{shard}/{shards}", "--sharding", "round-robin"]
    else:
        print(f"mutants: {counts} in the change since {base}: all of them")
    return extra, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--since-verified", action="store_true", help="the change since .ci/verified's commit")
    group.add_argument("--in-diff", metavar="BASE", help="only mutants in lines changed since BASE")
    parser.add_argument("--budget", type=int, default=40, help="most mutants of a change run whole (default 40)")
    parser.add_argument("--scope", choices=sorted(SCOPES), action="append", help="only this scope (repeatable)")
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    scopes = {name: scope for name, scope in SCOPES.items() if name in (options.scope or SCOPES)}

    extra: list[str] = []
    jobs = 2
    gate = bool(options.since_verified or options.in_diff)
    if gate:
        # One job: a second would build the whole tree a second time for a few dozen mutants.
        jobs = 1
        base = verified_commit() if options.since_verified else options.in_diff
        if not ensure_history(base):
            print(f"mutants: FAIL: {base} (the base of the change) is not in this clone, so the change "
                  f"cannot be mutated; fetch it (git fetch --unshallow) or name another with --in-diff", file=sys.stderr)
            return 1
        selected = change_since(base, scopes, options.budget)
        if selected is None:
            print(f"mutants: no change to {', '.join(CHANGED)} since {base}: nothing to mutate")
            return 0
        extra, counts = selected
        scopes = {name: scope for name, scope in scopes.items() if counts[name]}

    lines = ["| file | caught | missed | unviable | timeout | caught of viable |", "|---|---|---|---|---|---|"]
    failures, missed_all = [], []
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
        if gate:
            # The change's mutants: every one caught, or excluded with its reason.
            missed_here = [m for m in missed if m.startswith("missed")]
            if missed_here:
                failures.append(f"{name}: {len(missed_here)} mutant(s) of the change missed")
        elif share is not None and share < TARGET:
            failures.append(f"{name}: {share:.1f} % of viable mutants caught, the target is {TARGET} %")

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
