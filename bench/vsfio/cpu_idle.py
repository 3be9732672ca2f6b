"""How far the CPUs may go idle while the tools run: as the machine has it, or kept polling.

On a VM whose cpuidle driver halts (haltpoll with guest_halt_poll_ns 0), every idle CPU's
wake-up is a VM exit, and a tool's IOPS at a shallow queue depend on how often its CPUs idle:
the tool that spends less CPU per I/O halts more and loses. Holding /dev/cpu_dma_latency at 0
(the PM QoS request that cyclictest and tuned's latency profiles make) keeps every CPU in its
polling state instead; the kernel drops the request when the file is closed, also when this
process dies.
"""

import os
import struct
from pathlib import Path

CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
HALT_POLL = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
PM_QOS = "/dev/cpu_dma_latency"


def describe():
    """The machine's idle policy in one line: cpuidle driver and governor, the guest's halt
    polling where it has one, and each state's exit latency."""
    parts = []
    for name in ("current_driver", "current_governor"):
        try:
            parts.append(f"{name.split('_')[1]} {(CPUIDLE / name).read_text().strip()}")
        except OSError:
            pass
    if HALT_POLL.exists():
        parts.append(f"guest_halt_poll_ns {HALT_POLL.read_text().strip()}")
    states = sorted(Path("/sys/devices/system/cpu/cpu0/cpuidle").glob("state*"))
    if states:
        parts.append("states " + ", ".join(
            f"{(s / 'name').read_text().strip()} ({(s / 'latency').read_text().strip()} us exit)" for s in states))
    return "; ".join(parts) or "no cpuidle information"


class IdlePolicy:
    """`poll`: holds /dev/cpu_dma_latency at 0 us until `release`; `as-is`: changes nothing."""

    def __init__(self, mode):
        self.mode = mode
        self._fd = None

    def hold(self):
        if self.mode != "poll":
            return
        try:
            self._fd = os.open(PM_QOS, os.O_WRONLY)
            os.write(self._fd, struct.pack("i", 0))
        except OSError as e:
            raise SystemExit(f"vs_fio: --cpu-idle poll needs {PM_QOS} (root): {e}") from None

    def release(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def text(self):
        if self.mode == "poll":
            return f"CPU idle: kept polling for every run ({PM_QOS} held at 0 us); the machine's own: {describe()}"
        return f"CPU idle: as the machine has it ({describe()}); --cpu-idle poll keeps the CPUs polling"
