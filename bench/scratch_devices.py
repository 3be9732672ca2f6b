"""Scratch block devices for the side-by-side benchmarks, made here and always removed here.

- a loop device with direct I/O over a file in /dev/shm (tmpfs): the fast-device stand-in;
- a zram device, written through with random data: a RAM disk that io_uring cannot issue to
  without blocking, so every request goes through io-wq.

Both are filled from /dev/urandom before use. A zram device that was never written (or holds
zeroes) answers reads from its same-page shortcut without copying anything, about 3x faster
than real data; such figures mean nothing. Every device or file this module makes is undone in
reverse order by `remove_all`, which runs from the caller's `finally`, from atexit, and after
SIGTERM/SIGHUP (turned into SystemExit so that both run). Nothing that existed before is touched.
Needs root. Python 3 standard library only.
"""

import atexit
import os
import signal
import subprocess
import time
from pathlib import Path

ZRAM_CONTROL = Path("/sys/class/zram-control")
SHM = Path("/dev/shm")


class Unavailable(Exception):
    """This machine or user cannot make the device; the message says why and what to do."""


def _exit_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def _mib(size_bytes):
    if size_bytes % (1 << 20):
        raise Unavailable(f"size {size_bytes} B is not a whole number of MiB")
    return size_bytes >> 20


class ScratchDevices:
    """Makes loop and zram devices on demand and undoes all of it, whatever happens."""

    def __init__(self, say, stop_children=lambda: None):
        self._say_raw = say
        self._stop_children = stop_children  # ends a measured run still holding a device open
        self._undo = []  # (description, callable), undone last first
        atexit.register(self.remove_all)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _exit_on_signal)

    def _say(self, text):
        try:
            self._say_raw(text)
        except Exception:  # output gone (broken pipe): the clean-up must still run to the end
            pass

    @staticmethod
    def check_root(what):
        if os.geteuid() != 0:
            raise Unavailable(f"making {what} needs root; run with sudo")

    def _run(self, cmd):
        self._say(f"  $ {' '.join(cmd)}")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise Unavailable(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout.strip()

    def _fill_random(self, dest, size_bytes, direct):
        cmd = ["dd", "if=/dev/urandom", f"of={dest}", "bs=1M", f"count={_mib(size_bytes)}", "status=none"]
        if direct:
            cmd.append("oflag=direct")
        start = time.monotonic()
        self._run(cmd)
        self._say(f"    filled in {time.monotonic() - start:.1f} s")
        return cmd

    def loop(self, size_bytes):
        """A loop device with direct I/O over a tmpfs file of random data.
        Returns (device path, the commands that made it, notes)."""
        self.check_root("a loop device")
        image = SHM / f"iolab-bench-{os.getpid()}.img"
        self._say(f"making a loop device over {image} ({size_bytes >> 20} MiB of random data):")
        self._undo.append((f"remove {image}", lambda: image.unlink(missing_ok=True)))
        fill = self._fill_random(image, size_bytes, direct=False)
        attach = ["losetup", "--direct-io=on", "-f", "--show", str(image)]
        dev = Path(self._run(attach))
        if not dev.name.startswith("loop"):
            raise Unavailable(f"losetup printed {dev}, not a loop device")
        self._undo.append((f"losetup -d {dev}", lambda: self._detach_loop(dev)))
        dio = Path(f"/sys/block/{dev.name}/loop/dio")
        notes = []
        if dio.exists() and dio.read_text().strip() != "1":
            notes.append(f"{dev} runs WITHOUT direct I/O ({dio} = 0): the backing file's page cache is used")
        else:
            notes.append(f"{dev}: direct I/O on ({dio} = 1)")
        return dev, [fill, attach], notes

    def _detach_loop(self, dev):
        # A loop device still held open is only marked autoclear by -d; it goes when released.
        subprocess.run(["losetup", "-d", str(dev)], capture_output=True)
        self._say(f"detached {dev}")

    def zram(self, size_bytes):
        """A new zram device (never an existing one) of size_bytes, written full of random data.
        Returns (device path, the commands that made it, notes)."""
        self.check_root("a zram device")
        if not (ZRAM_CONTROL / "hot_add").exists():
            raise Unavailable(f"no {ZRAM_CONTROL}/hot_add: load the zram module (modprobe zram) first")
        self._say(f"making a zram device ({size_bytes >> 20} MiB of random data):")
        self._say(f"  $ cat {ZRAM_CONTROL}/hot_add")
        dev_id = int((ZRAM_CONTROL / "hot_add").read_text().strip())
        dev = Path(f"/dev/zram{dev_id}")
        self._undo.append((f"echo {dev_id} > {ZRAM_CONTROL}/hot_remove", lambda: self._remove_zram(dev_id)))
        sysfs = Path(f"/sys/block/zram{dev_id}")
        self._say(f"  $ echo {size_bytes} > {sysfs}/disksize")
        (sysfs / "disksize").write_text(str(size_bytes))
        for _ in range(50):  # the node appears from devtmpfs/udev shortly after hot_add
            if dev.exists():
                break
            time.sleep(0.1)
        else:
            raise Unavailable(f"{dev} did not appear after hot_add")
        fill = self._fill_random(dev, size_bytes, direct=True)
        notes = [self._zram_fill_check(sysfs, size_bytes)]
        algo = (sysfs / "comp_algorithm").read_text().split()
        notes.append("compression " + next((a.strip("[]") for a in algo if a.startswith("[")), "?"))
        setup = [["sh", "-c", f"cat {ZRAM_CONTROL}/hot_add"], ["sh", "-c", f"echo {size_bytes} > {sysfs}/disksize"], fill]
        return dev, setup, notes

    @staticmethod
    def _zram_fill_check(sysfs, size_bytes):
        """mm_stat: orig_data_size compr_data_size mem_used_total ... same_pages ... ; a filled
        device holds size_bytes of original data and no same-filled (e.g. zero) pages."""
        fields = (sysfs / "mm_stat").read_text().split()
        orig, compr, same = int(fields[0]), int(fields[1]), int(fields[5])
        text = (f"zram holds {orig >> 20} MiB of data, {compr >> 20} MiB compressed, "
                f"{same} same-filled pages")
        if orig < size_bytes * 0.99 or same > size_bytes // 4096 // 100:
            raise Unavailable(f"zram was not filled with random data: {text}")
        return text

    def _remove_zram(self, dev_id):
        # EBUSY while anything holds it open (a run we just stopped may take a moment to go).
        for attempt in range(20):
            try:
                (ZRAM_CONTROL / "hot_remove").write_text(str(dev_id))
                self._say(f"removed /dev/zram{dev_id}")
                return
            except OSError as e:
                if attempt == 19:
                    self._say(f"!! could not remove /dev/zram{dev_id} ({e}); "
                              f"do it by hand: echo {dev_id} > {ZRAM_CONTROL}/hot_remove")
                time.sleep(0.5)

    def remove_all(self):
        if not self._undo:
            return
        self._stop_children()
        while self._undo:
            what, undo = self._undo.pop()
            try:
                undo()
            except Exception as e:  # keep undoing the rest; say what is left behind
                self._say(f"!! {what} failed: {e}")
