#!/usr/bin/env python3
"""iolab files against bonnie++'s file tests (issue 34), side by side in one run.

bonnie++ -n N:0:0:D makes N x 1024 empty files in D directories, then creates, stats and
deletes them in order, and again in random order, on one thread. iolab does the same tree
(--files N*1024 --dirs-per-dir D --depth 1, one sync thread: bonnie++ makes plain system calls)
with its phases mkdir,create,stat,unlink,rmdir, once in index order and once with
--order random, alternating with bonnie++ --repeat times. Printed per phase: the medians and
iolab's ratio to bonnie++'s column of the same order. Goal: at least 0.8x per phase.

bonnie++'s "random create" is not a random order: its create loop makes the files in index
order, directory by directory, as the sequential one does; only each name's random part
(0 to 12 characters of [a-zA-Z0-9]) comes before the hex index instead of after it
(bon_file.cpp of 2.00a: create() never calls random_sort; stat_random and delete_random do,
over every directory at once). iolab's --order random create works a permutation of all the
files across the directories, a harder test; so the random create row also gives iolab's
index-order create against bonnie++'s random column, the same order of work.

bonnie++ prints "+++++" for a test that ended too fast to time well: such a column has no
ratio (raise -n). On tmpfs (a directory in /dev/shm) always; with --ext4 (root) also on ext4
over a loop device made here from an image in /dev/shm, removed at the end.

    apt-get install bonnie++; cargo build --release -p iolab
    python3 bench/files_bonnie.py [--thousands 400] [--dirs 10] [--repeat 3] [--ext4]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from files import ROOT, Ext4, run  # noqa: E402

PHASES = ("create", "stat", "unlink")
# bonnie++'s CSV (format 1.98): the file tests' rate columns, sequential then random.
BONNIE_COLUMNS = {
    ("sequential", "create"): 26, ("sequential", "stat"): 28, ("sequential", "unlink"): 30,
    ("random", "create"): 32, ("random", "stat"): 34, ("random", "unlink"): 36,
}


def bonnie_rates(base, thousands, dirs):
    """One bonnie++ file test: {(order, phase): ops/s or None where it printed +++++}."""
    d = tempfile.mkdtemp(prefix="bonnie.", dir=base)
    try:
        out = run(["bonnie++", "-d", d, "-n", "%d:0:0:%d" % (thousands, dirs), "-s", "0",
                   "-u", "root", "-q", "-x", "1"]).stdout.strip().splitlines()[-1].split(",")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    rates = {}
    for key, column in BONNIE_COLUMNS.items():
        text = out[column] if column < len(out) else ""
        rates[key] = float(text) if text.replace(".", "").isdigit() else None
    return rates


def iolab_rates(iolab, base, files, dirs, order):
    d = os.path.join(base, "iolab-tree")
    out = run([iolab, "files", d, "--files", str(files), "--dirs-per-dir", str(dirs), "--depth", "1",
               "--engine", "sync", "--threads", "1", "--order", order,
               "--phases", "mkdir,create,stat,unlink,rmdir", "--json", "--quiet", "--no-store"])
    phases = json.loads(out.stdout)["phases"]
    return {(order, p["phase"]): p["ops_per_s"] for p in phases if p["phase"] in PHASES}


def section(args, iolab, base, label):
    files = args.thousands * 1024
    print("\n== %s: %s files in %d directories, one thread ==" % (label, "{:,}".format(files), args.dirs))
    bonnie, ours = {}, {}
    for _ in range(args.repeat):
        for key, rate in bonnie_rates(base, args.thousands, args.dirs).items():
            bonnie.setdefault(key, []).append(rate)
        for order in ("sequential", "random"):
            for key, rate in iolab_rates(iolab, base, files, args.dirs, order).items():
                ours.setdefault(key, []).append(rate)
    print("%-11s %-7s %14s %14s %7s" % ("order", "phase", "bonnie++ /s", "iolab /s", "ratio"))
    worst = None
    for order in ("sequential", "random"):
        for phase in PHASES:
            key = (order, phase)
            theirs = [r for r in bonnie.get(key, []) if r is not None]
            mine = statistics.median(ours[key])
            if len(theirs) < len(bonnie.get(key, [])) or not theirs:
                print("%-11s %-7s %14s %14s %7s" % (order, phase, "+++++", "{:,.0f}".format(mine), "-"))
                continue
            ratio = mine / statistics.median(theirs)
            print("%-11s %-7s %14s %14s %6.2fx" % (order, phase, "{:,.0f}".format(statistics.median(theirs)),
                                                   "{:,.0f}".format(mine), ratio))
            if key == ("random", "create"):
                # bonnie++'s random create works in index order (see above): so does this one.
                same_work = statistics.median(ours[("sequential", "create")])
                ratio = same_work / statistics.median(theirs)
                print("%-11s %-7s %14s %14s %6.2fx  (iolab in index order, as bonnie++ makes them)"
                      % ("", "", "", "{:,.0f}".format(same_work), ratio))
            worst = ratio if worst is None else min(worst, ratio)
    if worst is not None:
        print("lowest ratio %.2fx (goal >= 0.8x per phase: %s)" % (worst, "met" if worst >= 0.8 else "NOT met"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thousands", type=int, default=400, help="bonnie++ -n: files in units of 1024")
    parser.add_argument("--dirs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ext4", action="store_true", help="also on ext4 over a loop device (root)")
    args = parser.parse_args()
    if shutil.which("bonnie++") is None:
        sys.exit("no bonnie++ on PATH: apt-get install bonnie++")
    iolab = os.path.join(ROOT, "target", "release", "iolab")
    if not os.path.exists(iolab):
        sys.exit("build iolab first: cargo build --release -p iolab")
    base = tempfile.mkdtemp(prefix="iolab-bonnie.", dir="/dev/shm")
    try:
        section(args, iolab, base, "tmpfs")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.ext4:
        if os.geteuid() != 0:
            sys.exit("--ext4 needs root (losetup, mkfs.ext4, mount)")
        fs = Ext4(4096, args.thousands * 1024 * 2 + 10000)
        try:
            section(args, iolab, fs.mount, "ext4 over a loop device")
        finally:
            fs.close()


if __name__ == "__main__":
    main()
