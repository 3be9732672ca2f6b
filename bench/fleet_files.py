#!/usr/bin/env python3
"""`iolab fleet files` on one machine: N agents (default 2) on loopback ports, each allowed to
write its own directory, against one local `iolab files` with as many threads in all, on the
same files per host. Prints, per phase, the fleet's merged ops/s (the sum of the hosts'), the
local run's, their ratio, and the hosts' start skew; then the fleet's wall time beside the sum
of its phases' times (what the lock-step costs: each phase starts a few round trips ahead, at
least 300 ms).

    cargo build --release
    python3 bench/fleet_files.py                                  # 2 agents x 50,000 files, /dev/shm
    python3 bench/fleet_files.py --agents 4 --files 100000 --dir /mnt/test --engine sync

On one machine the agents share its cores and disk: the ratio says what fleet mode costs, not
what a real fleet gains. Everything started here is stopped at the end, also after Ctrl-C.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time

TOKEN = "fleet-files-bench-token-0123456789abcdef"


def start_agent(iolab, workdir, token, allowed):
    proc = subprocess.Popen(
        [iolab, "agent", "--listen", "127.0.0.1:0", "--token-file", token, "--allow-write", allowed],
        cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    if "listening on " not in line:
        raise SystemExit(f"an agent did not start: {line}")
    return proc, line.split("listening on ")[1].split()[0]


def run(command):
    print("$ " + " ".join(command), flush=True)
    began = time.monotonic()
    out = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - began
    if out.returncode != 0:
        raise SystemExit(f"exit {out.returncode}: {out.stderr}")
    return json.loads(out.stdout), wall


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iolab", default="target/release/iolab")
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--files", type=int, default=50000, help="files per host")
    parser.add_argument("--threads", type=int, default=1, help="threads per host")
    parser.add_argument("--engine", default="io_uring")
    parser.add_argument("--dir", default="/dev/shm", help="where the trees go (default /dev/shm)")
    args = parser.parse_args()
    args.iolab = os.path.abspath(args.iolab)
    common = ["--engine", args.engine, "--no-store", "--json", "--quiet"]
    with tempfile.TemporaryDirectory(prefix="iolab-fleet-files-", dir=args.dir) as workdir:
        token = os.path.join(workdir, "token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token, 0o600)
        agents = []
        try:
            for n in range(args.agents):
                allowed = os.path.join(workdir, f"host{n}")
                os.mkdir(allowed)
                agents.append(start_agent(args.iolab, workdir, token, allowed))
            hosts = ",".join(address for _, address in agents)
            fleet, fleet_wall = run([args.iolab, "fleet", "--hosts", hosts, "--token-file", token, "files",
                                     "--files", str(args.files), "--threads", str(args.threads), *common,
                                     os.path.join(workdir, "host{n}", "tree")])
            local, _ = run([args.iolab, "files", "--files", str(args.files * args.agents),
                            "--threads", str(args.threads * args.agents), *common, os.path.join(workdir, "local")])
        finally:
            for proc, _ in agents:
                proc.terminate()
                proc.wait()
    print(f"\n{args.agents} agents x {args.files:,} files x {args.threads} thread(s), {args.engine}, in {args.dir}")
    print(f"{'phase':<8} {'fleet ops/s':>12} {'local ops/s':>12} {'ratio':>7} {'skew ms':>8}")
    skews = {p["phase"]: p["start_skew_ms"] for p in fleet["fleet"]["phases"]}
    for f, l in zip(fleet["phases"], local["phases"]):
        ratio = f["ops_per_s"] / l["ops_per_s"] if l["ops_per_s"] else float("nan")
        print(f"{f['phase']:<8} {f['ops_per_s']:>12,.0f} {l['ops_per_s']:>12,.0f} {ratio:>6.2f}x {skews[f['phase']]:>8.2f}")
    phases_s = sum(p["elapsed_s"] for p in fleet["phases"])
    print(f"fleet wall {fleet_wall:.2f} s, its phases {phases_s:.2f} s: "
          f"{(fleet_wall - phases_s) / len(fleet['phases']):.2f} s of set-up and lock-step per phase")


if __name__ == "__main__":
    main()
