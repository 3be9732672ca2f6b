#!/usr/bin/env python3
"""iolab files --profile against Filebench's own personalities (issue 34), side by side.

Filebench (github.com/filebench/filebench, built beside iolab: it has no Debian package) runs
workloads/fileserver.f, varmail.f and webserver.f as published, with only $dir, $nfiles,
$nthreads and the run time changed; iolab runs `--profile NAME` with the same files, threads
and time on the same filesystem, one after the other, --repeat times each.

What is compared. A Filebench thread loops over a fixed sequence of flowops; iolab draws the
same operations in the same proportions (docs/files.md, "Profiles"). One pass of the
sequence is, in iolab's operations:
  fileserver  create (createfile + writewholefile + close), append (open + appendfilerand +
              close), read (open + readwholefile + close), unlink, stat      -> 5 operations
  varmail     unlink, create (+ append + fsync + close), append (open + read whole + append +
              fsync + close counts as a read and an append), read (open + read whole + close)
              -> iolab's 5: unlink 1, create 1, append 1, read 2
  webserver   10 reads (open + readwholefile + close), 1 append to the log -> 11 operations
So Filebench's passes per second (the rate of a flowop done once per pass) times the
operations per pass is the rate iolab's operations/s is compared with; read and written MiB/s
are compared as they are. Printed: medians and iolab's ratio to Filebench.

Known differences (docs/files.md): Filebench picks files by a round-robin rotor shared by all
threads, iolab draws them uniformly at random; Filebench's directories have gamma-distributed
widths and depths, iolab's a fixed width; varmail's second flow reads and then appends one file
in one open, iolab does the read and the append as two operations.

    cargo build --release -p iolab
    python3 bench/files_filebench.py --filebench /work/peers/filebench/bin/filebench \\
        [--runtime 30] [--repeat 3] [--profiles fileserver,varmail,webserver] [--ext4]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from files import ROOT, Ext4, run  # noqa: E402

# Per personality: the flowop done once per pass, iolab operations per pass, and the
# published files and threads.
PERSONALITIES = {
    "fileserver": {"once": "statfile1", "ops_per_pass": 5, "files": 10000, "threads": 50},
    # Published: 1,000. Filebench's deletefile skips a file another thread has open, so its
    # creates outrun its deletes and, on tmpfs, a varmail of 1,000 names stops within 5 s ("flowop
    # createfile2-1 could not obtain a file ... increase fileset entries"): both run 20,000.
    "varmail": {"once": "deletefile1", "ops_per_pass": 5, "files": 20000, "threads": 16},
    "webserver": {"once": "appendlog", "ops_per_pass": 11, "files": 1000, "threads": 100},
}
MIB = float(1 << 20)
FLOWOP = re.compile(r"^(\S+)\s+(\d+)ops\s+([\d.]+)ops/s\s+([\d.]+)mb/s\s+([\d.]+)ms/op")


def workload(source, name, base, files, threads, runtime):
    """The published .f with only $dir, $nfiles, $nthreads and the run time changed."""
    text = open(os.path.join(source, "%s.f" % name)).read()
    text = re.sub(r"set \$dir=\S+", "set $dir=%s" % base, text)
    text = re.sub(r"set \$nfiles=\d+", "set $nfiles=%d" % files, text)
    text = re.sub(r"set \$nthreads=\d+", "set $nthreads=%d" % threads, text)
    text = re.sub(r"set \$runtime=\d+", "set $runtime=%d" % runtime, text)
    text = re.sub(r"^run \d+\s*$", "run %d" % runtime, text, flags=re.M)
    path = os.path.join(tempfile.gettempdir(), "iolab-bench.%s.%d.f" % (name, os.getpid()))
    with open(path, "w") as f:
        f.write(text)
    return path


def filebench_rates(args, name, base, files, threads):
    """{'ops': iolab-equivalent ops/s, 'read': MiB/s, 'write': MiB/s, 'lat': {flowop: ms/op}}."""
    d = tempfile.mkdtemp(prefix="fb.", dir=base)
    try:
        f = workload(args.workloads, name, d, files, threads, args.runtime)
        arch = os.uname().machine
        ran = run(["setarch", arch, "-R", args.filebench, "-f", f])
        out, err = ran.stdout, ran.stderr
        os.unlink(f)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    flowops = {}
    for line in out.splitlines():
        m = FLOWOP.match(line.split(": ", 1)[-1].strip()) or FLOWOP.match(line.strip())
        if m:
            flowops[m.group(1)] = (float(m.group(3)), float(m.group(4)), float(m.group(5)))
    p = PERSONALITIES[name]
    if p["once"] not in flowops:
        sys.exit("Filebench's %s printed no %s line:\n%s\n%s" % (name, p["once"], out[-2000:], err[-1000:]))
    passes = flowops[p["once"]][0]
    read = sum(mb for op, (_, mb, _) in flowops.items() if op.startswith("readfile"))
    write = sum(mb for op, (_, mb, _) in flowops.items() if op.startswith(("wrtfile", "append")))
    return {"ops": passes * p["ops_per_pass"], "read": read, "write": write}


def iolab_rates(args, name, base, files, threads):
    d = os.path.join(base, "iolab.%d" % os.getpid())
    out = run([args.iolab, "files", d, "--profile", name, "--files", str(files), "--threads", str(threads),
               "--runtime", "%ds" % args.runtime, "--json", "--quiet", "--no-store"])
    mix = [p for p in json.loads(out.stdout)["phases"] if p["phase"] == "mix"][-1]
    kinds = {k["kind"]: k["summary"] for k in mix["kinds"]}
    elapsed = mix["elapsed_s"]
    read = kinds.get("read", {}).get("bytes", 0) / MIB / elapsed
    write = sum(kinds.get(k, {}).get("bytes", 0) for k in ("write", "append_log")) / MIB / elapsed
    return {"ops": mix["ops_per_s"], "read": read, "write": write,
            "p99": {k: s["latency"]["percentiles"] for k, s in kinds.items() if s.get("latency")}}


def section(args, base, label):
    print("\n== %s: %d s each, %d repeats, medians ==" % (label, args.runtime, args.repeat))
    print("%-11s %7s %8s  %-10s %14s %14s %7s" % ("profile", "files", "threads", "figure", "Filebench", "iolab",
                                                  "ratio"))
    for name in args.profiles:
        p = PERSONALITIES[name]
        files = args.files or p["files"]
        threads = args.threads or p["threads"]
        theirs, ours = [], []
        for _ in range(args.repeat):
            theirs.append(filebench_rates(args, name, base, files, threads))
            ours.append(iolab_rates(args, name, base, files, threads))
        for figure, unit in (("ops", "ops/s"), ("read", "MiB/s"), ("write", "MiB/s")):
            t = statistics.median(r[figure] for r in theirs)
            o = statistics.median(r[figure] for r in ours)
            ratio = "%6.2fx" % (o / t) if t > 0 else "-"
            print("%-11s %7d %8d  %-10s %14s %14s %7s" % (name, files, threads, "%s %s" % (figure, unit),
                                                          "{:,.1f}".format(t), "{:,.1f}".format(o), ratio))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--filebench", default="/work/peers/filebench/bin/filebench")
    parser.add_argument("--workloads", help="the .f files (default: the filebench source's workloads/)")
    parser.add_argument("--runtime", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profiles", default="fileserver,varmail,webserver")
    parser.add_argument("--files", type=int, help="instead of each personality's published count")
    parser.add_argument("--threads", type=int, help="instead of each personality's published count")
    parser.add_argument("--ext4", action="store_true", help="also on ext4 over a loop device (root)")
    args = parser.parse_args()
    args.profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    if not os.path.exists(args.filebench):
        sys.exit("no Filebench at %s: build it from github.com/filebench/filebench (--filebench PATH)"
                 % args.filebench)
    if args.workloads is None:
        args.workloads = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(args.filebench))),
                                      "filebench-src", "workloads")
    args.iolab = os.path.join(ROOT, "target", "release", "iolab")
    if not os.path.exists(args.iolab):
        sys.exit("build iolab first: cargo build --release -p iolab")
    base = tempfile.mkdtemp(prefix="iolab-filebench.", dir="/dev/shm")
    try:
        section(args, base, "tmpfs")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.ext4:
        if os.geteuid() != 0:
            sys.exit("--ext4 needs root (losetup, mkfs.ext4, mount)")
        fs = Ext4(8192, 200000)
        try:
            section(args, fs.mount, "ext4 over a loop device")
        finally:
            fs.close()


if __name__ == "__main__":
    main()
