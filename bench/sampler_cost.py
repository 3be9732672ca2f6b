#!/usr/bin/env python3
"""What iolab's machine-wide sampler costs (issue 14): it reads every thread of the machine from
/proc once a second to name the thread that was the wall.

Two measurements, each printed with its command, target, figures and ratio:

1. The sampler's own CPU on a machine with many threads. A helper process holds --threads
   sleeping threads (default 1,000) for the whole measurement; `iolab run --engine null` runs
   --runtime seconds at the default 1 s interval, and its JSON gives `machine.sampler_cpu_s`
   (the sampling thread's CPU, from CLOCK_THREAD_CPUTIME_ID around every read) and
   `machine.threads_sampled`. Goal: under 1% of one core.
2. Closed-loop CPU per I/O on a loop device with direct I/O over tmpfs (root; made and removed
   here), iolab with the sampler and without it (IOLAB_NO_MACHINE_SAMPLER=1), alternating,
   --repeat pairs, and fio's io_uring on the same device in the same run for scale. Goal: with
   and without differ by no more than the run-to-run spread.

python3 bench/sampler_cost.py [--threads 1000] [--runtime 10] [--repeat 3] [--iolab PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scratch_devices import ScratchDevices, Unavailable  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
HOLDER = """
import sys, threading, time
n = int(sys.argv[1])
stop = threading.Event()
for _ in range(n):
    threading.Thread(target=stop.wait, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def say(text=""):
    print(text, flush=True)


def run_json(cmd, env=None):
    say(f"  $ {' '.join(cmd)}")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout)


def sampler_on_many_threads(iolab, threads, runtime):
    say(f"1. the sampler's own CPU with {threads} extra threads on the machine")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(threads)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout.readline().strip() != "ready":
            raise SystemExit("the thread holder did not start")
        report = run_json([iolab, "run", "--engine", "null", "--runtime", f"{runtime}s", "--ramp", "0",
                           "--json", "-q", "--no-store"])
    finally:
        holder.stdin.close()
        holder.wait()
    machine = report["jobs"][0]["machine"]
    pct = machine["sampler_cpu_s"] / machine["window_s"] * 100.0
    say(f"   threads sampled: {machine['threads_sampled']}; window {machine['window_s']:.1f} s; "
        f"sampler CPU {machine['sampler_cpu_s'] * 1000:.1f} ms = {pct:.3f}% of one core "
        f"(goal < 1%: {'met' if pct < 1.0 else 'NOT met'})")
    say(f"   per sample and thread: {machine['sampler_cpu_s'] / (machine['window_s'] + 1) / machine['threads_sampled'] * 1e6:.2f} us")
    return pct


def cpu_per_io(report):
    job = report["jobs"][0]
    return job["cpu"]["us_per_io"], job["total"]["iops"]


def fio_cpu_per_io(device, runtime):
    cmd = ["fio", "--name=r", f"--filename={device}", "--rw=randread", "--bs=4k", "--iodepth=32",
           "--ioengine=io_uring", "--direct=1", f"--runtime={runtime}", "--time_based",
           "--output-format=json", "--size=1g"]
    say(f"  $ {' '.join(cmd)}")
    start = os.times()
    done = subprocess.run(cmd, capture_output=True, text=True)
    end = os.times()
    if done.returncode != 0:
        return None
    job = json.loads(done.stdout)["jobs"][0]["read"]
    ios = job["total_ios"]
    cpu_s = (end.children_user - start.children_user) + (end.children_system - start.children_system)
    return cpu_s / ios * 1e6 if ios else None, job["iops"]


def loop_with_and_without(iolab, runtime, repeat):
    say("2. closed-loop CPU per I/O on a loop device (direct I/O over tmpfs), with and without the sampler")
    devices = ScratchDevices(say)
    try:
        device, _, notes = devices.loop(1 << 30)
    except Unavailable as why:
        say(f"   skipped: {why}")
        return
    for note in notes:
        say(f"   {note}")
    cmd = [iolab, "run", "--target", str(device), "--qd", "32", "--runtime", f"{runtime}s", "--ramp", "1s",
           "--json", "-q", "--no-store"]
    with_s, without_s = [], []
    for _ in range(repeat):
        with_s.append(cpu_per_io(run_json(cmd)))
        without_s.append(cpu_per_io(run_json(cmd, env={**os.environ, "IOLAB_NO_MACHINE_SAMPLER": "1"})))
    fio = fio_cpu_per_io(device, runtime) if subprocess.run(["which", "fio"], capture_output=True).returncode == 0 else None
    devices.remove_all()
    med = lambda pairs: statistics.median(p[0] for p in pairs)  # noqa: E731
    spread = lambda pairs: max(p[0] for p in pairs) - min(p[0] for p in pairs)  # noqa: E731
    say(f"   target {device}, 4 KiB random read, QD 32, {runtime} s per run, {repeat} alternating pairs")
    say(f"   with the sampler:    {med(with_s):.3f} us CPU per I/O (runs {', '.join(f'{p[0]:.3f}' for p in with_s)}), "
        f"{statistics.median(p[1] for p in with_s):,.0f} IOPS")
    say(f"   without the sampler: {med(without_s):.3f} us CPU per I/O (runs {', '.join(f'{p[0]:.3f}' for p in without_s)}), "
        f"{statistics.median(p[1] for p in without_s):,.0f} IOPS")
    ratio = med(with_s) / med(without_s)
    noise = max(spread(with_s), spread(without_s)) / med(without_s)
    say(f"   ratio with/without: {ratio:.3f} (run-to-run spread {noise * 100:.1f}%): "
        f"{'within noise' if abs(ratio - 1) <= max(noise, 0.01) else 'BEYOND noise'}")
    if fio:
        say(f"   fio io_uring on the same device: {fio[0]:.3f} us CPU per I/O, {fio[1]:,.0f} IOPS; "
            f"iolab with the sampler / fio: {med(with_s) / fio[0]:.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--runtime", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--iolab", default=str(REPO / "target/release/iolab"))
    args = parser.parse_args()
    sampler_on_many_threads(args.iolab, args.threads, args.runtime)
    loop_with_and_without(args.iolab, args.runtime, args.repeat)


if __name__ == "__main__":
    main()
