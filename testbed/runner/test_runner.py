#!/usr/bin/env python3
"""Unit tests of the testbed runner's host-side parts: metrics, reports,
what the executor reads of a plan. `python3 -m unittest` style;
run by test.sh (no root, no VM)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json  # noqa: E402
import re  # noqa: E402
from unittest import mock  # noqa: E402
import report  # noqa: E402
import subprocess  # noqa: E402
import topology  # noqa: E402
import check_report  # noqa: E402
import guest  # noqa: E402


def raw_run(rates_mbps, dur=10, step=0.1, classes=None, sent_mbps=None, port_rate=100):
    """A synthetic run: flow i sends at rates_mbps[i] from t=0."""
    flows, samples = [], {}
    for i, r in enumerate(rates_mbps):
        flows.append({"id": i, "kind": "long", "src": "dc1h2", "dst": "dc1h1", "start_s": 0, "stop_s": dur,
                      "class": (classes or ["intra"] * len(rates_mbps))[i]})
        samples[str(i)] = [[k * step, int(r * 1e6 / 8 * k * step), 10, 1000 * (1 + i), 0, 0, 0, "x"]
                           for k in range(int(dur / step) + 1)]
    sent = sent_mbps if sent_mbps is not None else sum(rates_mbps)
    q = [[k * step, 3000, 2, int(sent * 1e6 / 8 * k * step), k // 10] for k in range(int(dur / step) + 1)]
    return {"run_id": "t", "cc": "x", "label": "", "duration_s": dur, "flows": flows, "samples": samples,
            "queues": {"dc1sw:h1": q}, "bottleneck": "dc1sw:h1", "port_rates_mbit": {"dc1sw:h1": port_rate},
            "fct": []}


class Metrics(unittest.TestCase):
    """The report's numbers come from `xdcc-metrics` (testbed/metrics, where
    the definitions are tested); here: that report.py reads its answer."""

    def analyze(self, *raws):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, raw in enumerate(raws):
                paths.append(os.path.join(d, f"{i}.json"))
                with open(paths[-1], "w") as fh:
                    json.dump(raw, fh)
            return report.analyze(paths)

    def test_fair_and_unfair_runs(self):
        defs, runs = self.analyze(raw_run([25, 25, 25, 25]), raw_run([90, 10], classes=["intra", "inter"], sent_mbps=50))
        self.assertEqual(defs["bin_s"], 0.5)
        self.assertEqual(defs["size_classes"][0], "<100KB")
        (m, ts), (u, _) = runs
        self.assertAlmostEqual(m["jain"], 1.0, places=3)
        self.assertAlmostEqual(m["utilization"], 1.0, places=2)
        self.assertEqual(m["convergence_s"], 0.0)
        self.assertAlmostEqual(m["intra"]["per_flow_mbps"], 25, places=1)
        self.assertEqual(m["drops"], 10)  # counter rose from 0 to 10 over 10 s
        self.assertEqual(len(ts["rates"]["0"]), 20)  # 0.5 s bins, keyed by flow id
        self.assertAlmostEqual(u["inter_intra_ratio"], 10 / 90, places=2)
        self.assertIsNone(u["convergence_s"])
        self.assertAlmostEqual(u["utilization"], 0.5, places=2)

    def test_a_bad_record_is_a_clear_error(self):
        raw = raw_run([25, 25])
        del raw["bottleneck"]
        with self.assertRaises(SystemExit) as e:
            self.analyze(raw)
        self.assertIn("bottleneck", str(e.exception))


class Plan(unittest.TestCase):
    """What the executor and the report read of a plan (`xdcc-sim plan`, as
    testbed/run.sh writes it): the planner's own checks and values are
    tested in testbed/sim."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        path = os.path.join(guest.SCENARIOS, "h-wan-multipath.toml")
        p = subprocess.run([guest.XDCC_SIM, "plan", path, "--cc", "uno,cubic"], capture_output=True, text=True, check=True)
        with open(os.path.join(cls.dir, "plan.json"), "w") as fh:
            fh.write(p.stdout)
        cls.plan = json.loads(p.stdout)

    def test_the_report_reads_the_scenario_from_the_plan(self):
        sc = report.scenario_of(self.dir)
        self.assertEqual(sc["name"], "h-wan-multipath")
        self.assertEqual(sc["ccs"], ["uno", "cubic"])
        self.assertEqual(sc["points"], ["reroute=single", "reroute=rto", "reroute=agent"])
        self.assertEqual(sc["modelled"], {"uno"})
        self.assertEqual(len(self.plan["runs"]), len(sc["points"]) * len(sc["ccs"]))
        # (The file's [[events]] and [[cross]], as the planner resolved them.)
        self.assertEqual([(e["link"], e["action"], e["at_s"]) for e in sc["events"]], [("wan2", "blackhole", 6), ("wan2", "heal", 14)])
        self.assertEqual(sc["cross"], [{"link": "wan3", "streams": 4, "start_s": 14, "stop_s": 24}])

    def test_every_address_the_executor_uses_is_one_the_plan_sets(self):
        """guest.addr() reads the plan's addresses, and each is an `ip addr
        add` line of its namespace in the same plan."""
        run = self.plan["runs"][0]
        net = run["network"]
        for name in list(net["hosts"]) + [f"dc1br:wan{k}" for k in range(net["wan_paths"])]:
            ns, _, dev = name.partition(":")
            for v6 in (False, True):
                a = guest.addr(net, name, v6)
                self.assertTrue(any(l.startswith(f"addr add {a}/") and l.split(" dev ")[1].split()[0] == (dev or "eth0")
                                    for l in net["ip"][ns]), (name, a))
        for f in run["traffic"]["sized"] + run["traffic"]["long"]:
            self.assertEqual(f["class"], "intra" if f["src"][:3] == f["dst"][:3] else "inter")


class ExecutorAppliesThePlan(unittest.TestCase):
    """The executor holds no scenario default and derives no value: every
    number that topology.build and guest.load_cc hand the kernel (ip and tc
    lines, ethtool, sysctls, the switch profiles, the markers' and the CLI's
    arguments) is one the plan holds, and a plan value changed is the value
    applied. (The network and CC set-up of a run; the traffic is the plan's
    flows as they stand.)"""

    SYSCTL_VALUES = {"0", "1"}  # the executor's own switches (forwarding, hash policy)

    @staticmethod
    def plan(name, cc):
        p = subprocess.run([guest.XDCC_SIM, "plan", os.path.join(guest.SCENARIOS, name + ".toml"), "--cc", cc],
                           capture_output=True, text=True, check=True)
        return json.loads(p.stdout)["runs"][0]

    def applied(self, run):
        """The words of every command the executor runs for `run`'s network
        and CCs, and the text of every file it hands the CLI."""
        words, files = [], []

        def run_cmd(ns, argv, stdin=None, check=True):
            words.extend(w for w in argv[1:] if not w.startswith("/"))  # (not the profiles' scratch paths)
            return ""

        def sysctl(ns, key, value):
            self.assertIn(str(value), self.SYSCTL_VALUES | {run["cc"]} | {c["cc"] for c in run["setup"]}, key)

        def cli(argv, **kw):
            words.extend(w for w in argv[1:] if not w.startswith("/"))
            return mock.MagicMock(stdout="", returncode=0)

        avail = mock.mock_open(read_data=" ".join(c["cc"] for c in run["setup"]))
        with tempfile.TemporaryDirectory() as work, \
                mock.patch.object(topology, "teardown"), mock.patch.object(topology, "wait_markers"), \
                mock.patch.object(topology, "interfaces", return_value=["eth0"]), \
                mock.patch.object(topology.netns, "add"), mock.patch.object(topology.netns, "popen"), \
                mock.patch.object(topology.netns, "run", side_effect=run_cmd), \
                mock.patch.object(topology.netns, "batch", side_effect=lambda ns, tool, lines: words.extend(w for l in lines for w in l.split())), \
                mock.patch.object(topology.netns, "sysctl", side_effect=sysctl), \
                mock.patch.object(guest.subprocess, "run", side_effect=cli), \
                mock.patch.object(guest.os.path, "isdir", return_value=False), \
                mock.patch("guest.open", avail, create=True):
            topology.build(run["network"], work, "xdcc", log=lambda *a: None)
            for f in os.listdir(work):
                if f.startswith("profile-"):  # (beside them: the markers' logs)
                    files.append(read(os.path.join(work, f)))
            markers = topology.netns.popen.call_args_list
            for c in run["setup"]:
                guest.load_cc(c, run)
        words += [w for m in markers for w in m.args[1][1:] if not w.startswith("/")]
        return words, files

    def test_every_number_applied_is_the_plans(self):
        for name, cc in (("ci-smoke", "gemini"), ("a-rtt-fairness", "uno"), ("f-amrt-multi-bottleneck", "amrt"),
                         ("h-wan-multipath", "dctcp")):
            run = self.plan(name, cc)
            text = json.dumps(run)
            plan_numbers = set(re.findall(r"\d+", text))
            words, files = self.applied(run)
            for w in words:
                for n in re.findall(r"\d+", w):
                    self.assertIn(n, plan_numbers, f"{name}: {w!r} applied, {n} not in the plan")
            for f in files:
                self.assertTrue(json.dumps(f) in text, f"{name}: a profile not the plan's: {f}")
            self.assertTrue(files and words)

    def test_a_changed_plan_value_is_the_value_applied(self):
        run = self.plan("ci-smoke", "gemini")
        nic = run["network"]["host_nic"]
        nic.update(delay_us=98761, rate_mbit=98762, limit_pkts=98763)
        run["setup"][0]["tunables"]["beta_q16"] = 98764
        run["net"]["net_intra_rtt_us"] = 98765
        words, _ = self.applied(run)
        for w in ("98761us", "98762mbit", "98763", "98764", "98765"):
            self.assertIn(w, words)


def read(path):
    with open(path) as f:
        return f.read()


class Topology(unittest.TestCase):
    """The executor's side; the network's meaning (ports, profiles, links,
    markers, Gemini's K and T) is the planner's, tested in
    testbed/sim/src/testbed_plan.rs."""

    def test_blackhole_keeps_the_ports_delay_and_buffer(self):
        """The black hole changes only netem's loss on the WAN port's leaf,
        keeping the delay and buffer of the profile the plan gave it."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "profile-dc2br-wan1.toml"), "w") as f:
                f.write('description = "w"\n[port]\nrate_mbit = 10\nbuffer_bytes = 135000\nmtu = 1500\n'
                        '[marking]\nkind = "none"\n[wan]\ndelay_us = 9000\n')
            leaf = topology._wan_leaf(d, 1, 100)
            self.assertEqual(leaf[:9], ["qdisc", "change", "dev", "wan1", "parent", "1:1", "handle", "10:", "netem"])
            self.assertEqual(leaf[9:], ["delay", "9000us", "limit", "90", "loss", "random", "100%"])



class GuestCpu(unittest.TestCase):
    def test_shares_and_softirqs_by_type(self):
        # Two snapshots 2 s apart: 300 of 1000 jiffies busy, 100 of them in
        # softirq; NET_RX raised 4000 times, HRTIMER 1000, TIMER not at all.
        # Processes: two iperf3s (one started in between), a sampler, and
        # pid 9 reused by another command (counts whole), pid 5 exited.
        a = {"busy": 100, "softirq": 50, "total": 1000, "user": 20, "system": 30, "irq": 0,
             "softirqs": {"net_rx": 1000, "hrtimer": 500, "timer": 7}, "ctxt": 100, "t": 10.0,
             "procs": {3: ("iperf3", 40), 4: ("xdcc", 10), 5: ("iperf3", 50), 9: ("sh", 90)}}
        b = {"busy": 400, "softirq": 150, "total": 2000, "user": 120, "system": 130, "irq": 10,
             "softirqs": {"net_rx": 5000, "hrtimer": 1500, "timer": 7}, "ctxt": 900, "t": 12.0,
             "procs": {3: ("iperf3", 100), 4: ("xdcc", 14), 7: ("iperf3", 20), 9: ("ksoftirqd/0", 30)}}
        c = guest.cpu_split(a, b)
        self.assertEqual((c["busy"], c["softirq"], c["user"], c["system"], c["irq"]), (0.3, 0.1, 0.1, 0.1, 0.01))
        self.assertEqual(c["softirqs_per_s"], {"net_rx": 2000, "hrtimer": 500})
        self.assertEqual(guest.top_softirqs(c), "net_rx 2000/s, hrtimer 500/s")
        self.assertEqual(c["ctxt_per_s"], 400)
        self.assertEqual(c["processes"], {"iperf3": 0.08, "ksoftirqd/0": 0.03})  # xdcc: 0.4 %, left out
        self.assertEqual(guest.top_processes(c), "iperf3 8%, ksoftirqd/0 3%")
        # The guest's own counters, read twice, make a valid split.
        c = guest.cpu_split(guest.cpu_times(), guest.cpu_times())
        self.assertTrue(0.0 <= c["busy"] <= 1.0)
        self.assertGreaterEqual(c["ctxt_per_s"], 0)


class Repeats(unittest.TestCase):
    def test_combine_repetitions(self):
        """`testbed/run.sh --repeat N` reduces N run directories to one table:
        per (cc, point) and metric the mean, the interval and how many
        repetitions had a value."""
        def run(cc, util, conv):
            return {"cc": cc, "label": "", "utilization": util, "jain": 0.9, "convergence_s": conv,
                    "intra": {"per_flow_mbps": 10.0}, "inter": {"per_flow_mbps": None}, "inter_intra_ratio": None,
                    "queue_mean_kb": 1.0, "queue_p99_kb": 2.0, "drops": 3, "retransmits": 4, "guest_cpu_busy": 0.5,
                    "sample_gap_max_ms": 120,
                    "fct": [{"kind": "incast", "class": "intra", "size": "<100KB", "n": 5, "mean_ms": 10 * util,
                             "p99_ms": 20.0}],
                    "phases": [{"from_s": 0, "to_s": 4, "flows": [0], "ports": {"p": {"util": util / 2}}},
                               {"from_s": 4, "to_s": 10, "flows": [0, 1], "ports": {"p": {"util": util}}}],
                    "model": {"utilization": [0.95, 0.01], "fct_mean_ms incast intra <100KB": [8.0, 1.0]}
                    if cc == "uno" else None}
        with tempfile.TemporaryDirectory() as d:
            reps = []
            for i, (u, c) in enumerate([(0.90, 1.0), (0.92, None), (0.94, 3.0)]):
                r = os.path.join(d, f"rep-{i + 1}")
                os.makedirs(r)
                with open(os.path.join(r, "summary.json"), "w") as fh:
                    json.dump({"scenario": "s", "runs": [run("uno", u, c), run("cubic", 0.5, None)]}, fh)
                reps.append(r)
            report.combine(d, reps)
            with open(os.path.join(d, "summary.json")) as fh:
                rows = json.load(fh)["rows"]
            with open(os.path.join(d, "report.md")) as fh:
                md = fh.read()
        self.assertEqual([r["cc"] for r in rows], ["uno", "cubic"])
        uno = rows[0]
        self.assertAlmostEqual(uno["util%"]["mean"], 92.0)
        self.assertAlmostEqual(uno["util%"]["ci95"], 4.303 * 2.0 / 3 ** 0.5, places=6)
        self.assertEqual(uno["conv_s"]["n"], 2)
        self.assertIn("2.0 ± 12.7 (2/3)", md)  # conv_s: 1 and 3 s, one repetition never converged
        self.assertIsNone(rows[1]["conv_s"]["mean"])
        # The model's prediction beside the kernel's mean, for modelled CCs only.
        self.assertIn("| uno | - | 92.0 ± 5.0 / 95.0 ± 1.0 |", md)
        self.assertNotIn("| cubic | - | 50.0", md.split("Kernel next to the model")[1])
        # FCT rows and per-phase utilization, over the repetitions too.
        self.assertAlmostEqual(uno["fct"]["mean_ms incast intra <100KB"]["mean"], 9.2)
        self.assertAlmostEqual(uno["phases"]["4-10 s p"]["mean"], 92.0)

    def test_phase_rows_for_a_link_failure(self):
        """A run with events gets one row per phase: the long flows' Mbit/s,
        the stuck ones, the sized flows' FCT and failures, kernel / model,
        and the agent's moves summed over its hosts."""
        ph = lambda a, b, mbps, stuck, n, mean, failed: {
            "from_s": a, "to_s": b, "flows": [0, 1], "ports": {}, "long_mbps": mbps, "stuck": stuck,
            "fct_n": n, "fct_mean_ms": mean, "fct_p99_ms": mean, "fct_failed": failed}
        m = {"run_id": "dctcp-reroute=agent", "cc": "dctcp", "label": "reroute=agent",
             "phases": [ph(0, 6, 37.5, 0, 10, 120.0, 0), ph(6, 14, 21.0, 2, 16, None, 4)],
             "model": {"phase 6-14 s long_mbps": (28.0, 1.0), "phase 6-14 s stuck": (0.4, 0.2)}}
        raw = {"events": [{"at_s": 6, "link": "wan2", "action": "blackhole"}], "reroute": "agent",
               "reroutes": {"dc2h1": {"reroutes": 3}, "dc2h2": {"reroutes": 2}}}
        rows = report.phase_flow_rows([m], {"dctcp-reroute=agent": raw})
        self.assertEqual(rows[0], ["dctcp", "reroute=agent", "0-6 s", "2", "37.5 / -", "0 / -", "10", "120 / -",
                                   "120 / -", "0 / -", "5"])
        self.assertEqual(rows[1][4:6], ["21.0 / 28.0 ± 1.0", "2 / 0.4 ± 0.2"])
        self.assertEqual(rows[1][7], "- / -")  # no sized flow finished
        self.assertEqual(report.phase_flow_rows([m], {"dctcp-reroute=agent": dict(raw, events=[])}), [])

    def test_results_md_generated_section(self):
        """testbed/results.sh: RESULTS.md's generated section is rewritten
        from combined runs; the hand-written text around it stays."""
        with tempfile.TemporaryDirectory() as d:
            comb = os.path.join(d, "d-incast")
            os.makedirs(comb)
            cell = lambda m, c, n=3: {"mean": m, "ci95": c, "n": n, "values": []}
            row = {"cc": "uno", "point": "-", "repeats": 3, "util%": cell(90.0, 2.0), "jain": cell(0.95, 0.01),
                   "conv_s": cell(None, None, 0), "retx": cell(4, 1), "drops": cell(0, 0),
                   "model": {"utilization": [0.93, 0.01], "fct_mean_ms incast intra <100KB": [8.0, 1.0]},
                   "fct": {"mean_ms incast intra <100KB": cell(10.0, 1.0), "p99_ms incast intra <100KB": cell(20.0, 2.0)},
                   "phases": {"0-4 s p": cell(45.0, 1.0), "4-10 s p": cell(90.0, 2.0)}}
            with open(os.path.join(comb, "summary.json"), "w") as fh:
                json.dump({"scenario": "d-incast", "description": "Incast", "paper": "uno-sc25 §5", "repeats": 3,
                           "guest_cpu_busy": [0.2, 0.4], "sample_gap_max_ms": 130, "rows": [row]}, fh)
            res = os.path.join(d, "RESULTS.md")
            with open(res, "w") as fh:
                fh.write(f"# Results\nprose before\n{report.RESULTS_BEGIN}\nold table\n{report.RESULTS_END}\nprose after\n")
            report.results(res, [comb])
            with open(res) as fh:
                text = fh.read()
            self.assertNotIn("old table", text)
            self.assertTrue(text.startswith("# Results\nprose before\n"))
            self.assertTrue(text.endswith(f"{report.RESULTS_END}\nprose after\n"))
            self.assertIn("Paper: uno-sc25 §5", text)
            self.assertIn("3 repetitions; guest CPU 20–40 %, largest sampler gap 130 ms", text)
            self.assertIn("| uno | - | 90.0 ± 2.0 / 93.0 ± 1.0 | 0.950 ± 0.010 / - | - / - |", text)
            self.assertIn("| uno | - | incast | intra | <100KB | 10 ± 1 / 8 ± 1 | 20 ± 2 / - |", text)
            self.assertIn("| uno | - | 4-10 s | p | 90.0 ± 2.0 |", text)
            # A file without the markers, or a directory of one run: clear errors, nothing written.
            with open(res, "w") as fh:
                fh.write("no markers\n")
            with self.assertRaises(SystemExit) as e:
                report.results(res, [comb])
            self.assertIn("no generated section", str(e.exception))
            with open(os.path.join(comb, "summary.json"), "w") as fh:
                json.dump({"scenario": "d-incast", "runs": []}, fh)
            with open(res, "w") as fh:
                fh.write(f"{report.RESULTS_BEGIN}\nkeep\n{report.RESULTS_END}\n")
            with self.assertRaises(SystemExit) as e:
                report.results(res, [comb])
            self.assertIn("not a repeated run", str(e.exception))
            with open(res) as fh:
                self.assertIn("keep", fh.read())


class ModelNextToKernel(unittest.TestCase):
    PRED = {("gemini", ""): {"entry": "gemini", "label": "", "notes": [], "seeds": 3,
                             "metrics": {"utilization": [0.98, 0.01], "queue_p99_kb": [75.0, 3.0],
                                         "queue_mean_kb": [60.0, 2.0], "jain": [0.8, 0.02]}},
            ("cubic", ""): {"entry": "cubic", "label": "", "notes": ["cubic is a kernel CC: no model in xdcc-sim"],
                            "seeds": 3, "metrics": {}}}

    def run_of(self, cc, util, p99):
        return {"run_id": cc, "cc": cc, "label": "", "utilization": util, "queue_p99_kb": p99, "jain": 0.6,
                "inter_intra_ratio": None, "queue_mean_kb": 40.0, "drops": 0}

    def test_rows_show_kernel_and_model(self):
        rows = report.compare_rows([self.run_of("gemini", 0.955, 71.2), self.run_of("cubic", 0.99, 80.0)], self.PRED)
        self.assertEqual(rows[0][:4], ["gemini", "-", "95.5 / 98.0±1.0", "0.600 / 0.800±0.020"])
        self.assertEqual(rows[1][-1], "cubic is a kernel CC: no model in xdcc-sim")

    def test_fct_rows_pair_kernel_and_model_by_size_class(self):
        pred = {("uno", ""): {"entry": "uno", "label": "", "notes": [], "seeds": 3, "metrics": {
            "fct_mean_ms incast intra <100KB": [120.4, 3.0], "fct_p99_ms incast intra <100KB": [300.0, 9.0],
            "fct_n incast intra <100KB": [14.0, 0.0]}}}
        m = dict(self.run_of("uno", 0.9, 10.0), fct=[
            {"kind": "incast", "class": "intra", "size": "<100KB", "n": 14, "mean_ms": 250.0, "p99_ms": 540.0},
            {"kind": "incast", "class": "inter", "size": "<100KB", "n": 8, "mean_ms": 280.0, "p99_ms": 480.0}])
        rows = report.fct_compare_rows([m], pred)
        self.assertEqual(rows[0][5:], ["14 / 14", "250 / 120", "540 / 300"])
        self.assertEqual(rows[1][6:], ["280 / -", "480 / -"])  # no such class in the model

    def test_agreement_check_fails_outside_the_tolerance(self):
        def runs(util, queue_mean):
            r = dict(self.run_of("gemini", util, 130.0), queue_mean_kb=queue_mean)
            r["model"] = report.model_of(r, self.PRED)
            return [r, dict(self.run_of("cubic", 0.5, 10.0), model=None)]
        # (a p99 far from the model's, 130 vs 75 kB, is one burst: not checked)
        self.assertEqual(check_report.disagreements(runs(0.90, 40.0)), [])
        bad = check_report.disagreements(runs(0.75, 40.0))
        self.assertEqual(len(bad), 1)
        self.assertIn("utilization kernel 0.750 vs model 0.980", bad[0])
        self.assertIn("queue_mean_kb kernel 90.000", check_report.disagreements(runs(0.95, 90.0))[0])
        self.assertIn("queue_mean_kb kernel 15.000", check_report.disagreements(runs(0.95, 15.0))[0])
        self.assertEqual(check_report.disagreements(runs(0.95, 30.0)), [])  # 0.5 of the model's

    def test_a_run_whose_guest_stalled_is_not_compared_with_the_model(self):
        quiet = dict(self.run_of("gemini", 0.6, 10.0), sample_gap_max_ms=141)
        stalled = dict(quiet, sample_gap_max_ms=335)
        self.assertFalse(check_report.stalled(quiet, 100))
        self.assertTrue(check_report.stalled(stalled, 100))
        self.assertFalse(check_report.stalled(stalled, 500))  # gaps are judged in sample periods
        self.assertFalse(check_report.stalled(dict(quiet, sample_gap_max_ms=None), 100))


if __name__ == "__main__":
    unittest.main()
