#!/usr/bin/env python3
"""Resident memory of iolab and fio under a wide, long load, side by side on one target.

Issue 3's goal: iolab's resident memory stays under 64 MiB for 16 workers x QD 512 over
10 minutes with per-second series. This runs that workload (4 KiB random read, O_DIRECT) with
iolab, then with fio (`--thread`, so fio is one process too), on a loop device over a tmpfs
file (root; created and removed here) or on --target, samples each tool's VmRSS every
--sample seconds from /proc, and prints the peak (VmHWM) of each and the ratio.

    sudo python3 bench/memory.py                      # 600 s each: 20 minutes
    sudo python3 bench/memory.py --runtime 60         # a quick look
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_MIB = 64


def sh(cmd):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True).stdout.strip()


def status_kib(pid, field):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def watch(cmd, sample_s):
    """Runs `cmd`, sampling its VmRSS; returns (peak VmHWM KiB, max sampled VmRSS KiB, samples, rc)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    hwm = rss_max = 0
    samples = []
    start = time.monotonic()
    while proc.poll() is None:
        rss = status_kib(proc.pid, "VmRSS")
        hwm = max(hwm, status_kib(proc.pid, "VmHWM") or 0)
        if rss is not None:
            rss_max = max(rss_max, rss)
            samples.append((time.monotonic() - start, rss))
        time.sleep(sample_s)
    err = proc.stderr.read()
    if proc.returncode != 0:
        print(f"  {cmd[0]} failed ({proc.returncode}): {err.strip()[:500]}", file=sys.stderr)
    return hwm, rss_max, samples, proc.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runtime", type=int, default=600, help="seconds per tool (default 600)")
    p.add_argument("--fio-runtime", type=int, help="seconds for fio (default: --runtime); its peak comes early")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--qd", type=int, default=512)
    p.add_argument("--sample", type=float, default=2.0, help="seconds between RSS samples")
    p.add_argument("--target", help="a block device or file to read (default: a loop device over tmpfs)")
    p.add_argument("--iolab", default=str(ROOT / "target/release/iolab"))
    p.add_argument("--fio", default="fio")
    args = p.parse_args()

    created = []
    target = args.target
    try:
        if target is None:
            if os.geteuid() != 0:
                sys.exit("needs root to create a loop device (or give --target)")
            image = f"/dev/shm/iolab-memory-{os.getpid()}.img"
            sh(f"dd if=/dev/urandom of={image} bs=1M count=1024 status=none")
            created.append(("file", image))
            target = sh(f"losetup --direct-io=on -f --show {image}")
            created.append(("loop", target))
        iolab = [args.iolab, "run", "--target", target, "--workers", str(args.workers), "--qd", str(args.qd),
                 "--runtime", f"{args.runtime}s", "--ramp", "0s", "--json", "-q", "--output", "/dev/null"]
        fio = [args.fio, "--name=memory", f"--filename={target}", "--rw=randread", "--bs=4k", "--direct=1",
               "--ioengine=io_uring", f"--iodepth={args.qd}", f"--numjobs={args.workers}", "--thread",
               "--group_reporting", "--time_based", f"--runtime={args.fio_runtime or args.runtime}", "--output-format=json",
               "--output=/dev/null"]
        print(f"target: {target}; {args.workers} workers x QD {args.qd}, 4 KiB random read, "
              f"iolab {args.runtime} s, fio {args.fio_runtime or args.runtime} s")
        rows = []
        for name, cmd in (("iolab", iolab), ("fio", fio)):
            print(f"$ {' '.join(cmd)}", flush=True)
            hwm, rss_max, samples, rc = watch(cmd, args.sample)
            first = samples[len(samples) // 10][1] if samples else 0
            rows.append((name, hwm, rss_max, first, rc))
        print()
        print(f"  {'tool':<8}{'peak RSS (VmHWM)':>18}{'max sampled':>14}{'at 10% of run':>15}  exit")
        for name, hwm, rss_max, first, rc in rows:
            print(f"  {name:<8}{hwm / 1024:>15.1f}MiB{rss_max / 1024:>11.1f}MiB{first / 1024:>12.1f}MiB  {rc}")
        iolab_hwm, fio_hwm = rows[0][1], rows[1][1]
        if fio_hwm:
            print(f"\n  ratio iolab/fio peak RSS: {iolab_hwm / fio_hwm:.2f}x")
        verdict = "met" if 0 < iolab_hwm / 1024 < GOAL_MIB else "NOT met"
        print(f"  goal: iolab under {GOAL_MIB} MiB: {verdict} ({iolab_hwm / 1024:.1f} MiB); "
              f"growth over the run: {(rows[0][2] - rows[0][3]) / 1024:+.1f} MiB after the first 10%")
    finally:
        for kind, what in reversed(created):
            if kind == "loop":
                subprocess.run(["losetup", "-d", what])
            else:
                Path(what).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
