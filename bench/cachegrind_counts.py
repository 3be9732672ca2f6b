"""Instructions, L1 data misses and mispredicted branches per I/O of an iolab command, counted
by valgrind's cachegrind (simulated 32 KiB 8-way L1 data cache and its branch predictor).

Counts, unlike CPU times, do not move with what else the machine runs, so a few per cent can be
told apart on a shared virtual machine where timed runs spread by tens of per cent. The command
runs twice, to two I/O counts (`--io-limit`); the difference of the totals over the difference
of the counts is the cost per I/O without the start-up and the report. (Threads are serialised
under valgrind, so the L1 misses still move a little from run to run: repeat and take medians.)
"""

import re
import shutil
import subprocess

FEW_IOS = 200_000
MANY_IOS = 3_200_000

TOTALS = {
    "instructions": r"I\s+refs:\s+([\d,]+)",
    "l1_misses": r"D1\s+misses:\s+([\d,]+)",
    "mispredicts": r"Mispredicts:\s+([\d,]+)",
}


def available():
    return shutil.which("valgrind") is not None


def _totals(cmd):
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
                           "--cachegrind-out-file=/dev/null", *cmd], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`valgrind ... {' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    totals = {}
    for name, pattern in TOTALS.items():
        found = re.search(pattern, done.stderr)
        if not found:
            raise SystemExit(f"cachegrind printed no {name} total for `{' '.join(cmd)}`")
        totals[name] = int(found.group(1).replace(",", ""))
    return totals


def per_io(cmd_for):
    """`cmd_for(ios)` is the command that stops after `ios` I/Os; answers each count per I/O."""
    few, many = _totals(cmd_for(FEW_IOS)), _totals(cmd_for(MANY_IOS))
    return {name: (many[name] - few[name]) / (MANY_IOS - FEW_IOS) for name in TOTALS}
