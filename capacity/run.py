#!/usr/bin/env python3
"""`make capacity`: writes target/capacity/report.md and target/capacity/backlog.svg.

Usage: capacity/run.py [--seed N] [--out DIR]. Deterministic: the same seed writes the same
files. Standard library only; runs in seconds.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="target/capacity")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    text, svg = report.render(args.seed)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "backlog.svg"), "w") as f:
        f.write(svg)
    print(f"capacity: wrote {args.out}/report.md and {args.out}/backlog.svg (seed {args.seed})")


if __name__ == "__main__":
    main()
