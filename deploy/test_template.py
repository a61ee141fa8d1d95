"""The SAM template's promises, read from template.yaml with cfn-lint's own YAML reader.

Run by scripts/test.sh (after `cfn-lint template.yaml`) with the Python of the venv that holds
cfn-lint and the SAM CLI:
    .tools/aws/bin/python -m unittest deploy/test_template.py
"""

import json
import pathlib
import re
import tomllib
import unittest

from cfnlint.decode import decode

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load():
    template, problems = decode(str(ROOT / "template.yaml"))
    assert not problems, problems
    return template


TEMPLATE = load()
RESOURCES = TEMPLATE["Resources"]


def deploy_module(name):
    """The module deploy/<name>.py, loaded for its functions."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / f"deploy/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def of_type(kind):
    return {name: r for name, r in RESOURCES.items() if r["Type"] == kind}


def as_list(value):
    return value if isinstance(value, list) else [value]


def statements(policies):
    for policy in policies:
        yield from as_list(policy["PolicyDocument"]["Statement"])


def matches(pattern, record):
    """Lambda event filtering for the subset the template uses: nested objects, and arrays of
    exact values (a field matches if its value is one of them)."""
    for field, wanted in pattern.items():
        if field not in record:
            return False
        value = record[field]
        if isinstance(wanted, dict):
            if not isinstance(value, dict) or not matches(wanted, value):
                return False
        elif value not in wanted:
            return False
    return True


def fixture(name):
    return json.loads((ROOT / "stream-worker/tests/fixtures" / name).read_text())


class EdgeIdentity(unittest.TestCase):
    def test_the_edge_may_only_put_items_into_the_receipts_table(self):
        user = RESOURCES["EdgeUser"]["Properties"]
        self.assertEqual(set(user), {"Policies"}, "no groups, managed policies or login profile")
        found = list(statements(user["Policies"]))
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0]["Effect"], "Allow")
        self.assertEqual(as_list(found[0]["Action"]), ["dynamodb:PutItem"])
        self.assertEqual(found[0]["Resource"], {"Fn::GetAtt": ["ReceiptsTable", "Arn"]})
        self.assertEqual(of_type("AWS::IAM::User").keys(), {"EdgeUser", "EdgeLogsUser"})
        self.assertEqual(of_type("AWS::IAM::AccessKey"), {}, "no secret key in the stack")

    def test_the_tail_worker_may_only_put_log_events_into_the_edge_s_stream(self):
        user = RESOURCES["EdgeLogsUser"]["Properties"]
        self.assertEqual(set(user), {"Policies"}, "no groups, managed policies or login profile")
        [found] = list(statements(user["Policies"]))
        self.assertEqual((found["Effect"], as_list(found["Action"])), ("Allow", ["logs:PutLogEvents"]))
        arn = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:${EdgeLogGroup}"
        self.assertEqual(found["Resource"], [{"Fn::Sub": f"{arn}:log-stream:${{EdgeLogStream}}"}, {"Fn::Sub": arn}])
        stream = RESOURCES["EdgeLogStream"]["Properties"]
        self.assertEqual(stream, {"LogGroupName": {"Ref": "EdgeLogGroup"}, "LogStreamName": "edge"})
        # The group's name is the one tail/wrangler.toml holds for the default table.
        group = RESOURCES["EdgeLogGroup"]["Properties"]
        self.assertEqual(group["LogGroupName"], {"Fn::Sub": "/webhook-receiver/${TableName}/edge"})
        self.assertEqual(group["RetentionInDays"], 30)
        with open(ROOT / "tail/wrangler.toml", "rb") as f:
            tail = tomllib.load(f)
        default = TEMPLATE["Parameters"]["TableName"]["Default"]
        self.assertEqual(tail["vars"]["EDGE_LOG_GROUP"], f"/webhook-receiver/{default}/edge")
        self.assertEqual(tail["vars"]["EDGE_LOG_STREAM"], "edge")
        with open(ROOT / "wrangler.toml", "rb") as f:
            edge = tomllib.load(f)
        self.assertEqual(edge["tail_consumers"], [{"service": tail["name"]}])


class FunctionRoles(unittest.TestCase):
    def test_no_wildcard_and_nothing_added_behind_our_back(self):
        roles = of_type("AWS::IAM::Role")
        self.assertEqual(roles.keys(), {"StreamWorkerRole", "ReconcileRole"})
        for name, role in roles.items():
            props = role["Properties"]
            self.assertNotIn("ManagedPolicyArns", props, name)
            for statement in statements(props["Policies"]):
                self.assertEqual(statement["Effect"], "Allow", name)
                for action in as_list(statement["Action"]):
                    self.assertNotIn("*", action, f"{name}: {action}")
                for resource in as_list(statement["Resource"]):
                    self.assertNotIn("*", json.dumps(resource), f"{name}: {resource}")
        for name, function in of_type("AWS::Serverless::Function").items():
            props = function["Properties"]
            # With Role given, SAM adds no policy of its own.
            self.assertIn("Role", props, name)
            self.assertNotIn("Policies", props, name)

    def test_each_role_holds_exactly_what_its_function_calls(self):
        def grants(role):
            return {
                (action, json.dumps(resource, sort_keys=True))
                for statement in statements(RESOURCES[role]["Properties"]["Policies"])
                for action in as_list(statement["Action"])
                for resource in as_list(statement["Resource"])
            }

        table = json.dumps({"Fn::GetAtt": ["ReceiptsTable", "Arn"]}, sort_keys=True)
        stream = json.dumps({"Fn::GetAtt": ["ReceiptsTable", "StreamArn"]}, sort_keys=True)
        secret = json.dumps({"Ref": "SinkSecretArn"}, sort_keys=True)
        index = json.dumps({"Fn::Sub": "${ReceiptsTable.Arn}/index/pending"}, sort_keys=True)
        failed_index = json.dumps({"Fn::Sub": "${ReceiptsTable.Arn}/index/failed"}, sort_keys=True)
        logs = lambda group: json.dumps({"Fn::GetAtt": [group, "Arn"]}, sort_keys=True)  # noqa: E731
        self.assertEqual(
            grants("StreamWorkerRole"),
            {
                ("dynamodb:DescribeStream", stream),
                ("dynamodb:GetRecords", stream),
                ("dynamodb:GetShardIterator", stream),
                ("dynamodb:ListStreams", stream),
                ("dynamodb:GetItem", table),
                ("dynamodb:BatchGetItem", table),
                ("dynamodb:UpdateItem", table),
                ("sqs:SendMessage", json.dumps({"Fn::GetAtt": ["FailedBatchesQueue", "Arn"]}, sort_keys=True)),
                ("secretsmanager:GetSecretValue", secret),
                ("logs:CreateLogStream", logs("StreamWorkerLogGroup")),
                ("logs:PutLogEvents", logs("StreamWorkerLogGroup")),
            },
        )
        self.assertEqual(
            grants("ReconcileRole"),
            {
                ("dynamodb:Query", index),
                ("dynamodb:Query", failed_index),
                ("dynamodb:GetItem", table),
                ("dynamodb:UpdateItem", table),
                ("secretsmanager:GetSecretValue", secret),
                ("logs:CreateLogStream", logs("ReconcileLogGroup")),
                ("logs:PutLogEvents", logs("ReconcileLogGroup")),
            },
        )


class Table(unittest.TestCase):
    def test_the_table_is_the_one_the_tests_and_the_local_stack_create(self):
        props = RESOURCES["ReceiptsTable"]["Properties"]
        local = json.loads((ROOT / "deploy/receipts-table.json").read_text())
        for field in ["AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes"]:
            self.assertEqual(props[field], local[field], field)
        self.assertEqual(props["StreamSpecification"]["StreamViewType"], local["StreamSpecification"]["StreamViewType"])
        self.assertEqual(props["StreamSpecification"]["StreamViewType"], "NEW_AND_OLD_IMAGES")

    def test_ttl_recovery_and_protection(self):
        table = RESOURCES["ReceiptsTable"]
        props = table["Properties"]
        self.assertEqual(props["TimeToLiveSpecification"], {"AttributeName": "expiresAt", "Enabled": True})
        self.assertEqual(props["PointInTimeRecoverySpecification"], {"PointInTimeRecoveryEnabled": True})
        self.assertIs(props["DeletionProtectionEnabled"], True)
        self.assertEqual((table["DeletionPolicy"], table["UpdateReplacePolicy"]), ("Retain", "Retain"))
        self.assertEqual(props["KeySchema"], [{"AttributeName": "pk", "KeyType": "HASH"}])
        # Two sparse indexes: the waiting receipts (reconcile's; keys only) and the FAILED ones
        # (the alarm's gauge, with expiresAt: the count's filter can read only what the index
        # holds), each sharded on its own attribute and sorted by arrival.
        pending, failed = props["GlobalSecondaryIndexes"]
        for index, shard in [(pending, "pendingShard"), (failed, "failedShard")]:
            self.assertEqual(
                index["KeySchema"],
                [{"AttributeName": shard, "KeyType": "HASH"}, {"AttributeName": "receivedAt", "KeyType": "RANGE"}],
            )
        self.assertEqual(pending["Projection"], {"ProjectionType": "KEYS_ONLY"})
        self.assertEqual(failed["Projection"], {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["expiresAt"]})
        self.assertEqual((pending["IndexName"], failed["IndexName"]), ("pending", "failed"))


class StreamWorker(unittest.TestCase):
    props = RESOURCES["StreamWorkerFunction"]["Properties"]
    mapping = props["Events"]["Receipts"]["Properties"]

    def test_the_function(self):
        self.assertEqual(self.props["Runtime"], "provided.al2023")
        self.assertEqual(self.props["CodeUri"], "target/lambda/stream-worker/")
        self.assertEqual(TEMPLATE["Parameters"]["Architecture"]["Default"], "arm64")
        self.assertEqual(self.props["Architectures"], [{"Ref": "Architecture"}])
        self.assertIsInstance(self.props["MemorySize"], int)
        # The worst batch (HubSpot's with a lead mapping, nine calls and the receipt updates:
        # 101 s; Salesforce's record 91 s) fits, with the start-up check (docs/sinks.md asks
        # for at least 120 s).
        self.assertGreaterEqual(self.props["Timeout"], 120)
        env = self.props["Environment"]["Variables"]
        self.assertEqual(env["SINK_SECRET_ARN"], {"Ref": "SinkSecretArn"})
        for name in env:
            self.assertNotIn(name, {"LEAD_SINK", "HUBSPOT_TOKEN", "SALESFORCE_CLIENT_SECRET", "WEBHOOK_SINK_SECRET"})

    def test_the_event_source_mapping(self):
        m = self.mapping
        self.assertEqual(self.props["Events"]["Receipts"]["Type"], "DynamoDB")
        self.assertEqual(m["Stream"], {"Fn::GetAtt": ["ReceiptsTable", "StreamArn"]})
        self.assertEqual(m["FunctionResponseTypes"], ["ReportBatchItemFailures"])
        self.assertEqual(m["StartingPosition"], "TRIM_HORIZON")
        self.assertIs(m["BisectBatchOnFunctionError"], True)
        # Retries bounded by the record's age, not a count a short outage uses up in minutes.
        self.assertEqual(m["MaximumRetryAttempts"], -1)
        self.assertTrue(60 <= m["MaximumRecordAgeInSeconds"] < 86400, "bounded, within the stream's 24 hours")
        self.assertEqual(m["DestinationConfig"]["OnFailure"]["Destination"], {"Fn::GetAtt": ["FailedBatchesQueue", "Arn"]})
        # Lambda counts what the mapping polled, filtered, invoked and dropped (a stopped one
        # polls nothing) only when asked to.
        self.assertEqual(m["MetricsConfig"], {"Metrics": ["EventCount"]})

    def test_the_filter_passes_only_waiting_receipts(self):
        [only] = self.mapping["FilterCriteria"]["Filters"]
        pattern = json.loads(only["Pattern"])
        # "DynamoDB event source mappings only support filtering on the dynamodb key."
        self.assertEqual(list(pattern), ["dynamodb"])
        passes = lambda name: [matches(pattern, r) for r in fixture(name)["Records"]]  # noqa: E731
        self.assertEqual(passes("insert.json"), [True])
        self.assertEqual(passes("modify_replaced.json"), [True])
        self.assertEqual(passes("batch_of_five.json"), [True] * 5)
        self.assertEqual(passes("modify_completed.json"), [False])
        self.assertEqual(passes("remove_ttl.json"), [False])


class Reconcile(unittest.TestCase):
    def test_scheduled_with_the_reconcile_handler(self):
        props = RESOURCES["ReconcileFunction"]["Properties"]
        self.assertEqual(props["Handler"], "reconcile")
        self.assertEqual(props["CodeUri"], RESOURCES["StreamWorkerFunction"]["Properties"]["CodeUri"])
        [event] = props["Events"].values()
        self.assertEqual(event["Type"], "Schedule")
        minutes = int(re.fullmatch(r"rate\((\d+) minutes\)", event["Properties"]["Schedule"]).group(1))
        self.assertLess(props["Timeout"], minutes * 60, "a run ends before the next starts")
        self.assertEqual(props["EventInvokeConfig"]["MaximumRetryAttempts"], 0, "the next run is the retry")
        self.assertLessEqual(props["EventInvokeConfig"]["MaximumEventAgeInSeconds"], minutes * 60, "no late runs")
        self.assertNotIn("RECONCILE_SCAN", props["Environment"]["Variables"], "its role may not scan")
        # One run at a time: a second delivery of the schedule is throttled, not run beside it.
        self.assertEqual(props["ReservedConcurrentExecutions"], {"Fn::If": ["ReservesReconcile", 1, {"Ref": "AWS::NoValue"}]})
        self.assertEqual(TEMPLATE["Parameters"]["ReconcileConcurrency"]["Default"], "1")
        self.assertEqual(TEMPLATE["Conditions"]["ReservesReconcile"],
                         {"Fn::Equals": [{"Ref": "ReconcileConcurrency"}, "1"]})

    def test_the_parameter_takes_only_ages_past_the_stream_s(self):
        pattern = TEMPLATE["Parameters"]["ReconcileOlderThan"]["AllowedPattern"]
        accepted = [a for a in ["2h", "3h", "10h", "24h", "1d", "7d", "1h", "60m", "90m", "3601s", "0h", "0d", "h"]
                    if re.fullmatch(pattern, a)]
        self.assertEqual(accepted, ["2h", "3h", "10h", "24h", "1d", "7d"])
        # The function refuses the same (stream-worker/src/cli.rs, reconcile_age).
        cli = (ROOT / "stream-worker/src/cli.rs").read_text()
        self.assertIn("pub fn reconcile_age(older_than: Duration)", cli)
        self.assertIn("cli::reconcile_age(older_than)", (ROOT / "stream-worker/src/main.rs").read_text())

    def test_reconcile_waits_until_the_stream_has_given_up(self):
        age = TEMPLATE["Parameters"]["ReconcileOlderThan"]["Default"]
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[age[-1]]
        mapping = RESOURCES["StreamWorkerFunction"]["Properties"]["Events"]["Receipts"]["Properties"]
        function = RESOURCES["StreamWorkerFunction"]["Properties"]
        # The worker's bound (RECONCILE_MIN_AGE): the maximum record age, the function's timeout
        # and 300 s of slack.
        bound = mapping["MaximumRecordAgeInSeconds"] + function["Timeout"] + 300
        self.assertGreater(int(age[:-1]) * unit, bound, "never both on one receipt")
        self.assertIn("STREAM_SLACK: Duration = Duration::from_secs(300)", (ROOT / "stream-worker/src/operate.rs").read_text())
        # The worker's redrive knows the same age (a RECEIVED receipt younger may be in the stream).
        operate = (ROOT / "stream-worker/src/operate.rs").read_text()
        self.assertIn(
            f"STREAM_MAX_RECORD_AGE: Duration = Duration::from_secs({mapping['MaximumRecordAgeInSeconds']:_})", operate
        )
        env = RESOURCES["ReconcileFunction"]["Properties"]["Environment"]["Variables"]
        self.assertEqual(env["RECONCILE_OLDER_THAN"], {"Ref": "ReconcileOlderThan"})


class Parameters(unittest.TestCase):
    def test_the_sink_secret_is_a_full_arn(self):
        pattern = TEMPLATE["Parameters"]["SinkSecretArn"]["AllowedPattern"]
        full = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhooks/sink-a1B2c3"
        self.assertTrue(re.fullmatch(pattern, full))
        self.assertTrue(re.fullmatch(pattern, full.replace("arn:aws:", "arn:aws-us-gov:")))
        # The name alone (a partial ARN) matches no secret in the roles' statements.
        self.assertFalse(re.fullmatch(pattern, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhooks/sink"))
        self.assertFalse(re.fullmatch(pattern, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sink-a1B2"))


class Alarms(unittest.TestCase):
    def test_every_alarm_exists_and_notifies_the_topic(self):
        alarms = of_type("AWS::CloudWatch::Alarm")
        found = {(a["Properties"].get("Namespace"), a["Properties"].get("MetricName")) for a in alarms.values()}
        for wanted in [
            ("AWS/Lambda", "IteratorAge"),
            ("AWS/Lambda", "Errors"),
            ("AWS/Lambda", "Throttles"),
            ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
            ("WebhookReceiver", "ReceiptsWaiting"),
            ("WebhookReceiver", "ReceiptsReconciled"),
            ("WebhookReceiver", "ReceiptsFailed"),
        ]:
            self.assertIn(wanted, found)
        for name, alarm in alarms.items():
            self.assertEqual(alarm["Properties"]["AlarmActions"], [{"Ref": "AlarmTopic"}], name)
        iterator = [a for a in alarms.values() if a["Properties"].get("MetricName") == "IteratorAge"][0]
        self.assertEqual(
            iterator["Properties"]["Dimensions"], [{"Name": "FunctionName", "Value": {"Ref": "StreamWorkerFunction"}}]
        )
        errors = {json.dumps(a["Properties"]["Dimensions"]) for a in alarms.values() if a["Properties"].get("MetricName") == "Errors"}
        self.assertEqual(len(errors), 2, "one per function")
        [throttles] = [a for a in alarms.values() if a["Properties"].get("MetricName") == "Throttles"]
        self.assertEqual(
            throttles["Properties"]["Dimensions"], [{"Name": "FunctionName", "Value": {"Ref": "StreamWorkerFunction"}}]
        )

    def test_a_stopped_stream_is_an_alarm_though_reconcile_settles_its_receipts(self):
        # Reconcile settles what the stream left, so ReceiptsWaiting stays at zero; only the
        # leads it wrote say the stream stopped. Each run reports them (every 15 min); a
        # missing run keeps the state (ReceiptsWaitingAlarm is reconcile's own silence).
        [overdue] = [a["Properties"] for a in of_type("AWS::CloudWatch::Alarm").values()
                     if a["Properties"].get("MetricName") == "ReceiptsReconciled"]
        [schedule] = [e["Properties"]["Schedule"] for e in RESOURCES["ReconcileFunction"]["Properties"]["Events"].values()]
        self.assertEqual(schedule, "rate(15 minutes)")
        self.assertEqual((overdue["Statistic"], overdue["Period"], overdue["EvaluationPeriods"]), ("Maximum", 900, 1))
        self.assertEqual((overdue["Threshold"], overdue["ComparisonOperator"]), (0, "GreaterThanThreshold"))
        self.assertEqual((overdue["TreatMissingData"], overdue["OKActions"]), ("ignore", [{"Ref": "AlarmTopic"}]))

    def test_failed_receipts_keep_the_alarm_red_until_they_are_redriven_or_expire(self):
        # A gauge (each reconcile run counts the failed index), not the failures of the last
        # five minutes: an alarm that cleared itself left FAILED receipts to expire unseen.
        failed = RESOURCES["LeadsFailedAlarm"]["Properties"]
        self.assertEqual((failed["MetricName"], failed["Statistic"]), ("ReceiptsFailed", "Maximum"))
        self.assertEqual((failed["Period"], failed["EvaluationPeriods"]), (900, 1))
        self.assertEqual((failed["Threshold"], failed["ComparisonOperator"]), (0, "GreaterThanThreshold"))
        self.assertEqual((failed["TreatMissingData"], failed["OKActions"]), ("ignore", [{"Ref": "AlarmTopic"}]))
        self.assertIn("receipts redrive", failed["AlarmDescription"])

    def test_the_edge_s_5xx_and_401_alarms_count_its_answers(self):
        # The edge's metric line: Deliveries by outcome and by answer class (shared/src/log.rs);
        # 401 is the outcome `unauthenticated` (shared/src/decision.rs).
        log = (ROOT / "shared/src/log.rs").read_text()
        self.assertIn('const DIMENSIONS: &[&[&str]] = &[&["outcome"], &["answer"]];', log)
        self.assertIn('"Deliveries"', log)
        self.assertIn('(401, "unauthenticated"', (ROOT / "shared/src/decision.rs").read_text())
        for name, dimension, period, threshold in [
            ("Edge5xxAlarm", {"Name": "answer", "Value": "5xx"}, 900, 2),
            ("Edge401Alarm", {"Name": "outcome", "Value": "unauthenticated"}, 3600, 4),
        ]:
            props = RESOURCES[name]["Properties"]
            self.assertEqual((props["Namespace"], props["MetricName"], props["Statistic"]), ("WebhookReceiver", "Deliveries", "Sum"), name)
            self.assertEqual(props["Dimensions"], [dimension], name)
            self.assertEqual((props["Period"], props["EvaluationPeriods"]), (period, 1), name)
            self.assertEqual((props["Threshold"], props["ComparisonOperator"]), (threshold, "GreaterThanThreshold"), name)
            # No deliveries is not a failure: the silence alarm watches that.
            self.assertEqual((props["TreatMissingData"], props["OKActions"]), ("notBreaching", [{"Ref": "AlarmTopic"}]), name)
            self.assertIn("docs/deploying.md#edge-", props["AlarmDescription"], name)
            anchor = props["AlarmDescription"].rsplit("#", 1)[1]
            self.assertIn(f'<a id="{anchor}"></a>', (ROOT / "docs/deploying.md").read_text(), name)

    def test_the_custom_metrics_are_the_ones_the_worker_writes(self):
        sources = (ROOT / "stream-worker/src/operate.rs").read_text() + (ROOT / "stream-worker/src/metrics.rs").read_text()
        shared = (ROOT / "shared/src/metrics.rs").read_text()
        for alarm in of_type("AWS::CloudWatch::Alarm").values():
            props = alarm["Properties"]
            if props.get("Namespace") != "WebhookReceiver" or props["MetricName"] == "Deliveries":
                continue  # the edge's, above
            self.assertIn(f'pub const NAMESPACE: &str = "{props["Namespace"]}"', shared)
            self.assertIn(f'"{props["MetricName"]}"', sources)
            self.assertEqual(props["Dimensions"], [{"Name": "service", "Value": "stream-worker"}])
        self.assertIn('pub const SERVICE: &str = "stream-worker"', sources)


class OperatorsPicture(unittest.TestCase):
    """The dashboard and the silence alarm (the deployed stack's test ties each widget's
    metric to a line the code writes: tests/it/deployed.rs)."""

    @staticmethod
    def drawing():
        return deploy_module("dashboard_svg")

    def dashboard(self):
        return self.drawing().dashboard(TEMPLATE)

    def test_the_silence_alarm_fires_when_every_hour_of_its_window_is_without_a_delivery_stored(self):
        alarm = RESOURCES["SilenceAlarm"]
        props = alarm["Properties"]
        self.assertEqual(alarm["Condition"], "WatchesSilence")
        # DynamoDB's count of successful PutItem calls on the receipts table: deliveries stored,
        # not leads written (an edge refusing everything is silence; a sink outage is not).
        self.assertEqual((props["Namespace"], props["MetricName"]), ("AWS/DynamoDB", "SuccessfulRequestLatency"))
        self.assertEqual(
            props["Dimensions"],
            [{"Name": "TableName", "Value": {"Ref": "ReceiptsTable"}}, {"Name": "Operation", "Value": "PutItem"}],
        )
        self.assertEqual((props["Statistic"], props["Period"]), ("SampleCount", 3600))
        # It counts deliveries because the edge is the table's only PutItem caller: no role of
        # the stack may put items (the functions update the receipts the edge stored).
        for name, role in of_type("AWS::IAM::Role").items():
            for statement in statements(role["Properties"]["Policies"]):
                self.assertNotIn("dynamodb:PutItem", as_list(statement["Action"]), name)
        for name in ["stream-worker/src", "shared/src"]:
            for source in (ROOT / name).rglob("*.rs"):
                self.assertNotIn(".put_item(", source.read_text(), source)
        self.assertEqual(props["EvaluationPeriods"], {"Ref": "SilenceHours"})
        self.assertEqual(props["DatapointsToAlarm"], {"Ref": "SilenceHours"})
        self.assertEqual((props["ComparisonOperator"], props["Threshold"]), ("LessThanThreshold", 1))
        self.assertEqual(props["TreatMissingData"], "breaching", "no batch at all is silence too")
        hours = TEMPLATE["Parameters"]["SilenceHours"]
        # Whole hours from 0 to 168: CloudWatch evaluates at most 7 days (EvaluationPeriods x
        # Period <= 604,800 s), and a fraction would pass a Number parameter and fail the alarm.
        allowed = [n for n in range(0, 1000) if re.fullmatch(hours["AllowedPattern"], str(n))]
        self.assertEqual(allowed, list(range(0, 169)))
        for wrong in ["1.5", "0.0", "024", "-1", "", "169"]:
            self.assertIsNone(re.fullmatch(hours["AllowedPattern"], wrong), wrong)
        self.assertEqual(168 * props["Period"], 604_800)
        self.assertEqual(TEMPLATE["Conditions"]["WatchesSilence"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "SilenceHours"}, "0"]}]})

    def test_the_dashboard_shows_every_alarm_and_reads_top_to_bottom(self):
        dashboard, variables = self.dashboard()
        widgets = dashboard["widgets"]
        [alarms] = [w for w in widgets if w["type"] == "alarm"]
        listed = {a.strip("<>").removesuffix(".Arn") for a in alarms["properties"]["alarms"]}
        entry = variables["SilenceAlarmEntry"]["Fn::If"]
        self.assertEqual(entry[0], "WatchesSilence")
        listed.add(re.search(r"\$\{(\w+)\.Arn\}", entry[1]["Fn::Sub"]).group(1))
        self.assertEqual(listed, set(of_type("AWS::CloudWatch::Alarm")), "the alarms' widget lists every alarm")
        # The runbook beside the alarms, then rows in the order a delivery travels.
        self.assertEqual((widgets[0]["type"], widgets[0]["y"], alarms["y"]), ("text", 0, 0))
        self.assertIn("stream-worker receipts list --status FAILED", widgets[0]["properties"]["markdown"])
        metrics = [w for w in widgets if w["type"] == "metric"]
        steps = [(int(w["properties"]["title"].split(".")[0]), w["y"]) for w in metrics]
        for (step, y), (later, later_y) in zip(steps, steps[1:]):
            self.assertTrue(later > step and later_y > y or later == step and later_y == y, steps)
        self.assertEqual({step for step, _ in steps}, {1, 2, 3, 4})
        self.assertGreater(min(y for _, y in steps), alarms["y"])
        # One screen: 24 columns, no two widgets on the same cell.
        cells = set()
        for w in widgets:
            self.assertLessEqual(w["x"] + w["width"], 24)
            for x in range(w["x"], w["x"] + w["width"]):
                for y in range(w["y"], w["y"] + w["height"]):
                    self.assertNotIn((x, y), cells)
                    cells.add((x, y))
        # The iterator age against the stream's 24-hour retention (past it, records are gone).
        [age] = [w for w in widgets if "iterator age" in w["properties"].get("title", "")]
        self.assertEqual(
            age["properties"]["metrics"],
            [["AWS/Lambda", "IteratorAge", "FunctionName", "<StreamWorkerFunction>", {"stat": "Maximum"}]],
        )
        lines = {a["value"] for a in age["properties"]["annotations"]["horizontal"]}
        self.assertIn(24 * 3600 * 1000, lines)
        [iterator_alarm] = [a for a in of_type("AWS::CloudWatch::Alarm").values() if a["Properties"].get("MetricName") == "IteratorAge"]
        self.assertIn(iterator_alarm["Properties"]["Threshold"], lines)
        # The functions' errors, throttles and duration, each for both functions.
        for metric in ["Errors", "Throttles", "Duration"]:
            shown = [m for w in widgets for m in w["properties"].get("metrics", []) if m[:2] == ["AWS/Lambda", metric]]
            self.assertEqual({m[3] for m in shown}, {"<StreamWorkerFunction>", "<ReconcileFunction>"}, metric)
            self.assertTrue(all(m[2] == "FunctionName" for m in shown), shown)
        # The store's latency as p50 and p99, of the receipts stored.
        [latency] = [w for w in widgets if "latency" in w["properties"].get("title", "")]
        stats = {m[-1]["stat"] for m in latency["properties"]["metrics"] if m[:4] == ["WebhookReceiver", "StoreLatency", "outcome", "stored"]}
        self.assertEqual(stats, {"p50", "p99"})


    def test_the_dashboard_s_picture_is_the_template_s_layout(self):
        drawing = self.drawing()
        self.assertEqual(
            (ROOT / "docs/dashboard.svg").read_text(),
            drawing.svg(),
            "docs/dashboard.svg is out of date: .tools/aws/bin/python deploy/dashboard_svg.py > docs/dashboard.svg",
        )


class DeployScript(unittest.TestCase):
    def test_saved_parameters_survive_an_architecture_override(self):
        import tempfile

        overrides = deploy_module("overrides")
        with tempfile.TemporaryDirectory() as folder:
            samconfig = pathlib.Path(folder) / "samconfig.toml"
            # As `sam deploy --guided` writes it.
            samconfig.write_text(
                'version = 0.1\n[default.deploy.parameters]\nstack_name = "webhooks"\n'
                'parameter_overrides = "SinkSecretArn=\\"arn:aws:secretsmanager:eu-west-1:123456789012:secret:s-a1B2c3\\" '
                'Architecture=\\"arm64\\" AlarmEmail=\\"ops@example.com\\""\n'
            )
            self.assertEqual(
                overrides.merged(samconfig, ["Architecture=x86_64"]),
                [
                    "SinkSecretArn=arn:aws:secretsmanager:eu-west-1:123456789012:secret:s-a1B2c3",
                    "Architecture=x86_64",
                    "AlarmEmail=ops@example.com",
                ],
            )
            self.assertEqual(overrides.merged(pathlib.Path(folder) / "none.toml", ["Architecture=arm64"]),
                             ["Architecture=arm64"])
        script = (ROOT / "scripts/deploy-aws.sh").read_text()
        self.assertIn('python3 deploy/overrides.py samconfig.toml "Architecture=$arch"', script)
        # The translator runs too, not only the linter.
        self.assertRegex(script, r'sam validate --region "\$region" --template-file template.yaml')


class FirstDeploy(unittest.TestCase):
    """deploy/concurrency.py against clients answering as Lambda's GetAccountSettings and
    CloudFormation's DescribeStacks document them."""

    @staticmethod
    def module():
        return deploy_module("concurrency")

    class Lambda:
        def __init__(self, limit, unreserved):
            self.limits = {"ConcurrentExecutions": limit, "UnreservedConcurrentExecutions": unreserved}

        def get_account_settings(self):
            return {"AccountLimit": self.limits, "AccountUsage": {"FunctionCount": 0}}

    class CloudFormation:
        def __init__(self, status=None):
            self.status = status

        def describe_stacks(self, StackName):
            from botocore.exceptions import ClientError

            if self.status is None:
                raise ClientError({"Error": {"Code": "ValidationError", "Message": f"Stack with id {StackName} does not exist"}},
                                  "DescribeStacks")
            return {"Stacks": [{"StackName": StackName, "StackStatus": self.status}]}

    def test_a_first_create_that_cannot_reserve_reconcile_s_execution_is_refused_before_it_starts(self):
        concurrency = self.module()
        new, existing = self.CloudFormation(), self.CloudFormation("UPDATE_COMPLETE")
        # A new account (limit 10, all unreserved): Lambda's minimum is the whole limit.
        reason = concurrency.check(new, self.Lambda(10, 10), "webhooks", "1")
        self.assertIn("below Lambda's minimum of 10", reason)
        self.assertIn("ReconcileConcurrency=unreserved", reason)
        # 100 must stay unreserved: 101 leaves exactly 100; 100 would leave 99.
        self.assertIsNone(concurrency.check(new, self.Lambda(1000, 101), "webhooks", "1"))
        self.assertIn("leave 99", concurrency.check(new, self.Lambda(1000, 100), "webhooks", "1"))
        self.assertIsNone(concurrency.check(new, self.Lambda(1000, 1000), "webhooks", "1"))
        # Nothing reserved, or a stack that exists (an update keeps its reservation): no check.
        self.assertIsNone(concurrency.check(new, self.Lambda(10, 10), "webhooks", "unreserved"))
        self.assertIsNone(concurrency.check(existing, self.Lambda(10, 10), "webhooks", "1"))
        # A change set never executed (a guided deploy answered "no") leaves REVIEW_IN_PROGRESS:
        # sam deploy creates that stack, so it is checked.
        for created_anew in ["REVIEW_IN_PROGRESS", "DELETE_COMPLETE"]:
            self.assertIn("minimum of 10", concurrency.check(self.CloudFormation(created_anew), self.Lambda(10, 10),
                                                             "webhooks", "1"), created_anew)
        # A first create that rolled back cannot be updated: named, with the way out.
        rolled_back = concurrency.check(self.CloudFormation("ROLLBACK_COMPLETE"), self.Lambda(1000, 1000), "webhooks",
                                        "unreserved")
        self.assertIn("delete-stack", rolled_back)
        # Other errors are not "no stack".
        class Broken:
            def describe_stacks(self, StackName):
                from botocore.exceptions import ClientError

                raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeStacks")
        with self.assertRaises(Exception):
            concurrency.check(Broken(), self.Lambda(10, 10), "webhooks", "1")

    def test_the_deploy_script_checks_before_sam_deploy(self):
        script = (ROOT / "scripts/deploy-aws.sh").read_text()
        check = script.index('.tools/aws/bin/python deploy/concurrency.py "$stack"')
        self.assertLess(check, script.index('sam deploy --template-file template.yaml --parameter-overrides'))
        self.assertIn('"${reconcile:-1}"', script)


class EdgeConfig(unittest.TestCase):
    def test_workers_logs_keep_every_request_s_line(self):
        # Without an [observability] block, `wrangler deploy` turns Workers Logs off
        # (cloudflare/workers-sdk#6776); a sampling rate under 1 drops metric lines.
        with open(ROOT / "wrangler.toml", "rb") as f:
            observability = tomllib.load(f).get("observability", {})
        self.assertIs(observability.get("enabled"), True, "wrangler.toml: [observability] enabled = true")
        self.assertEqual(observability.get("head_sampling_rate", 1), 1)
        logs = observability.get("logs", {})
        self.assertIsNot(logs.get("enabled"), False)
        self.assertEqual(logs.get("head_sampling_rate", 1), 1)
        # Cloudflare's invocation logs carry headers and the client's IP: the edge's own line
        # is the request log (SECURITY.md, what the logs hold).
        self.assertIs(logs.get("invocation_logs"), False)


class Outputs(unittest.TestCase):
    def test_the_outputs_name_where_the_operator_looks(self):
        outputs = TEMPLATE["Outputs"]
        self.assertEqual(outputs["StreamWorkerLogGroupName"]["Value"], {"Ref": "StreamWorkerLogGroup"})
        self.assertEqual(outputs["ReconcileLogGroupName"]["Value"], {"Ref": "ReconcileLogGroup"})
        self.assertEqual(outputs["SinkSettingsSecretArn"]["Value"], {"Ref": "SinkSecretArn"})
        self.assertEqual(outputs["EdgeLogGroupName"]["Value"], {"Ref": "EdgeLogGroup"})
        self.assertEqual(outputs["EdgeLogStreamName"]["Value"], {"Ref": "EdgeLogStream"})
        self.assertEqual(outputs["EdgeLogsUserName"]["Value"], {"Ref": "EdgeLogsUser"})
        url = outputs["DashboardUrl"]["Value"]["Fn::Sub"]
        self.assertTrue(url.startswith("https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}"), url)
        self.assertTrue(url.endswith("#dashboards/dashboard/${Dashboard}"), url)
        self.assertEqual(RESOURCES["Dashboard"]["Type"], "AWS::CloudWatch::Dashboard")


class DeployPage(unittest.TestCase):
    def test_the_deploy_page_names_every_parameter_and_output_it_uses(self):
        page = (ROOT / "docs/deploying.md").read_text()
        for parameter in TEMPLATE["Parameters"]:
            self.assertIn(parameter, page, f"docs/deploying.md does not mention {parameter}")
        script = (ROOT / "scripts/deploy-edge.sh").read_text()
        for output in re.findall(r"output (\w+)", script):
            self.assertIn(output, TEMPLATE["Outputs"], f"deploy-edge.sh reads an output the template lacks: {output}")


if __name__ == "__main__":
    unittest.main()
