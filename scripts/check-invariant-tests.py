#!/usr/bin/env python3
"""ARCHITECTURE.md's invariants name the checks that hold them, and those checks exist.

Every check the document names exists: `path/file.rs::name` a `fn name` in a tracked Rust file
whose path ends with `path/file.rs`, `path/file.py::name` a `def name` in such a Python file,
`Makefile::target` a target of the Makefile (rust-analyzer's tidy tests keep their docs true
the same way). And every bullet of its "Architecture Invariants" section names at least one.
Fails naming each missing check and each bullet without one.

Usage: check-invariant-tests.py [document ...]   (default: ARCHITECTURE.md)
"""
import re
import subprocess
import sys
from pathlib import Path

CITED = re.compile(r"`((?:[\w.-]+/)*(?:[\w.-]+\.(?:rs|py)|Makefile))::([\w-]+)`")
DEFINITION = {".rs": r"\bfn {name}\s*[<(]", ".py": r"\bdef {name}\s*\(", "": r"(?m)^{name}\s*:"}


def bullets(text: str) -> list[str]:
    """The bullets of the "Architecture Invariants" section, each joined into one line."""
    section = text.split("## Architecture Invariants", 1)[1].split("\n## ", 1)[0]
    items: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            items.append(line[2:])
        elif line.startswith("  ") and items:
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
            if not any(defined.search((root / c).read_text()) for c in candidates):
                where = ", ".join(candidates) or "no such file"
                failures.append(f"named check does not exist: {document}: {path}::{name} ({where})")
        if "## Architecture Invariants" in text:
            for bullet in bullets(text):
                if not CITED.search(bullet):
                    failures.append(f"invariant names no check: {document}: {bullet[:90]}...")
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
