#!/usr/bin/env python3
"""Every test ARCHITECTURE.md names, as `path/file.rs::test_name`, exists: a `fn test_name` in a
tracked Rust file whose path ends with `path/file.rs` (rust-analyzer's tidy tests keep their
docs true the same way). Fails naming each missing one, and when the document names none.

Usage: check-invariant-tests.py [document ...]   (default: ARCHITECTURE.md)
"""
import re
import subprocess
import sys
from pathlib import Path

CITED = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.rs)::(\w+)`")


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    documents = sys.argv[1:] or ["ARCHITECTURE.md"]
    files = subprocess.run(["git", "ls-files", "*.rs"], cwd=root, capture_output=True, text=True, check=True)
    sources = files.stdout.split()
    missing, seen = [], 0
    for document in documents:
        for path, name in CITED.findall((root / document).read_text()):
            seen += 1
            candidates = [s for s in sources if s == path or s.endswith("/" + path)]
            defined = re.compile(rf"\bfn {re.escape(name)}\s*[<(]")
            if not any(defined.search((root / c).read_text()) for c in candidates):
                where = ", ".join(candidates) or "no such file"
                missing.append(f"{document}: {path}::{name} ({where})")
    for line in missing:
        print(f"FAIL named test does not exist: {line}", file=sys.stderr)
    if seen == 0:
        print("FAIL no test named in " + ", ".join(documents), file=sys.stderr)
        return 1
    print(f"invariant tests: {seen - len(missing)} of {seen} named tests exist")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
