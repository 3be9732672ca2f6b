"""Running a tool as a child process, its CPU from the child's rusage, and its figures.

CPU is accounted the same way for every tool: each runs as a child process and its CPU time is
the child's rusage from os.wait4 (ru_utime + ru_stime). That covers every thread of the process
and every child it reaped (fio's job processes), including io_uring io-wq and SQPOLL threads,
which fio's own usr/sys figures miss. No tool runs with a ramp, so the rusage covers the I/Os
the tool reports (plus its start-up and tear-down, the same kind of cost for each).
"""

import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from .report import say
from .units import median


@dataclass
class Result:
    tool: str  # "iolab", "fio" or "t/io_uring"
    order: int  # 1 = ran first in its pair, 2 = second, 3 = third (the limit)
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


@dataclass(frozen=True)
class Medians:
    """The median of each figure over several runs of one tool (None where no run has it)."""

    iops: float = None
    ios: float = None
    mean_ns: float = None
    p50_ns: float = None
    p99_ns: float = None
    cpu_s: float = None
    user_s: float = None
    sys_s: float = None
    self_cpu_s: float = None
    wall_s: float = None
    other_cpu_s: float = None
    cpu_s_per_mio: float = None  # the median of the runs' CPU per I/O, not a ratio of medians
    ios_per_cpu_s: float = None


def medians(results):
    return Medians(**{f.name: median([getattr(r, f.name) for r in results]) for f in fields(Medians)})


class ToolFailed(RuntimeError):
    def __init__(self, message, tool=None):
        super().__init__(message)
        self.tool = tool  # "iolab", "fio" or "t/io_uring" once known


def machine_busy_s():
    """CPU seconds the whole machine has been busy since boot, summed over its CPUs (user, nice,
    system, irq, softirq; not idle, iowait or steal), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def load_json(text, tool, cmd):
    # fio may print warnings before its JSON document; start at the first '{'.
    start = text.find("{")
    try:
        return json.loads(text[start:])
    except (ValueError, IndexError) as e:
        raise ToolFailed(f"{tool}: cannot parse JSON output ({e})\n  command: {shlex.join(cmd)}\n"
                         f"  output: {text[:1000]}") from None


@dataclass(frozen=True)
class Ran:
    """What run_child saw of one finished child."""

    stdout: str
    stderr: str
    rusage: object
    wall_s: float
    other_cpu_s: float  # CPU seconds the rest of the machine used meanwhile

    def cpu(self):
        """(CPU s, user s, system s) from the child's rusage."""
        ru = self.rusage
        return ru.ru_utime + ru.ru_stime, ru.ru_utime, ru.ru_stime


class Runner:
    """Runs the measured children, one at a time, in the scratch directory. It is the one object
    through which the clean-up after a signal (via ScratchDevices) reaches the child running."""

    def __init__(self, cwd):
        self.cwd = Path(cwd)
        self._running = None  # the measured child while it runs

    def stop(self):
        """Ends a measured run left behind (SIGTERM to this script, an exception): it may hold a
        scratch device open. Only the child this script started, by its pid."""
        proc, self._running = self._running, None
        if proc is not None and proc.returncode is None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def child(self, cmd, tool):
        """Runs cmd to its end; raises ToolFailed (naming `tool`) on exit != 0."""
        out_path = self.cwd / f".vs_fio.{os.getpid()}.out"
        err_path = self.cwd / f".vs_fio.{os.getpid()}.err"
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                busy0 = machine_busy_s()
                start = time.monotonic()
                proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.cwd)
                self._running = proc
                _, status, rusage = os.wait4(proc.pid, 0)
                wall = time.monotonic() - start
                proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait again
                self._running = None
                other = machine_busy_s() - busy0 - (rusage.ru_utime + rusage.ru_stime)
            stdout = out_path.read_text(errors="replace")
            stderr = err_path.read_text(errors="replace")
        finally:
            out_path.unlink(missing_ok=True)
            err_path.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise ToolFailed(
                f"{cmd[0]} exited with {proc.returncode}\n  command: {shlex.join(cmd)}\n"
                f"  stderr: {stderr.strip()[-2000:]}\n  stdout: {stdout.strip()[-1000:]}", tool)
        return Ran(stdout, stderr, rusage, wall, max(other, 0.0))

    def iolab(self, cmd, order):
        ran = self.child(cmd, "iolab")
        return iolab_result(load_json(ran.stdout, "iolab", cmd), ran, order)

    def fio(self, cmd, order):
        ran = self.child(cmd, "fio")
        doc = load_json(ran.stdout, "fio", cmd)
        if doc["jobs"][0].get("error"):
            raise ToolFailed(f"fio job error {doc['jobs'][0]['error']}\n  command: {shlex.join(cmd)}\n"
                             f"  stderr: {ran.stderr.strip()}", "fio")
        return fio_result(doc, ran, order)

    def t_io_uring(self, cmd, order, runtime):
        ran = self.child(cmd, "t/io_uring")
        try:
            per_s, iops, ios = t_io_uring_count(ran.stdout, runtime)
        except ValueError:
            raise ToolFailed(f"t/io_uring printed no IOPS line\n  command: {shlex.join(cmd)}\n"
                             f"  stdout: {ran.stdout.strip()[-1000:]}\n  stderr: {ran.stderr.strip()[-1000:]}",
                             "t/io_uring") from None
        cpu, user, sys_ = ran.cpu()
        return Result(tool="t/io_uring", order=order, iops=iops, ios=ios, measured_s=runtime,
                      mean_ns=None, p50_ns=None, p99_ns=None,  # -t1 prints percentiles in TSC ticks only
                      cpu_s=cpu, user_s=user, sys_s=sys_, self_cpu_s=None, wall_s=ran.wall_s,
                      other_cpu_s=ran.other_cpu_s,
                      raw={"stdout": ran.stdout, "stderr": ran.stderr, "iops_lines": per_s,
                           "counted_ios": sum(per_s)})


def iolab_result(doc, ran, order):
    """iolab's figures from its JSON document; warns about I/O errors or an early stop."""
    job = doc["jobs"][0]
    total = job["total"]
    lat = total.get("latency") or {}
    pct = {float(p["p"]): p["ns"] for p in lat.get("percentiles", [])}
    own = job.get("cpu") or {}
    errors = job.get("errors") or {}
    if errors.get("count"):
        say(f"  !! iolab reported {errors['count']} I/O errors: {errors.get('first')}")
    if doc.get("interrupted") or job.get("stop_reason") not in (None, "runtime"):
        say(f"  !! iolab stop_reason={job.get('stop_reason')} interrupted={doc.get('interrupted')}")
    cpu, user, sys_ = ran.cpu()
    return Result(tool="iolab", order=order, iops=total["iops"], ios=total["ios"], measured_s=job.get("measured_s"),
                  mean_ns=lat.get("mean_ns"), p50_ns=pct.get(50.0), p99_ns=pct.get(99.0),
                  cpu_s=cpu, user_s=user, sys_s=sys_,
                  self_cpu_s=(own.get("user_s") or 0) + (own.get("system_s") or 0),
                  wall_s=ran.wall_s, other_cpu_s=ran.other_cpu_s, raw=doc)


def fio_result(doc, ran, order):
    """fio's figures from its JSON document (the first job; --group_reporting makes it the sum)."""
    job = doc["jobs"][0]
    rd = job["read"]
    # Total latency (submission to completion) is what iolab measures; fio reports its
    # percentiles only with --lat_percentiles=1, otherwise fall back to completion latency.
    lat_pct = rd.get("lat_ns", {}).get("percentile") or rd.get("clat_ns", {}).get("percentile") or {}
    pct = {float(k): v for k, v in lat_pct.items()}
    runtime_s = job.get("job_runtime", rd.get("runtime", 0)) / 1000
    cpu, user, sys_ = ran.cpu()
    return Result(tool="fio", order=order, iops=rd["iops"], ios=rd["total_ios"], measured_s=rd.get("runtime", 0) / 1000,
                  mean_ns=rd.get("lat_ns", {}).get("mean"), p50_ns=pct.get(50.0), p99_ns=pct.get(99.0),
                  cpu_s=cpu, user_s=user, sys_s=sys_,
                  self_cpu_s=(job.get("usr_cpu", 0) + job.get("sys_cpu", 0)) / 100 * runtime_s,
                  wall_s=ran.wall_s, other_cpu_s=ran.other_cpu_s, raw=doc)


TIO_IOPS_LINE = re.compile(r"^IOPS=([0-9.]+)([KM]?),", re.MULTILINE)


def t_io_uring_count(stdout, runtime):
    """t/io_uring's output as (per-second IOPS, mean IOPS, I/Os); ValueError without an IOPS line.

    It prints one line per second, "IOPS=272.89K, BW=1065MiB/s, IOS/call=16/16" (K = 1e3,
    M = 1e6). With -r R it prints R - 1 of them: its main loop ends the run at the R-th tick
    before printing it. The I/Os it did are its per-second mean times R (the R - 1 printed
    seconds summed, plus the last second at the same rate); the rusage covers all R seconds.
    """
    per_s = [float(v) * {"": 1, "K": 1e3, "M": 1e6}[unit] for v, unit in TIO_IOPS_LINE.findall(stdout)]
    if not per_s:
        raise ValueError("no IOPS line")
    iops = sum(per_s) / len(per_s)
    return per_s, iops, round(iops * runtime)
