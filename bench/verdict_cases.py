#!/usr/bin/env python3
"""Issue 30's cases: limits set on purpose, so the truth is known, each run with iolab and judged.

Prints, for each case, the cause the verdict gave against the true one and the start of its
summary: as the machine is, and with --busy beside two `yes` loops and an fio writer (where
"another load" may be the true answer, and is marked so). Root; makes and removes its own loop
and zram devices, cgroups, blkio rules and dirty limits, and puts back what it changed.

    sudo python3 bench/verdict_cases.py [--busy] [--only NAME] [--iolab target/release/iolab]
"""

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
CGROUP = "/sys/fs/cgroup"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(command):
    return subprocess.run(command, shell=True, check=True, capture_output=True, text=True).stdout.strip()


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def read(path):
    with open(path) as f:
        return f.read().strip()


@contextlib.contextmanager
def loop_device(size_mib):
    """A loop device with direct I/O over a tmpfs file of random bytes."""
    image = tempfile.mktemp(prefix="verdict-cases-", suffix=".img", dir="/dev/shm")
    sh(f"dd if=/dev/urandom of={image} bs=1M count={size_mib} status=none")
    device = sh(f"losetup --direct-io=on -f --show {image}")
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
        os.remove(image)


@contextlib.contextmanager
def zram_device(size_mib):
    """A zram device filled from /dev/urandom (unwritten pages read faster and mean nothing)."""
    index = read("/sys/class/zram-control/hot_add")
    write(f"/sys/block/zram{index}/disksize", size_mib * MIB)
    device = f"/dev/zram{index}"
    sh(f"dd if=/dev/urandom of={device} bs=1M count={size_mib} oflag=direct status=none")
    try:
        yield device
    finally:
        # udev may still hold the device for a moment after the run.
        for _ in range(50):
            try:
                write("/sys/class/zram-control/hot_remove", index)
                break
            except OSError:
                time.sleep(0.1)


@contextlib.contextmanager
def cgroup(controller, settings):
    """A v1 cgroup of `controller` with `settings` ({file: value}); yields its procs file."""
    path = f"{CGROUP}/{controller}/verdict-cases-{os.getpid()}"
    os.mkdir(path)
    try:
        for name, value in settings.items():
            write(f"{path}/{name}", value)
        yield f"{path}/cgroup.procs"
    finally:
        os.rmdir(path)


@contextlib.contextmanager
def setting(path, value, restore=None):
    """`path` set to `value`, and put back (to `restore`, if given) however it ends."""
    old = read(path)
    write(path, value)
    try:
        yield
    finally:
        write(path, old if restore is None else restore)


@contextlib.contextmanager
def dirty_limits(hard, background):
    """vm.dirty_bytes and dirty_background_bytes, put back as bytes or ratios as they were."""
    files = ["dirty_bytes", "dirty_ratio", "dirty_background_bytes", "dirty_background_ratio"]
    old = {f: read(f"/proc/sys/vm/{f}") for f in files}
    write("/proc/sys/vm/dirty_bytes", hard)
    write("/proc/sys/vm/dirty_background_bytes", background)
    try:
        yield
    finally:
        for by_bytes, by_ratio in [files[:2], files[2:]]:
            name = by_bytes if old[by_bytes] != "0" else by_ratio
            write(f"/proc/sys/vm/{name}", old[name])


def devnum(device):
    return read(f"/sys/block/{os.path.basename(device)}/dev")


def in_cgroup(procs):
    """A command prefix that moves itself into a cgroup, then runs the rest."""
    return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh"]


QUICK = ["--runtime", "2s", "--ramp", "300ms", "--json", "-q", "--no-store"]


def case_quota(stack, iolab, scratch):
    procs = stack.enter_context(cgroup("cpu", {"cpu.cfs_period_us": 100000, "cpu.cfs_quota_us": 50000}))
    return in_cgroup(procs) + [iolab, "run", "--engine", "null", "--workers", "2"]


def case_affinity(stack, iolab, scratch):
    return ["taskset", "-c", "0", iolab, "run", "--engine", "null", "--workers", "2"]


def case_io_throttle(stack, iolab, scratch):
    device = stack.enter_context(loop_device(256))
    rule = {"blkio.throttle.read_iops_device": f"{devnum(device)} 2000"}
    procs = stack.enter_context(cgroup("blkio", rule))
    return in_cgroup(procs) + [iolab, "run", "--target", device, "--rw", "randread", "--qd", "8"]


def case_dirty(stack, iolab, scratch):
    device = stack.enter_context(loop_device(256))
    rule = f"{CGROUP}/blkio/blkio.throttle.write_bps_device"
    stack.enter_context(setting(rule, f"{devnum(device)} {20 * MIB}", restore=f"{devnum(device)} 0"))
    stack.enter_context(dirty_limits(16 * MIB, 8 * MIB))
    return [iolab, "run", "--target", device, "--buffered", "--rw", "write", "--bs", "1m", "--qd", "1",
            "--engine", "psync", "--allow-destroy"]


def case_dirty_disk(stack, iolab, scratch):
    stack.enter_context(dirty_limits(16 * MIB, 8 * MIB))
    # The default engine: io_uring punts the throttled writes to io-wq, whose workers sleep in
    # the throttle while the lane waits for completions.
    return [iolab, "run", "--target", os.path.join(scratch, "dirty"), "--size", "1g", "--buffered", "--rw",
            "write", "--bs", "1m", "--qd", "4"]


def case_dirty_shared(stack, iolab, scratch):
    stack.enter_context(dirty_limits(16 * MIB, 8 * MIB))
    # Four psync lanes write one file: three wait for its lock while the throttle holds the fourth.
    return [iolab, "run", "--target", os.path.join(scratch, "dirty"), "--size", "1g", "--buffered", "--rw",
            "write", "--bs", "1m", "--qd", "4", "--engine", "psync"]


def case_rate(stack, iolab, scratch):
    device = stack.enter_context(loop_device(256))
    return [iolab, "run", "--target", device, "--rw", "randread", "--qd", "8", "--rate-iops", "2000"]


def case_split(stack, iolab, scratch):
    device = stack.enter_context(loop_device(256))
    name = os.path.basename(device)
    stack.enter_context(setting(f"/sys/block/{name}/queue/max_sectors_kb", 256))
    return [iolab, "run", "--target", device, "--rw", "read", "--bs", "1m", "--qd", "4"]


def case_zram(stack, iolab, scratch):
    device = stack.enter_context(zram_device(256))
    return [iolab, "run", "--target", device, "--rw", "randread", "--qd", "32"]


def case_memory(stack, iolab, scratch):
    file = os.path.join(scratch, "memory-limit")
    # Written past the page cache: pages cached outside the cgroup would serve its reads.
    sh(f"dd if=/dev/urandom of={file} bs=1M count=512 oflag=direct status=none")
    procs = stack.enter_context(cgroup("memory", {"memory.limit_in_bytes": 64 * MIB}))
    # Read once inside the cgroup: every page the job reads has been evicted by the limit.
    enter = f'echo $$ > {procs} && cat {file} > /dev/null && exec "$@"'
    return ["sh", "-c", enter, "sh", iolab, "run", "--target", file, "--buffered", "--rw", "randread",
            "--qd", "4"]


def case_default(stack, iolab, scratch):
    return [iolab, "run"]


# name, what was set, the right cause, words the summary must hold (any of), the case
CASES = [
    ("quota", "cgroup CPU quota of 0.5 core, 2 null-engine workers", "configured_limit",
     ["CPU quota"], case_quota),
    ("affinity", "affinity mask of CPU 0, 2 null-engine workers", "configured_limit",
     ["affinity mask"], case_affinity),
    ("io_throttle", "blkio cap of 2,000 read IOPS on a loop device, QD 8", "configured_limit",
     ["capped at 2,000 read IOPS"], case_io_throttle),
    ("dirty", "dirty limits 16 MiB, writeback capped at 20 MiB/s, buffered 1 MiB writer", "configured_limit",
     ["dirty page limits", "I/O throttle"], case_dirty),
    ("dirty_disk", "dirty limits 16 MiB, buffered 1 MiB writer (io_uring, QD 4) to a file on the virtio disk",
     "configured_limit",
     ["dirty page limits"], case_dirty_disk),
    ("dirty_shared", "dirty limits 16 MiB, four psync writers of 1 MiB to one file on the virtio disk",
     "configured_limit", ["dirty page limits", "lock of the file"], case_dirty_shared),
    ("rate", "--rate-iops 2000 on a loop device, QD 8", "rate_limit", ["2,000"], case_rate),
    ("split", "1 MiB reads, max_sectors_kb 256 on a loop device", "device",
     ["requests", "busy"], case_split),
    ("zram", "zram 4 KiB random read, QD 32 (io-wq serves every request)", "kernel_cpu",
     ["io-wq"], case_zram),
    ("memory", "memory cgroup of 64 MiB, buffered random reads of 512 MiB", "configured_limit",
     ["memory limit"], case_memory),
    ("default", "iolab run, the default job on the virtio disk", "device", ["vda"], case_default),
]


@contextlib.contextmanager
def busy(scratch):
    """Two `yes` loops and an fio writer on the root disk, as the tests' busy run has them."""
    others = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    if shutil.which("fio"):
        others.append(subprocess.Popen(
            ["fio", "--name=busy", f"--filename={scratch}/busy", "--size=256M", "--rw=randwrite",
             "--bs=4k", "--direct=1", "--time_based", "--runtime=3600", "--thread"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        yield
    finally:
        for p in others:
            p.kill()
            p.wait()


def judge(name, argv, right, words, cwd):
    out = subprocess.run(argv + QUICK, capture_output=True, text=True, cwd=cwd)
    if out.returncode != 0:
        return ("error", out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "", "ERROR")
    verdict = json.loads(out.stdout)["jobs"][0]["verdict"]
    cause, summary = verdict["cause"], verdict["summary"]
    said = any(w in summary for w in words)
    if name == "split":
        # The split is right when no other load is claimed and the split is said.
        text = " ".join([summary] + verdict.get("evidence", []))
        said = "became up to 4 requests" in text and "Another load shared" not in text
        right_cause = cause != "other_load"
    elif name == "default":
        # What held the 32 I/Os: the device, or the job's own QD where a trial confirmed it.
        right_cause = cause == "device" or (cause == "concurrency" and "Confirmed:" in summary)
        said = True
    else:
        right_cause = cause == right
    mark = "right" if right_cause and said else ("another load" if cause == "other_load" else "WRONG")
    return (cause, summary, mark)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", action="store_true", help="beside two yes loops and an fio writer")
    parser.add_argument("--only", help="run this case alone")
    parser.add_argument("--iolab", default=os.path.join(ROOT, "target/release/iolab"))
    parser.add_argument("--width", type=int, default=160, help="summary characters shown")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("verdict_cases: needs root (cgroups, loop and zram devices, sysctls)")
    iolab = os.path.abspath(args.iolab)
    scratch = tempfile.mkdtemp(prefix="verdict-cases-", dir="/var/tmp")
    rows = []
    try:
        with busy(scratch) if args.busy else contextlib.nullcontext():
            for name, what, right, words, case in CASES:
                if args.only and name != args.only:
                    continue
                with contextlib.ExitStack() as stack:
                    argv = case(stack, iolab, scratch)
                    cause, summary, mark = judge(name, argv, right, words, scratch)
                rows.append((name, what, right, cause, mark, summary))
                print(f"{name}: {mark} ({cause}) {summary[:args.width]}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{'beside two yes loops and an fio writer' if args.busy else 'as the machine is'}:")
    print("| case | set on purpose | right cause | verdict | |")
    print("|---|---|---|---|---|")
    for name, what, right, cause, mark, _ in rows:
        print(f"| {name} | {what} | {right} | {cause} | {mark} |")
    right = sum(1 for r in rows if r[4] == "right")
    print(f"\n{right} of {len(rows)} right; {sum(1 for r in rows if r[4] == 'another load')} another load")


if __name__ == "__main__":
    main()
