#!/usr/bin/env python3
"""The summary of `make test`, and its floors: fails when a suite ran fewer tests than
scripts/test-floors.txt records (zero included), when any test failed, or when a summary figure
(template tests, upload size, Lambda build, quick-start verdict) is missing or out of budget.

Usage: check-tests.py <log folder>   (the folder scripts/test.sh writes its logs to)
"""
import re
import sys
from pathlib import Path

FLOORS = Path(__file__).with_name("test-floors.txt")


def suites(log: Path, runner: str) -> dict:
    """{suite name: (passed, failed)} from one cargo test log; a suite is one test binary."""
    found, current = {}, None
    for line in log.read_text(errors="replace").splitlines():
        line = line.strip()
        m = re.match(r"Running (.+) \((?:.*/)?([A-Za-z0-9_]+?)(?:-[0-9a-f]{16})?(?:\.wasm)?\)$", line)
        if m:
            current = f"{runner} {m.group(2)} {m.group(1)}"
            continue
        m = re.match(r"Doc-tests (\S+)$", line)
        if m:
            current = f"{runner} {m.group(1)} doc-tests"
            continue
        m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed", line)
        if m and current:
            passed, failed = found.get(current, (0, 0))
            found[current] = (passed + int(m.group(1)), failed + int(m.group(2)))
    return found


def floors() -> tuple[dict, dict]:
    """(minimum tests per suite, other limits) from scripts/test-floors.txt."""
    minimum, limits = {}, {}
    for line in FLOORS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, value = line.rsplit(None, 1)
        (limits if name.startswith("limit ") else minimum)[name.removeprefix("limit ")] = float(value)
    return minimum, limits


def grep(log: Path, pattern: str) -> str | None:
    m = re.search(pattern, log.read_text(errors="replace")) if log.exists() else None
    return m.group(0) if m else None


# Text only the sender profiles' lead mappings hold (Tally's and Typeform's field types, the
# common labels `lead::object_lead` matches for the other form backends, Formstack's typed
# values): the edge never maps a lead, so its Wasm must not hold them.
LEAD_MAPPING_WORDS = ["INPUT_EMAIL", "TEXTAREA", "long_text", "short_text", "youremailaddress", "familyname",
                      "field_type"]


def wasm_bytes():
    path = Path(__file__).resolve().parent.parent / "edge/build/index_bg.wasm"
    return path.read_bytes() if path.exists() else b""


def main() -> int:
    out = Path(sys.argv[1])
    minimum, limits = floors()
    found = {**suites(out / "native.log", "native"), **suites(out / "browser.log", "browser")}
    problems = []

    for name, (passed, failed) in sorted(found.items()):
        if failed:
            problems.append(f"{name}: {failed} failed")
    for name, floor in sorted(minimum.items()):
        passed = found.get(name, (0, 0))[0]
        if passed < floor:
            problems.append(f"{name}: {passed} tests passed, the floor is {int(floor)}")
    for name, (passed, _) in sorted(found.items()):
        if name not in minimum and passed:
            problems.append(f"{name}: {passed} tests but no floor; add it to {FLOORS.name}")

    def total(runner):
        return sum(p for n, (p, _) in found.items() if n.startswith(runner + " "))

    template = grep(out / "template.log", r"Ran (\d+) tests?")
    template_ok = grep(out / "template.log", r"(?m)^OK$")
    ran = int(template.split()[1]) if template else 0
    if not template_ok or ran < limits.get("template-tests", 1):
        problems.append(f"template tests: {template or 'no result'}, {'OK' if template_ok else 'not OK'}")

    # The Tail Worker's tests (node --test prints "# pass N" and "# fail N"; no test file is 0).
    tail_pass = grep(out / "tail.log", r"(?m)^# pass \d+")
    tail_fail = grep(out / "tail.log", r"(?m)^# fail \d+")
    tail_ran = int(tail_pass.split()[2]) if tail_pass else 0
    if tail_fail != "# fail 0" or tail_ran < limits.get("tail-tests", 1):
        problems.append(f"Tail Worker tests: {tail_pass or 'no result'}, {tail_fail or 'no failures line'}")

    capacity = grep(out / "capacity.log", r"Ran (\d+) tests?")
    capacity_ok = grep(out / "capacity.log", r"(?m)^OK$")
    capacity_report = grep(out / "capacity.log", r"capacity: wrote .*")
    ran = int(capacity.split()[1]) if capacity else 0
    if not capacity_ok or ran < limits.get("capacity-tests", 1) or not capacity_report:
        problems.append(f"capacity: {capacity or 'no result'}, {'OK' if capacity_ok else 'not OK'}, "
                        f"{capacity_report or 'no report written'}")

    upload = grep(out / "bundle.log", r"Total Upload: .*")
    gzip = re.search(r"gzip: ([\d.]+) KiB", upload or "")
    if not gzip:
        problems.append("edge upload: no 'Total Upload' line in the dry-run deploy")
    elif float(gzip.group(1)) > limits["upload-gzip-kib"]:
        problems.append(f"edge upload: {gzip.group(1)} KiB gzip is over {limits['upload-gzip-kib']} KiB")
    elif linked := [w for w in LEAD_MAPPING_WORDS if w.encode() in wasm_bytes()]:
        problems.append(f"edge upload: the Worker links the lead mappings ({', '.join(linked)} in its Wasm): "
                        "only the stream worker maps leads")
    elif float(gzip.group(1)) > limits["upload-gzip-kib-ceiling"]:
        problems.append(f"edge upload: {gzip.group(1)} KiB gzip is over this code's ceiling of "
                        f"{limits['upload-gzip-kib-ceiling']} KiB: did a change link code the edge never runs?")

    lambda_ = grep(out / "deploy-aws.log", r"built target/lambda.*")
    if not lambda_:
        problems.append("lambda: no arm64 bootstrap built")

    # One verdict per stack the quick start ran (STACK=local, then STACK=aws).
    smoke = (out / "smoke.log").read_text(errors="replace") if (out / "smoke.log").exists() else ""
    verdicts = re.findall(r"leads == unique submissions: .*", smoke)
    verdict = "; ".join(verdicts) if verdicts else None
    if len(verdicts) != 2 or not all(v.endswith("yes") for v in verdicts):
        problems.append(f"quick start: {verdict or 'no verdict from make demo'} (one per stack, local and aws)")

    print(f"native:  {total('native')} passed in {sum(n.startswith('native') for n in found)} suites")
    print(f"browser: {total('browser')} passed (headless Chromium)")
    print(f"template: {template} {'OK' if template_ok else ''}")
    print(f"Tail Worker: {tail_pass}, {tail_fail}")
    print(f"capacity: {capacity} {'OK' if capacity_ok else ''}; {capacity_report}")
    print(f"edge upload: {upload}")
    print(f"lambda: {lambda_}")
    print(f"quick start: {verdict}")
    mutants = (out / "mutants.log").read_text(errors="replace") if (out / "mutants.log").exists() else ""
    totals = re.findall(r"\| \*\*(\S+) total\*\* \| (\d+) \| (\d+) \|.*\| ([\d.]+ %|-) \|", mutants)
    said = re.findall(r"(?m)^mutants: .*", mutants)
    if totals:
        print("mutants of the change: " + "; ".join(f"{n} {c} caught, {m} missed ({p})" for n, c, m, p in totals))
    for line in said:
        print(line)
    if not totals and not said:
        problems.append("mutants: no result from scripts/mutants.py --in-diff")
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
