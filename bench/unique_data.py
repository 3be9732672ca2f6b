#!/usr/bin/env python3
"""What unique write data costs (issue 15): every 4 KiB block iolab writes is stamped with its writer,
the write's number and its offset, so no two blocks of a run are equal. This measures the stamp
against the old constant buffers (the same bytes from a slot on every write), which
`IOLAB_UNSTAMPED_WRITES=1` restores for this benchmark only.

On a loop device with direct I/O over tmpfs and on a zram device (root; both made, filled with
random data and removed here): 4 KiB random writes, QD 32, one worker, iolab stamped and
unstamped in alternating pairs (--repeat), then fio's io_uring on the same device in the same
run for scale. Prints write IOPS and CPU per I/O of each, the ratio stamped/unstamped, and the
goal: the stamp costs at most 3% of write IOPS and of CPU per I/O, judged with the noise rule
of `iolab compare` (bench/vsfio/noise.py).

With --content (issue 15 item 2), on the loop device instead: the default data against
--compress-pct 50 and --dedupe-pct 50, in alternating order, with each one's IOPS, CPU per I/O,
the ratio to the default, and the dedupe and compression ratios iolab measured on its sample.

sudo python3 bench/unique_data.py [--runtime 5] [--repeat 5] [--warmup 20] [--iolab PATH] [--content]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_runs import show_sides  # noqa: E402
from scratch_devices import ScratchDevices, Unavailable  # noqa: E402
from vsfio.noise import goal_verdict  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COST_LIMIT = 0.03  # the stamp may cost at most 3% of IOPS and of CPU per I/O


def say(text=""):
    print(text, flush=True)


def iolab_once(iolab, device, runtime, stamped, extra=()):
    cmd = [iolab, "run", "--target", str(device), "--rw", "randwrite", "--bs", "4k", "--qd", "32",
           "--runtime", f"{runtime}s", "--ramp", "1s", "--json", "-q", "--no-store", "--allow-destroy", *extra]
    env = dict(os.environ)
    env.pop("IOLAB_UNSTAMPED_WRITES", None)
    if not stamped:
        env["IOLAB_UNSTAMPED_WRITES"] = "1"
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    job = json.loads(done.stdout)["jobs"][0]
    if extra:
        data = job["groups"][0].get("data") or {}
        return cmd, job["total"]["iops"], job["cpu"]["us_per_io"], data
    return cmd, job["total"]["iops"], job["cpu"]["us_per_io"]


CONTENTS = (("default (unique)", ()), ("--compress-pct 50", ("--compress-pct", "50")),
            ("--dedupe-pct 50", ("--dedupe-pct", "50")))


def measure_content(iolab, device, runtime, repeat):
    """The default data against --compress-pct 50 and --dedupe-pct 50, rotating the order."""
    say(f"\ncontent: {device}, 4 KiB random write, QD 32, 1 worker, {runtime} s after 1 s ramp, "
        f"{repeat} rounds of the three, order rotated")
    runs = {name: [] for name, _ in CONTENTS}
    for i in range(repeat):
        order = CONTENTS[i % 3:] + CONTENTS[:i % 3]
        for name, extra in order:
            cmd, iops, cpu, data = iolab_once(iolab, device, runtime, True, extra or ("--dedupe-pct", "0"))
            if i == 0:
                say(f"  $ {' '.join(cmd)}")
            runs[name].append((iops, cpu, data.get("dedupe_ratio"), data.get("compression_ratio")))
    base_iops = statistics.median(r[0] for r in runs[CONTENTS[0][0]])
    base_cpu = statistics.median(r[1] for r in runs[CONTENTS[0][0]])
    for name, _ in CONTENTS:
        iops = [r[0] for r in runs[name]]
        cpu = [r[1] for r in runs[name]]
        data = runs[name][-1]
        say(f"  {name:<18} IOPS {statistics.median(iops):>10,.0f} ({statistics.median(iops) / base_iops:.3f}x; runs "
            f"{', '.join(f'{v:,.0f}' for v in iops)}); CPU per I/O {statistics.median(cpu):.3f} us "
            f"({statistics.median(cpu) / base_cpu:.3f}x); measured dedupe {data[2]:.2f}:1, compression {data[3]:.2f}:1")


def fio_once(device, runtime):
    cmd = ["fio", "--name=w", f"--filename={device}", "--rw=randwrite", "--bs=4k", "--iodepth=32",
           "--ioengine=io_uring", "--direct=1", f"--runtime={runtime}", "--time_based", "--ramp_time=1",
           "--output-format=json", "--size=1g"]
    start = os.times()
    done = subprocess.run(cmd, capture_output=True, text=True)
    end = os.times()
    if done.returncode != 0:
        return cmd, None
    job = json.loads(done.stdout)["jobs"][0]["write"]
    cpu_s = (end.children_user - start.children_user) + (end.children_system - start.children_system)
    # fio's CPU covers its ramp too; its I/O count does not: per I/O over the whole run.
    ios = job["total_ios"] * (runtime + 1) / runtime
    return cmd, (job["iops"], cpu_s / ios * 1e6 if ios else None)


def measure(iolab, name, device, runtime, repeat, warmup):
    say(f"\n{name}: {device}, 4 KiB random write, QD 32, 1 worker, {runtime} s after 1 s ramp, "
        f"{repeat} alternating pairs after {warmup} s of the same writes, not counted")
    # A device just filled drifts for a while (zram: 129k to 168k IOPS over its first three
    # rounds of 3 s runs), which the pairs' order would turn into a difference.
    if warmup:
        iolab_once(iolab, device, warmup, True)
    runs = {True: [], False: []}
    shown = False
    for i in range(repeat):
        for stamped in ((True, False) if i % 2 == 0 else (False, True)):
            cmd, iops, cpu = iolab_once(iolab, device, runtime, stamped)
            if not shown:
                say(f"  $ {' '.join(cmd)}   (unstamped: IOLAB_UNSTAMPED_WRITES=1)")
                shown = True
            runs[stamped].append((iops, cpu))
    (iops_s, iops_u), (cpu_s, cpu_u) = show_sides(say, runs, "stamped (unique data)", "unstamped (constant buffers)")
    iops_ratio = statistics.median(iops_s) / statistics.median(iops_u)
    cpu_ratio = statistics.median(cpu_s) / statistics.median(cpu_u)
    iops_goal = goal_verdict(iops_s, iops_u, 1 - COST_LIMIT, True).text
    cpu_goal = goal_verdict(cpu_s, cpu_u, 1 + COST_LIMIT, False).text
    say(f"  stamped/unstamped: IOPS {iops_ratio:.3f}x (goal >= {1 - COST_LIMIT:.2f}x: {iops_goal}); "
        f"CPU per I/O {cpu_ratio:.3f}x (goal <= {1 + COST_LIMIT:.2f}x: {cpu_goal})")
    if subprocess.run(["which", "fio"], capture_output=True).returncode == 0:
        cmd, fio = fio_once(device, runtime)
        say(f"  $ {' '.join(cmd)}")
        if fio and fio[1]:
            say(f"  fio io_uring (its default buffers):  IOPS {fio[0]:>10,.0f}; CPU per I/O {fio[1]:.3f} us; "
                f"iolab stamped / fio CPU per I/O {statistics.median(cpu_s) / fio[1]:.2f}x")
        else:
            say("  fio failed on this device")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=1 << 30, help="bytes of each scratch device")
    parser.add_argument("--warmup", type=int, default=20, help="seconds of writes before the pairs, not counted")
    parser.add_argument("--iolab", default=str(REPO / "target/release/iolab"))
    parser.add_argument("--content", action="store_true",
                        help="compare --compress-pct 50 and --dedupe-pct 50 with the default on the loop device")
    args = parser.parse_args()
    say(f"unique_data: iolab {args.iolab}; runtime {args.runtime} s, repeat {args.repeat}")
    devices = ScratchDevices(say)
    try:
        if args.content:
            device, _, notes = devices.loop(args.size)
            for note in notes:
                say(f"  {note}")
            measure_content(args.iolab, device, args.runtime, args.repeat)
            return
        for name, make in (("loop", devices.loop), ("zram", devices.zram)):
            try:
                device, _, notes = make(args.size)
            except Unavailable as why:
                say(f"\n{name}: skipped: {why}")
                continue
            for note in notes:
                say(f"  {note}")
            measure(args.iolab, name, device, args.runtime, args.repeat, args.warmup)
    finally:
        devices.remove_all()


if __name__ == "__main__":
    main()
