"""The command lines of iolab, fio and t/io_uring, and the io_uring variants searched for each
tool's best configuration."""

import shlex
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .paths import T_IO_URING_NOT_BUILT
from .targets import t_io_uring_refusal
from .units import parse_size


def size_arg(args, target):
    """--size for both tools: a device smaller than --size is given as its exact byte size."""
    return args.size if target.size == parse_size(args.size) else str(target.size)


def iolab_cmd(args, target, engine, qd, size, workers=1, extra=()):
    # --iolab-extra (experiments only) goes to every iolab run; the measured default has none.
    # --no-confirm: the trial of a verdict's advice is a second run after the job (about a second
    # at another setting), whose CPU the rusage would count against the job's I/Os (1.30x
    # t/io_uring's CPU per I/O at QD 32 on a loop device with it, 1.07x without). --no-store:
    # the bench keeps nothing in the user's database.
    return [args.iolab, "run", "--target", str(target.path), "--size", str(size), "--rw", "randread",
            "--bs", "4k", "--qd", str(qd), "--workers", str(workers), "--engine", engine,
            "--runtime", f"{args.runtime}s", "--ramp", "0s", "--json", "--quiet", "--no-confirm",
            "--no-store"] + list(extra) + shlex.split(args.iolab_extra)


def fio_cmd(args, target, engine, qd, size, extra=(), numjobs=1):
    """fio, time based, JSON output; target None for the null engine (it takes no file)."""
    cmd = [args.fio, "--name=x"]
    if target is not None:
        cmd.append(f"--filename={target.path}")
    cmd += [f"--size={size}", "--rw=randread", "--bs=4k", f"--iodepth={qd}", f"--numjobs={numjobs}",
            f"--ioengine={engine}"]
    if engine != "null":
        cmd.append("--direct=1")
    cmd += ["--time_based", f"--runtime={args.runtime}", "--output-format=json", "--group_reporting"]
    return cmd + list(extra)


def pair_cmds(args, target, engine, fio_engine, qd, fio_target=True, fio_extra=()):
    """iolab's and fio's command lines for one 4 KiB random-read workload on `target`, at `qd`
    (fio_target False: fio's null engine, which takes no file)."""
    size = size_arg(args, target)
    return (iolab_cmd(args, target, engine, qd, size),
            fio_cmd(args, target if fio_target else None, fio_engine, qd, size, extra=list(fio_extra)))


def psync_qd1_cmds(args, target):
    """psync at QD 1, fio with submission-to-completion percentiles and no random map (as iolab)."""
    return pair_cmds(args, target, "psync", "psync", 1, fio_extra=("--lat_percentiles=1", "--norandommap"))


# t/io_uring's flags per engine, besides -d (QD), -s/-c (batches), -p0 (no polled I/O: the loop and
# zram devices have no poll queues), -t1 (it times every I/O, as iolab and fio do; TSC-based, no -T
# needed: its percentiles are then in TSC ticks) and -r (runtime). io_uring: fixed buffers,
# registered files and a registered ring, its defaults, written out; aio has none of them.
TIO_MODES = MappingProxyType({"uring": ("-B1", "-F1", "-X1"), "aio": ("-a1", "-B0", "-F0"), "psync": ("-S1",)})


def t_io_uring_cmd(args, target, mode, qd, submit=1, complete=1):
    cmd = [args.t_io_uring, "-b4096", f"-d{qd}"]
    if mode != "psync":  # preadv2 does one I/O per call
        cmd += [f"-s{submit}", f"-c{complete}"]
    return cmd + list(TIO_MODES[mode]) + ["-p0", "-t1", "-r", str(args.runtime), str(target.path)]


@dataclass
class Ref:
    """The limit a block shows next to fio: t/io_uring's command, or why there is none."""

    cmd: list = None
    unavailable: str = None


def t_io_uring_has_aio(path):
    """False when the fio tree t/io_uring was built in was configured without libaio: -a1 then
    crashes (fio 3.33 starts no thread and joins it). Unknown trees are tried."""
    config = Path(path).resolve().parent.parent / "config-host.h"
    return "#define CONFIG_LIBAIO" in config.read_text() if config.exists() else True


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


def t_io_uring_note(args):
    return (f"its I/O count: the sum of its per-second IOPS lines (it prints {args.runtime - 1} of them: not its last "
            f"second) plus the last second at their mean rate, i.e. its mean IOPS x {args.runtime} s")


# fio's io_uring options that the issue names, then batching variants; the one with the lowest
# CPU per I/O in one run each is fio's "best configuration". Options that switch off latency
# measurement (gtod_reduce, disable_lat) are not candidates: iolab times every I/O.
FIO_URING_BASE = ("--registerfiles", "--fixedbufs", "--hipri=0", "--sqthread_poll=0")


def fio_batch(qd, n, submit=None):
    return [f"--iodepth_batch_submit={submit or n}", f"--iodepth_batch_complete_min={n}",
            f"--iodepth_batch_complete_max={qd}"]


def batch_variants(qd):
    """Batches tried on every tool: (submitted per call, waited for per call). The last refills
    the whole queue at once and waits for half of it."""
    return [(n, n) for n in (8, 16, qd)] + [(qd, qd // 2)]


def batch_name(submit, wait):
    return f"batches of {wait}" if submit == wait else f"submit {submit}, wait for {wait}"
