#!/usr/bin/env python3
"""Prints the throughput table (docs/results) from the JSON reports and the
checker_bench log that `ci/gpu.sh perf` leaves in OUT. Exit 1 if a report is
missing or unreadable."""
import json
import os
import re
import sys
from pathlib import Path

GOALS = [  # (label, file, what, goal, higher is better)
    ("`stress --world 4 --geometry kimi --mps on`, checked calls/s", "perf-stress-w4.json", "calls", 1000, True),
    ("`stress --world 2 --geometry kimi --mps on`, checked calls/s", "perf-stress-w2.json", "calls", 1500, True),
    ("default suite, `--world 4 --geometry kimi --mps on`, wall s", "perf-suite-w4.json", "wall", 6, False),
    ("default suite, `--world 2`, wall s", "perf-suite-w2.json", "wall", 3, False),
]
PHASES = ["generate", "stage", "launch", "capture", "wait", "collect", "check", "check_wait", "barrier", "idle"]


def phase_means(report):
    ranks = report["phases"]["per_rank"]
    n = max(1, len(ranks))
    return {p: sum(r[p + "_ms"] for r in ranks) / n / 1e3 for p in PHASES}, report["phases"]["bound_by"]


def main(out):
    out = Path(out)
    rows, ok = [], True
    print("| measure | measured | goal | met | bound by | phases per rank, s (generate/stage/launch/capture/wait/collect/check/check-wait/barrier/idle) |")
    print("|---|---|---|---|---|---|")
    for label, name, what, goal, higher in GOALS:
        try:
            report = json.loads((out / name).read_text())
        except (OSError, ValueError) as e:
            print(f"| {label} | missing ({e}) | {goal} | no | | |")
            ok = False
            continue
        value = report["stress"]["calls_per_s"] if what == "calls" else report["wall_s"]
        met = value >= goal if higher else value <= goal
        means, bound = phase_means(report)
        phases = " / ".join(f"{means[p]:.2f}" for p in PHASES)
        verdict = report["verdict"]
        print(f"| {label} | {value:.1f} ({verdict}) | {'>=' if higher else '<='} {goal} | {'yes' if met else 'no'} | {bound} | {phases} |")
    # Where a suite's wall time goes beyond the cases' own phases.
    for name in ("perf-suite-w4.json", "perf-suite-w2.json"):
        try:
            report = json.loads((out / name).read_text())
        except (OSError, ValueError):
            continue
        cases = report["cases"]
        wall = sum(c.get("wall_ms", 0) for c in cases) / 1e3
        worker = sum(max((r.get("worker_ms", 0) for r in c["ranks"]), default=0) for c in cases) / 1e3
        elapsed = sum(c["elapsed_ms"] for c in cases) / 1e3
        print(f"{name}: wall {report['wall_s']:.2f} s = start-up {report['environment']['startup_s']:.2f}"
              f" + cases {wall:.2f} (slowest worker {worker:.2f}, of which calls and checks {elapsed:.2f})"
              f" + shut-down {report['environment'].get('teardown_s', 0):.2f} + rest")
    # The CPU the workers burnt (every thread, their check pools included):
    # a run that keeps the host's cores busy is bound by CPU, whatever phase leads.
    cores = os.cpu_count() or 1
    for name in ("perf-stress-w4.json", "perf-stress-w2.json", "perf-suite-w4.json", "perf-suite-w2.json"):
        try:
            report = json.loads((out / name).read_text())
        except (OSError, ValueError):
            continue
        ranks = report["phases"]["per_rank"]
        cpu_s = sum(r.get("cpu_ms", 0) for r in ranks) / 1e3
        secs = report["stress"]["run_s"] if "stress" in report else report["wall_s"]
        print(f"{name}: workers' CPU {cpu_s:.1f} s in {secs:.2f} s = {cpu_s / max(secs, 1e-9):.1f} of {cores} cores"
              f" ({cpu_s / max(1, len(ranks)) / max(secs, 1e-9):.2f} per rank)")
    try:
        log = (out / "perf-checker.log").read_text()
        for line in log.splitlines():
            m = re.match(r"\s*(\d+)\s+([\d.]+)\s+", line)
            if m:
                t, ms = int(m.group(1)), float(m.group(2))
                print(f"| checker, one kimi T=128 call, {t} thread{'s' if t > 1 else ''} (median ms) | {ms:.2f} | <= 3 | {'yes' if ms <= 3 else 'no'} | | |")
    except OSError as e:
        print(f"| checker | missing ({e}) | <= 3 | no | | |")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/out"))
