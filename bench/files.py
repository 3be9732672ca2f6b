#!/usr/bin/env python3
"""iolab files (issue 16) against its limit and against fio, side by side in one run.

1. The limit: bench/files_ref.c (compiled here with cc), a bare loop of openat+close, fstatat
   and unlinkat with no timing, THREADS threads x FILES files each in their own directory.
   iolab does the same tree (`--depth 0`: t0/f0 ...) with every operation timed, on both
   engines, alternating with the loop --repeat times. Goal: iolab's create, stat and delete
   rates at least 0.7x the loop's (medians of the repeats). Where liburing's header is
   installed, bench/files_ring_ref.c too: the same operations as untimed ring entries, 32 in
   flight per thread as iolab keeps them, which shows what the kernel's hand-off of each to an
   io-wq worker leaves of the C loop whoever drives the ring, and iolab's io_uring over it.
2. fio's filecreate / filestat / filedelete engines, 2 jobs each in its own directory, at
   --fio-nrfiles files per job, beside iolab on the same counts (fio's rate falls as nrfiles
   grows; each fio phase is capped at --fio-runtime seconds, which does not change a rate).
3. Peak memory at --memory-files files (goal < 200 MiB): /usr/bin/time -v's maximum RSS.

On tmpfs (a directory in /dev/shm) always; with --ext4 (root) also on ext4 over a loop
device made here from an image in /dev/shm, removed at the end.

    cargo build --release -p iolab
    python3 bench/files.py [--threads 2] [--files 100000] [--repeat 3] [--ext4]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("create", "stat", "unlink")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def build_ref(name, libs=()):
    out_dir = os.path.join(ROOT, "target", "bench-scratch")
    os.makedirs(out_dir, exist_ok=True)
    binary = os.path.join(out_dir, name)
    cmd = ["cc", "-O2", "-pthread", "-o", binary, os.path.join(ROOT, "bench", name + ".c"), *libs]
    print("build:", " ".join(cmd))
    run(cmd)
    return binary


def build_ring_ref():
    """bench/files_ring_ref.c, or None (with why) where liburing's header is missing."""
    if not os.path.exists("/usr/include/liburing.h"):
        print("no ring loop: /usr/include/liburing.h is missing (apt-get install liburing-dev)")
        return None
    return build_ref("files_ring_ref", ["-luring"])


def ref_rates(ref, base, threads, files):
    d = tempfile.mkdtemp(prefix="ref.", dir=base)
    try:
        out = run([ref, d, str(threads), str(files)]).stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def iolab_rates(iolab, base, threads, total, engine, extra=()):
    d = os.path.join(base, "iolab.%d" % os.getpid())
    cmd = [iolab, "files", d, "--files", str(total), "--threads", str(threads), "--depth", "0",
           "--phases", "mkdir,create,stat,unlink,rmdir", "--engine", engine, "--json", "--no-store", *extra]
    out = run(cmd).stdout
    report = json.loads(out)
    return {p["phase"]: p["ops_per_s"] for p in report["phases"]}, report, cmd


def fio_phase(base, engine, nrfiles, runtime):
    cmd = ["fio", "--output-format=json"]
    for j in range(2):
        d = os.path.join(base, "j%d" % j)
        os.makedirs(d, exist_ok=True)
        cmd += ["--name=j%d" % j, "--directory=" + d, "--ioengine=" + engine, "--nrfiles=%d" % nrfiles,
                "--filesize=4k", "--bs=4k", "--openfiles=1", "--fallocate=none", "--runtime=%d" % runtime]
    out = run(cmd).stdout
    report = json.loads(out[out.index("{"):])
    return sum(job["read"]["iops"] + job["write"]["iops"] for job in report["jobs"]), cmd


def fill_missing(base, nrfiles):
    """The files a time-capped filecreate did not make, so filestat and filedelete find all."""
    for j in range(2):
        d = os.path.join(base, "j%d" % j)
        for i in range(nrfiles):
            p = os.path.join(d, "j%d.0.%d" % (j, i))
            if not os.path.exists(p):
                os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))


def fmt(v):
    return "{:>12,.0f}".format(v)


def limit_section(args, ref, ring_ref, base, label):
    print("\n== %s: iolab vs the bare C loop, %d threads x %d files (%d repeats, medians) =="
          % (label, args.threads, args.files, args.repeat))
    rates = {"C loop": [], "iolab sync": [], "iolab io_uring": []}
    if ring_ref:
        rates["C ring loop"] = []
    shown = False
    for _ in range(args.repeat):
        rates["C loop"].append(ref_rates(ref, base, args.threads, args.files))
        if ring_ref:
            rates["C ring loop"].append(ref_rates(ring_ref, base, args.threads, args.files))
        for engine in ("sync", "io_uring"):
            r, _, cmd = iolab_rates(args.iolab, base, args.threads, args.threads * args.files, engine)
            if not shown:
                print("command:", " ".join(cmd))
                shown = True
            rates["iolab " + engine].append(r)
    med = {k: {p: statistics.median(x[p] for x in v) for p in PHASES} for k, v in rates.items()}
    print("%-16s" % "ops/s" + "".join("%13s" % p for p in PHASES))
    for k, v in med.items():
        print("%-16s" % k + "".join(fmt(v[p]) + " " for p in PHASES))
    for engine in ("sync", "io_uring"):
        ratios = [med["iolab " + engine][p] / med["C loop"][p] for p in PHASES]
        verdict = "met" if min(ratios) >= 0.7 else "NOT met"
        print("%-16s" % ("ratio " + engine) + "".join("%12.2fx " % r for r in ratios) + " goal >= 0.7x: " + verdict)
    if ring_ref:
        ring = [med["C ring loop"][p] / med["C loop"][p] for p in PHASES]
        print("%-16s" % "ring loop" + "".join("%12.2fx " % r for r in ring)
              + " what the kernel's io-wq hand-off leaves of the C loop, untimed")
        ours = [med["iolab io_uring"][p] / med["C ring loop"][p] for p in PHASES]
        print("%-16s" % "io_uring/ring" + "".join("%12.2fx " % r for r in ours)
              + " iolab's io_uring over the untimed ring loop at the same depth")


def fio_section(args, base, label):
    print("\n== %s: fio filecreate/filestat/filedelete (2 jobs) vs iolab (2 threads), per nrfiles per job ==" % label)
    print("%-10s %-16s" % ("nrfiles", "tool") + "".join("%13s" % p for p in PHASES))
    for n in args.fio_nrfiles:
        d = tempfile.mkdtemp(prefix="fio.", dir=base)
        try:
            fio = {}
            fio["create"], cmd = fio_phase(d, "filecreate", n, args.fio_runtime)
            if n == args.fio_nrfiles[0]:
                print("command:", " ".join(cmd))
            fill_missing(d, n)
            fio["stat"], _ = fio_phase(d, "filestat", n, args.fio_runtime)
            fio["unlink"], _ = fio_phase(d, "filedelete", n, args.fio_runtime)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        print("%-10s %-16s" % ("{:,}".format(n), "fio") + "".join(fmt(fio[p]) + " " for p in PHASES))
        for engine in ("sync", "io_uring"):
            r, _, _ = iolab_rates(args.iolab, base, 2, 2 * n, engine)
            print("%-10s %-16s" % ("", "iolab " + engine) + "".join(fmt(r[p]) + " " for p in PHASES)
                  + "  (%s)" % " ".join("%.0fx" % (r[p] / fio[p]) for p in PHASES))


def memory_section(args, base, label):
    d = os.path.join(base, "mem.%d" % os.getpid())
    cmd = ["/usr/bin/time", "-v", args.iolab, "files", d, "--files", str(args.memory_files), "--threads",
           str(args.threads), "--phases", "mkdir,create,stat,unlink,rmdir", "--engine", "io_uring", "--json",
           "--no-store"]
    print("\n== %s: peak memory at %s files ==" % (label, "{:,}".format(args.memory_files)))
    print("command:", " ".join(cmd))
    out = run(cmd)
    rss_kib = next(int(line.split(":")[1]) for line in out.stderr.splitlines() if "Maximum resident" in line)
    report = json.loads(out.stdout)
    rates = {p["phase"]: p["ops_per_s"] for p in report["phases"]}
    print("peak RSS %.1f MiB (goal < 200 MiB: %s); rates: %s" % (
        rss_kib / 1024, "met" if rss_kib < 200 * 1024 else "NOT met",
        ", ".join("%s %s/s" % (p, "{:,.0f}".format(rates[p])) for p in PHASES)))


class Ext4:
    def __init__(self, size_mib, inodes):
        self.image = tempfile.mktemp(prefix="iolab-files-bench.", suffix=".img", dir="/dev/shm")
        with open(self.image, "wb") as f:
            f.truncate(size_mib << 20)
        self.lo = run(["losetup", "--direct-io=on", "-f", "--show", self.image]).stdout.strip()
        run(["mkfs.ext4", "-q", "-F", "-N", str(inodes), self.lo])
        self.mount = tempfile.mkdtemp(prefix="iolab-files-ext4.")
        run(["mount", "-t", "ext4", self.lo, self.mount])

    def close(self):
        subprocess.run(["umount", self.mount])
        subprocess.run(["losetup", "-d", self.lo])
        os.rmdir(self.mount)
        os.unlink(self.image)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iolab", default=os.path.join(ROOT, "target", "release", "iolab"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--files", type=int, default=100_000, help="files per thread against the C loop")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fio-nrfiles", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000, 100000])
    ap.add_argument("--fio-runtime", type=int, default=20)
    ap.add_argument("--memory-files", type=int, default=1_000_000)
    ap.add_argument("--skip", default="", help="comma list of limit,fio,memory to leave out")
    ap.add_argument("--ext4", action="store_true", help="also on ext4 over a loop device (root)")
    ap.add_argument("--no-tmpfs", action="store_true", help="only on ext4 (with --ext4)")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    if not os.access(args.iolab, os.X_OK):
        sys.exit("no iolab at %s: cargo build --release -p iolab, or --iolab PATH" % args.iolab)
    ref = build_ref("files_ref")
    ring_ref = build_ring_ref()
    print("iolab:", args.iolab, "| fio:", run(["fio", "--version"]).stdout.strip(), "| cpus:", os.cpu_count())
    places = [] if args.no_tmpfs else [("tmpfs", tempfile.mkdtemp(prefix="iolab-files-bench.", dir="/dev/shm"), None)]
    if args.ext4:
        if os.geteuid() != 0:
            sys.exit("--ext4 needs root (losetup, mkfs.ext4, mount)")
        fs = Ext4(4096, max(args.memory_files, args.threads * args.files) + 100_000)
        places.append(("ext4 on loop", fs.mount, fs))
    try:
        for label, base, _ in places:
            if "limit" not in skip:
                limit_section(args, ref, ring_ref, base, label)
            if "fio" not in skip:
                fio_section(args, base, label)
            if "memory" not in skip:
                memory_section(args, base, label)
    finally:
        for _, base, fs in places:
            if fs:
                fs.close()
            else:
                shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
