"""Pairs of runs: alternating which tool goes first, resting for a quiet machine before each run,
and, in the speed scenarios, more pairs while a goal's figures are noisy."""

import json
import os
import time
from pathlib import Path

from .children import ToolFailed, machine_busy_s
from .noise import METRICS, meets, spread
from .report import say
from .units import median, range_text, ratio


def wait_for_quiet(args):
    """Rests --pause seconds, then, if the machine was busy during the rest (another user's build
    or tests on a 2-CPU VM), waits for a quiet second, up to --quiet-wait seconds."""
    limit = args.busy_limit * os.cpu_count()
    busy0 = machine_busy_s()
    time.sleep(args.pause)
    busy = (machine_busy_s() - busy0) / args.pause if args.pause else 0.0
    waited = 0
    while busy > limit and waited < args.quiet_wait:
        busy0 = machine_busy_s()
        time.sleep(1)
        waited += 1
        busy = machine_busy_s() - busy0
    if waited:
        state = "quiet" if busy <= limit else f"still busy ({busy:.2f} CPUs)"
        say(f"  (machine busy before this run: waited {waited} s; now {state})")


def save_raw(args, name, text):
    """With --save-raw DIR, writes one run's output there."""
    if args.save_raw:
        raw_dir = Path(args.save_raw)
        raw_dir.mkdir(parents=True, exist_ok=True)
        (raw_dir / name).write_text(text)


def run_pair(session, label, i, iolab_c, fio_c):
    """Pair number i (from 0): iolab first when i is even. Returns (iolab Result, fio Result)."""
    args = session.args
    order = ["iolab", "fio"] if i % 2 == 0 else ["fio", "iolab"]
    got = {}
    for n, tool in enumerate(order, 1):
        if args.pause:
            wait_for_quiet(args)
        if tool == "iolab":
            got[tool] = session.runner.iolab(iolab_c, n)
        else:
            got[tool] = session.runner.fio(fio_c, n)
        save_raw(args, f"{label}.{i + 1}.{tool}.json", json.dumps(got[tool].raw, indent=1))
    return got["iolab"], got["fio"]


def run_pairs(session, label, iolab_c, fio_c):
    """Runs the pair --repeat times, alternating which tool goes first."""
    return [run_pair(session, label, i, iolab_c, fio_c) for i in range(session.args.repeat)]


def run_ref(session, label, i, ref):
    """One t/io_uring run after pair i; on failure, says why and drops the limit for the block
    (the comparison itself goes on)."""
    args = session.args
    if args.pause:
        wait_for_quiet(args)
    try:
        r = session.runner.t_io_uring(ref.cmd, 3, args.runtime)
    except ToolFailed as e:
        say(f"  !! the limit's run failed (the comparison goes on without it): {e}")
        ref.unavailable, ref.cmd = "t/io_uring failed (see above)", None
        return None
    save_raw(args, f"{label}.{i + 1}.t_io_uring.txt", r.raw["stdout"])
    return r


def per_tool(pairs, attr):
    """One figure of every pair: ([iolab's], [fio's])."""
    return [getattr(a, attr) for a, _ in pairs], [getattr(b, attr) for _, b in pairs]


def disturbed_runs(args, pairs):
    """Runs during which the rest of the machine used clearly more CPU than in the block's other
    runs (by a tenth of the machine over the run): another user's job, most likely. Returns
    {(pair index, tool): (other CPU s, median other CPU s)}."""
    others = [r.other_cpu_s for p in pairs for r in p if r.other_cpu_s is not None]
    if len(others) < 3:
        return {}
    typical = median(others)
    margin = 0.1 * args.runtime * os.cpu_count()
    return {(k, r.tool): (r.other_cpu_s, typical) for k, p in enumerate(pairs) for r in p
            if r.other_cpu_s is not None and r.other_cpu_s > typical + margin}


def noisy_reason(args, pairs, goals):
    """Why the goal figures of these pairs are not settled yet, or None: a run was disturbed by
    other work on the machine, a goal's per-pair ratios fall on both sides of its limit, or
    either tool's figure spreads (noise.spread) by more than --noisy. Only decides whether to
    run one more pair; the verdicts are the noise rule's (noise.goal_verdict)."""
    if len(pairs) < 2:
        return None
    bad = disturbed_runs(args, pairs)
    if bad:
        (k, tool), (other, typical) = next(iter(bad.items()))
        return (f"{len(bad)} run(s) disturbed, e.g. pair {k + 1} {tool}: the rest of the machine used "
                f"{other:.2f} CPU s (typical here {typical:.2f})")
    for g in goals:
        m = METRICS[g.metric]
        pr = [ratio(getattr(a, m.attr), getattr(b, m.attr)) for a, b in pairs]
        met = [meets(x, g.limit, m.higher_is_better) for x in pr if x is not None]
        if any(met) and not all(met):
            return f"{m.name} ratio per pair {range_text(pr)} on both sides of {g.limit:.2f}x"
        for idx, tool in ((0, "iolab"), (1, "fio")):
            s = spread([getattr(p[idx], m.attr) for p in pairs])
            if s is not None and s > args.noisy:
                return f"{tool} {m.name} varies {s * 100:.1f}% run to run (> {args.noisy * 100:.0f}%)"
    return None
