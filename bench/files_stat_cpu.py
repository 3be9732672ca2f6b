#!/usr/bin/env python3
"""CPU per stat: iolab's io_uring stat against bench/files_ref.c's bare fstatat loop, from
`perf record -e cpu-clock` samples of every thread of each process (io-wq workers included).

On a shared machine a rate (stats/s) moves with the other loads; the CPU a stat costs moves
much less, and on 2 busy cores it is what bounds the rate. Each sample is 100 us of CPU; the
stat window is from the first to the last sample whose call chain holds the stat (io_statx
for the ring, vfs_fstatat for the loop). Prints the CPU per stat, where the ring's goes
(the statx itself in the io-wq worker, the worker's hand-off, the submitter's sleep and
wake-up, the submit), and the loop's CPU over iolab's (the rate ratio when CPU-bound).

    cargo build --release -p iolab
    python3 bench/files_stat_cpu.py DIR [--threads 2] [--files 100000] [--phases 5]
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERIOD_NS = 100_000
STAGES = [
    ("statx in the io-wq worker", ("io_statx",)),
    ("fstatat", ("vfs_fstatat", "__do_sys_newfstatat")),
    ("submit (prep, path copy, queue to io-wq)", ("io_submit_sqes",)),
    ("submitter asleep/awake (wait, schedule)", ("io_cqring_wait", "schedule")),
    ("completions run as task work", ("io_run_local_work", "task_work_run", "tctx_task_work")),
    ("io-wq worker hand-off and idling", ("io_wq_worker",)),
]


def samples(cmd):
    data = tempfile.mktemp(prefix="files_stat_cpu.", suffix=".data")
    try:
        out = subprocess.run(["perf", "record", "-e", "cpu-clock", "-c", str(PERIOD_NS), "-g", "-o", data, "--", *cmd],
                             check=True, capture_output=True, text=True).stdout
        text = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym"],
                              check=True, capture_output=True, text=True).stdout
    finally:
        if os.path.exists(data):
            os.unlink(data)
    found, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                found.append(cur)
            cur = None
        elif not line[0].isspace():
            m = re.match(r"\s*(\S.*?)\s+\d+\s+([\d.]+):", line)
            cur = (m.group(1), float(m.group(2)), []) if m else None
        elif cur:
            parts = line.split(None, 1)
            cur[2].append(parts[-1].split("+0x")[0])
    if cur:
        found.append(cur)
    return found, out


def window(found, key):
    ts = [s[1] for s in found if any(key in f for f in s[2])]
    return [s for s in found if ts and min(ts) <= s[1] <= max(ts)]


def stage(frames):
    for name, keys in STAGES:
        if any(k in f for f in frames for k in keys):
            return name
    return "other (user space, the journal sampler, ...)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="where to work (tmpfs, ext4, ...)")
    ap.add_argument("--iolab", default=os.path.join(ROOT, "target", "release", "iolab"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--files", type=int, default=100_000, help="files per thread")
    ap.add_argument("--phases", type=int, default=5, help="stat phases in iolab's run")
    args = ap.parse_args()
    ref = os.path.join(ROOT, "target", "bench-scratch", "files_ref")
    os.makedirs(os.path.dirname(ref), exist_ok=True)
    subprocess.run(["cc", "-O2", "-pthread", "-o", ref, os.path.join(ROOT, "bench", "files_ref.c")], check=True)
    d = tempfile.mkdtemp(prefix="ref.", dir=args.dir)
    try:
        cmd = [ref, d, str(args.threads), str(args.files)]
        found, out = samples(cmd)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    stats = args.threads * args.files
    c_us = len(window(found, "vfs_fstatat")) * PERIOD_NS / 1e3 / stats
    print("command:", " ".join(cmd))
    print("C loop: %.2f us CPU per stat (%s)" % (c_us, " ".join(out.split("\n")[1:2])))
    d = os.path.join(args.dir, "iolab-stat-cpu.%d" % os.getpid())
    phases = ",".join(["mkdir", "create"] + ["stat"] * args.phases + ["unlink", "rmdir"])
    cmd = [args.iolab, "files", d, "--files", str(stats), "--threads", str(args.threads), "--depth", "0",
           "--phases", phases, "--engine", "io_uring", "--json", "--no-store"]
    found, out = samples(cmd)
    win = window(found, "io_statx")
    ring_us = len(win) * PERIOD_NS / 1e3 / (stats * args.phases)
    rates = [int(p["ops_per_s"]) for p in json.loads(out)["phases"] if p["phase"] == "stat"]
    print("command:", " ".join(cmd))
    print("iolab io_uring: %.2f us CPU per stat (stat phases: %s stats/s)" % (ring_us, rates))
    for name, n in collections.Counter(stage(s[2]) for s in win).most_common():
        print("  %5.1f%%  %s" % (100 * n / len(win), name))
    print("C loop's CPU per stat over iolab's: %.2fx (goal for the rate: >= 0.7x); load %.1f"
          % (c_us / ring_us, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
