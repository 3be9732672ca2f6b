"""The file or device the tools read: laid out once, checked before use, removed at the end.

Block devices are only ever read, and the system disk is refused: /dev/vda*, the device under /
or /work, and mounted devices. The speed scenarios' loop and zram devices are made (root only)
and removed by scratch_devices.ScratchDevices (bench/scratch_devices.py, shared with
sampler_cost.py), also after an error, Ctrl-C or SIGTERM.
"""

import os
import shlex
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scratch_devices import ScratchDevices, Unavailable

from .paths import DEFAULT_TARGET, NULL_FILE
from .report import say
from .units import human_size, parse_size


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
    """Refuses the disk the system runs on; only spare devices (e.g. /dev/loopN) are allowed.
    Returns the device's size in bytes."""
    real = os.path.realpath(path)
    name = os.path.basename(real)
    if name.startswith("vda"):
        sys.exit(f"vs_fio: refusing {path} ({real}): /dev/vda* is the system disk and is never used")
    mine = sysfs_dir(os.stat(real).st_rdev)
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


def prepare_target(args):
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
    cmd = [args.fio, "--name=layout", f"--filename={path}", f"--size={size}", "--rw=write", "--bs=1m",
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


def fs_device_note(path):
    """Which block device and driver hold path's filesystem, e.g. 'vda (virtio_blk)'."""
    try:
        dev = sysfs_dir(os.stat(path).st_dev)
        disk = dev if (dev / "device").exists() else dev.parent
        driver = (disk / "device" / "driver").resolve().name
        return f"filesystem on /dev/{dev.name} ({disk.name}: {driver})"
    except OSError:
        return "filesystem device unknown"


class Targets:
    """Makes the targets lazily (a null-only run lays nothing out) and removes what it made."""

    def __init__(self, args, stop_children):
        self.args = args
        self._io = None
        self._null = None
        self._devices = {}  # "loop" | "zram" -> Target, or the Unavailable that stopped it
        self.scratch = ScratchDevices(say, stop_children=stop_children)

    def device(self, kind):
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
                                         kind=label + ", made and removed by this script",
                                         setup_cmds=cmds, notes=notes)
        got = self._devices[kind]
        if isinstance(got, Unavailable):
            raise got
        return got

    def io(self):
        if self._io is None:
            self._io = prepare_target(self.args)
        return self._io

    def null(self):
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
