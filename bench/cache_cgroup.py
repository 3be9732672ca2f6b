#!/usr/bin/env python3
"""Where a memory cgroup's limit goes while `iolab cache --buffered` measures its page cache.

Root only (cgroup v1 memory controller). Writes a file of 4 x the limit under --dir (the root
disk: tmpfs has no miss tier), drops its pages, makes a memory cgroup with the limit, runs
`iolab cache` in it, and samples every 100 ms: the cgroup's memory.stat (page cache, anon
memory, kernel memory), what the cgroup holds of the file (mincore over a mapping never read)
and iolab's RSS. Prints, for each working set measured, what the cgroup held of the file, of
iolab's anonymous memory and of kernel memory during its measured window; then the first tier's
capacity against the limit and against what the cgroup held of the file (the ratios). The
cgroup and the file are removed at the end, also after an error or Ctrl-C.

    sudo python3 bench/cache_cgroup.py --limit 128 --limit 256   # target/debug/iolab
    sudo python3 bench/cache_cgroup.py --iolab target/release/iolab --limit 128 -- --runtime 2s
"""
import argparse
import ctypes
import ctypes.util
import json
import mmap
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
# What crates/cli/tests/cache.rs runs; arguments after `--` are added.
STUDY = ["--runtime", "1s", "--ramp", "300ms", "--precision-pct", "5", "--promotion-time", "2s"]

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def cold_file(path, size):
    """A file of `size` bytes whose pages are not cached (written here, then dropped)."""
    chunk = bytes((i * 7 + 3) & 255 for i in range(MIB))
    with open(path, "wb") as f:
        for _ in range(size // MIB):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def remove_cgroup(cg):
    """Removes the cgroup `cg` once the processes it held have gone (which takes a moment)."""
    for _ in range(50):
        try:
            os.rmdir(cg)
            return
        except OSError:
            time.sleep(0.1)


class Resident:
    """The file's bytes in the page cache, by mincore over a mapping that is never read."""

    def __init__(self, path):
        fd = os.open(path, os.O_RDONLY)
        self.len = os.fstat(fd).st_size
        self.addr = libc.mmap(None, self.len, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        os.close(fd)
        self.vec = (ctypes.c_ubyte * ((self.len + 4095) // 4096))()

    def bytes(self):
        if libc.mincore(self.addr, self.len, self.vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        return sum(b & 1 for b in self.vec) * 4096

    def close(self):
        libc.munmap(self.addr, self.len)


def cgroup_stat(cg):
    stat = dict(line.split() for line in open(f"{cg}/memory.stat"))
    stat = {k: int(v) for k, v in stat.items()}
    stat["usage"] = int(open(f"{cg}/memory.usage_in_bytes").read())
    stat["kmem"] = int(open(f"{cg}/memory.kmem.usage_in_bytes").read())
    return stat


def one(iolab, limit_mib, workdir, extra):
    limit = limit_mib * MIB
    work = tempfile.mkdtemp(prefix="iolab-cache-cgroup-", dir=workdir)
    path = os.path.join(work, "f")
    cg = f"/sys/fs/cgroup/memory/iolab-bench-cache-{os.getpid()}"
    args = ["cache", "f", "--buffered", *STUDY, *extra, "--no-store", "--json", "-q"]
    print(f"command: (cd {work} && {shlex.join([iolab, *args])}) in a memory cgroup of {limit_mib} MiB")
    print(f"target: {path}, {4 * limit_mib} MiB on the filesystem of {workdir}")
    cold_file(path, 4 * limit)
    os.mkdir(cg)
    resident = None
    try:
        open(f"{cg}/memory.limit_in_bytes", "w").write(str(limit))
        resident = Resident(path)
        enter = f'echo $$ > {cg}/cgroup.procs && exec "$@"'
        # Into files, not pipes: the report is larger than a pipe holds while this polls.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            child = subprocess.Popen(["sh", "-c", enter, "sh", iolab, *args], cwd=work, stdout=out, stderr=err)
            samples = []
            try:
                while child.poll() is None:
                    samples.append((time.time_ns(), cgroup_stat(cg), resident.bytes()))
                    time.sleep(0.1)
            finally:
                if child.poll() is None:
                    child.terminate()
                    child.wait()
            out.seek(0)
            err.seek(0)
            if child.returncode != 0:
                sys.exit(f"iolab failed ({child.returncode}): {err.read().decode()[-2000:]}")
            report = json.load(out)
    finally:
        if resident:
            resident.close()
        remove_cgroup(cg)
        os.unlink(path)
        os.rmdir(work)
    print(f"{'working set':>14} {'file held':>10} {'iolab anon':>11} {'kernel':>8} {'charged':>8}  (MiB, means over the measured window)")
    held_at = {}
    for job in report["run"]["jobs"]:
        start = job.get("window_start_unix_ns")
        if not start or not job["name"].startswith("working set"):
            continue
        end = start + job["measured_s"] * 1e9
        inside = [s for s in samples if start <= s[0] <= end]
        if not inside:
            continue
        mean = lambda f: sum(f(s) for s in inside) / len(inside) / MIB
        size = job["spec"]["groups"][0]["target"]["size_bytes"]
        held_at[size] = mean(lambda s: s[2])
        print(f"{size / MIB:14.1f} {held_at[size]:10.1f} {mean(lambda s: s[1]['rss']):11.1f} "
              f"{mean(lambda s: s[1]['kmem']):8.1f} {mean(lambda s: s[1]['usage']):8.1f}")
    tiers = report["summary"]["tiers"]
    if not tiers:
        print(f"no tier found: {report['summary'].get('note')}")
        return
    tier = tiers[0]
    used = [s for s in tier["hit_shares"] if s["used"]]
    for s in used:
        w = s["working_set_bytes"]
        held = held_at.get(w, 0.0)
        ratio = f"{s['capacity_bytes'] / MIB / held:.3f}" if held else "-"
        print(f"  judged on {w / MIB:.1f} MiB: {s['share']:.3f} of the reads hit -> {s['capacity_bytes'] / MIB:.1f} MiB; "
              f"the cgroup held {held:.1f} MiB of the file (ratio {ratio})")
    held = sorted(held_at.get(s["working_set_bytes"], 0.0) for s in used)
    held = held[len(held) // 2] if held else 0.0
    size = tier["size_bytes"] / MIB
    print(f"first tier: {size:.1f} MiB (misses begin above {tier['fits_bytes'] / MIB:.1f} MiB), hits {tier['hit_ns'] / 1e3:.1f} us, "
          f"misses {tier['miss_ns'] / 1e3:.1f} us; ratio to the limit {size / limit_mib:.3f}"
          + (f", to what the cgroup held of the file {size / held:.3f}" if held else ""))


def main():
    # SIGTERM ends the run as Ctrl-C does, so that the cgroup and the file are removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iolab", default="target/debug/iolab")
    parser.add_argument("--limit", type=int, action="append", help="MiB (repeatable; default 128)")
    parser.add_argument("--dir", default="/var/tmp", help="where the file goes (not tmpfs)")
    parser.add_argument("extra", nargs="*", help="more arguments for iolab cache, after --")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: it makes a memory cgroup")
    if not os.path.isdir("/sys/fs/cgroup/memory"):
        sys.exit("no cgroup v1 memory controller at /sys/fs/cgroup/memory")
    for limit in opts.limit or [128]:
        one(os.path.abspath(opts.iolab), limit, opts.dir, opts.extra)


if __name__ == "__main__":
    main()
