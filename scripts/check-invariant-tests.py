#!/usr/bin/env python3
"""ARCHITECTURE.md's invariants name the checks that hold them, and those checks exist.

Every check the document names exists and is a check: `path/file.rs::name` a test (`fn name`
under a `#[...test...]` attribute) in a tracked Rust file whose path ends with `path/file.rs`;
`path/file.py::name` a `def test_...` in such a Python file, or `main` of a script `make test`
runs; `Makefile::target` a target `make test` runs (rust-analyzer's tidy tests keep their docs
true the same way). Every item of the document's "Architecture Invariants" section (which must
be there) names at least one. Fails naming each missing check and each item without one.

Usage: check-invariant-tests.py [document ...]   (default: ARCHITECTURE.md)
"""
import re
import subprocess
import sys
from pathlib import Path

CITED = re.compile(r"`((?:[\w.-]+/)*(?:[\w.-]+\.(?:rs|py)|Makefile))::([\w-]+)`")
DEFINITION = {".rs": r"\bfn {name}\s*[<(]", ".py": r"\bdef {name}\s*\(", "": r"(?m)^{name}\s*:"}
ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
TEST_RUNNER = "scripts/test.sh"


def is_check(root: Path, source: str, path: str, name: str) -> bool:
    """Whether `name` in `source` is a check: a Rust test, a Python test or a script `make test`
    runs, or a Makefile target it runs."""
    runner = "\n".join(l for l in (root / TEST_RUNNER).read_text().splitlines() if not l.lstrip().startswith("#"))
    if path.endswith(".rs"):
        text = (root / source).read_text()
        for match in re.finditer(DEFINITION[".rs"].format(name=re.escape(name)), text):
            above = text[: match.start()].splitlines()[-4:]
            if any(line.strip().startswith("#[") and "test" in line for line in above):
                return True
        return False
    if path.endswith(".py"):
        return name.startswith("test_") or (name == "main" and source in runner)
    return bool(re.search(rf"(?m)^\s*make\b[^\n]*\b{re.escape(name)}\b", runner))


def bullets(text: str) -> list[str] | None:
    """The items of the "Architecture Invariants" section (bulleted or numbered, nested ones
    each on their own; a paragraph counts as one), each joined into one line; None without it."""
    if "## Architecture Invariants\n" not in text:
        return None
    section = text.split("## Architecture Invariants\n", 1)[1].split("\n## ", 1)[0]
    items: list[str] = []
    fresh = True
    for line in section.splitlines():
        if not line.strip():
            fresh = True
        elif ITEM.match(line) or fresh:
            items.append(ITEM.sub("", line))
            fresh = False
        else:
            items[-1] += " " + line.strip()
    return items


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    documents = sys.argv[1:] or ["ARCHITECTURE.md"]
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
    sources = files.stdout.split()
    failures, seen = [], 0
    for document in documents:
        text = (root / document).read_text()
        for path, name in CITED.findall(text):
            seen += 1
            candidates = [s for s in sources if s == path or s.endswith("/" + path)]
            defined = re.compile(DEFINITION[Path(path).suffix].format(name=re.escape(name)))
            found = [c for c in candidates if defined.search((root / c).read_text())]
            if not found:
                where = ", ".join(candidates) or "no such file"
                failures.append(f"named check does not exist: {document}: {path}::{name} ({where})")
            elif not any(is_check(root, c, path, name) for c in found):
                failures.append(f"named check is not a test or a step of make test: {document}: {path}::{name}")
        items = bullets(text)
        if items is None:
            failures.append(f"{document} has no \"## Architecture Invariants\" section")
        for item in items or []:
            if not CITED.search(item):
                failures.append(f"invariant names no check: {document}: {item[:90]}...")
    for line in failures:
        print(f"FAIL {line}", file=sys.stderr)
    if seen == 0:
        print("FAIL no check named in " + ", ".join(documents), file=sys.stderr)
        return 1
    print(f"invariant tests: {seen} named checks; every one exists and every invariant names one"
          if not failures else f"invariant tests: {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
