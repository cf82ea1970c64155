#!/usr/bin/env python3
"""Prints the throughput table (docs/results) from the JSON reports that
`ci/gpu.sh perf` leaves in OUT: stress at worlds 8, 4 and 2 (kimi, MPS), each
with the CPU checker and the device checker in the same run of the script on
the same machine (with PERF_ROUNDS > 1 several interleaved rounds: each
checker's median run, its spread beside it, and the ratio of the medians;
other columns from the median run), the host CPU per checked call, what bounds each run, the
audit's sample and disagreements, and the exchange alone (bench). Exit 1 if a
report is missing or unreadable.

`perf.py --diag OUT` prints `ci/gpu.sh perfdiag`'s tables instead: the device-
checked run with one knob off at a time, what a step launched twice costs per
group call (and the calls/s with it free), each call step's own completion
time (DCP_TRACE_STEPS=0) and nsys's kernel summary when it ran."""
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

GOALS = {8: 3.5, 4: 2.5, 2: 2.0}  # device checker / CPU checker, checked calls/s
PHASES = ["generate", "stage", "launch", "setup", "after", "capture", "wait", "collect", "check", "check_wait", "barrier", "idle"]


def load(out, name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError):
        return None


def summary(report):
    ranks = report["phases"]["per_rank"]
    n = max(1, len(ranks))
    means = {p: sum(r.get(p + "_ms", 0) for r in ranks) / n / 1e3 for p in PHASES}
    calls = report["stress"]["num_calls"]
    rate = report["stress"]["calls_per_s"]
    cpu_ms_per_rank = sum(r.get("cpu_ms", 0) for r in ranks) / n
    main_ms_per_rank = sum(r.get("main_cpu_ms", 0) for r in ranks) / n
    return {
        "rate": rate,
        "verdict": report["verdict"],
        "bound": report["phases"]["bound_by"],
        "means": means,  # per rank, s
        "phases": " / ".join(f"{means[p]:.2f}" for p in PHASES),
        "core_ms": cpu_ms_per_rank / max(calls, 1),
        "main_core_ms": main_ms_per_rank / max(calls, 1),  # 0 from builds before main_cpu_ms
        "check": report["phases"].get("check", {}),
    }


def exchange_us(out, w):
    report = load(out, f"perf-bench-w{w}.json")
    if report is None:
        return None
    bench = report.get("bench", report)
    best = {}
    for row in bench.get("table", []):
        if row.get("direct_us") is not None:
            best[row["tokens"]] = row["direct_us"]
    return best


def rounds(out, w, check):
    """Every round's report of one run (`PERF_ROUNDS`: perf-stress-wW-CHECK.json,
    then -r2, -r3, ...), in round order; None where none is readable."""
    names = [f"perf-stress-w{w}-{check}.json"]
    names += sorted((p.name for p in out.glob(f"perf-stress-w{w}-{check}-r*.json")),
                    key=lambda n: int(re.search(r"-r(\d+)\.json$", n).group(1)))
    reports = [r for r in (load(out, n) for n in names) if r is not None]
    return reports or None


def median_run(reports):
    """The round whose rate is the median (the lower one of an even count), its
    summary, and the rates of all: single runs on one machine spread widely."""
    summaries = sorted((summary(r) for r in reports), key=lambda x: x["rate"])
    mid = summaries[(len(summaries) - 1) // 2]
    verdicts = {x["verdict"] for x in summaries}
    mid = dict(mid, verdict=mid["verdict"] if verdicts == {mid["verdict"]} else "/".join(sorted(verdicts)))
    rates = [x["rate"] for x in summaries]
    spread = f"; {rates[0]:.0f}-{rates[-1]:.0f} in {len(rates)} runs" if len(rates) > 1 else ""
    return mid, spread


def main(out):
    out = Path(out)
    ok = True
    print("| stress `--world W --geometry kimi --mps on` | CPU checker, calls/s | device checker, calls/s | ratio | goal | met | host CPU per call per rank, core-ms (CPU / device, of it the device run's main thread) | audit: re-checked calls, disagreements | device run bound by | device run phases per rank, s (generate/stage/launch/setup/after/capture/wait/collect/check/check-wait/barrier/idle) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w, goal in GOALS.items():
        cpu, gpu = rounds(out, w, "cpu"), rounds(out, w, "gpu")
        if cpu is None or gpu is None:
            print(f"| world {w} | {'missing' if cpu is None else ''} | {'missing' if gpu is None else ''} | | >= {goal}x | no | | | | |")
            ok = False
            continue
        (c, c_spread), (g, g_spread) = median_run(cpu), median_run(gpu)
        ratio = g["rate"] / max(c["rate"], 1e-9)
        k = g["check"]
        print(f"| world {w} | {c['rate']:.0f} ({c['verdict']}{c_spread}) | {g['rate']:.0f} ({g['verdict']}{g_spread}) | {ratio:.2f}x | >= {goal}x | "
              f"{'yes' if ratio >= goal else 'no'} | {c['core_ms']:.3f} / {g['core_ms']:.3f} ({g['main_core_ms']:.3f}) | "
              f"{k.get('audited_calls', 0)} of {k.get('device_calls', 0) + k.get('audited_calls', 0)}, {k.get('disagreements', 0)} | "
              f"{g['bound']} | {g['phases']} |")
    print()
    for w in GOALS:
        ex = exchange_us(out, w)
        if ex:
            print(f"exchange alone (`bench --world {w} --geometry kimi --mps on`, graph replays of the op, no check), per op: "
                  + ", ".join(f"T={t}: {us:.1f} us" for t, us in sorted(ex.items())))
        else:
            print(f"exchange alone at world {w}: no bench report")
    return 0 if ok else 1


def marginal_costs(out):
    """A step launched twice per call (DCP_STEP_TWICE) costs the run its
    marginal cost once more: the period a group call takes grows by it. With
    the step free, the period would shrink by as much: an upper bound on what
    making that step cheaper can give, against the CPU checker's run."""
    lines = ["what a step costs the run (its twice-run against the default, per group call):",
             "| world | step | marginal cost, us per group call | of the period | with it free, calls/s | against the CPU checker |",
             "|---|---|---|---|---|---|"]
    for w in GOALS:
        base, cpu = load(out, f"perf-stress-w{w}-gpu.json"), load(out, f"perf-stress-w{w}-cpu.json")
        if base is None:
            continue
        period = 1e6 / summary(base)["rate"]
        for step in ("check", "prep"):
            twice = load(out, f"perfdiag-w{w}-{step}-twice.json")
            if twice is None or "stress" not in twice:
                continue
            cost = 1e6 / summary(twice)["rate"] - period
            free = 1e6 / max(period - cost, 1e-9)
            against = f"{free / summary(cpu)['rate']:.2f}x" if cpu is not None else "no CPU run"
            lines.append(f"| {w} | {step} | {cost:.0f} | {100 * cost / period:.0f}% | {free:.0f} | {against} |")
    return "\n".join(lines)


def host_cpu_by_phase(out):
    """The phase-cpu run (DCP_PHASE_CLOCK=cpu): each phase in the CPU time of
    the thread that timed it, per call and rank, beside the main thread's
    whole CPU time. check is left out of the main thread's sum: a copied
    call's check runs on the pool, a device verdict's inline on the main
    thread (so the sum's gap to the main thread is the rest of the loop,
    messages and reports, plus that inline part)."""
    lines = ["host CPU per call and rank by phase, us (DCP_PHASE_CLOCK=cpu; check: the pool's and the inline device verdicts', not in the sum):",
             "| world | calls/s | " + " | ".join(PHASES) + " | phases of the main thread, sum | main thread | process |",
             "|---|---|" + "---|" * len(PHASES) + "---|---|---|"]
    for w in GOALS:
        r = load(out, f"perfdiag-w{w}-phase-cpu.json")
        if r is None or "stress" not in r:
            continue
        g = summary(r)
        us = {p: 1e6 * s / max(1, r["stress"]["num_calls"]) for p, s in g["means"].items()}
        main_sum = sum(us[p] for p in PHASES if p != "check")
        lines.append(f"| {w} | {g['rate']:.0f} | " + " | ".join(f"{us[p]:.1f}" for p in PHASES) +
                     f" | {main_sum:.1f} | {1e3 * g['main_core_ms']:.1f} | {1e3 * g['core_ms']:.1f} |")
    return "\n".join(lines)


TRACE = re.compile(r"trace rank (\d+): (.+?): host call ([\d.]+) ms, then complete after ([\d.]+) ms")


def diag(out):
    out = Path(out)
    ok = True
    print("| world | variant | calls/s | host CPU per call per rank, core-ms | bound by | phases per rank, s (generate/stage/launch/setup/after/capture/wait/collect/check/check-wait/barrier/idle) |")
    print("|---|---|---|---|---|---|")
    files = sorted(out.glob("perf-stress-w*-*.json")) + sorted(out.glob("perfdiag-w*-*.json"))
    for f in sorted(files, key=lambda f: -int(re.search(r"-w(\d+)-", f.name).group(1))):
        w, variant = re.match(r"perf(?:diag|-stress)-w(\d+)-(.+)\.json", f.name).groups()
        variant = {"gpu": "default (--check gpu)", "cpu": "--check cpu"}.get(variant, variant)
        r = load(out, f.name)
        if r is None or "stress" not in r:
            print(f"| {w} | {variant} | no report | | | |")
            ok = False
            continue
        g = summary(r)
        print(f"| {w} | {variant} | {g['rate']:.0f} ({g['verdict']}) | {g['core_ms']:.3f} | {g['bound']} | {g['phases']} |")
    print()
    print(marginal_costs(out))
    print()
    print(host_cpu_by_phase(out))
    steps = defaultdict(lambda: [0, 0.0, 0.0])
    try:
        for line in (out / "perfdiag-trace.err").read_text().splitlines():
            m = TRACE.match(line)
            if m:
                st = steps[m.group(2)]
                st[0] += 1
                st[1] += float(m.group(3))
                st[2] += float(m.group(4))
    except OSError:
        pass
    print()
    print("each call step alone (DCP_TRACE_STEPS=0, world 4, every step synchronised):")
    print("| step | times | host call, us (mean) | GPU completion after it, us (mean) |")
    print("|---|---|---|---|")
    for name, (n, host, done) in sorted(steps.items(), key=lambda kv: -kv[1][2]):
        print(f"| {name} | {n} | {1e3 * host / n:.1f} | {1e3 * done / n:.1f} |")
    try:
        print()
        print("\n".join((out / "perfdiag-nsys.txt").read_text().splitlines()[:60]))
    except OSError:
        pass
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--diag":
        sys.exit(diag(sys.argv[2] if len(sys.argv) > 2 else "/tmp/out"))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/out"))
