"""The command line of bench/vs_fio.py: which scenarios, on what, and the run of them all."""

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import MappingProxyType

from scratch_devices import Unavailable

from .basic import scenario_agreement, scenario_null, scenario_psync, scenario_randread_file
from .children import ToolFailed
from .paths import DEFAULT_IOLAB, DEFAULT_T_IO_URING, DEFAULT_TARGET, REPO, SCRATCH_DIR, T_IO_URING_NOT_BUILT
from .parity import scenario_parity
from .report import OutputClosed, SummaryRow, print_summary, say
from .session import Session
from .speed import (scenario_loop, scenario_loop_best, scenario_virtio, scenario_workers2, scenario_zram,
                    scenario_zram_qd1_latency)

SCENARIOS = MappingProxyType({
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
    "parity": scenario_parity,
})
DEFAULT_SCENARIOS = ("null", "randread-file", "agreement")
# Issue 3's speed goals, `speed`; loop and zram devices are made (root only) and removed here.
SPEED_SCENARIOS = ("null", "loop", "loop-best", "virtio", "zram", "zram-qd1-latency", "workers2")
FILE_SCENARIOS = frozenset({"randread-file", "agreement", "psync", "virtio"})  # read the file target


def parser():
    p = argparse.ArgumentParser(
        prog="vs_fio.py",
        description="Run iolab and fio side by side on the same target and print the ratios.",
        epilog="Scenarios: null, randread-file, agreement (default: all three); psync (extra); issue 3's "
               "speed goals: loop, loop-best, virtio, zram, zram-qd1-latency, workers2 (`speed` = these and null; loop and "
               "zram need root); issue 31's IOPS parity: parity (root). See bench/README.md.",
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
    p.add_argument("--cpu-idle", choices=("as-is", "poll"), default="as-is", help="as-is (default): the CPUs idle "
                   "as the machine has them; poll: hold /dev/cpu_dma_latency at 0 for every run of both tools, so "
                   "no CPU halts (root; on a VM each halt's wake-up is a VM exit)")
    p.add_argument("--iolab-extra", default="", metavar="ARGS", help="extra flags for every iolab run "
                   "(experiments; the goals are about iolab's defaults)")
    return p


def scenario_names(p, args):
    """The scenarios asked for, each once, in the order given (`speed` and `all` expanded)."""
    names = args.scenarios or list(DEFAULT_SCENARIOS)
    if "all" in names:
        names = list(SCENARIOS)
    names = [m for n in names for m in (SPEED_SCENARIOS if n == "speed" else [n])]
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}, speed, all")
    return names


def check_args(p, args):
    """Checks the numbers and the binaries; fills in --max-repeat and --t-io-uring's default."""
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


def take_snapshot(session):
    """Every run measures the same binary even if someone rebuilds target/release meanwhile: a
    copy of --iolab in the scratch directory (removed at the end). Returns its path, or None."""
    args = session.args
    if args.no_snapshot:
        return None
    snapshot = SCRATCH_DIR / f"iolab.{os.getpid()}"
    shutil.copy2(args.iolab, snapshot)
    session.shown_as[str(snapshot)] = args.iolab
    args.iolab = str(snapshot)
    return snapshot


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


def print_preamble(session, names, built, snapshot):
    """What runs, from which source, on which host, with which binaries."""
    args = session.args
    say(f"vs_fio: {' '.join(names)} | runtime {args.runtime} s, repeat {args.repeat} (speed scenarios: up to "
        f"{args.max_repeat} when noisy), size {args.size}" + (f", iolab extra: {args.iolab_extra}" if args.iolab_extra else ""))
    say(f"source: {git_describe()}")
    say(f"host: {platform.node()}, kernel {platform.release()}, {os.cpu_count()} CPUs; "
        f"{tool_version([args.iolab, '--version'])} ({args.iolab}, built {built}); "
        f"{tool_version([args.fio, '--version'])}; {time.strftime('%Y-%m-%d %H:%M:%S')}")
    say(f"limit: t/io_uring {args.t_io_uring} (sha256 {hashlib.sha256(Path(args.t_io_uring).read_bytes()).hexdigest()[:12]})"
        if args.t_io_uring else f"limit: {T_IO_URING_NOT_BUILT}")
    say(session.idle.text())
    if snapshot:
        digest = hashlib.sha256(snapshot.read_bytes()).hexdigest()[:12]
        say(f"iolab binary: {snapshot}, a copy of {session.shown_as[str(snapshot)]} (sha256 {digest}) so that a "
            "rebuild during the run changes nothing; commands below show the original path; the copy is removed at the end")


def run_scenarios(session, names, summary):
    """Runs each scenario, adding its rows to `summary`; returns False if any failed or stopped."""
    ok = True
    try:
        if any(n in FILE_SCENARIOS for n in names):
            session.targets.io()  # check (or lay out) the target before the first measured run
        for name in names:
            try:
                summary += SCENARIOS[name](session)
            except ToolFailed as e:
                ok = False
                say(f"\n!! scenario {name} failed: {e}")
                summary.append(SummaryRow(name, "FAILED", verdict="see above"))
            except Unavailable as e:
                say(f"\n!! scenario {name} skipped: {e}")
                summary.append(SummaryRow(name, "SKIPPED", verdict=str(e)))
    except (KeyboardInterrupt, OutputClosed) as e:
        if isinstance(e, KeyboardInterrupt):
            say("\ninterrupted")
        ok = False
    return ok


def main():
    p = parser()
    args = p.parse_args()
    names = scenario_names(p, args)
    check_args(p, args)
    SCRATCH_DIR.mkdir(parents=True, exist_ok=True)
    built = time.strftime('%Y-%m-%d %H:%M', time.localtime(os.stat(args.iolab).st_mtime))
    session = Session(args)
    snapshot, summary, ok = None, [], False
    try:
        snapshot = take_snapshot(session)
        print_preamble(session, names, built, snapshot)
        session.idle.hold()
        ok = run_scenarios(session, names, summary)
    finally:  # also after SystemExit (SIGTERM, a refused device): what was measured, then clean up
        try:
            if summary:
                print_summary(session, summary)
        finally:
            session.idle.release()
            session.targets.cleanup()
            if snapshot:
                snapshot.unlink(missing_ok=True)
    return 0 if ok else 1
