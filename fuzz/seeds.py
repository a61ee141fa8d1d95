#!/usr/bin/env python3
"""Writes the seed corpus, fuzz/corpus/<target>/seed-*: odd-but-valid and hostile inputs.

Run it again after changing it (`python3 fuzz/seeds.py`); it rewrites only the seed-* files, so
inputs that fuzzing found and that were kept (any other name) stay. The constants match
fuzz/src/lib.rs (the policy and the clock the targets run at).
"""
import base64
import hashlib
import hmac
import json
import os

ROOT = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "..", "shared", "tests", "fixtures")
NOW = 1_796_084_513  # fuzz::NOW_MILLIS / 1000
BEARER = "fuzz-token"
BASIC = "fuzz-user:fuzz-pass"
HEADER = ("X-Fuzz-Token", "fuzz-header-value")
SIGNING_KEY = b"fuzz-signing-key"
PREFIX = "staticforms:form.submitted:"


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def envelope(submission_id, form, extra=""):
    """An envelope as text, `form` already JSON text; `extra` inserted into `data`."""
    return ('{"event":"form.submitted","timestamp":1796084513,"data":{"submissionId":%s,"formData":%s,'
            '"apiKey":"sf_live_secret"%s}}' % (json.dumps(submission_id), form, extra)).encode()


def sign(msg_id, timestamp, body):
    mac = hmac.new(SIGNING_KEY, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def framed(headers, body):
    head = "".join(f"{name}: {value}\n" for name, value in headers).encode("utf-8", "surrogateescape")
    return head + b"\n" + body


def delivery(submission_id, form='{"name":"Ada","email":"ada@example.com","message":"Hi"}', auth="bearer",
             key=None, content_type="application/json", extra="", body=None):
    body = envelope(submission_id, form, extra) if body is None else body
    headers = [("Content-Type", content_type)]
    if auth == "bearer":
        headers.append(("Authorization", f"Bearer {BEARER}"))
    elif auth == "basic":
        headers.append(("Authorization", "Basic " + base64.b64encode(BASIC.encode()).decode()))
    elif auth == "header":
        headers.append(HEADER)
    elif auth == "signature":
        headers += [("webhook-id", "msg_1"), ("webhook-timestamp", str(NOW)),
                    ("webhook-signature", sign("msg_1", NOW, body))]
    headers.append(("Idempotency-Key", PREFIX + submission_id if key is None else key))
    return framed(headers, body)


FORM_SECRET = b"fuzz-form-secret"


def form_signed(header, prefix, body, secret=FORM_SECRET):
    mac = base64.b64encode(hmac.new(secret, body, hashlib.sha256).digest()).decode()
    return framed([("Content-Type", "application/json"), (header, prefix + mac)], body)


def hex_signed(headers, body, before=b"", after=b"", secret=FORM_SECRET):
    """`headers` with the hex HMAC-SHA256 of `before + body + after` filling each `{tag}`."""
    tag = hmac.new(secret, before + body + after, hashlib.sha256).hexdigest()
    return framed([(name, value.replace("{tag}", tag)) for name, value in headers], body)


def profile_seeds():
    """Deliveries to the other sender profiles (the receive target runs every input through each)."""
    typeform, tally = fixture("typeform.json"), fixture("tally.json")
    sw_body = b'{"type":"contact.created","data":{"name":"Ada","email":"ada@example.com","n":1e400}}'
    odd_token = typeform.replace(b'"a3a12ec67a1365927098a606107fac15"', b'"t\u00e9:/ x"')
    return {
        "typeform": form_signed("Typeform-Signature", "sha256=", typeform),
        "typeform-odd-token": form_signed("Typeform-Signature", "sha256=", odd_token),
        "typeform-colon-form": form_signed("Typeform-Signature", "sha256=", typeform.replace(b'"lT4Z3j"', b'"a:b"', 1)),
        "typeform-partial": form_signed("Typeform-Signature", "sha256=",
                                        typeform.replace(b'"form_response",', b'"form_response_partial",', 1)),
        "typeform-wrong-secret": form_signed("Typeform-Signature", "sha256=", typeform, b"other"),
        "tally": form_signed("Tally-Signature", "", tally),
        "tally-fields-object": form_signed("Tally-Signature", "", b'{"eventType":"FORM_RESPONSE","data":{"responseId":"r","fields":{}}}'),
        "tally-with-prefix": form_signed("Tally-Signature", "sha256=", tally),
        "webflow": hex_signed([("Content-Type", "application/json"), ("x-webflow-timestamp", str(NOW * 1000)),
                               ("x-webflow-signature", "{tag}")], fixture("webflow.json"), f"{NOW * 1000}:".encode()),
        "webflow-stale": hex_signed([("Content-Type", "application/json"), ("x-webflow-timestamp", str(NOW)),
                                     ("x-webflow-signature", "{tag}")], fixture("webflow.json"), f"{NOW}:".encode()),
        "framer": hex_signed([("Content-Type", "application/json"), ("Framer-Webhook-Submission-Id", "0fbbb90e-1"),
                              ("Framer-Signature", "sha256={tag}")], fixture("framer.json"), after=b"0fbbb90e-1"),
        "basin-form": hex_signed([("Content-Type", "application/x-www-form-urlencoded"), ("X-Basin-Signature", "sha256={tag}")],
                                 b"email=a%40example.com&name=Example+Name&id=submission_id&id=again"),
        "formspree": hex_signed([("Content-Type", "application/json"), ("Formspree-Signature", f"t={NOW},v1={{tag}}")],
                                fixture("formspree.json"), f"{NOW}.".encode()),
        "formspree-no-id": hex_signed([("Content-Type", "application/json"), ("Formspree-Signature", f"t={NOW},v1={{tag}}")],
                                      b'{"form":"f","submission":{"email":"a@b"}}', f"{NOW}.".encode()),
        "formstack": hex_signed([("Content-Type", "application/x-www-form-urlencoded; charset=utf-8"),
                                 ("X-FS-Signature", "sha256={tag}")], fixture("formstack.txt")),
        "formstack-bad-escape": hex_signed([("Content-Type", "application/x-www-form-urlencoded"), ("X-FS-Signature", "{tag}")],
                                           b"UniqueID=1&Name=%zz"),
        "formstack-json-as-form": hex_signed([("Content-Type", "application/x-www-form-urlencoded"), ("X-FS-Signature", "{tag}")],
                                             b'{"UniqueID":"1"}'),
        "standard-webhooks": framed([("Content-Type", "application/json"), ("webhook-id", "msg_p1"),
                                     ("webhook-timestamp", str(NOW)), ("webhook-signature", sign("msg_p1", NOW, sw_body))],
                                    sw_body),
        "standard-webhooks-array": framed([("Content-Type", "application/json"), ("webhook-id", "msg:é/1"),
                                           ("webhook-timestamp", str(NOW)),
                                           ("webhook-signature", sign("msg:é/1", NOW, b"[1,2]"))], b"[1,2]"),
    }


def json_seeds():
    deep = lambda n: b'{"k":' * n + b"1" + b"}" * n  # noqa: E731
    return {
        "empty-object": b"{}", "empty-array": b"[]", "scalars": b'[null,true,false,0,-0,1.5e3,"x"]',
        "deep-31": deep(31), "deep-32": deep(32), "deep-arrays-40": b"[" * 40 + b"]" * 40,
        "huge-numbers": b"[1e400,-1E-400,123456789012345678901234567890123456789012345,9.9e125,1e126]",
        "escapes": rb'"\u0000\b\f\n\r\t\"\\\/\u00e9\ud83d\ude00"', "lone-surrogates": rb'["\ud83d","\ude00x"]',
        "duplicate-key": b'{"a":1,"a":2}', "odd-keys": '{"":1," ":2,"M":3,"__proto__":4,"é😀":5}'.encode(),
        "invalid-utf8": b'{"a":"\xff\xfe"}', "overlong-utf8": b'"\xc0\xaf"', "bom": b"\xef\xbb\xbf{}",
        "truncated": b'{"a":[1,2', "trailing": b"{} x", "whitespace": b' \t\r\n{ "a" : [ 1 , 2 ] }\n',
        "bare-control": b'"a\x01b"', "leading-zero": b"01", "nan": b"NaN", "big-exponent": b"1e99999999999999999999",
    }


def form_seeds():
    return {
        "formstack": fixture("formstack.txt"), "empty": b"", "plus-and-escaped-plus": b"a=1+2%2B3",
        "repeated": b"x=1&x=2&y&x=3", "empty-pairs": b"&&a=&=b&", "utf8-escaped": b"e=%C3%A9&c=%e2%82%ac",
        "raw-utf8": "n=é😀".encode(), "newline-subfields": b"Name=first+%3D+Ada%0Alast+%3D+Lovelace",
        "bad-escape": b"a=%zz", "short-escape": b"a=%4", "trailing-percent": b"a=100%",
        "escaped-not-utf8": b"a=%ff", "raw-not-utf8": b"a=\xff", "latin1-names": b"%E9=1&%E8=2&caf%E9=x", "replacement-char": b"a=%EF%BF%BD&b=%FF", "json": b'{"UniqueID":"1"}',
        "double-percent": b"a=%%41", "semicolon": b"a=1;b=2",
    }


def receive_seeds():
    long_id = "x" * 1024
    nested = '{"k":' * 29 + '"deep"' + "}" * 29
    return {
        "bearer": delivery("sub_bearer"), "basic": delivery("sub_basic", auth="basic"),
        "header": delivery("sub_header", auth="header"), "signature": delivery("sub_sig", auth="signature"),
        "fixture": framed([("Content-Type", "application/json"), ("Authorization", f"Bearer {BEARER}"),
                           ("Idempotency-Key", PREFIX + "sub_8fK2qLw9Xc")], fixture("delivery.json")),
        "deep-form": delivery("sub_deep", form=nested),
        "too-deep-form": delivery("sub_too_deep", form='{"k":' * 31 + "1" + "}" * 31),
        "huge-numbers": delivery("sub_num", form='{"n":1e400,"m":-1E-400,"big":123456789012345678901234567890}'),
        "odd-keys": delivery("sub_keys", form='{"":"empty","M":{"S":"x"},"__proto__":1,"a.b":[],"é":"😀"}'),
        "id-1024": delivery(long_id), "id-1025": delivery(long_id + "x"),
        "id-trailing-spaces": delivery("sub_sp  ", key=PREFIX + "sub_sp"),
        "id-non-ascii": delivery("sub_é😀"), "id-colons": delivery("a:b:c"),
        "id-control": delivery("sub\u0007bell"), "key-other-case": delivery("sub_case", key=PREFIX.upper() + "sub_case"),
        "key-trailing-space": delivery("sub_ts", key=PREFIX + "sub_ts "), "key-empty": delivery("sub_nokey", key=""),
        "duplicate-keys": delivery("sub_dup", form='{"a":1,"a":2}'),
        "invalid-utf8": delivery("sub_utf8", body=b'{"event":"form.submitted","data":{"submissionId":"s\xff"}}'),
        "wrong-media": delivery("sub_media", content_type="text/plain"),
        "charset-media": delivery("sub_charset", content_type="application/json; charset=utf-8"),
        "no-form-data": delivery("sub_noform", form="null"), "array-form": delivery("sub_arr", form="[1,2]"),
        "attachments": delivery("sub_att", extra=',"attachments":[{"name":"a.pdf","size":1}]'),
        "wrong-token": framed([("Content-Type", "application/json"), ("Authorization", "Bearer nope"),
                               ("Idempotency-Key", PREFIX + "s")], envelope("s", "{}")),
        "no-credentials": framed([("Content-Type", "application/json"), ("Idempotency-Key", PREFIX + "s")],
                                 envelope("s", "{}")),
    }


def auth_seeds():
    body = envelope("sub_auth", "{}")
    good_sig = sign("msg_1", NOW, body)
    sig_headers = lambda ts, sigs: [("webhook-id", "msg_1"), ("webhook-timestamp", ts), ("webhook-signature", sigs)]  # noqa: E731
    return {
        "bearer": framed([("Authorization", f"Bearer {BEARER}")], body),
        "bearer-lowercase-scheme": framed([("Authorization", f"bearer   {BEARER}  ")], body),
        "basic": framed([("Authorization", "Basic " + base64.b64encode(BASIC.encode()).decode())], body),
        "basic-not-base64": framed([("Authorization", "Basic %%%not-base64%%%")], body),
        "basic-no-colon": framed([("Authorization", "Basic " + base64.b64encode(b"fuzzuserfuzzpass").decode())], body),
        "header": framed([HEADER], body), "header-wrong": framed([(HEADER[0], HEADER[1] + " ")], body),
        "signature": framed(sig_headers(str(NOW), good_sig), body),
        "signature-among-1000": framed(sig_headers(str(NOW), " ".join(["v1,AAAA"] * 999 + [good_sig])), body),
        "signature-1000-bad": framed(sig_headers(str(NOW), " ".join(["v1,////"] * 1000)), body),
        "signature-far-past": framed(sig_headers(str(NOW - 301), sign("msg_1", NOW - 301, body)), body),
        "signature-far-future": framed(sig_headers("99999999999999999", sign("msg_1", 99999999999999999, body)), body),
        "signature-edge-of-window": framed(sig_headers(str(NOW + 300), sign("msg_1", NOW + 300, body)), body),
        "signature-timestamp-sign": framed(sig_headers(f"+{NOW}", sign("msg_1", f"+{NOW}", body)), body),
        "signature-partial": framed([("webhook-id", "msg_1"), ("webhook-signature", good_sig)], body),
        "signature-other-body": framed(sig_headers(str(NOW), good_sig), body + b" "),
        "header-10000": framed([("Authorization", "Bearer " + "t" * 10_000)], body),
        "header-cr-nul": framed([("Authorization", f"Bearer {BEARER}\r"), (HEADER[0], HEADER[1] + "\x00")], body),
        "two-methods-one-good": framed([("Authorization", "Bearer wrong"), HEADER], body),
    }


def receipt_item(status="RECEIVED", profile=None):
    """The fixture receipt; with `profile`, one of that sender profile, its payload its sender's
    documented example (or, for an unknown profile, the fixture's)."""
    item = json.loads(fixture("receipt_item.json"))
    item["status"] = {"S": status}
    if profile:
        item["profile"] = {"S": profile}
        examples = {"tally": ("tally.json", "tally:2wgx4n", "2wgx4n"),
                    "typeform": ("typeform.json", "typeform:lT4Z3j:a3a12ec67a1365927098a606107fac15",
                                 "lT4Z3j:a3a12ec67a1365927098a606107fac15"),
                    "standard-webhooks": (None, "standard-webhooks:msg_1", "msg_1")}
        if profile in examples:
            name, key, identity = examples[profile]
            payload = json.loads(fixture(name)) if name else {"type": "t", "data": {"email": "a@example.com"}}
            item["payload"] = {"S": json.dumps(payload, separators=(",", ":"), sort_keys=True)}
            item["pk"], item["submissionId"] = {"S": key}, {"S": identity}
    return json.dumps(item, separators=(",", ":")).encode()


def dynamo_seeds():
    return {
        "fixture": fixture("dynamo_json.json"), "receipt": fixture("receipt_item.json"),
        "receipt-legacy-map": fixture("receipt_item_legacy_map.json"),
        "every-type": json.dumps({"s": {"S": ""}, "n": {"N": "-0.5e10"}, "b": {"B": "AAEC"}, "t": {"BOOL": True},
                                  "z": {"NULL": True}, "l": {"L": [{"S": "x"}, {"M": {}}]}, "ss": {"SS": ["a", "b"]},
                                  "ns": {"NS": ["1", "2.5"]}, "bs": {"BS": ["AA=="]}}).encode(),
        "empty-item": b"{}", "empty-set": b'{"ss":{"SS":[]}}', "two-types": b'{"x":{"S":"a","N":"1"}}',
        "bad-base64": b'{"b":{"B":"%%%"}}', "number-text": b'{"n":{"N":"abc"}}', "null-false": b'{"z":{"NULL":false}}',
        "deep-list": b'{"l":' + b'{"L":[' * 40 + b'{"S":"x"}' + b"]}" * 40 + b"}",
        "receipt-completed": receipt_item("COMPLETED"),
    }


def store_seeds():
    ccf = "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"
    status = lambda code, body: code.to_bytes(2, "big") + body  # noqa: E731
    return {
        "stored": status(200, b"{}"), "stored-consumed": status(200, b'{"ConsumedCapacity":{"TableName":"receipts"}}'),
        "200-error-type": status(200, b'{"__type":"x#InternalServerError"}'), "200-not-json": status(200, b"<html>"),
        "200-array": status(200, b"[]"),
        "duplicate": status(400, b'{"__type":"%s","Item":%s}' % (ccf.encode(), receipt_item())),
        "duplicate-short-type": status(400, b'{"__type":"ConditionalCheckFailedException","Item":%s}' % receipt_item()),
        "duplicate-no-item": status(400, b'{"__type":"%s"}' % ccf.encode()),
        "duplicate-bad-status": status(400, b'{"__type":"%s","Item":%s}' % (ccf.encode(), receipt_item("WAT"))),
        "throttled": status(400, b'{"__type":"x#ThrottlingException"}'), "429": status(429, b""),
        "500": status(500, b'{"__type":"x#InternalServerError"}'), "503-html": status(503, b"<html>"),
        "access-denied-403": status(403, b'{"__type":"x#AccessDeniedException"}'),
        "not-found": status(400, b'{"__type":"x#ResourceNotFoundException"}'),
        "validation": status(400, b'{"__type":"x#ValidationException","message":"too big"}'),
        "redirect": status(302, b""), "unknown-type": status(400, b'{"__type":"x#Whatever"}'), "short": b"\x01",
    }


def stream_seeds():
    insert, modify, remove, other = b"\x00", b"\x01", b"\x02", b"\x03"
    fallback = b"\x04"  # INSERT with the fallback key, status and receivedAt
    return {
        "insert": insert + receipt_item(), "modify": modify + receipt_item(), "remove": remove + receipt_item(),
        "other-event": other + receipt_item(), "completed": insert + receipt_item("COMPLETED"),
        "legacy-map": insert + fixture("receipt_item_legacy_map.json"),
        "unreadable": insert + b"{not json", "unreadable-with-fallback": fallback + b"{not json",
        "not-a-receipt": insert + b'{"pk":{"S":"x"}}', "missing-payload": insert + b'{"pk":{"S":"k"},"status":{"S":"RECEIVED"},"receivedAt":{"S":"t"}}',
        "empty": b"",
        "tally": insert + receipt_item(profile="tally"), "typeform": insert + receipt_item(profile="typeform"),
        "standard-webhooks": modify + receipt_item(profile="standard-webhooks"),
        "unknown-profile": insert + receipt_item(profile="jotform"),
    }


def main():
    corpus = {"json": json_seeds(), "form": form_seeds(), "receive": {**receive_seeds(), **profile_seeds()}, "auth": auth_seeds(),
              "dynamo_json": dynamo_seeds(), "store_answer": store_seeds(), "stream_record": stream_seeds()}
    for target, seeds in corpus.items():
        directory = os.path.join(ROOT, "corpus", target)
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.startswith("seed-"):
                os.remove(os.path.join(directory, name))
        for name, data in seeds.items():
            with open(os.path.join(directory, f"seed-{name}"), "wb") as f:
                f.write(data)
        print(f"{target}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
