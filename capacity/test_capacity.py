"""The capacity model's invariants (`make test` runs these: python3 -m unittest discover -s capacity)."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import model  # noqa: E402
import report  # noqa: E402
import simulate  # noqa: E402
from params import DUPLICATES  # noqa: E402


def scenario(**changes):
    base = dict(name="test", base_rate=1, burst_rate=10, burst_start_s=600, burst_seconds=3_600, horizon_s=6 * 3_600,
                stream_capacity=50, sink_capacity=3, reconcile_capacity=2, seed=11)
    base.update(changes)
    return simulate.Scenario(**base)


class Simulation(unittest.TestCase):
    def test_every_accepted_delivery_is_a_lead_or_waiting_at_every_step(self):
        for s in (scenario(), scenario(max_record_age_s=None, reconcile=False, burst_seconds=30 * 3_600,
                                       horizon_s=40 * 3_600), scenario(error_rate=0.5)):
            result = simulate.simulate(s)
            self.assertEqual(len(result.steps), s.horizon_s)
            for step in result.steps:
                self.assertEqual(step.accepted, step.leads + step.backlog + step.lost, step)
            self.assertGreater(result.steps[-1].accepted, 0)

    def test_with_sinks_faster_than_the_load_the_backlog_stays_bounded(self):
        s = scenario(sink_capacity=20, stream_capacity=20)  # 10/s is 7 new receipts a second
        result = simulate.simulate(s)
        self.assertLessEqual(max(x.backlog for x in result.steps), 60)
        self.assertLessEqual(max(x.oldest_age_s for x in result.steps), 10)
        self.assertEqual(result.steps[-1].given_up, 0)

    def test_a_burst_above_the_sink_drains_at_the_predicted_rate(self):
        # The sink's limit binds (the stream worker is faster), nothing is given up (no maximum
        # record age): after the burst the backlog falls at the predicted rate.
        s = scenario(max_record_age_s=None, reconcile=False, horizon_s=12 * 3_600)
        steps = simulate.simulate(s).steps
        end = s.burst_start_s + s.burst_seconds
        rate = simulate.predicted_drain_rate(s)
        self.assertAlmostEqual(rate, 3 * 0.98 - 0.7, places=6)
        start, later = steps[end + 600], steps[end + 600 + 3_600]
        measured = (start.backlog - later.backlog) / 3_600
        self.assertAlmostEqual(measured, rate, delta=0.05 * rate)
        # And the backlog the burst leaves is what arrived above the limit.
        expected = (10 * (1 - DUPLICATES) - 3 * 0.98) * s.burst_seconds
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
        self.assertIsNotNone(without["retention_crossed_at_s"])
        # As deployed (a maximum record age of 1 hour, reconcile every 15 minutes): nothing lost.
        # Past it, recovery runs at reconcile's pace: one receipt at a time, 10 of every 15 minutes.
        deployed = simulate.summary(simulate.simulate(scenario(burst_seconds=6 * 3_600, horizon_s=3 * day), every=60))
        self.assertEqual((deployed["lost"], deployed["accepted"]), (0, deployed["leads"]))
        self.assertGreater(deployed["given_up_peak"], 0)

    def test_the_longest_burst_within_the_streams_24_hours(self):
        s = scenario(max_record_age_s=None, reconcile=False, error_rate=0.0)
        # 7 new receipts a second against 3: each second of burst adds 4/3 s of wait.
        self.assertAlmostEqual(simulate.longest_burst_within_retention(s), 86_400 / (7 / 3 - 1))
        self.assertEqual(simulate.longest_burst_within_retention(scenario(sink_capacity=8)), math.inf)


class Model(unittest.TestCase):
    def test_writes_and_shards(self):
        table, index = model.writes_per_delivery()
        # A 1,159-byte receipt is 2 units: put and update for a new one, a failed put for a duplicate.
        self.assertAlmostEqual(table, 0.7 * 4 + 0.3 * 2)
        self.assertAlmostEqual(index, 0.7 * 2)
        self.assertEqual([model.shards(r) for r in (1, 100, 1_000, 10_000)], [1, 1, 4, 34])

    def test_the_first_bottlenecks(self):
        hubspot = next(s for s in model.SINKS if s.name == "hubspot")
        salesforce = next(s for s in model.SINKS if s.name == "salesforce")
        webhook = next(s for s in model.SINKS if s.name == "webhook")
        name, headroom, _ = model.first_bottleneck(10, hubspot)
        self.assertEqual(name, "stream worker")  # one record at a time, three calls each
        self.assertLess(headroom, 1)
        name, headroom, _ = model.first_bottleneck(10, hubspot, parallelization=10)
        self.assertEqual(name, "hubspot rate limit")
        self.assertLess(headroom, 1)
        self.assertEqual(model.first_bottleneck(1, salesforce)[0], "salesforce rate limit")
        self.assertGreater(model.first_bottleneck(100, webhook)[1], 1)

    def test_costs_are_per_million_and_dynamodb_writes_dominate(self):
        webhook = model.SINKS[0]
        for rate in (10, 10_000):
            costs = model.cost_per_million(rate, webhook)
            self.assertEqual(max(costs, key=costs.get), "DynamoDB writes")
            table, index = model.writes_per_delivery()
            self.assertAlmostEqual(costs["DynamoDB writes"], (table + index) * 0.625)


class Report(unittest.TestCase):
    def test_the_same_seed_gives_the_same_report_and_another_seed_another(self):
        first, again = report.render(seed=3), report.render(seed=3)
        self.assertEqual(first, again)
        self.assertNotEqual(first[0], report.render(seed=4)[0])
        self.assertTrue(first[1].startswith("<svg") and first[1].rstrip().endswith("</svg>"))
        for heading in ("Every stage at each rate", "first bottleneck", "Cost per million", "Bursts, simulated"):
            self.assertIn(heading, first[0])


class Docs(unittest.TestCase):
    def test_the_chart_in_the_docs_is_the_default_runs(self):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with open(os.path.join(root, "docs", "backlog.svg")) as f:
            self.assertEqual(f.read(), report.render()[1], "run make capacity and copy backlog.svg to docs/")


if __name__ == "__main__":
    unittest.main()
