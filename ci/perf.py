#!/usr/bin/env python3
"""Prints the throughput table (docs/results) from the JSON reports that
`ci/gpu.sh perf` leaves in OUT: stress at worlds 8, 4 and 2 (kimi, MPS), each
with the CPU checker and the device checker in the same run of the script on
the same machine, the host CPU per checked call, what bounds each run, the
audit's sample and disagreements, and the exchange alone (bench). Exit 1 if a
report is missing or unreadable."""
import json
import sys
from pathlib import Path

GOALS = {8: 3.5, 4: 2.5, 2: 2.0}  # device checker / CPU checker, checked calls/s
PHASES = ["generate", "stage", "launch", "capture", "wait", "collect", "check", "check_wait", "barrier", "idle"]


def load(out, name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError):
        return None


def summary(report):
    ranks = report["phases"]["per_rank"]
    n = max(1, len(ranks))
    means = {p: sum(r[p + "_ms"] for r in ranks) / n / 1e3 for p in PHASES}
    calls = report["stress"]["num_calls"]
    rate = report["stress"]["calls_per_s"]
    cpu_ms_per_rank = sum(r.get("cpu_ms", 0) for r in ranks) / n
    return {
        "rate": rate,
        "verdict": report["verdict"],
        "bound": report["phases"]["bound_by"],
        "phases": " / ".join(f"{means[p]:.2f}" for p in PHASES),
        "core_ms": cpu_ms_per_rank / max(calls, 1),
        "check": report["phases"].get("check", {}),
    }


def exchange_us(out):
    report = load(out, "perf-bench-w4.json")
    if report is None:
        return None
    bench = report.get("bench", report)
    best = {}
    for row in bench.get("table", []):
        if row.get("direct_us") is not None:
            best[row["tokens"]] = row["direct_us"]
    return best


def main(out):
    out = Path(out)
    ok = True
    print("| stress `--world W --geometry kimi --mps on` | CPU checker, calls/s | device checker, calls/s | ratio | goal | met | host CPU per call per rank, core-ms (CPU / device) | audit: re-checked calls, disagreements | device run bound by | device run phases per rank, s (generate/stage/launch/capture/wait/collect/check/check-wait/barrier/idle) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w, goal in GOALS.items():
        cpu, gpu = load(out, f"perf-stress-w{w}-cpu.json"), load(out, f"perf-stress-w{w}-gpu.json")
        if cpu is None or gpu is None:
            print(f"| world {w} | {'missing' if cpu is None else ''} | {'missing' if gpu is None else ''} | | >= {goal}x | no | | | | |")
            ok = False
            continue
        c, g = summary(cpu), summary(gpu)
        ratio = g["rate"] / max(c["rate"], 1e-9)
        k = g["check"]
        print(f"| world {w} | {c['rate']:.0f} ({c['verdict']}) | {g['rate']:.0f} ({g['verdict']}) | {ratio:.2f}x | >= {goal}x | "
              f"{'yes' if ratio >= goal else 'no'} | {c['core_ms']:.3f} / {g['core_ms']:.3f} | "
              f"{k.get('audited_calls', 0)} of {k.get('device_calls', 0) + k.get('audited_calls', 0)}, {k.get('disagreements', 0)} | "
              f"{g['bound']} | {g['phases']} |")
    ex = exchange_us(out)
    if ex:
        print()
        print("exchange alone (`bench --world 4 --geometry kimi --mps on`, graph replays of the op, no check), per op: "
              + ", ".join(f"T={t}: {us:.1f} us" for t, us in sorted(ex.items())))
    else:
        print("exchange alone: no bench report")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/out"))
