#!/usr/bin/env python3
"""What skewed access costs (issue 17): CPU per I/O of each --distribution against uniform's.

Goal (docs/distributions.md): every distribution within 3% of uniform's CPU per I/O on the null
engine, judged with the noise rule of `iolab compare` (bench/vsfio/noise.py). The same runs on a
loop device with direct I/O over tmpfs (root; made, filled with random data and removed here)
show what the sampler weighs next to real I/O, and fio with the same distributions on the same
device, in the same invocation, is the reference.

4 KiB random read, QD 32, one worker; the distributions run in rotating order, --repeat rounds,
so drift on a busy machine spreads over all of them. Each line gives the median and every run.

With --baseline PATH (another iolab build, e.g. one from before skew existed), uniform also runs
with that binary in the same rotation: what the per-I/O bookkeeping of this build (the blocks
touched) costs uniform itself.

With --counts K, the null engine's runs are also counted under valgrind's cachegrind, K rounds
(instructions, L1 data misses and mispredicted branches per I/O, each law against uniform;
bench/cachegrind_counts.py): on a shared virtual machine, where 2 s timed runs spread by tens of
per cent, these tell a few per cent apart.

sudo python3 bench/distributions.py [--runtime 5] [--repeat 3] [--iolab PATH] [--baseline PATH] [--no-fio] [--counts K]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cachegrind_counts  # noqa: E402
from scratch_devices import ScratchDevices, Unavailable  # noqa: E402
from vsfio.noise import goal_verdict  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COST_LIMIT = 0.03  # a distribution may cost at most 3% more CPU per I/O than uniform

# iolab's spelling, and fio's for the same law (None: fio has no equal; its normal differs).
DISTRIBUTIONS = [
    ("uniform", "random"),
    ("zipf:1.2", "zipf:1.2"),
    ("zipf:0.99", "zipf:0.99"),
    ("pareto:0.2", "pareto:0.2"),
    ("normal:10", None),
    ("zoned:80/20,20/80", "zoned:80/20:20/80"),
]


def say(text=""):
    print(text, flush=True)


BASELINE = "uniform (baseline)"


def iolab_once(iolab, engine, target, distribution, runtime, baseline):
    if distribution == BASELINE:
        iolab, skew = baseline, []
    else:
        skew = ["--distribution", distribution]
    cmd = [iolab, "run", "--engine", engine, "--target", str(target), "--rw", "randread", "--bs", "4k",
           "--qd", "32", *skew, "--runtime", f"{runtime}s", "--ramp", "1s", "--json", "-q", "--no-store"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    job = json.loads(done.stdout)["jobs"][0]
    blocks = job["groups"][0].get("blocks") or {}
    return cmd, job["total"]["iops"], job["cpu"]["us_per_io"], blocks.get("touched_pct")


def fio_once(device, distribution, runtime):
    cmd = ["fio", "--name=r", f"--filename={device}", "--rw=randread", "--bs=4k", "--iodepth=32",
           "--ioengine=io_uring", "--direct=1", f"--runtime={runtime}", "--time_based", "--ramp_time=1",
           f"--random_distribution={distribution}", "--norandommap", "--output-format=json"]
    start = os.times()
    done = subprocess.run(cmd, capture_output=True, text=True)
    end = os.times()
    if done.returncode != 0:
        return cmd, None
    job = json.loads(done.stdout)["jobs"][0]["read"]
    cpu_s = (end.children_user - start.children_user) + (end.children_system - start.children_system)
    # fio's CPU covers its ramp (and its zipf set-up) too; its I/O count does not.
    ios = job["total_ios"] * (runtime + 1) / runtime
    return cmd, (job["iops"], cpu_s / ios * 1e6 if ios else None)


def measure(iolab, engine, target, runtime, repeat, baseline):
    say(f"\n{engine} engine on {target}: 4 KiB random read, QD 32, 1 worker, {runtime} s after 1 s ramp, "
        f"{repeat} rounds in rotating order")
    names = [name for name, _ in DISTRIBUTIONS] + ([BASELINE] if baseline else [])
    runs = {name: [] for name in names}
    shown = False
    for i in range(repeat):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            cmd, iops, cpu, touched = iolab_once(iolab, engine, target, name, runtime, baseline)
            if not shown:
                say(f"  $ {' '.join(cmd)}   (each distribution in turn)")
                shown = True
            runs[name].append((iops, cpu, touched))
    base = [r[1] for r in runs["uniform"]]
    if baseline:
        say(f"  ({BASELINE}: {baseline})")
    for name in names:
        iops = [r[0] for r in runs[name]]
        cpu = [r[1] for r in runs[name]]
        touched = runs[name][-1][2]
        ratio = statistics.median(cpu) / statistics.median(base)
        verdict = "" if name == "uniform" else \
            f"; x{ratio:.3f} of uniform (goal <= {1 + COST_LIMIT:.2f}: {goal_verdict(cpu, base, 1 + COST_LIMIT, False).text})"
        say(f"  {name:<18} IOPS {statistics.median(iops):>11,.0f}  CPU/I/O {statistics.median(cpu):.4f} us "
            f"(runs {', '.join(f'{v:.4f}' for v in cpu)}){verdict}"
            + (f"  blocks touched {touched:.1f}%" if touched is not None else ""))
    return runs


def counted(iolab, target, rounds):
    """Each law's null-engine run under cachegrind, `rounds` times in rotating order; medians."""
    def cmd_for(distribution):
        return lambda ios: [iolab, "run", "--engine", "null", "--target", str(target), "--rw", "randread",
                            "--bs", "4k", "--qd", "32", "--distribution", distribution, "--io-limit", f"{ios}ios",
                            "--ramp", "0s", "--runtime", "600s", "-q", "--no-store"]
    names = [name for name, _ in DISTRIBUTIONS]
    say(f"\nnull engine on {target} under cachegrind: per I/O, the difference of runs of "
        f"{cachegrind_counts.FEW_IOS:,} and {cachegrind_counts.MANY_IOS:,} I/Os, {rounds} rounds, medians")
    say(f"  $ valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes {' '.join(cmd_for('LAW')(cachegrind_counts.MANY_IOS))}")
    runs = {name: [] for name in names}
    for i in range(rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            runs[name].append(cachegrind_counts.per_io(cmd_for(name)))
    median = {name: {k: statistics.median(r[k] for r in runs[name]) for k in cachegrind_counts.TOTALS}
              for name in names}
    base = median["uniform"]
    for name in names:
        m = median[name]
        extra = "" if name == "uniform" else (
            f"  over uniform: instructions x{m['instructions'] / base['instructions']:.3f} "
            f"({m['instructions'] - base['instructions']:+.1f}), L1 misses {m['l1_misses'] - base['l1_misses']:+.3f}, "
            f"mispredicts {m['mispredicts'] - base['mispredicts']:+.3f}")
        spread = max(r["l1_misses"] for r in runs[name]) - min(r["l1_misses"] for r in runs[name])
        say(f"  {name:<18} instructions {m['instructions']:7.1f}  L1 misses {m['l1_misses']:.3f} "
            f"(spread {spread:.3f})  mispredicts {m['mispredicts']:.3f}{extra}")


def fio_reference(device, runtime, iolab_runs):
    if subprocess.run(["which", "fio"], capture_output=True).returncode != 0:
        say("\nfio: not installed, no reference")
        return
    say(f"\nfio 3.x io_uring on {device}, the same workload and distributions (--norandommap), one run each")
    fio_uniform = None
    for name, fio_name in DISTRIBUTIONS:
        if fio_name is None:
            say(f"  {name:<18} fio has no equal (its normal is the mean of 12 uniform draws, hashed)")
            continue
        cmd, fio = fio_once(device, fio_name, runtime)
        if fio is None or not fio[1]:
            say(f"  {name:<18} fio failed: $ {' '.join(cmd)}")
            continue
        if fio_uniform is None:
            fio_uniform = fio[1]
            say(f"  $ {' '.join(cmd)}   (each distribution in turn)")
        iolab_cpu = statistics.median(r[1] for r in iolab_runs[name])
        say(f"  {name:<18} IOPS {fio[0]:>11,.0f}  CPU/I/O {fio[1]:.4f} us; x{fio[1] / fio_uniform:.3f} of fio's "
            f"uniform; iolab/fio CPU per I/O {iolab_cpu / fio[1]:.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=1 << 30, help="bytes of the loop device")
    parser.add_argument("--iolab", default=str(REPO / "target/release/iolab"))
    parser.add_argument("--baseline", help="another iolab binary to run uniform with, for comparison")
    parser.add_argument("--no-fio", action="store_true")
    parser.add_argument("--counts", type=int, default=0, metavar="K",
                        help="also count the null engine's runs under cachegrind, K rounds")
    args = parser.parse_args()
    if args.counts and not cachegrind_counts.available():
        raise SystemExit("--counts needs valgrind (apt-get install valgrind)")
    say(f"distributions: iolab {args.iolab}; runtime {args.runtime} s, repeat {args.repeat}")
    devices = ScratchDevices(say)
    try:
        try:
            device, _, notes = devices.loop(args.size)
        except Unavailable as why:
            raise SystemExit(f"the loop device: {why}")
        for note in notes:
            say(f"  {note}")
        # The null engine opens the device for its size (the region the samplers cover) and
        # reads nothing.
        measure(args.iolab, "null", device, args.runtime, args.repeat, args.baseline)
        if args.counts:
            counted(args.iolab, device, args.counts)
        loop_runs = measure(args.iolab, "uring", device, args.runtime, args.repeat, args.baseline)
        if not args.no_fio:
            fio_reference(device, args.runtime, loop_runs)
    finally:
        devices.remove_all()


if __name__ == "__main__":
    main()
