#!/usr/bin/env python3
"""A local receiver for the webhook sink (`make dev`, both stacks): what a CRM taking signed
webhooks would see. It checks each request's Standard Webhooks signature (`webhook-id`,
`webhook-timestamp`, `webhook-signature` over `id.timestamp.body`, within 5 minutes) and
stores the lead in a SQLite `leads` table shaped like the SQL sink's, with the body's `fields`
(what the lead mapping put there) in a `fields` column, counting in `upsert_count` every
request it accepted for the lead, so `make demo`'s verdict (one upsert per submission, the
mapped fields) is counted where the leads arrive.

Usage: lead-inbox.py --port <port> --db <path>; the secret (whsec_...) in LEAD_INBOX_SECRET.
It listens on 127.0.0.1 only and logs one line per request: the status and the reason, never
the lead.
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA = """CREATE TABLE IF NOT EXISTS leads (
    external_id  TEXT    NOT NULL PRIMARY KEY,
    name         TEXT    NOT NULL,
    email        TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    extra        TEXT    NOT NULL,
    fields       TEXT    NOT NULL DEFAULT '{}',
    created_at   TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL,
    upsert_count INTEGER NOT NULL
)"""
UPSERT = """INSERT INTO leads (external_id, name, email, message, extra, fields, created_at, updated_at, upsert_count)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)
    ON CONFLICT(external_id) DO UPDATE SET name = excluded.name, email = excluded.email,
        message = excluded.message, extra = excluded.extra, fields = excluded.fields,
        updated_at = excluded.updated_at, upsert_count = upsert_count + 1"""
TOLERANCE_S = 300


def verified(key: bytes, headers, body: bytes) -> str | None:
    """Why the request is refused, or None when its signature is one of ours and fresh."""
    msg_id, timestamp, signatures = (headers.get(h, "") for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not (msg_id and timestamp.isdigit() and signatures):
        return "missing Standard Webhooks headers"
    if abs(time.time() - int(timestamp)) > TOLERANCE_S:
        return "timestamp outside the tolerance"
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()).decode()
    for signature in signatures.split():
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return None
    return "no valid signature"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    options = parser.parse_args()
    secret = os.environ.get("LEAD_INBOX_SECRET", "")
    if not secret.startswith("whsec_"):
        print("lead-inbox: LEAD_INBOX_SECRET must be a whsec_ secret", file=sys.stderr)
        return 2
    key = base64.b64decode(secret.removeprefix("whsec_"))
    db = sqlite3.connect(options.db, check_same_thread=False)
    db.execute(SCHEMA)
    # A leads.db from before the mapping (or the SQLite sink's) gains the column.
    if "fields" not in [row[1] for row in db.execute("PRAGMA table_info(leads)")]:
        db.execute("ALTER TABLE leads ADD COLUMN fields TEXT NOT NULL DEFAULT '{}'")
    db.commit()
    lock = threading.Lock()

    class Inbox(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            refused = verified(key, self.headers, body)
            lead = None
            if refused is None:
                try:
                    lead = json.loads(body)
                    values = [lead["externalId"], lead["name"], lead["email"], lead["message"]]
                except (ValueError, KeyError, TypeError):
                    refused = "not a lead"
            if refused:
                return self.answer(401 if "signature" in refused or "headers" in refused or "timestamp" in refused else 400, refused)
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            with lock:
                extra, fields = (json.dumps(lead.get(k, {})) for k in ("extra", "fields"))
                db.execute(UPSERT, (*values, extra, fields, now, now))
                db.commit()
            self.answer(200, "stored")

        def answer(self, status, why):
            payload = json.dumps({"status": why}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format, *args):
            # The status line only: no lead, no header values.
            print(f"lead-inbox: {self.command} {self.path} -> {args[1] if len(args) > 1 else '?'}", flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", options.port), Inbox)
    print(f"lead-inbox: listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
