#!/usr/bin/env python3
"""`make demo`: play a delivery scenario against the running local stack and show the result.

New deliveries, sequential retries, 20 concurrent copies of one delivery, odd but valid
deliveries (nested 24 levels, odd keys, a number past DynamoDB's range, an ID with `/`), a
delivery whose answers scripts/dev-mapping.toml maps, a wrong key, a wrong token, the same key
with a changed body; then a delivery through each other sender profile `stream-worker profiles`
lists (its sender's example, signed as the sender signs), its retry, and its changed copy. Then it waits for the stream worker and prints what happened:
requests by status, receipts by status, the edge's lines its Tail Worker shipped to CloudWatch
Logs (one per request, each with the status the sender got), leads, the mapped lead's fields,
and whether leads == unique submissions. Standard library only; talks to 127.0.0.1 only.
"""
import collections
import base64
import concurrent.futures
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request

STACK = os.path.join(os.environ.get("DEV_STATE", ".dev"), "stack.json")
MAPPING = os.path.join("scripts", "dev-mapping.toml")


def load_stack():
    try:
        with open(STACK) as f:
            return json.load(f)
    except FileNotFoundError:
        sys.exit("demo: the local stack is not running; start it with `make dev` in another terminal")


def post(url, headers, body):
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError as error:
        sys.exit(f"demo: the edge at {url} does not answer ({error}); is `make dev` running?")


def delivery(submission_id, message="Hello from the demo", extra=None):
    return json.dumps({
        "event": "form.submitted",
        "timestamp": int(time.time()),
        "data": {
            "submissionId": submission_id,
            "formData": {"name": "Demo Visitor", "email": "visitor@example.com", "message": message, **(extra or {})},
            "apiKey": "sf_demo_key",
            "recipientEmail": "owner@example.com",
            "attachments": [],
        },
    }).encode()


def examples(identity, answer):
    """Every registered profile, with its sender's example delivery for `identity`
    (`stream-worker profiles`, the core's own list: a new profile is played with no change here)."""
    command = [os.path.join("target", "debug", "stream-worker"), "profiles", "--example", identity, "--answer", answer]
    try:
        return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"demo: `{' '.join(command)}` failed ({error}); `make dev` builds it")


def signed_headers(profile, secret, body):
    """The example's headers, signed as `profile["auth"]` says (standard library HMAC-SHA256)."""
    headers = dict(profile["example"]["headers"])
    auth = profile["auth"]
    if auth["scheme"] == "standard-webhooks":
        key = base64.b64decode(secret.removeprefix("whsec_"))
        timestamp = str(int(time.time()))
        message_id = headers["webhook-id"]
        mac = hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
        headers |= {"webhook-timestamp": timestamp, "webhook-signature": "v1," + base64.b64encode(mac).decode()}
    elif auth["scheme"] == "body-signature":
        # What the sender's HMAC covers: the body, after a timestamp (Webflow in milliseconds
        # and a colon, Formspree in seconds and a dot) or before a header's value (Framer).
        before, after, now = b"", b"", int(time.time())
        if "millisHeader" in auth:
            headers[auth["millisHeader"]] = str(now * 1000)
            before = f"{now * 1000}:".encode()
        if auth.get("inlineTimestamp"):
            before = f"{now}.".encode()
        if "bodyThenHeader" in auth:
            after = next(v for n, v in headers.items() if n.lower() == auth["bodyThenHeader"]).encode()
        digest = hmac.new(secret.encode(), before + body + after, hashlib.sha256).digest()
        tag = digest.hex() if auth.get("encoding") == "hex" else base64.b64encode(digest).decode()
        value = auth["prefix"] + tag
        headers[auth["header"]] = f"t={now},v1={value}" if auth.get("inlineTimestamp") else value
    else:
        headers["Authorization"] = f"Bearer {secret}"
    return headers


def scan_receipts(stack, prefix):
    """Every receipt of this run, with the store's root key (never signature-checked)."""
    items, start = [], None
    while True:
        body = {"TableName": stack["table"], "ConsistentRead": True}
        if start:
            body["ExclusiveStartKey"] = start
        request = urllib.request.Request(stack["dynamodb_endpoint"] + "/", data=json.dumps(body).encode(), method="POST", headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "DynamoDB_20120810.Scan",
            "X-Amz-Date": "20260101T000000Z",
            "Authorization": f"AWS4-HMAC-SHA256 Credential=test/20260101/{stack['region']}/dynamodb/aws4_request, "
                             "SignedHeaders=host;x-amz-date, Signature=0",
        })
        with urllib.request.urlopen(request, timeout=30) as response:
            page = json.load(response)
        items += [i for i in page.get("Items", []) if prefix in i["submissionId"]["S"]]
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def edge_lines(stack, since_ms):
    """The edge's log lines its Tail Worker shipped to the store's CloudWatch Logs since
    `since_ms`, as JSON records (root key; FilterLogEvents)."""
    records, token = [], None
    while True:
        body = {"logGroupName": stack["edge_log_group"], "startTime": since_ms}
        if token:
            body["nextToken"] = token
        request = urllib.request.Request(stack["dynamodb_endpoint"] + "/", data=json.dumps(body).encode(), method="POST", headers={
            "Content-Type": "application/x-amz-json-1.1",
            "X-Amz-Target": "Logs_20140328.FilterLogEvents",
            "X-Amz-Date": "20260101T000000Z",
            "Authorization": f"AWS4-HMAC-SHA256 Credential=test/20260101/{stack['region']}/logs/aws4_request, "
                             "SignedHeaders=host;x-amz-date, Signature=0",
        })
        with urllib.request.urlopen(request, timeout=30) as response:
            page = json.load(response)
        records += [json.loads(e["message"]) for e in page.get("events", [])]
        if not page.get("nextToken") or page.get("nextToken") == token:
            return records
        token = page["nextToken"]


def leads(stack, prefix):
    if not os.path.exists(stack["leads_db"]):
        return []
    with sqlite3.connect(stack["leads_db"]) as db:
        # Static Forms' leads are keyed by the bare ID, the other profiles' by `<profile>:<id>`.
        return db.execute("SELECT external_id, upsert_count FROM leads WHERE external_id LIKE ?",
                          ("%" + prefix + "%",)).fetchall()


def expected_fields(answers):
    """What scripts/dev-mapping.toml's [staticforms] makes of a Static Forms lead with `answers`
    (and the lead's own name, email and message): each mapped answer as sent, then the
    constants unless an answer filled the same field (names without case, as the worker)."""
    with open(MAPPING, "rb") as f:
        table = tomllib.load(f).get("staticforms", {})
    own = {"name": "Demo Visitor", "email": "visitor@example.com", "message": "Hello from the demo"}
    fields = dict(table.get("constants", {}))
    for answer, field in table.get("fields", {}).items():
        value = answers.get(answer, own.get(answer))
        if value is not None and str(value).strip():
            fields = {k: v for k, v in fields.items() if k.lower() != field.lower()}
            fields[field] = value
    return fields


def mapped_lead(stack, external_id):
    """The lead's `fields` and `extra`, as the lead inbox stored them ({} each when absent)."""
    if not os.path.exists(stack["leads_db"]):
        return {}, {}
    with sqlite3.connect(stack["leads_db"]) as db:
        row = db.execute("SELECT fields, extra FROM leads WHERE external_id = ?", (external_id,)).fetchone()
    return (json.loads(row[0]), json.loads(row[1])) if row else ({}, {})


def main():
    stack = load_stack()
    url = stack["edge_url"] + "/webhooks/staticforms"
    run = "demo_" + secrets.token_hex(3)
    statuses = collections.Counter()
    started_ms = int(time.time() * 1000)

    def send(submission_id, body=None, key=None, token=None):
        headers = {
            "Content-Type": "application/json",
            "Authorization": "Bearer " + (token or stack["bearer_token"]),
            "Idempotency-Key": key or f"staticforms:form.submitted:{submission_id}",
        }
        status = post(url, headers, body or delivery(submission_id))
        statuses[status] += 1
        return status

    # What each step must be answered, checked in the verdict: (what, expected, answered).
    checks = []

    def expect(what, expected, answered):
        checks.append((what, expected, answered))

    ids = [f"{run}_{i}" for i in range(10)]
    print(f"demo: run {run} against {stack['edge_url']}")
    print("  10 new deliveries ...")
    expect("10 new deliveries", [202] * 10, [send(submission_id) for submission_id in ids])
    print("  3 sequential retries ...")
    expect("3 retries", [200] * 3, [send(submission_id) for submission_id in ids[:3]])
    print("  20 concurrent copies of one new delivery ...")
    hot = f"{run}_hot"
    body = delivery(hot)
    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        raced = list(pool.map(lambda _: send(hot, body), range(20)))
    expect("20 racing copies", [200] * 19 + [202], sorted(raced))
    print("  odd but valid: nested 24 levels, odd keys, a number past DynamoDB's range, an ID with / ...")
    deep = "bottom"
    for level in range(21):
        deep = {"k": deep} if level % 2 == 0 else [deep]
    odd_keys = {"": "empty key", "a.b": 1, "#x": 2, "M": {"S": "not a type"}}
    odd = [f"{run}_deep", f"{run}/slash+plus="]
    expect("odd but valid", [202], [send(odd[0], body=delivery(odd[0], extra={"deep": deep, **odd_keys}))])
    huge = delivery(odd[1]).replace(b'"message": ', b'"big": 1e400, "message": ')
    expect("a huge number, then its retry", [202, 200], [send(odd[1], body=huge), send(odd[1], body=huge)])
    print("  a delivery with a phone and a company, which scripts/dev-mapping.toml maps ...")
    mapped_id = f"{run}_mapped"
    typed = {"phone": "+44 20 7946 0958", "Company": "Analytical Engines Ltd", "Budget": "5000"}
    expect("a mapped delivery", [202], [send(mapped_id, body=delivery(mapped_id, extra=typed))])
    print("  a wrong idempotency key, a wrong token, the same key with a changed body ...")
    expect("a wrong idempotency key", [400], [send(ids[0], key=f"staticforms:form.submitted:{run}_other")])
    expect("a wrong token", [401], [send(f"{run}_intruder", token="not-the-token")])
    expect("a changed body", [422], [send(ids[1], body=delivery(ids[1], message="a different message"))])

    unique = set(ids) | {hot} | set(odd) | {mapped_id}

    print("  through each other sender profile: a delivery, its retry, a changed copy ...")
    through, stored_as = {}, {}
    for answer_index, answer in enumerate(("Hello through each profile", "Hello through each profile", "changed")):
        for profile in examples(f"{run}_ex", answer):
            if profile["name"] == "staticforms":
                continue
            body = profile["example"]["body"].encode()
            route = stack["profiles"][profile["name"]]
            status = post(route["url"], signed_headers(profile, route["secret"], body), body)
            statuses[status] += 1
            through.setdefault(profile["name"], []).append(status)
            stored_as[profile["name"]] = profile["stored"]
            unique.add(profile["example"]["receiptKey"])
    for name, answers in through.items():
        # A new receipt is answered with the 2xx its sender counts as success (Webflow: 200).
        expect(f"{name}: a delivery, its retry, a changed copy", [stored_as[name], 200, 422], answers)

    def completed():
        return sum(1 for i in scan_receipts(stack, run) if i["status"]["S"] == "COMPLETED")

    deadline = time.time() + 30
    while time.time() < deadline and (len(leads(stack, run)) < len(unique) or completed() < len(unique)):
        time.sleep(0.25)
    receipts = collections.Counter(i["status"]["S"] for i in scan_receipts(stack, run))
    lead_rows = leads(stack, run)
    # The edge's own line for each request, shipped by its Tail Worker (docs/operating.md).
    # (A health check's line, outcome `ok`, is not one of the demo's requests.)
    def shipped_lines():
        return [r for r in edge_lines(stack, started_ms) if r.get("outcome") != "ok"]

    requests = sum(statuses.values())
    deadline = time.time() + 30
    shipped = shipped_lines()
    while time.time() < deadline and len(shipped) < requests:
        time.sleep(0.25)
        shipped = shipped_lines()
    shipped_statuses = collections.Counter(r.get("status") for r in shipped if "_aws" in r)

    names = {202: "stored", 200: "duplicate; new Webflow", 400: "bad key", 401: "unauthenticated", 422: "key reused"}
    print()
    print(f"  {'requests by status':<28}")
    for status in sorted(statuses):
        print(f"    {status} {names.get(status, ''):<22}{statuses[status]:>5}")
    print(f"  {'receipts by status':<28}")
    for status in ("RECEIVED", "COMPLETED", "FAILED"):
        print(f"    {status:<26}{receipts.get(status, 0):>5}")
    print(f"  {'through each profile':<28}")
    for profile, answers in through.items():
        print(f"    {profile:<18}{' '.join(str(a) for a in answers):>13}")
    print(f"  {'edge lines in CloudWatch Logs':<30}{len(shipped):>5}")
    print(f"  {'leads':<30}{len(lead_rows):>5}")
    print(f"  {'unique submissions':<30}{len(unique):>5}")
    # The mapped lead, as the lead inbox stored it: in its `fields` what the mapping of
    # scripts/dev-mapping.toml makes of the answers (read from the file, so an edited mapping is
    # checked as edited), every answer (the unmapped Budget too) in `extra`. Names only: the
    # values are the visitor's.
    fields, extra = mapped_lead(stack, mapped_id)
    wanted = expected_fields(typed)
    print(f"  {'the mapped lead':<28}")
    print(f"    fields  {', '.join(sorted(fields)) or '(none)'}")
    mapped = fields == wanted and all(extra.get(k) == v for k, v in typed.items())
    # Every status as the step provokes it (one 202 per submission, 200 for its copies, 400,
    # 401, 422 for what is refused).
    wrong = [(what, expected, answered) for what, expected, answered in checks if expected != answered]
    for what, expected, answered in wrong:
        print(f"    {what}: expected {expected}, answered {answered}")
    print(f"  every status as provoked:     {'yes' if not wrong else 'NO'}")
    # Every request's line reached the log group, each answer as the sender saw it.
    logged = shipped_statuses == statuses and len(shipped) == requests
    print(f"  each answer in the edge log:  {'yes' if logged else 'NO'}")
    # Every submission: one lead, written once (upsert_count 1: nothing replayed), and its
    # receipt COMPLETED (not merely stored).
    once = all(count == 1 for _, count in lead_rows)
    print(f"  each lead written once:       {'yes' if once else 'NO'}")
    equal = len(lead_rows) == len(unique) == receipts.get("COMPLETED", 0) == sum(receipts.values())
    print(f"  mapped fields as mapped:      {'yes' if mapped else 'NO'}")
    equal = equal and once and not wrong and logged and mapped
    print(f"  leads == unique submissions:  {'yes' if equal else 'NO'}")
    sys.exit(0 if equal else 1)


if __name__ == "__main__":
    main()
