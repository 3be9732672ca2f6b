#!/usr/bin/env python3
"""The copy phase at the issue's size (issue 16): FILES files of mixed sizes copied to a second
tree, with its bytes/s and per-file latency, and the copy checked identical to its source.

Runs `iolab files DIR --files FILES --sizes SIZES --phases mkdir,create,copy --keep --json`
(the tree kept), then walks both trees: every source file t<k>/... must have a copy ct<k>/...
of the same bytes (SHA-256 of each), and no other file may be in either. Prints the copy's
ops/s, bytes/s and per-file latency (p50, p99, p99.9, max), the create's beside it, and
"identical: yes" or the first difference; then removes the tree with `iolab files --clean`.

    cargo build --release -p iolab
    python3 bench/files_copy.py [--dir /dev/shm] [--files 100000] [--sizes 4k:60,16k:25,128k:13,1m:2]
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.digest()


def files_below(top):
    """Every regular file below `top`, as paths relative to it."""
    out = set()
    for d, _, names in os.walk(top):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


def compare(tree):
    """(files compared, bytes compared, the first difference or None)."""
    sources = sorted(n for n in os.listdir(tree) if n.startswith("t") or n == "s")
    count = size = 0
    for src in sources:
        dst = "c" + src
        a, b = files_below(os.path.join(tree, src)), files_below(os.path.join(tree, dst))
        if a != b:
            only = sorted(a ^ b)[:3]
            return count, size, "%s and %s hold different names: %s" % (src, dst, only)
        for rel in sorted(a):
            pa, pb = os.path.join(tree, src, rel), os.path.join(tree, dst, rel)
            if digest(pa) != digest(pb):
                return count, size, "%s differs from %s" % (pb, pa)
            count += 1
            size += os.path.getsize(pa)
    return count, size, None


def latency(kind):
    pct = {round(p["p"], 4): p["ns"] for p in kind["summary"]["latency"]["percentiles"]}
    lat = kind["summary"]["latency"]
    return "p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us" % (
        pct.get(50.0, 0) / 1e3, pct.get(99.0, 0) / 1e3, pct.get(99.9, 0) / 1e3, lat.get("max_ns", 0) / 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iolab", default=os.path.join(ROOT, "target", "release", "iolab"))
    ap.add_argument("--dir", default="/dev/shm", help="where the tree goes (a directory made in it)")
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--sizes", default="4k:60,16k:25,128k:13,1m:2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engine", default="io_uring")
    args = ap.parse_args()
    if not os.access(args.iolab, os.X_OK):
        sys.exit("no iolab at %s: cargo build --release -p iolab, or --iolab PATH" % args.iolab)
    tree = os.path.join(tempfile.mkdtemp(prefix="iolab-files-copy.", dir=args.dir), "tree")
    cmd = [args.iolab, "files", tree, "--files", str(args.files), "--sizes", args.sizes, "--threads",
           str(args.threads), "--engine", args.engine, "--phases", "mkdir,create,copy", "--keep", "--json",
           "--no-store"]
    print("command:", " ".join(cmd))
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        report = json.loads(out)
        for phase in report["phases"][1:]:
            main_kind = phase["kinds"][0]
            print("%-6s %s of %s files, %.0f files/s, %.1f MiB/s; per file: %s" % (
                phase["phase"], "{:,}".format(phase["done"]), "{:,}".format(phase["planned"]),
                phase["ops_per_s"], phase["bytes_per_s"] / 2**20, latency(main_kind)))
        count, size, difference = compare(tree)
        copy = report["phases"][2]
        print("checked: %s files, %.2f GiB, against the copy's %s files and %.2f GiB" % (
            "{:,}".format(count), size / 2**30, "{:,}".format(copy["done"]), copy["bytes"] / 2**30))
        same = difference is None and count == copy["done"] == args.files and size == copy["bytes"]
        print("identical: %s" % ("yes" if same else "NO: %s" % (difference or "counts differ")))
        return 0 if same else 1
    finally:
        subprocess.run([args.iolab, "files", "--clean", tree], capture_output=True)
        subprocess.run(["rm", "-rf", os.path.dirname(tree)])


if __name__ == "__main__":
    sys.exit(main())
