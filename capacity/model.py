"""The steady-state model: for a delivery rate, each stage's load, documented limit and headroom,
the first bottleneck per sink and what to configure there, and the cost per million deliveries.
Every figure comes from params.py."""
import math
from dataclasses import dataclass

from params import DUPLICATES, SECONDS_PER_MONTH, value as v

KB = 1024
GIB = 1024 ** 3


@dataclass(frozen=True)
class Sink:
    """How the stream worker writes leads to one sink."""
    name: str
    lanes: int            # records of one batch in flight at once (handler.rs)
    calls: int            # API calls per write, one after another: a lead's, or a batch's
    call_ms: float        # latency of one call (assumed)
    calls_per_s: float    # the sink's documented (or assumed) rate limit, calls per second
    limit_name: str
    limit_advice: str
    connections: bool = False  # one connection per concurrent batch (PostgreSQL)
    calls_per_day: float = math.inf  # a daily allocation, on top of the rate limit
    worker_advice: str = "ParallelizationFactor (up to 10 batches per shard at once)"
    batch_max: int = 1    # leads one write takes (1: one lead per call; the CRMs take a batch)
    single_calls: int = 0  # calls for one lead alone (reconcile, redrive); 0: `calls`
    paces_daily: bool = False  # spreads its daily allocation over 24 hours (HubSpot's pacer)

    def sustained_calls_per_s(self):
        """The calls per second the sink takes all day: its rate limit, or its daily allocation."""
        return min(self.calls_per_s, self.calls_per_day / 86_400)


SINKS = [
    Sink("webhook", int(v("worker_lanes")), 1, v("webhook_call_ms"), v("webhook_rate_per_s"),
         "your receiver's rate (assumed 1,000/s)", "scale the receiver; the stream worker sends one request per lead"),
    Sink("postgres", int(v("worker_lanes")), 1, v("postgres_statement_ms"), math.inf,
         "max_connections", "a connection pooler (RDS Proxy, PgBouncer) or a lower ParallelizationFactor",
         connections=True, batch_max=int(v("sql_batch_max"))),
    Sink("hubspot", 1, int(v("hubspot_calls_per_batch")), v("hubspot_call_ms"), v("hubspot_calls_per_10s") / 10,
         "HubSpot 100 calls/10 s and 250,000/day (Free/Starter)",
         "a higher tier or the API limit add-on (calls counted at full batches: 4 carry 100 leads; a longer "
         "MaximumBatchingWindowInSeconds keeps batches fuller below the limit)",
         calls_per_day=v("hubspot_calls_per_day"), batch_max=int(v("hubspot_batch_max")),
         single_calls=int(v("hubspot_calls_per_single")), paces_daily=True,
         worker_advice=("ParallelizationFactor, at a price: two receipts of one person may then run at once and "
                        "race on the contact (a 409 costs the association, not the ticket)")),
    Sink("salesforce", int(v("worker_lanes")), int(v("salesforce_calls_per_batch")), v("salesforce_call_ms"),
         math.inf, "Salesforce 150,000 calls/24 h (Enterprise, 50 licenses)",
         "more API calls (licenses or an add-on), or BatchSize 200 (a collection takes 200 records; a stream "
         "batch of 100 fills it halfway)", calls_per_day=v("salesforce_calls_per_day"),
         batch_max=int(v("salesforce_collection_max")), single_calls=int(v("salesforce_calls_per_single"))),
]


def wru(size_bytes):
    """Write request units for one write of an item of this size (1 KB each, rounded up)."""
    return max(1, math.ceil(size_bytes / KB))


def writes_per_delivery():
    """(table WRU, index WRU) per delivery: a new receipt is its PutItem and its COMPLETED update
    (each the item's size) on the table, and an index entry written then deleted; a duplicate
    is a conditional PutItem that fails, which still consumes the existing item's size."""
    item = wru(v("receipt_item_bytes"))
    new, duplicate = 1 - DUPLICATES, DUPLICATES
    table = new * (item + item) + duplicate * item
    index = new * (wru(v("index_entry_bytes")) * 2)
    return table, index


def partitions(rate):
    """The table's partitions at a steady rate: at least 4 (a new on-demand table takes 4,000 WRU/s
    at once), and enough for its writes (1,000 WRU/s each) and its 30 days of receipts (about
    10 GB each, assumed)."""
    table, _ = writes_per_delivery()
    stored = rate * (1 - DUPLICATES) * v("receipt_item_bytes") * v("retention_days") * 86_400
    return max(math.ceil(v("ddb_new_table_wru_per_s") / v("ddb_partition_wru_per_s")),
               math.ceil(rate * table / v("ddb_partition_wru_per_s")),
               math.ceil(stored / (v("ddb_partition_gb") * GIB)))


def shards(rate):
    """Stream shards: one per table partition (assumed)."""
    return max(1, math.ceil(partitions(rate) * v("shards_per_partition")))


def record_seconds(sink):
    """One record's time when it is settled alone (reconcile, redrive; and every record of a sink
    that takes one lead per call): the sink's calls in turn, then the receipt update."""
    return ((sink.single_calls or sink.calls) * sink.call_ms + v("receipt_update_ms")) / 1000


def full_batch(sink):
    """Leads one write carries when the stream hands over full batches (a backlog)."""
    return min(v("esm_batch_size"), sink.batch_max)


def records_per_write(rate, sink):
    """Leads one write carries at a steady `rate`: what a shard gathers in the batching window,
    at most a full batch (one for sinks that take a lead per call)."""
    if sink.batch_max == 1:
        return 1
    gathered = rate * (1 - DUPLICATES) / shards(rate) * v("esm_batching_window_s")
    return max(1.0, min(gathered, full_batch(sink)))


def calls_per_lead(rate, sink):
    """API calls per lead at a steady `rate` (`rate=None`: full batches, as in a backlog)."""
    carried = full_batch(sink) if rate is None else records_per_write(rate, sink)
    return sink.calls / carried


def invocation_rate(sink, batch=None):
    """Records per second one invocation works through with full batches."""
    batch = batch or v("esm_batch_size")
    if sink.batch_max > 1:
        # One write per batch (sent in full batches), then the receipts' updates, lanes at once.
        writes = math.ceil(batch / sink.batch_max)
        seconds = (writes * sink.calls * sink.call_ms + math.ceil(batch / int(v("worker_lanes")))
                   * v("receipt_update_ms") + v("invocation_overhead_ms")) / 1000
        return batch / seconds
    seconds = math.ceil(batch / sink.lanes) * record_seconds(sink) + v("invocation_overhead_ms") / 1000
    return batch / seconds


def stages(rate, sink, parallelization=None):
    """[(stage, load, limit, unit, advice)] at `rate` deliveries per second."""
    parallelization = parallelization or v("esm_parallelization")
    new = rate * (1 - DUPLICATES)
    table, index = writes_per_delivery()
    n = shards(rate)
    concurrent = n * parallelization
    rows = [
        ("Workers Free: requests/day", rate * 86_400, v("workers_free_requests_per_day"), "requests/day",
         "the Workers Paid plan (no documented request rate limit)"),
        ("Workers Free: CPU per delivery", v("edge_cpu_ms"), v("workers_free_cpu_ms"), "ms", "the Paid plan"),
        ("Workers Free: subrequests per delivery", v("edge_subrequests"), v("workers_free_subrequests"),
         "subrequests", "none needed"),
        ("DynamoDB writes, table and index", rate * (table + index), v("ddb_table_wru_per_s"), "WRU/s",
         "raise the table's on-demand throughput quota (Service Quotas); a new table takes 4,000 WRU/s at once"),
        ("pending index, per key value", rate * index / 16, v("ddb_partition_wru_per_s"), "WRU/s",
         "more pendingShard values (PENDING_SHARDS in shared/src/receipt.rs)"),
        ("Lambda concurrency (shards x ParallelizationFactor)", concurrent,
         v("lambda_account_concurrency"), "executions", "raise the account's concurrency quota"),
        ("CloudWatch Logs PutLogEvents (the edge's lines, a call per delivery)", rate, v("logs_put_per_s"), "calls/s",
         "a higher PutLogEvents quota (Service Quotas); past it the edge's lines are not shipped (deliveries are "
         "still stored) and its alarms see less"),
        ("stream worker", new, concurrent * invocation_rate(sink), "records/s", sink.worker_advice),
        # A batching sink's calls at full batches: below its limit batches are as full as a
        # shard gathers in the batching window (records_per_write); at it, the sink's pacing
        # holds calls, records wait, and batches fill, so full batches are the load it must carry.
        (f"{sink.name} rate limit", new * calls_per_lead(None, sink), sink.sustained_calls_per_s(), "calls/s",
         sink.limit_advice),
    ]
    if sink.connections:
        rows.append(("postgres connections", concurrent + 1,
                     v("postgres_max_connections"), "connections", sink.limit_advice))
    return rows


def first_bottleneck(rate, sink, parallelization=None):
    """The stage with the least headroom (limit / load) that is not a per-request ceiling, and its headroom."""
    # The Workers Free plan's ceilings are per request or per day; at scale the plan is Paid.
    rows = [r for r in stages(rate, sink, parallelization) if not r[0].startswith("Workers Free")]
    name, load, limit, _, advice = min(rows, key=lambda r: r[2] / r[1] if r[1] else math.inf)
    return name, limit / load if load else math.inf, advice


def capacity(sink, rate=1, parallelization=None):
    """Leads per second the path sustains to `sink` (the stream worker or the sink's limit)."""
    parallelization = parallelization or v("esm_parallelization")
    consumer = shards(rate) * parallelization * invocation_rate(sink)
    return min(consumer, sink.sustained_calls_per_s() / calls_per_lead(None, sink))


def cost_per_million(rate, sink):
    """USD per million deliveries at a steady `rate`, by term (a month at that rate)."""
    month = rate * SECONDS_PER_MONTH
    millions = month / 1e6
    new = 1 - DUPLICATES
    table, index = writes_per_delivery()
    # The edge's requests and CPU, and its Tail Worker's CPU (Tail Workers are billed by CPU only).
    cpu_ms = month * (v("edge_cpu_ms") + v("tail_cpu_ms"))
    workers = (v("workers_monthly_minimum_usd")
               + max(0.0, month - v("workers_included_requests")) / 1e6 * v("workers_usd_per_million_requests")
               + max(0.0, cpu_ms - v("workers_included_cpu_ms")) / 1e6 * v("workers_usd_per_million_cpu_ms"))
    dynamodb_writes = month * (table + index) / 1e6 * v("ddb_usd_per_million_wru")
    stored_gb = month * new * v("receipt_item_bytes") / GIB * v("retention_days") / 30
    dynamodb_storage = stored_gb * (v("ddb_usd_per_gb_month") + v("ddb_pitr_usd_per_gb_month"))
    # Lambda: batches fill up to BatchSize within the batching window, per shard.
    per_shard = month * new / shards(rate) / SECONDS_PER_MONTH
    batch = min(v("esm_batch_size"), max(1.0, per_shard * v("esm_batching_window_s")))
    invocations = month * new / batch
    seconds = invocations * (math.ceil(batch / sink.lanes) * record_seconds(sink) + v("invocation_overhead_ms") / 1000)
    lam = (invocations / 1e6 * v("lambda_usd_per_million_requests")
           + seconds * v("lambda_memory_gb") * v("lambda_usd_per_gb_s"))
    # The stream worker's lines per new receipt, and the edge's line per delivery (shipped by its Tail Worker).
    log_bytes = month * new * v("log_bytes_per_record") + month * v("edge_log_bytes_per_delivery")
    logs = log_bytes / GIB * v("logs_usd_per_gb")
    metrics = v("custom_metrics") * v("metric_usd_per_month")
    fixed = v("alarms") * v("alarm_usd_per_month") + v("secret_usd_per_month")
    terms = {"Workers": workers, "DynamoDB writes": dynamodb_writes, "DynamoDB storage and PITR": dynamodb_storage,
             "Lambda": lam, "CloudWatch Logs": logs, "CloudWatch metrics": metrics,
             "alarms and the sink secret": fixed}
    return {name: usd / millions for name, usd in terms.items()}
