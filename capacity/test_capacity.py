"""The capacity model's invariants (`make test` runs these: python3 -m unittest discover -s capacity)."""
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import model  # noqa: E402
import report  # noqa: E402
import simulate  # noqa: E402
from params import DUPLICATES  # noqa: E402


def scenario(**changes):
    """10/s against a sink that takes 3 leads/s (a rate limit), the stream worker faster."""
    base = dict(name="test", base_rate=1, burst_rate=10, burst_start_s=600, burst_seconds=3_600, horizon_s=6 * 3_600,
                stream_capacity=50, limits=((3, 31),), reconcile_capacity=2, seed=11)
    base.update(changes)
    return simulate.Scenario(**base)


def section(text, heading):
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


class Simulation(unittest.TestCase):
    def test_every_accepted_delivery_is_a_lead_or_waiting_at_every_step(self):
        for s in (scenario(), scenario(max_record_age_s=None, reconcile=False, burst_seconds=30 * 3_600,
                                       horizon_s=40 * 3_600, tick_s=10), scenario(error_rate=0.5),
                  scenario(reconcile=False), scenario(stream_capacity=0)):
            result = simulate.simulate(s)
            self.assertEqual(len(result.steps), s.horizon_s // s.tick_s)
            for step in result.steps:
                self.assertEqual(step.accepted, step.leads + step.backlog + step.lost, step)
            last = result.steps[-1]
            self.assertGreater(last.accepted, 0)
            # Duplicates are about 30 % of deliveries, and never receipts.
            self.assertAlmostEqual(last.duplicates / (last.duplicates + last.accepted), DUPLICATES, delta=0.01)

    def test_with_sinks_faster_than_the_load_the_backlog_stays_bounded(self):
        s = scenario(limits=((20, 201),), stream_capacity=20)  # 10/s is 7 new receipts a second
        result = simulate.simulate(s)
        self.assertLessEqual(max(x.backlog for x in result.steps), 60)
        self.assertLessEqual(max(x.oldest_age_s for x in result.steps), 10)
        self.assertEqual(result.steps[-1].given_up, 0)

    def test_a_burst_above_the_sink_drains_at_the_predicted_rate(self):
        # The sink's limit binds (the stream worker is faster), nothing is given up (no maximum
        # record age): after the burst the backlog falls at the predicted rate. A fractional
        # limit, many failed calls, ten-second ticks.
        s = scenario(max_record_age_s=None, reconcile=False, horizon_s=6 * 3_600, limits=((3.74, 38.4),),
                     error_rate=0.1, calls_per_lead=2, tick_s=10)
        steps = simulate.simulate(s).steps
        end = (s.burst_start_s + s.burst_seconds) // s.tick_s
        rate = simulate.predicted_drain_rate(s)
        self.assertAlmostEqual(rate, 3.74 * 0.9 ** 2 - 0.7, places=6)
        start, later = steps[end + 30], steps[end + 30 + 450]
        measured = (start.backlog - later.backlog) / (later.t - start.t)
        self.assertAlmostEqual(measured, rate, delta=0.03 * rate)
        # The backlog the burst leaves is what arrived above the limit.
        expected = (10 * (1 - DUPLICATES) - 3.74 * 0.81) * s.burst_seconds
        self.assertAlmostEqual(steps[end].backlog, expected, delta=0.05 * expected)
        summary = simulate.summary(simulate.simulate(s))
        self.assertAlmostEqual(summary["drained_after_burst_s"], expected / rate, delta=0.1 * expected / rate)

    def test_no_delivery_is_lost_when_reconcile_runs_and_the_stream_alone_loses_past_24_hours(self):
        day = 86_400
        long = dict(burst_seconds=30 * 3_600, horizon_s=5 * day, max_record_age_s=None, tick_s=10)
        with_reconcile = simulate.summary(simulate.simulate(scenario(**long), every=60))
        without = simulate.summary(simulate.simulate(scenario(reconcile=False, **long), every=60))
        self.assertEqual(with_reconcile["lost"], 0)
        self.assertEqual(with_reconcile["accepted"], with_reconcile["leads"], "drained, every receipt a lead")
        self.assertGreater(without["lost"], 0)
        self.assertIsNone(without["drained_after_burst_s"], "lost receipts are not a drained backlog")
        # The stream held a record 24 hours: after the longest burst within the retention, plus a day.
        crossed = without["retention_crossed_at_s"]
        longest = simulate.longest_burst_within_retention(scenario(**long))
        self.assertAlmostEqual(crossed, longest + day, delta=0.03 * (longest + day))
        # As deployed (a maximum record age of 1 hour, reconcile every 15 minutes): nothing lost,
        # and the stream never holds a record past its maximum age.
        deployed = simulate.simulate(scenario(burst_seconds=6 * 3_600, horizon_s=3 * day, tick_s=10), every=60)
        summary = simulate.summary(deployed)
        self.assertEqual((summary["lost"], summary["accepted"]), (0, summary["leads"]))
        self.assertGreater(summary["given_up_peak"], 0)
        self.assertLessEqual(max(x.stream_age_s for x in deployed.steps), 3_600 + 10)
        self.assertIsNone(summary["retention_crossed_at_s"])
        # Given up with no reconcile: lost, not waiting.
        stranded = simulate.summary(simulate.simulate(scenario(reconcile=False, tick_s=10), every=60))
        self.assertGreater(stranded["lost"], 0)

    def test_reconcile_settles_only_what_waited_past_its_threshold_within_its_runs(self):
        # The stream worker is down: only reconcile writes leads, every 15 minutes for at most 10.
        s = scenario(stream_capacity=0, burst_seconds=0, horizon_s=4 * 3_600, reconcile_capacity=2)
        steps = simulate.simulate(s).steps
        for step in steps:
            run_start = step.t - step.t % 900
            arrived_by_cutoff = sum(1 for x in steps if x.t <= run_start - 7_200)  # an upper bound: 1 per second
            self.assertLessEqual(step.leads, 2 * arrived_by_cutoff + 1, step)
            if step.t % 900 >= 600 and step.t > 0:
                self.assertEqual(step.leads, steps[step.t - 1].leads, f"no reconcile after its timeout: {step}")
        self.assertGreater(steps[-1].leads, 0)

    def test_the_longest_burst_within_the_streams_24_hours(self):
        s = scenario(max_record_age_s=None, reconcile=False, error_rate=0.0)
        # 7 new receipts a second against 3: each second of burst adds 4/3 s of wait.
        self.assertAlmostEqual(simulate.longest_burst_within_retention(s), 86_400 / (7 / 3 - 1))
        with_errors = scenario(max_record_age_s=None, reconcile=False, error_rate=0.1)
        self.assertAlmostEqual(simulate.longest_burst_within_retention(with_errors), 86_400 / (7 / 2.7 - 1))
        self.assertEqual(simulate.longest_burst_within_retention(scenario(limits=((8, 81),))), math.inf)

    def test_a_daily_allocation_absorbs_a_short_burst_and_limits_a_long_one(self):
        daily = ((1.74, 150_000),)
        short = simulate.summary(simulate.simulate(scenario(limits=daily, tick_s=10), every=60))
        self.assertLess(short["peak_backlog"], 100, "an hour fits in what the day left")
        long = simulate.summary(simulate.simulate(
            scenario(limits=daily, burst_seconds=12 * 3_600, horizon_s=3 * 86_400, tick_s=10), every=60))
        self.assertGreater(long["peak_backlog"], 50_000)

    def test_ticks_must_divide_reconciles_period(self):
        with self.assertRaises(ValueError):
            simulate.simulate(scenario(tick_s=7))


class Model(unittest.TestCase):
    def test_writes_and_shards(self):
        table, index = model.writes_per_delivery()
        # A 1,159-byte receipt is 2 units: put and update for a new one, a failed put for a duplicate.
        self.assertAlmostEqual(table, 0.7 * 4 + 0.3 * 2)
        self.assertAlmostEqual(index, 0.7 * 2)
        # At least 4 partitions (a new table's 4,000 WRU/s), then by 30 days of receipts (10 GB each).
        self.assertEqual([model.shards(r) for r in (1, 10, 100, 1_000, 10_000)], [4, 4, 20, 196, 1959])

    def test_the_first_bottlenecks(self):
        hubspot = next(s for s in model.SINKS if s.name == "hubspot")
        salesforce = next(s for s in model.SINKS if s.name == "salesforce")
        webhook = next(s for s in model.SINKS if s.name == "webhook")
        postgres = next(s for s in model.SINKS if s.name == "postgres")
        # HubSpot's daily allocation: 250,000 calls, 4 per batch of 100 leads, is about 72 leads
        # a second: 1.03x at 100 deliveries/s (70 new leads/s), overloaded at 1,000/s.
        name, headroom, _ = model.first_bottleneck(100, hubspot)
        self.assertEqual(name, "hubspot rate limit")
        self.assertAlmostEqual(headroom, 250_000 / (70 * 0.04 * 86_400), places=6)
        self.assertLess(model.first_bottleneck(1_000, hubspot)[1], 1)
        self.assertAlmostEqual(model.capacity(hubspot), 250_000 / 86_400 / 0.04, places=6)
        # Salesforce: 150,000 calls of 100 leads each (a stream batch fills a collection of 200
        # halfway).
        self.assertEqual(model.first_bottleneck(1, salesforce)[0], "salesforce rate limit")
        self.assertAlmostEqual(model.capacity(salesforce), 150_000 / 86_400 * 100, places=6)
        # Below the limit, a batch carries what a shard gathers in the 1-second window.
        self.assertEqual(model.records_per_write(1, hubspot), 1)
        self.assertAlmostEqual(model.records_per_write(10, hubspot), 7 / 4)
        self.assertAlmostEqual(model.records_per_write(10_000, hubspot), 7_000 / 1_959)
        self.assertEqual(model.records_per_write(10_000, webhook), 1, "one lead per call")
        self.assertGreater(model.first_bottleneck(100, webhook)[1], 1)
        # One connection per shard's batch: past max_connections at 1,000/s.
        name, headroom, advice = model.first_bottleneck(1_000, postgres)
        self.assertEqual(name, "postgres connections")
        self.assertLess(headroom, 1)
        self.assertIn("pooler", advice)
        # The table's quota covers its index: 4.8 WRU a delivery is past 40,000 at 10,000/s.
        writes = next(r for r in model.stages(10_000, webhook) if r[0].startswith("DynamoDB writes"))
        self.assertAlmostEqual(writes[1], 48_000)
        self.assertLess(writes[2] / writes[1], 1)

    def test_costs_are_per_million_and_dynamodb_writes_dominate(self):
        webhook = model.SINKS[0]
        for rate in (10, 10_000):
            costs = model.cost_per_million(rate, webhook)
            self.assertEqual(max(costs, key=costs.get), "DynamoDB writes")
            table, index = model.writes_per_delivery()
            self.assertAlmostEqual(costs["DynamoDB writes"], (table + index) * 0.625)
        # Cloudflare's own example: 15 million requests at 7 ms of CPU is $8.00 a month.
        month = 15e6
        workers = (5 + (month - 10e6) / 1e6 * 0.30 + (month * 7 - 30e6) / 1e6 * 0.02)
        self.assertAlmostEqual(workers, 8.0)


class Report(unittest.TestCase):
    def test_the_same_seed_gives_the_same_report_and_another_seed_another(self):
        first, again = report.render(seed=3), report.render(seed=3)
        self.assertEqual(first, again)
        bursts = section(first[0], "## Bursts, simulated")
        self.assertNotEqual(bursts, section(report.render(seed=4)[0], "## Bursts, simulated"))
        self.assertTrue(first[1].startswith("<svg") and first[1].rstrip().endswith("</svg>"))
        for heading in ("Every stage at each rate", "first bottleneck", "Cost per million", "Bursts, simulated"):
            self.assertIn(heading, first[0])

    def test_the_report_does_not_depend_on_the_interpreters_hash_seed(self):
        outputs = []
        for seed in ("0", "12345"):
            out = subprocess.run([sys.executable, "-c", "import report; t, s = report.render(5); print(t + s)"],
                                 cwd=HERE, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
                                 check=True)
            outputs.append(out.stdout)
        self.assertEqual(outputs[0], outputs[1])


class Docs(unittest.TestCase):
    def test_the_chart_in_the_docs_is_the_default_runs(self):
        with open(os.path.join(os.path.dirname(HERE), "docs", "backlog.svg")) as f:
            self.assertEqual(f.read(), report.render()[1], "run make capacity and copy backlog.svg to docs/")


if __name__ == "__main__":
    unittest.main()
