#!/usr/bin/env python3
"""What `--verify` costs a read (issue 15): every 4 KiB block read is checked (one XXH3 over
the block, its stamp against the record of the write that should be there).

On a loop device with direct I/O over tmpfs (root; made and removed here): the whole device is
first written once with --verify (sequential 1 MiB writes), so every block has a record; then
4 KiB random reads, QD 32, one worker, with and without --verify in alternating pairs
(--repeat). Prints read IOPS and CPU per I/O of each and the ratio verify/plain, against the
goal: --verify reads cost at most 10% CPU per I/O, judged with the noise rule of `iolab compare`
(bench/vsfio/noise.py). Every verified run must find no bad block.

sudo python3 bench/verify.py [--runtime 5] [--repeat 5] [--iolab PATH]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_runs import show_sides  # noqa: E402
from scratch_devices import ScratchDevices, Unavailable  # noqa: E402
from vsfio.noise import goal_verdict  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COST_LIMIT = 0.10  # verify may cost at most 10% CPU per I/O of a read


def say(text=""):
    print(text, flush=True)


def iolab(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout)["jobs"][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=1 << 30, help="bytes of the scratch device")
    parser.add_argument("--iolab", default=str(REPO / "target/release/iolab"))
    args = parser.parse_args()
    say(f"verify: iolab {args.iolab}; runtime {args.runtime} s, repeat {args.repeat}")
    devices = ScratchDevices(say)
    state_dir = tempfile.TemporaryDirectory()
    state = str(Path(state_dir.name) / "loop.state")
    try:
        try:
            device, _, notes = devices.loop(args.size)
        except Unavailable as why:
            say(f"loop: skipped: {why}")
            return
        for note in notes:
            say(f"  {note}")
        fill = [args.iolab, "run", "--target", str(device), "--rw", "write", "--bs", "1m", "--qd", "8",
                "--ramp", "0", "--io-limit", str(args.size), "--runtime", "600s", "--verify",
                "--verify-state", state, "--json", "-q", "--no-store", "--allow-destroy"]
        say(f"  $ {' '.join(fill)}")
        job = iolab(fill)
        say(f"  written: {job['verify']['blocks_recorded']:,} blocks recorded")
        read = [args.iolab, "run", "--target", str(device), "--rw", "randread", "--bs", "4k", "--qd", "32",
                "--runtime", f"{args.runtime}s", "--ramp", "1s", "--json", "-q", "--no-store"]
        say(f"\nloop: {device}, 4 KiB random read, QD 32, 1 worker, {args.runtime} s after 1 s ramp, "
            f"{args.repeat} alternating pairs")
        say(f"  $ {' '.join(read)} [--verify --verify-state {state}]")
        runs = {True: [], False: []}
        for i in range(args.repeat):
            for verify in ((True, False) if i % 2 == 0 else (False, True)):
                cmd = read + (["--verify", "--verify-state", state] if verify else [])
                job = iolab(cmd)
                if verify:
                    v = job["verify"]
                    bad = sum(v["bad"].values())
                    if bad or v["blocks_checked"] == 0:
                        raise SystemExit(f"verify run found {bad} bad blocks, checked {v['blocks_checked']}: {v}")
                runs[verify].append((job["total"]["iops"], job["cpu"]["us_per_io"]))
        (iops_v, iops_p), (cpu_v, cpu_p) = show_sides(say, runs, "with --verify", "plain")
        cpu_ratio = statistics.median(cpu_v) / statistics.median(cpu_p)
        iops_ratio = statistics.median(iops_v) / statistics.median(iops_p)
        cpu_goal = goal_verdict(cpu_v, cpu_p, 1 + COST_LIMIT, False).text
        say(f"  verify/plain: CPU per I/O {cpu_ratio:.3f}x (goal <= {1 + COST_LIMIT:.2f}x: {cpu_goal}); "
            f"IOPS {iops_ratio:.3f}x")
    finally:
        devices.remove_all()
        state_dir.cleanup()


if __name__ == "__main__":
    main()
