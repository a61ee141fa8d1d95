#!/usr/bin/env python3
"""Fails if any log file holds a secret or a piece of personal data, in any encoding.

Usage: check-log-hygiene.py --stack <stack.json> [--value TEXT ...] <log files...>

The values: the credentials in the stack file (`make dev`'s bearer token, AWS secret and each
sender profile's secret), the personal data `make demo` sends, and any --value. Each is looked
for plain, JSON-escaped (as UTF-8 and as \\u escapes), URL-encoded (%20 and +), and in base64
(both alphabets, every alignment). tests/it/log_hygiene.rs does the same for the Worker and the stream worker.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import urllib.parse

# What scripts/demo.py puts into its Static Forms deliveries, and its answer to every other profile.
DEMO_PERSONAL_DATA = ["Demo Visitor", "visitor@example.com", "Hello from the demo", "Hello through each profile",
                      "+44 20 7946 0958", "Analytical Engines Ltd"]


def examples_personal_data():
    """The example lead's name and email of each profile `make demo` sends an example through
    (every registered one but Static Forms, whose deliveries are its own), from `stream-worker
    profiles --example`. (Static Forms' example is also the ready-to-paste delivery `make dev`
    prints, which is no one's data.)"""
    binary = os.path.join("target", "debug", "stream-worker")
    out = subprocess.run([binary, "profiles", "--example", "hygiene"], check=True, capture_output=True, text=True)
    profiles = [p for p in json.loads(out.stdout) if p["name"] != "staticforms"]
    return [value for p in profiles for value in p["example"]["lead"].values() if value]


def encodings(value):
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1],
             urllib.parse.quote(value, safe="-._~"), urllib.parse.quote_plus(value, safe="-._~")}
    raw = value.encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for shift in range(3):
            data = b"\0" * shift + raw
            encoded = encode(data).decode().rstrip("=")
            start, end = (4 if shift else 0), (len(data) // 3) * 4
            if end > start + 8:
                forms.add(encoded[start:end])
    return sorted(f for f in forms if len(f) >= 6)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--value", action="append", default=[])
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args()
    with open(args.stack) as f:
        stack = json.load(f)
    values = {"bearer token": stack["bearer_token"], "AWS secret key": stack["secret_access_key"],
              "the edge's AWS secret key": stack["edge_secret_access_key"]}
    values.update({f"{name} secret": p["secret"] for name, p in stack.get("profiles", {}).items()})
    if stack.get("sink_secret"):
        values["the webhook sink's secret"] = stack["sink_secret"]
    values.update({f"demo data {v!r}": v for v in DEMO_PERSONAL_DATA + examples_personal_data()})
    values.update({f"value {v!r}": v for v in args.value})
    leaks, lines = [], 0
    for path in args.logs:
        with open(path, errors="replace") as f:
            text = f.read()
        lines += text.count("\n")
        for what, value in values.items():
            for form in encodings(value):
                if form in text:
                    leaks.append(f"{path}: the {what} as {form!r}")
    if lines == 0:
        sys.exit("log hygiene: the logs are empty; nothing was checked")
    if leaks:
        sys.exit("log hygiene: FAILED\n  " + "\n  ".join(leaks))
    print(f"log hygiene: {lines} lines in {len(args.logs)} files hold none of {len(values)} secrets and personal values")


if __name__ == "__main__":
    main()
