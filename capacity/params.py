"""Every figure the capacity model uses, each with what kind it is and where it comes from.

Kinds: `documented` (a provider's published limit), `price` (a published price), `ours` (this
project's configuration: template.yaml, the sinks' code), `measured` (`make bench` on the
2-core VM, 2026-12-01), `assumed` (not measured and not published: replace with your own).
Pages were read on 2026-12-01; docs/capacity.md lists them with what each says.
"""
from dataclasses import dataclass

READ_ON = "2026-12-01"

CF_PRICING = "https://developers.cloudflare.com/workers/platform/pricing/"
CF_LIMITS = "https://developers.cloudflare.com/workers/platform/limits/"
CF_TAIL = "https://developers.cloudflare.com/workers/observability/logs/tail-workers/"
DDB_PRICING = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
DDB_QUOTAS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
DDB_TABLE_QUOTA = ("https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
                   "throttling-account-limit-exceeded-mitigation.html")
DDB_PARTITIONS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
DDB_GUIDE_PARTITIONS = ("https://github.com/awsdocs/amazon-dynamodb-developer-guide/blob/master/doc_source/"
                        "GuidelinesForTables.md")
HUBSPOT_CHANGELOG = "https://developers.hubspot.com/changelog/increasing-our-api-limits"
DDB_ITEMS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithItems.html"
DDB_STREAMS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html"
DDB_ONDEMAND = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html"
LAMBDA_PRICING = "https://aws.amazon.com/lambda/pricing/"
LAMBDA_ESM = "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html"
LAMBDA_DDB = "https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html"
LAMBDA_LIMITS = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
HUBSPOT_LIMITS = "https://developers.hubspot.com/docs/developer-tooling/platform/usage-guidelines"
HUBSPOT_BATCH = "https://developers.hubspot.com/docs/api-reference/latest/crm/objects/contacts/guide"
SF_LIMITS = ("https://developer.salesforce.com/docs/platform/salesforce-app-limits-cheatsheet/guide/"
             "salesforce-app-limits-platform-api.html")
SF_COLLECTIONS = ("https://developer.salesforce.com/docs/platform/api-rest/guide/"
                  "resources-composite-sobjects-collections-upsert.html")
PG_CONNECTIONS = "https://www.postgresql.org/docs/current/runtime-config-connection.html"
CW_PRICING = "https://aws.amazon.com/cloudwatch/pricing/"
CW_LOGS_QUOTAS = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/cloudwatch_limits_cwl.html"
BENCH = "docs/performance.md (make bench, 2026-12-01)"


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    kind: str
    source: str
    note: str = ""


F = Figure
FIGURES = {
    # Cloudflare Workers.
    "workers_monthly_minimum_usd": F(5.0, "USD/month", "price", CF_PRICING, "Paid plan minimum"),
    "workers_included_requests": F(10e6, "requests/month", "price", CF_PRICING, "included in the Paid plan"),
    "workers_usd_per_million_requests": F(0.30, "USD", "price", CF_PRICING, "beyond the included"),
    "workers_included_cpu_ms": F(30e6, "CPU ms/month", "price", CF_PRICING, "included in the Paid plan"),
    "workers_usd_per_million_cpu_ms": F(0.02, "USD", "price", CF_PRICING, "beyond the included"),
    "workers_free_requests_per_day": F(100_000, "requests/day", "documented", CF_LIMITS, "Free plan"),
    "workers_free_cpu_ms": F(10, "ms/request", "documented", CF_LIMITS, "Free plan CPU per request"),
    "workers_paid_cpu_ms": F(30_000, "ms/request", "documented", CF_LIMITS, "Paid default (up to 5 min)"),
    "workers_free_subrequests": F(50, "per request", "documented", CF_LIMITS, "Free plan"),
    "workers_paid_subrequests": F(10_000, "per request", "documented", CF_LIMITS, "Paid plan"),
    "edge_subrequests": F(1, "per delivery", "ours", "edge/src/dynamodb.rs", "one PutItem"),
    "edge_cpu_ms": F(1.34, "ms/delivery", "measured", BENCH, "about 1 KiB deliveries, workerd CPU"),
    "tail_cpu_ms": F(1.0, "ms/delivery", "assumed", "tail/index.mjs",
                     "the edge's Tail Worker, once per delivery: read the trace, sign and send one PutLogEvents "
                     "call; Tail Workers are billed by CPU time, not by requests (" + CF_TAIL + ")"),
    "logs_put_per_s": F(5_000, "calls/s", "assumed", CW_LOGS_QUOTAS,
                        "PutLogEvents per account and Region, shared with the functions' logs; lower in some "
                        "Regions; adjustable; read your account's in Service Quotas"),
    "edge_log_bytes_per_delivery": F(450, "bytes", "ours", "shared/src/log.rs",
                                     "the edge's one line per request, as PutLogEvents counts it (26 bytes more)"),
    # DynamoDB on-demand.
    "ddb_usd_per_million_wru": F(0.625, "USD", "price", DDB_PRICING,
                                 "us-east-1, Standard class; read from copies of the page"),
    "ddb_usd_per_gb_month": F(0.25, "USD", "price", DDB_PRICING, "storage; read from copies of the page"),
    "ddb_pitr_usd_per_gb_month": F(0.20, "USD", "price", DDB_PRICING,
                                   "point-in-time recovery (on in template.yaml); read from copies of the page"),
    "ddb_partition_wru_per_s": F(1_000, "WRU/s", "documented", DDB_PARTITIONS, "per partition"),
    "ddb_partition_gb": F(10, "GB", "assumed", DDB_GUIDE_PARTITIONS,
                          "about 10 GB per partition, an older guide; AWS documents no current figure"),
    "ddb_table_wru_per_s": F(40_000, "WRU/s", "documented", DDB_TABLE_QUOTA,
                             "on-demand per-table default, adjustable; covers the table and its indexes together"),
    "ddb_new_table_wru_per_s": F(4_000, "WRU/s", "documented", DDB_ONDEMAND,
                                 "a new on-demand table at once; double the previous peak within 30 min"),
    "receipt_item_bytes": F(1_159, "bytes", "measured", "ARCHITECTURE.md (item_size of a 1 KiB form)"),
    "index_entry_bytes": F(300, "bytes", "ours", "ARCHITECTURE.md (pending index: keys only)",
                           "table key, index keys and 100 bytes of overhead: 1 WRU"),
    "retention_days": F(30, "days", "ours", "edge RETENTION_DAYS default"),
    # DynamoDB Streams and the Lambda event source mapping.
    "stream_retention_s": F(86_400, "s", "documented", DDB_STREAMS, "records removed after 24 hours"),
    "shards_per_partition": F(1, "shards", "assumed", DDB_STREAMS,
                              "shards follow partitions; AWS documents no exact ratio"),
    "esm_batch_size": F(100, "records", "ours", "template.yaml", "documented maximum 10,000"),
    "esm_batch_size_max": F(10_000, "records", "documented", LAMBDA_ESM),
    "esm_parallelization": F(1, "batches/shard", "ours", "template.yaml (default)", "documented maximum 10"),
    "esm_parallelization_max": F(10, "batches/shard", "documented", LAMBDA_ESM),
    "esm_batching_window_s": F(1, "s", "ours", "template.yaml"),
    "esm_polls_per_s": F(4, "polls/s/shard", "documented", LAMBDA_DDB, "base rate"),
    "esm_max_record_age_s": F(3_600, "s", "ours", "template.yaml", "then the record goes to the failed-batches queue"),
    "reconcile_every_s": F(900, "s", "ours", "template.yaml rate(15 minutes)"),
    "reconcile_older_than_s": F(7_200, "s", "ours", "template.yaml ReconcileOlderThan"),
    "reconcile_timeout_s": F(600, "s", "ours", "template.yaml"),
    # Lambda.
    "lambda_usd_per_gb_s": F(0.0000133334, "USD", "price", LAMBDA_PRICING,
                             "arm64, first 7.5 billion GB-s; read from copies of the page"),
    "lambda_usd_per_million_requests": F(0.20, "USD", "price", LAMBDA_PRICING, "read from copies of the page"),
    "lambda_memory_gb": F(0.25, "GB", "ours", "template.yaml MemorySize 256"),
    "lambda_account_concurrency": F(1_000, "executions", "documented", LAMBDA_LIMITS, "default, adjustable"),
    "worker_lanes": F(10, "records at once", "ours", "stream-worker/src/sink/mod.rs (MAX_CONCURRENT_RECORDS)"),
    "receipt_update_ms": F(10, "ms", "assumed", "in-region UpdateItem round trip"),
    "invocation_overhead_ms": F(5, "ms", "assumed", "per batch"),
    # Sinks.
    "hubspot_calls_per_10s": F(100, "calls", "documented", HUBSPOT_LIMITS, "Free/Starter; 190 Pro/Enterprise; 250 with the add-on"),
    "hubspot_calls_per_10s_pro": F(190, "calls", "documented", HUBSPOT_LIMITS, "Professional/Enterprise"),
    "hubspot_calls_per_day": F(250_000, "calls/day", "documented", HUBSPOT_LIMITS,
                               "Free/Starter, shared by the account's apps; read from copies of the page"),
    "hubspot_calls_per_day_pro": F(650_000, "calls/day", "documented", HUBSPOT_CHANGELOG, "Professional"),
    "hubspot_calls_per_batch": F(4, "calls", "ours", "stream-worker/src/sink/hubspot.rs",
                                 "tickets read, contacts upsert, tickets upsert, associations; per batch of new leads"),
    "hubspot_calls_per_single": F(4, "calls", "ours", "stream-worker/src/sink/hubspot.rs",
                                  "the same four for one lead: reconcile and redrive settle one receipt at a time"),
    "hubspot_batch_max": F(100, "inputs/call", "documented", HUBSPOT_BATCH),
    "hubspot_call_ms": F(150, "ms", "assumed", "HubSpot API latency"),
    "salesforce_calls_per_day": F(150_000, "calls/24 h", "documented", SF_LIMITS,
                                  "Enterprise: 100,000 + 1,000 per Salesforce license; here 50 licenses"),
    "salesforce_calls_per_batch": F(1, "calls", "ours", "stream-worker/src/sink/salesforce/batch.rs",
                                    "one sObject Collections create per batch (a replay adds one query)"),
    "salesforce_calls_per_single": F(1, "calls", "ours", "stream-worker/src/sink/salesforce.rs",
                                     "a collection of one: reconcile and redrive (a replay adds one query)"),
    "salesforce_collection_max": F(200, "records/call", "documented", SF_COLLECTIONS),
    "salesforce_call_ms": F(200, "ms", "assumed", "Salesforce REST latency"),
    "postgres_max_connections": F(97, "connections", "documented", PG_CONNECTIONS,
                                  "default 100, less 3 reserved for superusers"),
    "postgres_statement_ms": F(2, "ms", "assumed", "one statement of up to 25 leads' upserts"),
    "sql_batch_max": F(25, "leads/statement", "ours", "stream-worker/src/sink/sql.rs",
                       "a quarter of a stream batch: one batch's receipt updates overlap the next statement"),
    "webhook_call_ms": F(50, "ms", "assumed", "your receiver's latency"),
    "webhook_rate_per_s": F(1_000, "requests/s", "assumed", "your receiver's limit"),
    # Operations.
    "alarms": F(11, "alarms", "ours", "template.yaml"),
    "alarm_usd_per_month": F(0.10, "USD/alarm-month", "price", CW_PRICING,
                             "standard resolution; read from copies of the page"),
    "custom_metrics": F(20, "metrics", "assumed", "shared/src/log.rs, shared/src/metrics.rs",
                        "the series written every hour at a steady rate: the edge's Deliveries and StoreLatency by "
                        "outcome and by answer, the stream worker's and reconcile's by service; a rarer one (a "
                        "reason, an exception) is billed only for the hours it is written"),
    "metric_usd_per_month": F(0.30, "USD/metric-month", "price", CW_PRICING,
                              "custom metrics (EMF), first 10,000, prorated by the hour; read from copies of the page"),
    "logs_usd_per_gb": F(0.50, "USD/GB", "price", CW_PRICING, "CloudWatch Logs ingestion; read from copies of the page"),
    "log_bytes_per_record": F(600, "bytes", "assumed", "stream-worker/src/handler.rs",
                              "the record's log line and the batch's metric lines"),
    "secret_usd_per_month": F(0.40, "USD/secret-month", "price", "https://aws.amazon.com/secrets-manager/pricing/",
                              "the sink secret; read from copies of the page"),
}


def value(name):
    return FIGURES[name].value


DUPLICATES = 0.30
RATES = [1, 10, 100, 1_000, 10_000]
SECONDS_PER_MONTH = 30 * 86_400
