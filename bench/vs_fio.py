#!/usr/bin/env python3
"""Run iolab and fio side by side on the same target, in one run, and print the ratios.

This is a hand-run benchmark whose output goes into the notes; it is not a test.
See bench/README.md for the scenarios and their goals. Python 3 standard library only.

CPU is accounted the same way for both tools: each runs as a child process and its CPU time is
the child's rusage from os.wait4 (ru_utime + ru_stime). That covers every thread of the process
and every child it reaped (fio's job processes), including io_uring io-wq and SQPOLL threads,
which fio's own usr/sys figures miss. Both tools run without a ramp, so the rusage covers the
I/Os the tool reports (plus its start-up and tear-down, which is the same kind of cost for both).
"""

import argparse
import atexit
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import stat
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing the helper module below
from scratch_devices import ScratchDevices, Unavailable  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_IOLAB = REPO / "target" / "release" / "iolab"
SCRATCH_DIR = REPO / "target" / "bench-scratch"
DEFAULT_TARGET = SCRATCH_DIR / "bench.dat"
NULL_FILE = SCRATCH_DIR / "null.dat"
# fio's own t/io_uring, issue 3's limit; bench/build_t_io_uring.sh builds it here.
DEFAULT_T_IO_URING = SCRATCH_DIR / "fio-3.33" / "t" / "io_uring"
T_IO_URING_NOT_BUILT = "t/io_uring not built: run bench/build_t_io_uring.sh"

# The issues' speed goals.
GOAL_NULL_IOS_PER_CPU = 2.0  # iolab/fio I/Os per CPU-second, null engine
GOAL_IOPS_RATIO = 1.0  # iolab/fio IOPS, randread-file, loop, virtio (within noise)
GOAL_CPU_PER_IO_RATIO = 0.85  # iolab/fio CPU seconds per I/O, randread-file
GOAL_LOOP_CPU_PER_IO = 0.75  # iolab/fio io_uring, loop device over tmpfs (loop: defaults; loop-best: best)
GOAL_VIRTIO_CPU_PER_IO = 0.8  # iolab/fio io_uring (best configuration), O_DIRECT file on the root fs
GOAL_ZRAM_IOS_PER_CPU = 1.1  # iolab/fio I/Os per CPU-second on zram, same engine
GOAL_WORKERS2_IOS_PER_CPU = 1.1  # iolab --workers 2 / fio --numjobs=2, I/Os per CPU-second
GOAL_QD1_MEAN_LATENCY = 1.0  # iolab/fio psync QD 1 mean latency on zram: no higher


# ----------------------------------------------------------------------------------------------
# Small helpers


def parse_size(text):
    """'1g' -> 1073741824 (binary units, as both iolab and fio read them by default)."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def human_size(n):
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {unit}"
    return f"{n} B"


def fmt_num(x):
    """Compact number, three or four significant digits: 1234567 -> '1.23M'."""
    if x is None:
        return "-"
    suffix, v = "", float(x)
    for s, mult in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= mult:
            suffix, v = s, v / mult
            break
    if not suffix and float(x).is_integer():
        return str(int(x))
    digits = 2 if abs(v) < 10 else 1 if abs(v) < 100 else 0
    return f"{v:.{digits}f}{suffix}"


def fmt_f(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def fmt_us(ns):
    # QD 1 on a RAM disk is 1-2 us: two decimals there, one above 10 us.
    return "-" if ns is None else f"{ns / 1000:.2f}" if ns < 10_000 else f"{ns / 1000:.1f}"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}x"


def fmt_pct(r):
    return "-" if r is None else f"{r * 100:+.1f}%"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    """Relative run-to-run spread: (max - min) / median; None with fewer than two values."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return None
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else None


def ratio(a, b):
    return a / b if a is not None and b else None


def rel_diff(a, b):
    return (a - b) / b if a is not None and b else None


def table(headers, rows, indent="  "):
    """Plain aligned text table; first column left-aligned, the rest right-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, r in enumerate(cells):
        parts = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append(indent + "  ".join(parts).rstrip())
        if n == 0:
            lines.append(indent + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


class OutputClosed(Exception):
    """Standard output went away (e.g. piped into `head`): stop running, clean up, exit."""


def say(text=""):
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Broken pipe is not an error to report; send the rest nowhere and stop the runs.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise OutputClosed from None


# ----------------------------------------------------------------------------------------------
# Running a tool and measuring its CPU


@dataclass
class Result:
    tool: str  # "iolab" or "fio"
    order: int  # 1 = ran first in its pair, 2 = second
    iops: float
    ios: int
    measured_s: float
    mean_ns: float
    p50_ns: float
    p99_ns: float
    cpu_s: float  # rusage of the child (user + system), the figure the ratios use
    user_s: float
    sys_s: float
    self_cpu_s: float  # what the tool says it used, for reference only
    wall_s: float
    other_cpu_s: float = None  # CPU the whole machine spent meanwhile outside the tool (kworkers, noise)
    raw: dict = field(repr=False, default_factory=dict)

    @property
    def cpu_s_per_mio(self):
        return self.cpu_s / self.ios * 1e6 if self.ios else None

    @property
    def ios_per_cpu_s(self):
        return self.ios / self.cpu_s if self.cpu_s else None


class ToolFailed(RuntimeError):
    tool = None  # "iolab" or "fio" once known


def machine_busy_s():
    """CPU seconds the whole machine has been busy since boot, summed over its CPUs (user, nice,
    system, irq, softirq; not idle, iowait or steal), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


RUNNING = []  # the measured child, while it runs: stopped before a scratch device is removed


def stop_running_child():
    """Ends a measured run left behind (SIGTERM to this script, an exception): it may hold a
    scratch device open. Only the child this script started, by its pid."""
    for proc in RUNNING:
        if proc.returncode is None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    RUNNING.clear()


def run_child(cmd, cwd):
    """Runs cmd; returns (stdout, stderr, rusage, wall seconds, CPU seconds the rest of the
    machine used meanwhile). Raises ToolFailed on exit != 0."""
    out_path = Path(cwd) / f".vs_fio.{os.getpid()}.out"
    err_path = Path(cwd) / f".vs_fio.{os.getpid()}.err"
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            busy0 = machine_busy_s()
            start = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
            RUNNING.append(proc)
            _, status, rusage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait again
            RUNNING.remove(proc)
            other = machine_busy_s() - busy0 - (rusage.ru_utime + rusage.ru_stime)
        stdout = out_path.read_text(errors="replace")
        stderr = err_path.read_text(errors="replace")
    finally:
        for p in (out_path, err_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
    if proc.returncode != 0:
        raise ToolFailed(
            f"{cmd[0]} exited with {proc.returncode}\n  command: {shlex.join(cmd)}\n"
            f"  stderr: {stderr.strip()[-2000:]}\n  stdout: {stdout.strip()[-1000:]}"
        )
    return stdout, stderr, rusage, wall, max(other, 0.0)


def load_json(text, tool, cmd):
    # fio may print warnings before its JSON document; start at the first '{'.
    start = text.find("{")
    try:
        return json.loads(text[start:])
    except (ValueError, IndexError) as e:
        raise ToolFailed(f"{tool}: cannot parse JSON output ({e})\n  command: {shlex.join(cmd)}\n  output: {text[:1000]}")


def run_iolab(cmd, cwd, order):
    try:
        stdout, stderr, ru, wall, other = run_child(cmd, cwd)
    except ToolFailed as e:
        e.tool = "iolab"
        raise
    doc = load_json(stdout, "iolab", cmd)
    job = doc["jobs"][0]
    total = job["total"]
    lat = total.get("latency") or {}
    pct = {float(p["p"]): p["ns"] for p in lat.get("percentiles", [])}
    cpu = job.get("cpu") or {}
    errors = job.get("errors") or {}
    if errors.get("count"):
        say(f"  !! iolab reported {errors['count']} I/O errors: {errors.get('first')}")
    if doc.get("interrupted") or job.get("stop_reason") not in (None, "runtime"):
        say(f"  !! iolab stop_reason={job.get('stop_reason')} interrupted={doc.get('interrupted')}")
    return Result(
        tool="iolab",
        order=order,
        iops=total["iops"],
        ios=total["ios"],
        measured_s=job.get("measured_s"),
        mean_ns=lat.get("mean_ns"),
        p50_ns=pct.get(50.0),
        p99_ns=pct.get(99.0),
        cpu_s=ru.ru_utime + ru.ru_stime,
        user_s=ru.ru_utime,
        sys_s=ru.ru_stime,
        self_cpu_s=(cpu.get("user_s") or 0) + (cpu.get("system_s") or 0),
        wall_s=wall,
        other_cpu_s=other,
        raw=doc,
    )


def run_fio(cmd, cwd, order):
    stdout, stderr, ru, wall, other = run_child(cmd, cwd)
    doc = load_json(stdout, "fio", cmd)
    job = doc["jobs"][0]
    if job.get("error"):
        raise ToolFailed(f"fio job error {job['error']}\n  command: {shlex.join(cmd)}\n  stderr: {stderr.strip()}")
    rd = job["read"]
    # Total latency (submission to completion) is what iolab measures; fio reports its
    # percentiles only with --lat_percentiles=1, otherwise fall back to completion latency.
    lat_pct = rd.get("lat_ns", {}).get("percentile") or rd.get("clat_ns", {}).get("percentile") or {}
    pct = {float(k): v for k, v in lat_pct.items()}
    runtime_s = job.get("job_runtime", rd.get("runtime", 0)) / 1000
    return Result(
        tool="fio",
        order=order,
        iops=rd["iops"],
        ios=rd["total_ios"],
        measured_s=rd.get("runtime", 0) / 1000,
        mean_ns=rd.get("lat_ns", {}).get("mean"),
        p50_ns=pct.get(50.0),
        p99_ns=pct.get(99.0),
        cpu_s=ru.ru_utime + ru.ru_stime,
        user_s=ru.ru_utime,
        sys_s=ru.ru_stime,
        self_cpu_s=(job.get("usr_cpu", 0) + job.get("sys_cpu", 0)) / 100 * runtime_s,
        wall_s=wall,
        other_cpu_s=other,
        raw=doc,
    )


TIO_IOPS_LINE = re.compile(r"^IOPS=([0-9.]+)([KM]?),", re.MULTILINE)


def run_t_io_uring(cmd, cwd, order, runtime):
    """fio's t/io_uring prints one line per second, "IOPS=272.89K, BW=1065MiB/s, IOS/call=16/16"
    (K = 1e3, M = 1e6). With -r R it prints R - 1 of them: its main loop ends the run at the R-th
    tick before printing it. The I/Os it did are its per-second mean times R (the R - 1 printed
    seconds summed, plus the last second at the same rate); the rusage covers all R seconds."""
    try:
        stdout, stderr, ru, wall, other = run_child(cmd, cwd)
    except ToolFailed as e:
        e.tool = "t/io_uring"
        raise
    per_s = [float(v) * {"": 1, "K": 1e3, "M": 1e6}[unit] for v, unit in TIO_IOPS_LINE.findall(stdout)]
    if not per_s:
        e = ToolFailed(f"t/io_uring printed no IOPS line\n  command: {shlex.join(cmd)}\n  stdout: {stdout.strip()[-1000:]}"
                       f"\n  stderr: {stderr.strip()[-1000:]}")
        e.tool = "t/io_uring"
        raise e
    iops = sum(per_s) / len(per_s)
    return Result(
        tool="t/io_uring",
        order=order,
        iops=iops,
        ios=round(iops * runtime),
        measured_s=runtime,
        mean_ns=None,  # -t1 times every I/O, but prints percentiles in TSC ticks only
        p50_ns=None,
        p99_ns=None,
        cpu_s=ru.ru_utime + ru.ru_stime,
        user_s=ru.ru_utime,
        sys_s=ru.ru_stime,
        self_cpu_s=None,
        wall_s=wall,
        other_cpu_s=other,
        raw={"stdout": stdout, "stderr": stderr, "iops_lines": per_s, "counted_ios": sum(per_s)},
    )


# ----------------------------------------------------------------------------------------------
# Targets


@dataclass
class Target:
    path: Path
    is_device: bool
    size: int  # bytes tested (the region both tools use)
    created: bool  # by this script: removed at the end unless --keep
    layout_cmd: list = None
    kind: str = None  # what the device stands for, e.g. "loop device, direct I/O over tmpfs"
    setup_cmds: list = field(default_factory=list)  # how this script made it (a scratch device)
    notes: list = field(default_factory=list)

    def describe(self):
        kind = self.kind or ("block device (read-only workloads)" if self.is_device else "regular file")
        return f"{self.path}  [{kind}, {human_size(self.size)} tested]"


def sysfs_dir(dev):
    return Path(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))


def check_device_allowed(path):
    """Refuses the disk the system runs on; only spare devices (e.g. /dev/loopN) are allowed."""
    real = os.path.realpath(path)
    name = os.path.basename(real)
    if name.startswith("vda"):
        sys.exit(f"vs_fio: refusing {path} ({real}): /dev/vda* is the system disk and is never used")
    rdev = os.stat(real).st_rdev
    mine = sysfs_dir(rdev)
    for mount_point in ("/", "/work"):
        try:
            root_dev = os.stat(mount_point).st_dev
        except FileNotFoundError:
            continue
        root = sysfs_dir(root_dev)
        if root.exists() and (root == mine or mine in root.parents or root in mine.parents):
            sys.exit(f"vs_fio: refusing {path}: it holds (or is part of) the filesystem at {mount_point}")
    with open("/proc/mounts") as mounts:
        for line in mounts:
            src = line.split()[0]
            if src.startswith("/dev/") and os.path.exists(src) and os.path.realpath(src) == real:
                sys.exit(f"vs_fio: refusing {path}: it is mounted ({line.split()[1]})")
    size_file = mine / "size"
    size = int(size_file.read_text()) * 512 if size_file.exists() else 0
    if size == 0:
        sys.exit(f"vs_fio: {path} has size 0 (a loop device with nothing attached?)")
    return size


def prepare_target(args, fio):
    """The file or device the I/O scenarios read. A file is laid out once, here, with real data."""
    size = parse_size(args.size)
    path = Path(args.target) if args.target else DEFAULT_TARGET
    if path.exists() and stat.S_ISBLK(os.stat(path).st_mode):
        dev_size = check_device_allowed(path)
        return Target(path=path, is_device=True, size=min(size, dev_size), created=False)
    if path.exists():
        if not path.is_file():
            sys.exit(f"vs_fio: {path} is neither a regular file nor a block device")
        have = path.stat().st_size
        if have < size:
            sys.exit(
                f"vs_fio: {path} holds {human_size(have)}, less than --size {args.size}; "
                "neither tool may extend it during a measured run. Remove it or pick another --target."
            )
        say(f"target {path} exists ({human_size(have)}): used as is, kept afterwards")
        return Target(path=path, is_device=False, size=size, created=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [fio, "--name=layout", f"--filename={path}", f"--size={size}", "--rw=write", "--bs=1m",
           "--direct=1", "--output-format=terse"]
    say("laying out the target once, before any measured run:")
    say(f"  $ {shlex.join(cmd)}")
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=path.parent)
    say(f"  done in {time.monotonic() - start:.1f} s")
    return Target(path=path, is_device=False, size=size, created=True, layout_cmd=cmd)


def prepare_null_file(args):
    """iolab opens its --target even with the null engine; give it a file already at --size so
    it has nothing to lay out. No data is read, so a sparse file is fine."""
    size = parse_size(args.size)
    NULL_FILE.parent.mkdir(parents=True, exist_ok=True)
    existed = NULL_FILE.exists()
    if not existed or NULL_FILE.stat().st_size < size:
        with open(NULL_FILE, "ab") as f:
            f.truncate(size)
    return Target(path=NULL_FILE, is_device=False, size=size, created=not existed)


# ----------------------------------------------------------------------------------------------
# Command lines


def iolab_cmd(args, target, engine, qd, size, workers=1, extra=()):
    # --iolab-extra (experiments only) goes to every iolab run; the measured default has none.
    return [args.iolab, "run", "--target", str(target.path), "--size", str(size), "--rw", "randread",
            "--bs", "4k", "--qd", str(qd), "--workers", str(workers), "--engine", engine,
            "--runtime", f"{args.runtime}s", "--ramp", "0s", "--json", "--quiet"] + list(extra) + \
        shlex.split(args.iolab_extra)


def fio_cmd(args, target, engine, qd, size, extra=(), numjobs=1):
    cmd = [args.fio, "--name=x"]
    if target is not None:
        cmd.append(f"--filename={target.path}")
    cmd += [f"--size={size}", "--rw=randread", "--bs=4k", f"--iodepth={qd}", f"--numjobs={numjobs}",
            f"--ioengine={engine}"]
    if engine != "null":
        cmd.append("--direct=1")
    cmd += ["--time_based", f"--runtime={args.runtime}", "--output-format=json", "--group_reporting"]
    return cmd + list(extra)


# t/io_uring's flags per engine, besides -d (QD), -s/-c (batches), -p0 (no polled I/O: the loop and
# zram devices have no poll queues), -t1 (it times every I/O, as iolab and fio do; TSC-based, no -T
# needed: its percentiles are then in TSC ticks) and -r (runtime). io_uring: fixed buffers,
# registered files and a registered ring, its defaults, written out; aio has none of them.
TIO_MODES = {"uring": ["-B1", "-F1", "-X1"], "aio": ["-a1", "-B0", "-F0"], "psync": ["-S1"]}


@dataclass
class Ref:
    """The limit a block shows next to fio: t/io_uring's command, or why there is none."""
    cmd: list = None
    unavailable: str = None


def t_io_uring_cmd(args, target, mode, qd, submit=1, complete=1):
    cmd = [args.t_io_uring, "-b4096", f"-d{qd}"]
    if mode != "psync":  # preadv2 does one I/O per call
        cmd += [f"-s{submit}", f"-c{complete}"]
    return cmd + TIO_MODES[mode] + ["-p0", "-t1", "-r", str(args.runtime), str(target.path)]


def t_io_uring_has_aio(path):
    """False when the fio tree t/io_uring was built in was configured without libaio: -a1 then
    crashes (fio 3.33 starts no thread and joins it). Unknown trees are tried."""
    config = Path(path).resolve().parent.parent / "config-host.h"
    return "#define CONFIG_LIBAIO" in config.read_text() if config.exists() else True


def t_io_uring_refusal(target):
    """t/io_uring has no --size: it reads the whole device or file. Its figures compare only when
    that is exactly the tested region and fully written (a zram device with unwritten pages
    reads about 3x faster). Returns why it must not run here, or None."""
    if target.is_device:
        actual = int((sysfs_dir(os.stat(target.path).st_rdev) / "size").read_text()) * 512
    else:
        actual = target.path.stat().st_size
    if actual > target.size:
        return (f"{target.path} holds {human_size(actual)}, more than the {human_size(target.size)} tested, and "
                "t/io_uring reads the whole device or file (it has no --size)")
    if not target.created:
        return (f"{target.path} was not made and filled by this script: t/io_uring reads all of it, and unwritten "
                "parts (zram pages never written) read faster and mean nothing")
    return None


def t_io_uring_ref(args, target, mode, qd, submit=1, complete=1):
    if not args.t_io_uring:
        return Ref(unavailable=T_IO_URING_NOT_BUILT)
    if args.runtime < 2:
        return Ref(unavailable="t/io_uring needs --runtime 2 or more (it prints runtime - 1 one-second lines)")
    refusal = t_io_uring_refusal(target)
    if refusal:
        return Ref(unavailable=f"t/io_uring not run: {refusal}")
    if mode == "aio" and not t_io_uring_has_aio(args.t_io_uring):
        return Ref(unavailable="t/io_uring aio unavailable: built without libaio's headers (apt-get install "
                               "libaio-dev, remove target/bench-scratch/fio-3.33, run bench/build_t_io_uring.sh)")
    return Ref(cmd=t_io_uring_cmd(args, target, mode, qd, submit, complete))


def size_arg(args, target):
    # A device may be smaller than --size: then both tools get its exact byte size.
    return args.size if target.size == parse_size(args.size) else str(target.size)


def wait_for_quiet(args):
    """Rests --pause seconds, then, if the machine was busy during the rest (another user's build
    or tests on a 2-CPU VM), waits for a quiet second, up to --quiet-wait seconds."""
    limit = args.busy_limit * os.cpu_count()
    busy0 = machine_busy_s()
    time.sleep(args.pause)
    busy = (machine_busy_s() - busy0) / args.pause if args.pause else 0.0
    waited = 0
    while busy > limit and waited < args.quiet_wait:
        busy0 = machine_busy_s()
        time.sleep(1)
        waited += 1
        busy = machine_busy_s() - busy0
    if waited:
        state = "quiet" if busy <= limit else f"still busy ({busy:.2f} CPUs)"
        say(f"  (machine busy before this run: waited {waited} s; now {state})")


def run_pair(args, label, i, iolab_c, fio_c, cwd):
    """Pair number i (from 0): iolab first when i is even."""
    order = ["iolab", "fio"] if i % 2 == 0 else ["fio", "iolab"]
    got = {}
    for n, tool in enumerate(order, 1):
        if args.pause:
            wait_for_quiet(args)
        if tool == "iolab":
            got[tool] = run_iolab(iolab_c, cwd, n)
        else:
            got[tool] = run_fio(fio_c, cwd, n)
        if args.save_raw:
            raw_dir = Path(args.save_raw)
            raw_dir.mkdir(parents=True, exist_ok=True)
            (raw_dir / f"{label}.{i + 1}.{tool}.json").write_text(json.dumps(got[tool].raw, indent=1))
    return got["iolab"], got["fio"]


def run_pairs(args, label, iolab_c, fio_c, cwd):
    """Runs the pair --repeat times, alternating which tool goes first. Returns a list of
    (iolab Result, fio Result)."""
    return [run_pair(args, label, i, iolab_c, fio_c, cwd) for i in range(args.repeat)]


COMMANDS = []  # (block title, target, [(tool, command)]) for the summary
SHOWN_AS = {}  # the iolab snapshot -> the binary it copies, so printed commands can be rerun


def shown(cmd):
    return shlex.join([SHOWN_AS.get(cmd[0], cmd[0])] + list(cmd[1:]))


def print_header(title, target, cmds):
    COMMANDS.append((title.split(":")[0], target, cmds))
    say()
    say("=" * 100)
    say(f"[{title}]")
    say(f"target: {target.describe()}")
    if target.layout_cmd:
        say(f"  layout (once, before): $ {shlex.join(target.layout_cmd)}")
    for cmd in target.setup_cmds:
        say(f"  made by this script (once, before): $ {shlex.join(cmd)}")
    for note in target.notes:
        say(f"  {note}")
    for name, cmd in cmds:
        say(f"  {name}: $ {shown(cmd)}")
    say(f"  repeats: {args_global.repeat}, alternating order (run 1: iolab first); CPU = wait4 rusage of the child")


def run_label(k, r):
    return f"{k + 1} ({({1: '1st', 2: '2nd'}).get(r.order, '3rd')})"


# ----------------------------------------------------------------------------------------------
# Scenarios. Each returns summary rows: (scenario, metric, iolab, fio, ratio, goal, verdict).


def scenario_null(args, ctx):
    target = ctx.null_target()
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "null", 32, size)
    fc = fio_cmd(args, None, "null", 32, size)
    print_header("null: 4 KiB randread, QD 32, 1 worker, no I/O (engine overhead)", target,
                 [("iolab", ic), ("fio", fc)])
    say("  (fio's null engine takes no file; iolab still opens its --target but reads nothing)")
    pairs = run_pairs(args, "null", ic, fc, ctx.cwd)
    rows = []
    for k, (a, b) in enumerate(pairs):
        for r in (a, b):
            rows.append([run_label(k, r), r.tool, fmt_num(r.ios), fmt_num(r.iops), f"{r.cpu_s:.2f}",
                         f"{r.user_s:.2f}/{r.sys_s:.2f}", f"{r.self_cpu_s:.2f}", f"{r.wall_s:.2f}",
                         fmt_num(r.ios_per_cpu_s)])
        rows.append(["", "ratio", "", "", "", "", "", "", fmt_ratio(ratio(a.ios_per_cpu_s, b.ios_per_cpu_s))])
    ia = median([a.ios_per_cpu_s for a, _ in pairs])
    fb = median([b.ios_per_cpu_s for _, b in pairs])
    pair_ratios = [ratio(a.ios_per_cpu_s, b.ios_per_cpu_s) for a, b in pairs]
    rows.append(["median", "iolab", fmt_num(median([a.ios for a, _ in pairs])), fmt_num(median([a.iops for a, _ in pairs])),
                 f"{median([a.cpu_s for a, _ in pairs]):.2f}", "", "", "", fmt_num(ia)])
    rows.append(["median", "fio", fmt_num(median([b.ios for _, b in pairs])), fmt_num(median([b.iops for _, b in pairs])),
                 f"{median([b.cpu_s for _, b in pairs]):.2f}", "", "", "", fmt_num(fb)])
    say()
    say(table(["run", "tool", "I/Os", "IOPS", "CPU s", "usr/sys s", "self-rep CPU s", "wall s", "I/Os per CPU-s"], rows))
    r = ratio(ia, fb)
    verdict = "MET" if r is not None and r >= GOAL_NULL_IOS_PER_CPU else "NOT MET"
    say()
    say(f"  I/Os per CPU-second: iolab {fmt_num(ia)}, fio {fmt_num(fb)}; ratio iolab/fio = {fmt_ratio(r)} "
        f"(per-pair {range_text(pair_ratios)}); goal >= {GOAL_NULL_IOS_PER_CPU:.1f}x: {verdict}")
    return [("null", "I/Os per CPU-second", fmt_num(ia), fmt_num(fb), fmt_ratio(r), f">= {GOAL_NULL_IOS_PER_CPU:.1f}x", verdict)]


def range_text(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}x"
    return f"{min(values):.2f}x..{max(values):.2f}x"


def scenario_randread_file(args, ctx):
    target = ctx.io_target()
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "uring", 32, size)
    fc = fio_cmd(args, target, "io_uring", 32, size)
    print_header("randread-file: 4 KiB random read, QD 32, 1 worker, O_DIRECT, iolab uring vs fio io_uring",
                 target, [("iolab", ic), ("fio", fc)])
    say("  (fio mean = lat_ns.mean, submission to completion; fio p99 = clat_ns, fio's default percentiles)")
    pairs = run_pairs(args, "randread-file", ic, fc, ctx.cwd)
    rows = []
    for k, (a, b) in enumerate(pairs):
        for r in (a, b):
            rows.append([run_label(k, r), r.tool, fmt_num(r.iops), fmt_us(r.mean_ns), fmt_us(r.p99_ns),
                         f"{r.cpu_s:.2f}", f"{r.user_s:.2f}/{r.sys_s:.2f}", f"{r.self_cpu_s:.2f}",
                         fmt_f(r.cpu_s_per_mio)])
        rows.append(["", "ratio", fmt_ratio(ratio(a.iops, b.iops)), "", "", "", "", "",
                     fmt_ratio(ratio(a.cpu_s_per_mio, b.cpu_s_per_mio))])
    med = {}
    for idx, tool in ((0, "iolab"), (1, "fio")):
        rs = [p[idx] for p in pairs]
        med[tool] = dict(
            iops=median([r.iops for r in rs]), mean=median([r.mean_ns for r in rs]), p99=median([r.p99_ns for r in rs]),
            cpu=median([r.cpu_s for r in rs]), cpm=median([r.cpu_s_per_mio for r in rs]),
            iops_spread=spread([r.iops for r in rs]),
        )
        m = med[tool]
        rows.append(["median", tool, fmt_num(m["iops"]), fmt_us(m["mean"]), fmt_us(m["p99"]), f"{m['cpu']:.2f}", "", "",
                     fmt_f(m['cpm'])])
    say()
    say(table(["run", "tool", "IOPS", "mean us", "p99 us", "CPU s", "usr/sys s", "self-rep CPU s", "CPU s per M I/O"], rows))
    iops_r = ratio(med["iolab"]["iops"], med["fio"]["iops"])
    cpu_r = ratio(med["iolab"]["cpm"], med["fio"]["cpm"])
    noise = max([s for s in (med["iolab"]["iops_spread"], med["fio"]["iops_spread"]) if s is not None], default=None)
    pair_iops = [ratio(a.iops, b.iops) for a, b in pairs]
    iops_verdict = noise_verdict(iops_r, GOAL_IOPS_RATIO, True, noise, pair_iops)
    cpu_verdict = "MET" if cpu_r is not None and cpu_r <= GOAL_CPU_PER_IO_RATIO else "NOT MET"
    say()
    say(f"  IOPS ratio iolab/fio = {fmt_ratio(iops_r)} (per-pair {range_text([ratio(a.iops, b.iops) for a, b in pairs])}, "
        f"run-to-run IOPS spread iolab {fmt_spread(med['iolab']['iops_spread'])}, fio {fmt_spread(med['fio']['iops_spread'])}); "
        f"goal >= {GOAL_IOPS_RATIO:.2f} within noise: {iops_verdict}")
    say(f"  CPU per I/O ratio iolab/fio = {fmt_ratio(cpu_r)} "
        f"(per-pair {range_text([ratio(a.cpu_s_per_mio, b.cpu_s_per_mio) for a, b in pairs])}); "
        f"goal <= {GOAL_CPU_PER_IO_RATIO:.2f}: {cpu_verdict}")
    return [
        ("randread-file", "IOPS", fmt_num(med["iolab"]["iops"]), fmt_num(med["fio"]["iops"]), fmt_ratio(iops_r),
         f">= {GOAL_IOPS_RATIO:.2f}x (noise)", iops_verdict),
        ("randread-file", "CPU s per M I/O", fmt_f(med['iolab']['cpm']), fmt_f(med['fio']['cpm']), fmt_ratio(cpu_r),
         f"<= {GOAL_CPU_PER_IO_RATIO:.2f}x", cpu_verdict),
        ("randread-file", "mean latency us", fmt_us(med["iolab"]["mean"]), fmt_us(med["fio"]["mean"]),
         fmt_ratio(ratio(med["iolab"]["mean"], med["fio"]["mean"])), "", ""),
        ("randread-file", "p99 latency us", fmt_us(med["iolab"]["p99"]), fmt_us(med["fio"]["p99"]),
         fmt_ratio(ratio(med["iolab"]["p99"], med["fio"]["p99"])), "", ""),
    ]


def fmt_spread(s):
    return "n/a" if s is None else f"{s * 100:.1f}%"


def noise_verdict(r, limit, higher_is_better, noise, pair_ratios):
    """A goal on a ratio that may be met "within noise": when it misses the limit by no more than
    the larger run-to-run spread of the two tools, unless it misses in every pair (3 or more),
    whichever tool ran first: that is a systematic difference, not noise."""
    if r is None:
        return "-"
    if (r >= limit) if higher_is_better else (r <= limit):
        return "MET"
    if noise is None:
        return "NOT MET (noise unknown: --repeat >= 2)"
    pair_ratios = [x for x in pair_ratios if x is not None]
    if len(pair_ratios) >= 3 and all((x < limit) if higher_is_better else (x > limit) for x in pair_ratios):
        return f"NOT MET ({'below' if higher_is_better else 'above'} fio in all {len(pair_ratios)} pairs)"
    if (r >= limit - noise) if higher_is_better else (r <= limit + noise):
        return f"MET within noise ({noise * 100:.1f}%)"
    return f"NOT MET (noise {noise * 100:.1f}%)"


def agreement_block(args, ctx, label, title, target, ic, fc):
    print_header(title, target, [("iolab", ic), ("fio", fc)])
    say("  (latency = submission to completion for both: fio runs with --lat_percentiles=1 and lat_ns is used;")
    say("   fio runs with --norandommap so both draw offsets uniformly with replacement, as iolab does:")
    say("   with fio's default random map, no block repeats within a pass, which changes hit rates in")
    say("   any cache below the target, such as the host's cache under a VM disk)")
    pairs = run_pairs(args, label, ic, fc, ctx.cwd)
    rows = []
    for k, (a, b) in enumerate(pairs):
        for r in (a, b):
            rows.append([run_label(k, r), r.tool, fmt_num(r.iops), fmt_us(r.mean_ns), fmt_us(r.p50_ns), fmt_us(r.p99_ns),
                         fmt_f(r.cpu_s_per_mio)])
    metrics = (("IOPS", "iops", fmt_num), ("mean latency us", "mean_ns", fmt_us), ("p50 latency us", "p50_ns", fmt_us),
               ("p99 latency us", "p99_ns", fmt_us))
    med = {t: {attr: median([getattr(p[i], attr) for p in pairs]) for _, attr, _ in metrics} for i, t in enumerate(("iolab", "fio"))}
    for i, tool in enumerate(("iolab", "fio")):
        cpm = median([p[i].cpu_s_per_mio for p in pairs])
        rows.append(["median", tool] + [f(med[tool][attr]) for _, attr, f in metrics] + [fmt_f(cpm)])
    say()
    say(table(["run", "tool", "IOPS", "mean us", "p50 us", "p99 us", "CPU s per M I/O"], rows))
    say()
    lines = []
    summary = []
    for name, attr, f in metrics:
        d = rel_diff(med["iolab"][attr], med["fio"][attr])
        pair_d = [rel_diff(getattr(a, attr), getattr(b, attr)) for a, b in pairs]
        pair_d = [x for x in pair_d if x is not None]
        s_i = spread([getattr(p[0], attr) for p in pairs])
        s_f = spread([getattr(p[1], attr) for p in pairs])
        noise = max([s for s in (s_i, s_f) if s is not None], default=None)
        if d is None:
            verdict = "-"
        elif noise is None:
            verdict = "noise unknown (--repeat >= 2)"
        else:
            verdict = "within noise" if abs(d) <= noise else "DIFFERS beyond noise"
        if len(pair_d) >= 3 and (all(x > 0 for x in pair_d) or all(x < 0 for x in pair_d)):
            # Same sign in every pair: possibly a systematic difference hiding in the noise.
            verdict += f"; iolab {'higher' if pair_d[0] > 0 else 'lower'} in all {len(pair_d)} pairs"
        per_pair = f"{fmt_pct(min(pair_d))}..{fmt_pct(max(pair_d))}" if len(pair_d) > 1 else "-"
        lines.append([name, f(med["iolab"][attr]), f(med["fio"][attr]), fmt_pct(d), per_pair, fmt_spread(s_i),
                      fmt_spread(s_f), verdict])
        summary.append((label, name, f(med["iolab"][attr]), f(med["fio"][attr]), fmt_pct(d), "agree within noise", verdict))
    say(table(["metric (medians)", "iolab", "fio", "iolab vs fio", "per pair", "iolab spread", "fio spread", "verdict"], lines))
    return summary


def scenario_agreement(args, ctx):
    target = ctx.io_target()
    size = size_arg(args, target)
    out = []
    for qd in (1, 4):
        ic = iolab_cmd(args, target, "uring", qd, size)
        fc = fio_cmd(args, target, "io_uring", qd, size, extra=["--lat_percentiles=1", "--norandommap"])
        out += agreement_block(args, ctx, f"agreement QD{qd}",
                               f"agreement QD {qd}: 4 KiB random read, 1 worker, O_DIRECT, iolab uring vs fio io_uring",
                               target, ic, fc)
    return out


def scenario_psync(args, ctx):
    target = ctx.io_target()
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "psync", 1, size)
    fc = fio_cmd(args, target, "psync", 1, size, extra=["--lat_percentiles=1", "--norandommap"])
    return agreement_block(args, ctx, "psync QD1",
                           "psync: 4 KiB random read, QD 1 (one thread), O_DIRECT, iolab psync vs fio psync",
                           target, ic, fc)


# ----------------------------------------------------------------------------------------------
# Speed goals of issue 3: CPU per I/O against fio's best io_uring configuration, I/Os per
# CPU-second engine by engine on zram, QD 1 latency, two workers. One block shape for all.


@dataclass
class Goal:
    metric: str  # a key of METRICS
    limit: float  # on the ratio iolab/fio
    iops_too: bool = False  # "... at equal or higher IOPS": IOPS ratio >= 1.0 (within noise) as well


# metric -> (name, figure of a Result, higher is better, format)
METRICS = {
    "cpu_per_io": ("CPU s per M I/O", lambda r: r.cpu_s_per_mio, False, fmt_f),
    "ios_per_cpu": ("I/Os per CPU-s", lambda r: r.ios_per_cpu_s, True, fmt_num),
    "mean_latency": ("mean latency us", lambda r: r.mean_ns, False, fmt_us),
    "iops": ("IOPS", lambda r: r.iops, True, fmt_num),
}


def goal_text(g):
    name, _, higher, _ = METRICS[g.metric]
    return f"{'>=' if higher else '<='} {g.limit:.2f}x"


def disturbed_runs(args, pairs):
    """Runs during which the rest of the machine used clearly more CPU than in the block's other
    runs (by a tenth of the machine over the run): another user's job, most likely. Returns
    {(pair index, tool): (other CPU s, median other CPU s)}."""
    others = [r.other_cpu_s for p in pairs for r in p if r.other_cpu_s is not None]
    if len(others) < 3:
        return {}
    typical = median(others)
    margin = 0.1 * args.runtime * os.cpu_count()
    return {(k, r.tool): (r.other_cpu_s, typical) for k, p in enumerate(pairs) for r in p
            if r.other_cpu_s is not None and r.other_cpu_s > typical + margin}


def noisy_reason(args, pairs, goals):
    """Why the goal figures of these pairs are not settled yet, or None: a run was disturbed by
    other work on the machine, a goal's per-pair ratios fall on both sides of its limit, or
    either tool's figure varies by more than --noisy."""
    if len(pairs) < 2:
        return None
    bad = disturbed_runs(args, pairs)
    if bad:
        (k, tool), (other, typical) = next(iter(bad.items()))
        return (f"{len(bad)} run(s) disturbed, e.g. pair {k + 1} {tool}: the rest of the machine used "
                f"{other:.2f} CPU s (typical here {typical:.2f})")
    for g in goals:
        name, fig, _, _ = METRICS[g.metric]
        pr = [ratio(fig(a), fig(b)) for a, b in pairs]
        pr = [x for x in pr if x is not None]
        _, _, higher, _ = METRICS[g.metric]
        met = [(x >= g.limit) if higher else (x <= g.limit) for x in pr]
        if any(met) and not all(met):
            return f"{name} ratio per pair {range_text(pr)} on both sides of {g.limit:.2f}x"
        for idx, tool in ((0, "iolab"), (1, "fio")):
            s = spread([fig(p[idx]) for p in pairs])
            if s is not None and s > args.noisy:
                return f"{tool} {name} varies {s * 100:.1f}% run to run (> {args.noisy * 100:.0f}%)"
    return None


def run_ref(args, label, i, ref, cwd):
    """One t/io_uring run after pair i; on failure, says why and drops the limit for the block
    (the comparison itself goes on)."""
    if args.pause:
        wait_for_quiet(args)
    try:
        r = run_t_io_uring(ref.cmd, cwd, 3, args.runtime)
    except ToolFailed as e:
        say(f"  !! the limit's run failed (the comparison goes on without it): {e}")
        ref.unavailable, ref.cmd = "t/io_uring failed (see above)", None
        return None
    if args.save_raw:
        raw_dir = Path(args.save_raw)
        raw_dir.mkdir(parents=True, exist_ok=True)
        (raw_dir / f"{label}.{i + 1}.t_io_uring.txt").write_text(r.raw["stdout"])
    return r


def t_io_uring_note(args):
    return (f"its I/O count: the sum of its per-second IOPS lines (it prints {args.runtime - 1} of them: not its last "
            f"second) plus the last second at their mean rate, i.e. its mean IOPS x {args.runtime} s")


def speed_block(args, ctx, label, title, target, ic, fc, goals, remarks=(), ref=None):
    """Runs --repeat pairs, more (up to --max-repeat) while the goal figures are noisy, prints
    every run and the medians, and returns the summary rows. With ref (a Ref), t/io_uring runs
    third after every pair and is shown as the limit, with its ratio to fio; no goal on it."""
    cmds = [("iolab", ic), ("fio", fc)]
    if ref is not None and ref.cmd:
        cmds.append(("limit (t/io_uring)", ref.cmd))
    print_header(title, target, cmds)
    for line in remarks:
        say(f"  ({line})")
    if ref is not None:
        say(f"  (the limit, t/io_uring, runs third in every pair; {t_io_uring_note(args)})" if ref.cmd
            else f"  (the limit: {ref.unavailable})")
    pairs, refs = [], []

    def one_pair():
        pairs.append(run_pair(args, label, len(pairs), ic, fc, ctx.cwd))
        refs.append(run_ref(args, label, len(pairs) - 1, ref, ctx.cwd) if ref is not None and ref.cmd else None)

    for _ in range(args.repeat):
        one_pair()
    while len(pairs) < args.max_repeat:
        reason = noisy_reason(args, pairs, goals)
        if reason is None:
            break
        say(f"  noisy: {reason}; pair {len(pairs) + 1} of at most {args.max_repeat}")
        one_pair()
    cols = ["iops", "mean_latency", "cpu_per_io", "ios_per_cpu"]
    bad = disturbed_runs(args, pairs)
    rows = []
    for k, (a, b) in enumerate(pairs):
        for r in (a, b):
            rows.append([run_label(k, r), r.tool, fmt_num(r.iops), fmt_us(r.mean_ns), fmt_us(r.p99_ns),
                         f"{r.cpu_s:.2f}", f"{r.user_s:.2f}/{r.sys_s:.2f}", f"{r.self_cpu_s:.2f}",
                         fmt_f(r.other_cpu_s) + ("*" if (k, r.tool) in bad else ""),
                         fmt_f(r.cpu_s_per_mio), fmt_num(r.ios_per_cpu_s)])
        rr = {m: fmt_ratio(ratio(METRICS[m][1](a), METRICS[m][1](b))) for m in cols}
        rows.append(["", "ratio", rr["iops"], rr["mean_latency"], "", "", "", "", "", rr["cpu_per_io"], rr["ios_per_cpu"]])
        t = refs[k]
        if t is not None:
            rows.append([run_label(k, t), t.tool, fmt_num(t.iops), "-", "-", f"{t.cpu_s:.2f}",
                         f"{t.user_s:.2f}/{t.sys_s:.2f}", "-", fmt_f(t.other_cpu_s), fmt_f(t.cpu_s_per_mio),
                         fmt_num(t.ios_per_cpu_s)])
            tr = {m: fmt_ratio(ratio(METRICS[m][1](t), METRICS[m][1](b))) for m in cols}
            rows.append(["", "t/io_uring/fio", tr["iops"], "", "", "", "", "", "", tr["cpu_per_io"], tr["ios_per_cpu"]])
    med = {}
    for idx, tool in ((0, "iolab"), (1, "fio")):
        rs = [p[idx] for p in pairs]
        m = {key: median([METRICS[key][1](r) for r in rs]) for key in METRICS}
        m.update(p99=median([r.p99_ns for r in rs]), cpu=median([r.cpu_s for r in rs]),
                 user=median([r.user_s for r in rs]), sys=median([r.sys_s for r in rs]),
                 self=median([r.self_cpu_s for r in rs]), other=median([r.other_cpu_s for r in rs]))
        med[tool] = m
        rows.append(["median", tool, fmt_num(m["iops"]), fmt_us(m["mean_latency"]), fmt_us(m["p99"]), fmt_f(m["cpu"]),
                     f"{m['user']:.2f}/{m['sys']:.2f}", fmt_f(m["self"]), fmt_f(m["other"]),
                     fmt_f(m["cpu_per_io"]), fmt_num(m["ios_per_cpu"])])
    limit_runs = [t for t in refs if t is not None]
    if limit_runs:
        m = {key: median([METRICS[key][1](t) for t in limit_runs]) for key in ("iops", "cpu_per_io", "ios_per_cpu")}
        m.update(cpu=median([t.cpu_s for t in limit_runs]), other=median([t.other_cpu_s for t in limit_runs]))
        med["t/io_uring"] = m
        rows.append(["median", "t/io_uring", fmt_num(m["iops"]), "-", "-", fmt_f(m["cpu"]), "", "-", fmt_f(m["other"]),
                     fmt_f(m["cpu_per_io"]), fmt_num(m["ios_per_cpu"])])
    say()
    say(table(["run", "tool", "IOPS", "mean us", "p99 us", "CPU s", "usr/sys s", "self-rep CPU s", "other CPU s",
               "CPU s per M I/O", "I/Os per CPU-s"], rows))
    say("  (CPU s = wait4 rusage of the tool; self-rep = the tool's own figure; other = the rest of the machine")
    say("   meanwhile: kernel workers serving the device (loop), interrupts, and anything else running)")
    if bad:
        say(f"  (* = disturbed: the rest of the machine used more than {0.1 * args.runtime * os.cpu_count():.1f} CPU s "
            "above this block's median; kept in the medians, which more pairs make robust)")
    say()
    out = []

    def judged(metric, limit):
        name, fig, higher, f = METRICS[metric]
        r = ratio(med["iolab"][metric], med["fio"][metric])
        pr = [ratio(fig(a), fig(b)) for a, b in pairs]
        s_i, s_f = spread([fig(a) for a, _ in pairs]), spread([fig(b) for _, b in pairs])
        noise = max([x for x in (s_i, s_f) if x is not None], default=None)
        if metric in ("iops", "mean_latency"):  # the two tools may be equal: met within noise
            verdict = noise_verdict(r, limit, higher, noise, pr)
        else:
            verdict = "-" if r is None else "MET" if ((r >= limit) if higher else (r <= limit)) else "NOT MET"
        say(f"  {name}: iolab {f(med['iolab'][metric])}, fio {f(med['fio'][metric])}; ratio iolab/fio {fmt_ratio(r)} "
            f"(per pair {range_text(pr)}; spread iolab {fmt_spread(s_i)}, fio {fmt_spread(s_f)}); "
            f"goal {'>=' if higher else '<='} {limit:.2f}x: {verdict}")
        return (label, name, f(med["iolab"][metric]), f(med["fio"][metric]), fmt_ratio(r),
                f"{'>=' if higher else '<='} {limit:.2f}x", verdict)

    for g in goals:
        row = judged(g.metric, g.limit)
        if g.iops_too:
            iops_row = judged("iops", GOAL_IOPS_RATIO)
            both = row[-1].startswith("MET") and iops_row[-1].startswith("MET")
            say(f"  goal ({METRICS[g.metric][0]} {goal_text(g)} at equal or higher IOPS): {'MET' if both else 'NOT MET'}")
            iops_row = iops_row[:5] + (">= 1.00x (noise)", iops_row[6])
            row = row[:6] + (f"{row[6]}; with IOPS: {'MET' if both else 'NOT MET'}",)
            out += [iops_row, row]
        else:
            out.append(row)
    if len(pairs) > args.repeat:  # noisy: more pairs than asked for; the summary says so
        out = [row[:6] + (f"{row[6]} [{len(pairs)} pairs]",) for row in out]
    if ref is not None:
        out.append(limit_line(label, goals, pairs, refs, med, ref))
    return out


def limit_line(label, goals, pairs, refs, med, ref):
    """Prints what the limit (t/io_uring) reaches against fio in this block, on the block's goal
    metric (CPU per I/O or I/Os per CPU-second); returns its summary row, without a verdict."""
    metric = goals[0].metric if goals[0].metric in ("cpu_per_io", "ios_per_cpu") else "cpu_per_io"
    name, fig, _, f = METRICS[metric]
    if "t/io_uring" not in med:
        say(f"  the limit (t/io_uring): {ref.unavailable}")
        return (label, f"limit: t/io_uring/fio {name}", "-", "-", "-", "(reference)", ref.unavailable)
    t, fm = med["t/io_uring"], med["fio"]
    r = ratio(t[metric], fm[metric])
    pr = [ratio(fig(x), fig(b)) for (_, b), x in zip(pairs, refs) if x is not None]
    say(f"  the limit (t/io_uring): {name} {f(t[metric])}, fio {f(fm[metric])}: t/io_uring/fio {fmt_ratio(r)} here "
        f"(per pair {range_text(pr)}), at {fmt_num(t['iops'])} IOPS ({fmt_ratio(ratio(t['iops'], fm['iops']))} of fio's); "
        f"iolab/t/io_uring {fmt_ratio(ratio(med['iolab'][metric], t[metric]))}")
    return (label, f"limit: t/io_uring/fio {name}", f"t/io_uring {f(t[metric])}", f(fm[metric]), fmt_ratio(r),
            "(reference)", "")


# fio's io_uring options that the issue names, then batching variants; the one with the lowest
# CPU per I/O in one run each is fio's "best configuration". Options that switch off latency
# measurement (gtod_reduce, disable_lat) are not candidates: iolab times every I/O.
FIO_URING_BASE = ["--registerfiles", "--fixedbufs", "--hipri=0", "--sqthread_poll=0"]


def fio_batch(qd, n, submit=None):
    return [f"--iodepth_batch_submit={submit or n}", f"--iodepth_batch_complete_min={n}",
            f"--iodepth_batch_complete_max={qd}"]


# Batches tried on both tools: (submitted per call, waited for per call). The last refills the
# whole queue at once and waits for half of it.
def batch_variants(qd):
    return [(n, n) for n in (8, 16, qd)] + [(qd, qd // 2)]


def batch_name(submit, wait):
    return f"batches of {wait}" if submit == wait else f"submit {submit}, wait for {wait}"


def lowest_cpu_variant(args, ctx, label, tool, target, variants, run):
    """Runs each (name, options) of `variants` once with `run(options)`, prints them, and returns
    the list of (name, options, result) measured; the caller picks the lowest CPU per I/O."""
    say()
    say("=" * 100)
    say(f"[{label}: {tool} io_uring variants, one run each, on {target.path}; lowest CPU per I/O is used]")
    results = []
    for name, opts in variants:
        if args.pause:
            wait_for_quiet(args)
        r = run(opts)
        results.append((name, opts, r))
        say(f"  {name:40s} {fmt_num(r.iops):>7s} IOPS  {r.cpu_s_per_mio:6.2f} CPU s per M I/O  "
            f"(usr/sys {r.user_s:.2f}/{r.sys_s:.2f}, other {fmt_f(r.other_cpu_s)})  $ {shlex.join(opts) or '(none)'}")
    return results


def chosen(ctx, key, label, tool, target, results):
    best = min(results, key=lambda x: x[2].cpu_s_per_mio)
    desc = f"{tool} best configuration here: {best[0]} ({shlex.join(best[1]) or 'no extra options'})"
    say(f"  -> {desc}")
    ctx.best[key] = (best[1], desc)
    ctx.probes.append((f"{label} ({tool})", target, [(n, r.cpu_s_per_mio, r.iops) for n, _, r in results], desc))
    return ctx.best[key]


def fio_best_uring(args, ctx, target, size, qd, label):
    """fio io_uring options with the lowest CPU per I/O on this target: given with
    --fio-uring-opts, or measured once here (one run per variant) and reused for the target."""
    if args.fio_uring_opts is not None:
        opts = shlex.split(args.fio_uring_opts)
        return opts, f"given with --fio-uring-opts: {shlex.join(opts)}"
    key = ("fio", str(target.path), qd)
    if key in ctx.best:
        return ctx.best[key]
    variants = [("plain", [])]
    variants.append(("registered files + fixed buffers", FIO_URING_BASE))
    for submit, wait in batch_variants(qd):
        variants.append((f"... + {batch_name(submit, wait)}", FIO_URING_BASE + fio_batch(qd, wait, submit)))

    def run(opts):
        return run_fio(fio_cmd(args, target, "io_uring", qd, size, extra=opts), ctx.cwd, 1)

    results = lowest_cpu_variant(args, ctx, label, "fio", target, variants, run)
    best = min(results, key=lambda x: x[2].cpu_s_per_mio)
    # fio's random map (no block read twice per pass) costs CPU; iolab has none: try without it.
    extra = [(f"{best[0]} + --norandommap", best[1] + ["--norandommap"])]
    results += [(n, o, run(o)) for n, o in extra]
    say(f"  {extra[0][0]:40s} {fmt_num(results[-1][2].iops):>7s} IOPS  {results[-1][2].cpu_s_per_mio:6.2f} CPU s per M I/O")
    return chosen(ctx, key, label, "fio", target, results)


def iolab_best_uring(args, ctx, target, size, qd, label):
    """iolab's io_uring batching chosen exactly as fio's is: the same batches (batch_variants),
    one run each, the lowest CPU per I/O. iolab's defaults (1 and 1) are fio's."""
    key = ("iolab", str(target.path), qd)
    if key in ctx.best:
        return ctx.best[key]
    variants = [("defaults", [])]
    for submit, wait in batch_variants(qd):
        variants.append((batch_name(submit, wait), ["--submit-batch", str(submit), "--complete-batch", str(wait)]))

    def run(opts):
        return run_iolab(iolab_cmd(args, target, "uring", qd, size, extra=opts), ctx.cwd, 1)

    results = lowest_cpu_variant(args, ctx, label, "iolab", target, variants, run)
    return chosen(ctx, key, label, "iolab", target, results)


def t_io_uring_best(args, ctx, target, qd, label):
    """t/io_uring's batching with the lowest CPU per I/O on this target, from the batches both
    tools are searched over (batch_variants), one run each: a Ref, shown as the limit."""
    ref = t_io_uring_ref(args, target, "uring", qd)
    if ref.cmd is None:
        say(f"\n  [{label}: the limit: {ref.unavailable}]")
        return ref
    key = ("t/io_uring", str(target.path), qd)
    if key not in ctx.best:
        variants = [(batch_name(submit, wait), [f"-s{submit}", f"-c{wait}"]) for submit, wait in batch_variants(qd)]

        def run(opts):
            submit, wait = int(opts[0][2:]), int(opts[1][2:])
            return run_t_io_uring(t_io_uring_cmd(args, target, "uring", qd, submit, wait), ctx.cwd, 1, args.runtime)

        try:
            results = lowest_cpu_variant(args, ctx, label, "t/io_uring", target, variants, run)
        except ToolFailed as e:
            say(f"  !! t/io_uring failed: {e}")
            return Ref(unavailable="t/io_uring failed (see above)")
        say(f"  ({t_io_uring_note(args)})")
        chosen(ctx, key, label, "t/io_uring", target, results)
    opts, _ = ctx.best[key]
    return t_io_uring_ref(args, target, "uring", qd, int(opts[0][2:]), int(opts[1][2:]))


def scenario_loop(args, ctx):
    # Issue 3's words: "process CPU per I/O at most 0.75x fio io_uring's (t/io_uring reaches
    # 0.68x)": fio io_uring as it comes, against iolab as it comes; loop-best compares the best.
    target = ctx.device_target("loop")
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "uring", 32, size)
    fc = fio_cmd(args, target, "io_uring", 32, size)
    return speed_block(args, ctx, "loop", "loop: 4 KiB random read, QD 32, 1 worker, loop device with direct I/O "
                       "over tmpfs, iolab uring vs fio io_uring, both with their defaults", target, ic, fc,
                       [Goal("cpu_per_io", GOAL_LOOP_CPU_PER_IO, iops_too=True)],
                       ["both tools' defaults: submit one I/O and wait for one per call; fio without extra options",
                        "the limit, t/io_uring -s1 -c1, also submits and reaps one at a time; issue 3: it reaches "
                        "0.68x of fio's CPU per I/O on such a device"],
                       ref=t_io_uring_ref(args, target, "uring", 32))


def scenario_loop_best(args, ctx):
    target = ctx.device_target("loop")
    size = size_arg(args, target)
    best, desc = fio_best_uring(args, ctx, target, size, 32, "loop-best")
    own, own_desc = iolab_best_uring(args, ctx, target, size, 32, "loop-best")
    ref = t_io_uring_best(args, ctx, target, 32, "loop-best")
    ic = iolab_cmd(args, target, "uring", 32, size, extra=own)
    fc = fio_cmd(args, target, "io_uring", 32, size, extra=best)
    limit_desc = ctx.best.get(("t/io_uring", str(target.path), 32), (None, f"the limit: {ref.unavailable}"))[1]
    return speed_block(args, ctx, "loop-best", "loop-best: 4 KiB random read, QD 32, 1 worker, loop device with "
                       "direct I/O over tmpfs, iolab uring vs fio io_uring, each in its best configuration", target,
                       ic, fc, [Goal("cpu_per_io", GOAL_LOOP_CPU_PER_IO, iops_too=True)],
                       [desc, own_desc, limit_desc], ref=ref)


def fs_device_note(path):
    """Which block device and driver hold path's filesystem, e.g. 'vda (virtio_blk)'."""
    try:
        dev = sysfs_dir(os.stat(path).st_dev)
        disk = dev if (dev / "device").exists() else dev.parent
        driver = (disk / "device" / "driver").resolve().name
        return f"filesystem on /dev/{dev.name} ({disk.name}: {driver})"
    except OSError:
        return "filesystem device unknown"


def scenario_virtio(args, ctx):
    target = ctx.io_target()
    size = size_arg(args, target)
    best, desc = fio_best_uring(args, ctx, target, size, 32, "virtio")
    own, own_desc = iolab_best_uring(args, ctx, target, size, 32, "virtio")
    ic = iolab_cmd(args, target, "uring", 32, size, extra=own)
    fc = fio_cmd(args, target, "io_uring", 32, size, extra=best)
    where = "the target is a block device, not a file on the root filesystem" if target.is_device \
        else fs_device_note(target.path)
    return speed_block(args, ctx, "virtio", "virtio: 4 KiB random read, QD 32, 1 worker, O_DIRECT file on the root "
                       "filesystem, iolab uring vs fio io_uring, each in its best configuration", target, ic, fc,
                       [Goal("cpu_per_io", GOAL_VIRTIO_CPU_PER_IO, iops_too=True)], [desc, own_desc, where])


ZRAM_ENGINES = (("uring", "io_uring", 32), ("aio", "libaio", 32), ("psync", "psync", 1))


def scenario_zram(args, ctx):
    target = ctx.device_target("zram")
    size = size_arg(args, target)
    out = []
    for engine, fio_engine, qd in ZRAM_ENGINES:
        label = f"zram {engine}"
        ic = iolab_cmd(args, target, engine, qd, size)
        fc = fio_cmd(args, target, fio_engine, qd, size)
        remarks = ["fio with the engine's defaults, as the issue compares 'with the same engine'"]
        ref = t_io_uring_ref(args, target, engine, qd)
        if engine == "uring":
            remarks.append("zram cannot take a request without blocking: io_uring hands every one to io-wq "
                           "threads, which belong to the process and are in its rusage")
        if engine == "psync":
            remarks.append("one thread each: iolab --qd 1 (psync runs one thread per outstanding I/O), fio --iodepth=1")
        try:
            out += speed_block(args, ctx, label, f"{label}: 4 KiB random read, QD {qd}, 1 worker, zram filled with "
                               f"random data, iolab {engine} vs fio {fio_engine}", target, ic, fc,
                               [Goal("ios_per_cpu", GOAL_ZRAM_IOS_PER_CPU)], remarks, ref=ref)
        except ToolFailed as e:
            if e.tool != "iolab" or engine != "aio":
                raise
            first = next((ln.strip() for ln in str(e).splitlines() if "stderr:" in ln), str(e).splitlines()[0])
            say(f"\n  iolab aio unavailable: {first}")
            out.append((label, "I/Os per CPU-s", "-", "-", "-", f">= {GOAL_ZRAM_IOS_PER_CPU:.2f}x",
                        "iolab aio unavailable"))
            out.append((label, "limit: t/io_uring/fio I/Os per CPU-s", "-", "-", "-", "(reference)",
                        "not run: iolab aio unavailable"))
    return out


def scenario_zram_qd1_latency(args, ctx):
    target = ctx.device_target("zram")
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "psync", 1, size)
    fc = fio_cmd(args, target, "psync", 1, size, extra=["--lat_percentiles=1", "--norandommap"])
    return speed_block(args, ctx, "zram-qd1-latency", "zram-qd1-latency: 4 KiB random read, QD 1, psync, zram "
                       "filled with random data, iolab psync vs fio psync", target, ic, fc,
                       [Goal("mean_latency", GOAL_QD1_MEAN_LATENCY)],
                       ["mean latency = submission to completion for both: fio's lat_ns (--lat_percentiles=1); "
                        "fio --norandommap draws offsets as iolab does"])


def scenario_workers2(args, ctx):
    # On the loop device, not zram: the loop driver copies the data in its own kernel workers,
    # outside both processes, so the rusage is the tools' own per-I/O work. On zram io_uring's
    # io-wq threads would do the copy inside each process, the same for both tools, and the
    # ratio would say more about io-wq than about iolab (zram uring covers that).
    target = ctx.device_target("loop")
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "uring", 32, size, workers=2)
    fc = fio_cmd(args, target, "io_uring", 32, size, numjobs=2)
    return speed_block(args, ctx, "workers2", "workers2: 4 KiB random read, QD 32 per worker, 2 workers, loop device "
                       "with direct I/O over tmpfs, iolab --workers 2 uring vs fio --numjobs=2 io_uring",
                       target, ic, fc, [Goal("ios_per_cpu", GOAL_WORKERS2_IOS_PER_CPU)],
                       ["fio with the engine's defaults and --group_reporting (one result for both jobs)",
                        "loop device rather than zram: the loop driver copies in its own kernel workers, outside "
                        "both processes, so the rusage is each tool's own work"])


SCENARIOS = {
    "null": scenario_null,
    "randread-file": scenario_randread_file,
    "agreement": scenario_agreement,
    "psync": scenario_psync,
    "loop": scenario_loop,
    "loop-best": scenario_loop_best,
    "virtio": scenario_virtio,
    "zram": scenario_zram,
    "zram-qd1-latency": scenario_zram_qd1_latency,
    "workers2": scenario_workers2,
}
DEFAULT_SCENARIOS = ["null", "randread-file", "agreement"]
# Issue 3's speed goals, `speed`; loop and zram devices are made (root only) and removed here.
SPEED_SCENARIOS = ["null", "loop", "loop-best", "virtio", "zram", "zram-qd1-latency", "workers2"]
FILE_SCENARIOS = {"randread-file", "agreement", "psync", "virtio"}  # read the file target


class Context:
    """Creates targets lazily (a null-only run lays nothing out) and cleans up what it made."""

    def __init__(self, args):
        self.args = args
        self.cwd = SCRATCH_DIR
        self._io = None
        self._null = None
        self._devices = {}  # "loop" | "zram" -> Target, or the Unavailable that stopped it
        self.scratch = ScratchDevices(say, stop_children=stop_running_child)
        self.best = {}  # (tool, target path, QD) -> (options, description)
        self.probes = []  # fio variant measurements, for the summary

    def device_target(self, kind):
        """The loop device (over tmpfs) or the zram device, made on first use, filled with random
        data, and removed at the end whatever happens. Raises Unavailable without root."""
        if kind not in self._devices:
            size = parse_size(self.args.size)
            say()
            try:
                make = self.scratch.loop if kind == "loop" else self.scratch.zram
                path, cmds, notes = make(size)
            except Unavailable as e:
                self._devices[kind] = e
                raise
            dev_size = check_device_allowed(path)
            label = ("loop device, direct I/O over a tmpfs file of random data" if kind == "loop"
                     else "zram device filled with random data")
            self._devices[kind] = Target(path=path, is_device=True, size=min(size, dev_size), created=True,
                                         kind=label + ", made and removed by this script", setup_cmds=cmds, notes=notes)
        got = self._devices[kind]
        if isinstance(got, Unavailable):
            raise got
        return got

    def io_target(self):
        if self._io is None:
            self._io = prepare_target(self.args, self.args.fio)
        return self._io

    def null_target(self):
        if self._null is None:
            self._null = prepare_null_file(self.args)
        return self._null

    def cleanup(self):
        self.scratch.remove_all()  # scratch devices go even with --keep: they hold RAM
        for t in (self._io, self._null):
            if t is not None and t.created and not t.is_device:
                if self.args.keep:
                    say(f"kept {t.path} (--keep)")
                else:
                    t.path.unlink(missing_ok=True)
                    say(f"removed {t.path}")


def tool_version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        return "?"


def git_describe():
    """Commit of the tree the notes refer to (the binary may be older: see its build time)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return f"git {head}" + (" (uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"


args_global = None


def main():
    global args_global
    p = argparse.ArgumentParser(
        description="Run iolab and fio side by side on the same target and print the ratios.",
        epilog="Scenarios: null, randread-file, agreement (default: all three); psync (extra); issue 3's "
               "speed goals: loop, loop-best, virtio, zram, zram-qd1-latency, workers2 (`speed` = these and null; loop and "
               "zram need root). See bench/README.md.",
    )
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                   help=f"one or more of: {', '.join(SCENARIOS)}, speed, all (default: {' '.join(DEFAULT_SCENARIOS)})")
    p.add_argument("--runtime", type=int, default=10, help="measured seconds per run, both tools (default 10)")
    p.add_argument("--repeat", type=int, default=3, help="pairs per scenario, alternating order (default 3)")
    p.add_argument("--target", help=f"file or block device to read (default {DEFAULT_TARGET}, laid out once); "
                                    "a block device is only ever read; /dev/vda* is refused")
    p.add_argument("--size", default="1g", help="size of the tested region (default 1g)")
    p.add_argument("--keep", action="store_true", help="keep the files this script created")
    p.add_argument("--pause", type=float, default=1.0, help="seconds of rest between runs (default 1)")
    p.add_argument("--iolab", default=str(DEFAULT_IOLAB), help=f"iolab binary (default {DEFAULT_IOLAB})")
    p.add_argument("--fio", default=shutil.which("fio") or "/usr/bin/fio", help="fio binary")
    p.add_argument("--save-raw", metavar="DIR", help="write every tool's JSON output to DIR")
    p.add_argument("--max-repeat", type=int, help="in the speed scenarios, run more pairs, up to this many in "
                   "all, while a goal's figures are noisy (default --repeat + 2)")
    p.add_argument("--noisy", type=float, default=0.05, help="run-to-run spread of a goal figure that counts as "
                   "noisy (default 0.05 = 5%%)")
    p.add_argument("--busy-limit", type=float, default=0.1, help="before each run, wait while the machine is busier "
                   "than this share of all its CPUs (default 0.1)")
    p.add_argument("--quiet-wait", type=int, default=60, help="wait at most this many seconds for a quiet "
                   "machine before a run (default 60)")
    p.add_argument("--t-io-uring", metavar="PATH", help="fio's t/io_uring, the limit shown in loop, loop-best and "
                   f"zram (default {DEFAULT_T_IO_URING} if built; bench/build_t_io_uring.sh builds it)")
    p.add_argument("--fio-uring-opts", metavar="OPTS", help="fio io_uring options for loop-best and virtio, instead "
                   "of measuring variants, e.g. \"--registerfiles --fixedbufs --iodepth_batch_submit=32\"")
    p.add_argument("--no-snapshot", action="store_true", help="run --iolab in place instead of a copy taken "
                   "at the start (a rebuild during the run would then change the binary between runs)")
    p.add_argument("--iolab-extra", default="", metavar="ARGS", help="extra flags for every iolab run "
                   "(experiments; the goals are about iolab's defaults)")
    args = p.parse_args()
    args_global = args

    names = args.scenarios or DEFAULT_SCENARIOS
    if "all" in names:
        names = list(SCENARIOS)
    names = [m for n in names for m in (SPEED_SCENARIOS if n == "speed" else [n])]
    names = list(dict.fromkeys(names))  # each once, in the order given
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}, speed, all")
    if args.repeat < 1 or args.runtime < 1:
        p.error("--repeat and --runtime must be at least 1")
    if args.max_repeat is None:
        args.max_repeat = args.repeat + 2
    args.max_repeat = max(args.max_repeat, args.repeat)
    if not os.access(args.iolab, os.X_OK):
        sys.exit(f"vs_fio: no iolab binary at {args.iolab}; build it with `cargo build --release`")
    if not os.access(args.fio, os.X_OK):
        sys.exit(f"vs_fio: no fio binary at {args.fio}")
    if args.t_io_uring is not None and not os.access(args.t_io_uring, os.X_OK):
        sys.exit(f"vs_fio: no t/io_uring binary at {args.t_io_uring}")
    if args.t_io_uring is None and os.access(DEFAULT_T_IO_URING, os.X_OK):
        args.t_io_uring = str(DEFAULT_T_IO_URING)
    SCRATCH_DIR.mkdir(parents=True, exist_ok=True)
    built = time.strftime('%Y-%m-%d %H:%M', time.localtime(os.stat(args.iolab).st_mtime))
    snapshot = None
    if not args.no_snapshot:
        # Every run measures the same binary even if someone rebuilds target/release meanwhile.
        snapshot = SCRATCH_DIR / f"iolab.{os.getpid()}"
        shutil.copy2(args.iolab, snapshot)
        atexit.register(snapshot.unlink, missing_ok=True)
        original, args.iolab = args.iolab, str(snapshot)
        SHOWN_AS[args.iolab] = original

    say(f"vs_fio: {' '.join(names)} | runtime {args.runtime} s, repeat {args.repeat} (speed scenarios: up to "
        f"{args.max_repeat} when noisy), size {args.size}" + (f", iolab extra: {args.iolab_extra}" if args.iolab_extra else ""))
    say(f"source: {git_describe()}")
    say(f"host: {platform.node()}, kernel {platform.release()}, {os.cpu_count()} CPUs; "
        f"{tool_version([args.iolab, '--version'])} ({args.iolab}, built {built}); "
        f"{tool_version([args.fio, '--version'])}; {time.strftime('%Y-%m-%d %H:%M:%S')}")
    say(f"limit: t/io_uring {args.t_io_uring} (sha256 {hashlib.sha256(Path(args.t_io_uring).read_bytes()).hexdigest()[:12]})"
        if args.t_io_uring else f"limit: {T_IO_URING_NOT_BUILT}")
    if snapshot:
        digest = hashlib.sha256(snapshot.read_bytes()).hexdigest()[:12]
        say(f"iolab binary: {snapshot}, a copy of {original} (sha256 {digest}) so that a rebuild during the run "
            "changes nothing; commands below show the original path; the copy is removed at the end")

    ctx = Context(args)
    summary = []
    failed = False
    try:
        if any(n in FILE_SCENARIOS for n in names):
            ctx.io_target()  # check (or lay out) the target before the first measured run
        for name in names:
            try:
                summary += SCENARIOS[name](args, ctx)
            except ToolFailed as e:
                failed = True
                say(f"\n!! scenario {name} failed: {e}")
                summary.append((name, "FAILED", "", "", "", "", "see above"))
            except Unavailable as e:
                say(f"\n!! scenario {name} skipped: {e}")
                summary.append((name, "SKIPPED", "", "", "", "", str(e)))
    except (KeyboardInterrupt, OutputClosed) as e:
        if isinstance(e, KeyboardInterrupt):
            say("\ninterrupted")
        failed = True
    finally:
        if summary:
            say()
            say("=" * 100)
            say(f"[summary] runtime {args.runtime} s, repeat {args.repeat}, medians; CPU = wait4 rusage (user+sys) of each tool")
            for title, target, cmds in COMMANDS:
                say(f"{title}: target {target.describe()}")
                for tool, cmd in cmds:
                    say(f"  {tool}: $ {shown(cmd)}")
            for label, target, measured, desc in ctx.probes:
                say(f"{label}: io_uring variants on {target.path}, one run each (CPU s per M I/O, IOPS): "
                    + "; ".join(f"{n} {c:.2f} @ {fmt_num(i)}" for n, c, i in measured))
                say(f"  -> {desc}")
            say(table(["scenario", "metric", "iolab", "fio", "iolab/fio", "goal", "verdict"], summary))
        ctx.cleanup()
        if snapshot:
            snapshot.unlink(missing_ok=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
