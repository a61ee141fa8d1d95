"""What every benchmark of `make bench` shares: processes on 127.0.0.1, the store, SigV4, load.

Standard library only. Every server listens on 127.0.0.1 on a free port and is stopped by its
own PID; every load loop is bounded in count and in time.
"""
import datetime
import hashlib
import hmac
import http.client
import json
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import re
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "target", "bench")
REGION = "us-east-1"
TABLE = "receipts"
# The store's root key: ministack does not check it; the benchmark's own setup uses it.
ROOT_AUTH = ("AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, "
             "SignedHeaders=host;x-amz-date, Signature=0")


_STARTED = time.monotonic()


def say(message):
    """Progress, stamped with the minutes and seconds since the bench started."""
    elapsed = int(time.monotonic() - _STARTED)
    print(f"bench [{elapsed // 60:2d}:{elapsed % 60:02d}]: {message}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, seconds, check):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"bench: {what} did not come up within {seconds} s")


class Process:
    """A server started by the benchmark, stopped by its own PID."""

    def __init__(self, name, argv, env=None, cwd=None):
        self.name = name
        os.makedirs(OUT, exist_ok=True)
        self.log_path = os.path.join(OUT, f"{name}.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def cpu_ns(self):
        """CPU time (user + system) of the process so far, every thread's including those that
        ended, in nanoseconds (from /proc/<pid>/stat, in clock ticks of 10 ms)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 10_000_000

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def post(url, headers, body, timeout=30):
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def store_root_call(endpoint, service, target, body):
    """A setup call with the root key (DynamoDB JSON, or IAM's query form when target is None)."""
    headers = {"X-Amz-Date": "20260101T000000Z", "Authorization": ROOT_AUTH.format(service=service)}
    if target is None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        data = urllib.parse.urlencode(dict(body, Version="2010-05-08")).encode()
    else:
        headers["Content-Type"] = "application/x-amz-json-1.0"
        headers["X-Amz-Target"] = target
        data = json.dumps(body).encode()
    try:
        return post(endpoint + "/", headers, data)
    except urllib.error.HTTPError as error:
        return error.read()


class Store:
    """ministack (DynamoDB with SigV4 and IAM checked) with the receipts table and an IAM key."""

    def __init__(self):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        os.makedirs(OUT, exist_ok=True)
        state = tempfile.mkdtemp(prefix="ministack-", dir=OUT)
        env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        env.update(AUTH="true", BIND_HOST="127.0.0.1", GATEWAY_PORT=str(self.port), TMPDIR=state,
                   SERVICES="dynamodb,dynamodbstreams,iam")
        self.process = Process("ministack", [os.path.join(ROOT, ".tools/ministack/bin/ministack")], env=env)
        try:
            self._set_up()
        except BaseException:
            self.process.stop()
            raise

    def _set_up(self):
        wait_until("ministack", 30, lambda: urllib.request.urlopen(f"{self.endpoint}/_ministack/health",
                                                                     timeout=2).status == 200)
        store_root_call(self.endpoint, "iam", None, {"Action": "CreateUser", "UserName": "bench"})
        policy = json.dumps({"Version": "2012-10-17",
                             "Statement": [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}]})
        store_root_call(self.endpoint, "iam", None, {"Action": "PutUserPolicy", "UserName": "bench",
                                                     "PolicyName": "ddb", "PolicyDocument": policy})
        xml = store_root_call(self.endpoint, "iam", None, {"Action": "CreateAccessKey", "UserName": "bench"})
        xml = xml.decode()
        self.access_key_id = re.search(r"<AccessKeyId>(.*?)</AccessKeyId>", xml).group(1)
        self.secret_access_key = re.search(r"<SecretAccessKey>(.*?)</SecretAccessKey>", xml).group(1)
        with open(os.path.join(ROOT, "deploy/receipts-table.json")) as f:
            table = json.load(f)
        table["TableName"] = TABLE
        created = store_root_call(self.endpoint, "dynamodb", "DynamoDB_20120810.CreateTable", table)
        if b"TableDescription" not in created:
            raise SystemExit(f"bench: CreateTable failed: {created[:300]!r}")

    def count_receipts(self, prefix):
        """Receipts whose submission ID starts with `prefix` (a consistent scan)."""
        count, start = 0, None
        while True:
            body = {"TableName": TABLE, "ConsistentRead": True, "ProjectionExpression": "submissionId"}
            if start:
                body["ExclusiveStartKey"] = start
            page = json.loads(store_root_call(self.endpoint, "dynamodb", "DynamoDB_20120810.Scan", body))
            count += sum(1 for i in page.get("Items", []) if i["submissionId"]["S"].startswith(prefix))
            start = page.get("LastEvaluatedKey")
            if not start:
                return count

    def stop(self):
        self.process.stop()


def sigv4(endpoint, access_key_id, secret, target, body, when=None):
    """The headers of one signed DynamoDB request (for the floors' constant PutItem)."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    amz_date, date = when.strftime("%Y%m%dT%H%M%SZ"), when.strftime("%Y%m%d")
    host = endpoint.split("://", 1)[1]
    headers = {"content-type": "application/x-amz-json-1.0", "host": host, "x-amz-date": amz_date,
               "x-amz-target": target}
    names = ";".join(sorted(headers))
    canonical = "POST\n/\n\n" + "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)) + "\n" + names + "\n" \
        + hashlib.sha256(body.encode()).hexdigest()
    scope = f"{date}/{REGION}/dynamodb/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = ("AWS4" + secret).encode()
    for part in (date, REGION, "dynamodb", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, SignedHeaders={names}, "
                                f"Signature={signature}")
    del headers["host"]
    return headers


def capnp_config(name, modules, bindings, port):
    """A workerd config: one Worker from `modules` [(name, kind, path)] with text `bindings`,
    on 127.0.0.1:`port`, whose fetches may reach this machine only."""
    def text(value):
        return json.dumps(value)
    # `embed` paths are relative to the config file (absolute ones mean the import path).
    module_lines = ",\n        ".join(f"(name = {text(n)}, {kind} = embed {text(os.path.relpath(p, OUT))})"
                                      for n, kind, p in modules)
    binding_lines = ",\n        ".join(f"(name = {text(k)}, text = {text(v)})" for k, v in bindings.items())
    path = os.path.join(OUT, f"{name}.capnp")
    with open(path, "w") as f:
        f.write(f"""using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = (
      modules = [
        {module_lines}
      ],
      compatibilityDate = "2026-04-20",
      bindings = [
        {binding_lines}
      ],
      globalOutbound = "loopback",
    )),
    (name = "loopback", network = (allow = ["local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:{port}", http = (), service = "main")],
);
""")
    return path


class Workerd:
    """`workerd serve` with a generated config; no wrangler or Miniflare in the measured process."""

    def __init__(self, name, modules, bindings, inspector_port=None):
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = capnp_config(name, modules, bindings, self.port)
        argv = [os.path.join(ROOT, "node_modules/.bin/workerd"), "serve", config]
        if inspector_port:
            argv.append(f"--inspector-addr=127.0.0.1:{inspector_port}")
        self.process = Process(name, argv, cwd=OUT)

        def up():
            if self.process.proc.poll() is not None:
                raise SystemExit(f"bench: workerd ({name}) exited; see {self.process.log_path}")
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        try:
            wait_until(f"workerd ({name})", 30, up)
        except BaseException:
            self.process.stop()
            raise

    def stop(self):
        self.process.stop()


def run_load(url, path, requests, concurrency, time_limit, method="POST"):
    """Sends `requests` [(headers, body)] in order from `concurrency` keep-alive connections;
    neighbours in the list run at the same time. Stops at `time_limit` seconds. Returns the
    statuses, the latencies (seconds) and the wall time."""
    host, port = url.split("://", 1)[1].split(":")
    lock = threading.Lock()
    position = [0]
    statuses = [None] * len(requests)
    latencies = [None] * len(requests)
    deadline = time.monotonic() + time_limit

    def worker():
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        while time.monotonic() < deadline:
            with lock:
                index = position[0]
                if index >= len(requests):
                    break
                position[0] += 1
            headers, body = requests[index]
            started = time.perf_counter()
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                statuses[index] = response.status
            except (OSError, http.client.HTTPException):
                statuses[index] = "error"
                connection.close()
                connection = http.client.HTTPConnection(host, int(port), timeout=30)
            latencies[index] = time.perf_counter() - started
        connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    sent = [i for i, s in enumerate(statuses) if s is not None]
    return [statuses[i] for i in sent], [latencies[i] for i in sent], wall


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(values):
    """Median and spread (min, max) of repeated measurements."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}
