#!/usr/bin/env python3
"""`iolab files` on its two engines side by side: each phase's rate on io_uring over its rate on
plain system calls, on tmpfs, ext4 and xfs (each over a loop device with direct I/O on an image
in /dev/shm, made and removed here; root), and with `--fsync` on each. Alternating
runs, medians. The table in docs/files.md ("Phases") comes from it. The default, `--engine
auto`, runs beside them: per phase, the engine it took, whether that is the faster of the two
(the other at least 5% ahead by their medians says "the slower"), and its rate over the faster
one's; where it took the faster engine that ratio is this bench's run-to-run spread.

    cargo build --release -p iolab
    sudo python3 bench/files_engines.py [--files 200000] [--threads 2] [--repeat 2] [--only CASE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")
FSYNC_PHASES = ["--fsync", "--phases", "mkdir,create,unlink,rmdir"]
CASES = (("tmpfs", []), ("ext4", []), ("xfs", []), ("tmpfs", FSYNC_PHASES), ("ext4", FSYNC_PHASES),
         ("xfs", FSYNC_PHASES))


class Filesystem:
    """A directory to run in: one under /dev/shm, or a fresh filesystem on a loop device."""

    def __init__(self, kind, files):
        self.kind, self.dev, self.img = kind, None, None
        if kind == "tmpfs":
            self.dir = tempfile.mkdtemp(prefix="iolab-fe-", dir="/dev/shm")
            return
        self.img = tempfile.mktemp(prefix=f"iolab-fe-{kind}-", suffix=".img", dir="/dev/shm")
        subprocess.run(["truncate", "-s", "3G", self.img], check=True)
        self.dev = subprocess.run(["losetup", "--direct-io=on", "-f", "--show", self.img], check=True,
                                  capture_output=True, text=True).stdout.strip()
        # ext4's default inode count of a 3 GiB filesystem is below 200,000 files.
        opts = ["-q", "-f"] if kind == "xfs" else ["-q", "-F", "-N", str(3 * files)]
        subprocess.run([f"mkfs.{kind}", *opts, self.dev], check=True, capture_output=True)
        self.dir = tempfile.mkdtemp(prefix=f"iolab-fe-{kind}-")
        subprocess.run(["mount", self.dev, self.dir], check=True)

    def remove(self):
        if self.dev:
            subprocess.run(["umount", self.dir], check=True)
            os.rmdir(self.dir)
            subprocess.run(["losetup", "-d", self.dev], check=True)
            os.unlink(self.img)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def rates(path, engine, args, extra):
    """Each phase's operations per second of one run, and the engine it ran on."""
    out = subprocess.run([IOLAB, "files", path, "--threads", str(args.threads), "--files", str(args.files),
                          "--engine", engine, "--json", "-q", "--no-store", *extra],
                         capture_output=True, text=True, check=True)
    return {p["phase"]: (p["ops_per_s"], p.get("engine", engine)) for p in json.loads(out.stdout)["phases"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=200_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--only", action="append", metavar="CASE",
                   help="run only this case (tmpfs, ext4, xfs, tmpfs-fsync, ext4-fsync, xfs-fsync); repeatable")
    args = p.parse_args()
    for kind, extra in CASES:
        name = kind + ("-fsync" if extra else "")
        if args.only and name not in args.only:
            continue
        fs = Filesystem(kind, args.files)
        try:
            engines = ["sync", "io_uring", "auto"]
            got = {engine: [] for engine in engines}
            for r in range(args.repeat):
                # Each round in another order: no engine always runs first on a fresh filesystem.
                for engine in engines[r % 3:] + engines[:r % 3]:
                    got[engine].append(rates(os.path.join(fs.dir, f"r{r}-{engine}"), engine, args, extra))
            cells, defaults = [], []
            for phase in got["sync"][0]:
                s, u, a = (statistics.median(run[phase][0] for run in got[e]) for e in engines)
                cells.append(f"{phase} {u / s:.2f}x ({u:,.0f}/{s:,.0f})")
                took = "+".join(sorted({run[phase][1] for run in got["auto"]}))
                faster, slower = ("io_uring", s) if u > s else ("sync", u)
                best = max(s, u)
                choice = "the faster" if took == faster or best < 1.05 * slower else "THE SLOWER"
                defaults.append(f"{phase} on {took} ({choice}; {a / best:.2f}x)")
            print(f"{kind} {' '.join(extra)} | io_uring/sync: {'; '.join(cells)}", flush=True)
            print(f"{kind} {' '.join(extra)} | auto/faster: {'; '.join(defaults)}", flush=True)
        finally:
            fs.remove()


if __name__ == "__main__":
    main()
