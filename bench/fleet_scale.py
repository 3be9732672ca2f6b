#!/usr/bin/env python3
"""Fleet mode at scale on one machine: N agents (default 32) on loopback ports, one coordinator,
a few runs; prints each run's start skew (how far apart the hosts' measured windows opened, on
the coordinator's clock) and the time from the end of the measured phase to the merged result
in hand, then their medians and maxima.

    cargo build --release
    python3 bench/fleet_scale.py                       # 32 agents, null engine, 3 runs of 2 s
    python3 bench/fleet_scale.py --agents 64 --engine psync --target /dev/shm/f --runs 5

With --engine other than null each agent reads --target (a file every agent can read; on one
machine they share it). Everything started here is stopped at the end, also after Ctrl-C.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TOKEN = "fleet-bench-token-0123456789abcdef0123"


def start_agents(iolab, count, workdir):
    token = os.path.join(workdir, "token")
    with open(token, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token, 0o600)
    agents = []
    for _ in range(count):
        proc = subprocess.Popen(
            [iolab, "agent", "--listen", "127.0.0.1:0", "--token-file", token],
            cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = proc.stderr.readline()
        if "listening on " not in line:
            raise SystemExit(f"an agent did not start: {line}")
        agents.append((proc, line.split("listening on ")[1].split()[0]))
    return token, agents


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iolab", default="target/release/iolab")
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--runtime", default="2s")
    parser.add_argument("--engine", default="null")
    parser.add_argument("--qd", default="1")
    parser.add_argument("--target", help="file each agent reads (default: a 16 MiB file made here)")
    args = parser.parse_args()
    args.iolab = os.path.abspath(args.iolab)
    with tempfile.TemporaryDirectory(prefix="iolab-fleet-bench-") as workdir:
        target = args.target or os.path.join(workdir, "t")
        if not args.target:
            with open(target, "wb") as f:
                f.write(os.urandom(16 << 20))
        token, agents = start_agents(args.iolab, args.agents, workdir)
        try:
            hosts = ",".join(address for _, address in agents)
            command = [args.iolab, "--no-store", "fleet", "--hosts", hosts, "--token-file", token,
                       "--target", target, "--engine", args.engine, "--qd", args.qd, "--runtime", args.runtime,
                       "--ramp", "0", "--json", "--quiet"]
            shown = command[:4] + [f"<{args.agents} agents>"] + command[5:]
            print("command:", " ".join(shown))
            skews, merges = [], []
            for run in range(args.runs):
                started = time.monotonic()
                out = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
                wall = time.monotonic() - started
                if out.returncode != 0:
                    raise SystemExit(f"run {run + 1} failed ({out.returncode}): {out.stderr}")
                job = json.loads(out.stdout)["jobs"][0]
                fleet = job["fleet"]
                ok = sum(1 for h in fleet["hosts"] if h["status"] == "ok")
                skew_ms = fleet["start_skew_ns"] / 1e6
                skews.append(skew_ms)
                merges.append(fleet["merge_latency_ms"])
                print(f"run {run + 1}: {ok}/{len(fleet['hosts'])} hosts merged, {job['total']['iops']:,.0f} IOPS, "
                      f"start skew {skew_ms:.3f} ms, phase end -> merged result {fleet['merge_latency_ms']:.1f} ms, "
                      f"live lag max {fleet['max_stream_lag_ms']:.1f} ms, command {wall:.2f} s")
            print(f"start skew: median {statistics.median(skews):.3f} ms, max {max(skews):.3f} ms")
            print(f"phase end -> merged result: median {statistics.median(merges):.1f} ms, max {max(merges):.1f} ms")
        finally:
            for proc, _ in agents:
                proc.terminate()
            for proc, _ in agents:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()


if __name__ == "__main__":
    sys.exit(main())
