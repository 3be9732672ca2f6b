#!/usr/bin/env python3
"""`iolab fleet cache` over two agents on loopback, each in a memory cgroup of its own.

Root only (cgroup v1 memory controller). Each agent runs in a directory of its own under --dir
(the root disk: tmpfs has no miss tier) holding a cold file `t` of --file MiB, in a memory cgroup
of its --limit; the coordinator (outside both) runs the study on `/proc/self/cwd/t`, which each
agent resolves to its own file. Prints the working sets in the order measured, then each host's
first tier: its capacity against its cgroup's limit, and the working sets it was judged on (with
"after a larger one" where that was so). Cgroups, agents and files are removed at the end, also
after an error or Ctrl-C.

    sudo python3 bench/fleet_cache_cgroup.py                       # 96 and 160 MiB, target/debug/iolab
    sudo python3 bench/fleet_cache_cgroup.py --limit 128 --limit 256 -- --promotion-time 0
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cache_cgroup import MIB, cold_file, remove_cgroup  # noqa: E402

STUDY = ["--buffered", "--runtime", "1s", "--ramp", "500ms", "--promotion-time", "5s", "--no-pollution"]
TOKEN = "iolab-bench-fleet-cache-token-0123456789"


def start_agent(iolab, own, cg, token):
    enter = f'echo $$ > {cg}/cgroup.procs && exec "$@"'
    log = open(os.path.join(own, "agent.log"), "w+")
    args = [iolab, "agent", "--listen", "127.0.0.1:0", "--token-file", token]
    agent = subprocess.Popen(["sh", "-c", enter, "sh", *args], cwd=own, stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(100):
        log.seek(0)
        for line in log.read().splitlines():
            if "listening on " in line:
                return agent, line.split("listening on ")[1].split()[0]
        time.sleep(0.1)
    agent.terminate()
    sys.exit(f"the agent in {own} did not listen")


def report(summary, limits):
    hosts = summary["fleet"]["hosts"]
    for host, limit in zip(hosts, limits):
        own = host["summary"]
        tiers = own.get("tiers") or []
        if not tiers:
            print(f"{host['host']} (limit {limit} MiB): no tier: {own.get('note')}")
            continue
        tier = tiers[0]
        size = tier["size_bytes"] / MIB
        print(f"{host['host']} (limit {limit} MiB): tier 1 of {size:.1f} MiB, ratio to the limit "
              f"{size / limit:.3f}; misses begin between {tier['fits_bytes'] / MIB:.1f} and "
              f"{tier['upper_bytes'] / MIB:.1f} MiB; hits {tier['hit_ns'] / 1e3:.2f} us, misses {tier['miss_ns'] / 1e3:.0f} us")
        after = {p["working_set_bytes"] for p in own["points"] if p.get("after_larger")}
        for s in tier["hit_shares"]:
            mark = " (after a larger one)" if s["working_set_bytes"] in after else ""
            used = "judged on" if s["used"] else "left out "
            print(f"    {used} {s['working_set_bytes'] / MIB:7.1f} MiB: {s['share']:.3f} hit -> "
                  f"{s['capacity_bytes'] / MIB:.1f} MiB{mark}")
        print(f"    {len(own['points'])} working sets, {sum(1 for p in own['points'] if p['refined'])} refined, "
              f"{len(after)} after a larger one")
    for sentence in summary["fleet"]["sentences"]:
        print(sentence)


def main():
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iolab", default="target/debug/iolab")
    parser.add_argument("--limit", type=int, action="append", help="MiB per agent (repeat; default 96 and 160)")
    parser.add_argument("--file", type=int, default=384, help="MiB of each agent's file")
    parser.add_argument("--dir", default="/var/tmp", help="where the files go (not tmpfs)")
    parser.add_argument("extra", nargs="*", help="more arguments for the cache study, after --")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: it makes memory cgroups")
    iolab, limits = os.path.abspath(opts.iolab), opts.limit or [96, 160]
    work = tempfile.mkdtemp(prefix="iolab-fleet-cache-cgroup-", dir=opts.dir)
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token, 0o600)
    agents, cgroups = [], []
    try:
        for i, limit in enumerate(limits):
            own = os.path.join(work, f"host{i}")
            os.mkdir(own)
            cold_file(os.path.join(own, "t"), opts.file * MIB)
            cg = f"/sys/fs/cgroup/memory/iolab-bench-fleet-cache-{os.getpid()}-{i}"
            os.mkdir(cg)
            cgroups.append(cg)
            with open(f"{cg}/memory.limit_in_bytes", "w") as f:
                f.write(str(limit * MIB))
            agents.append(start_agent(iolab, own, cg, token))
        hosts = ",".join(address for _, address in agents)
        args = [iolab, "fleet", "--hosts", hosts, "--token-file", token, "cache",
                "/proc/self/cwd/t", *STUDY, *opts.extra, "--no-store", "--json", "-q"]
        print(f"command: {shlex.join(args)}")
        print(f"targets: {len(limits)} agents, each {opts.file} MiB under {work}, memory cgroups of {limits} MiB")
        started = time.time()
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"iolab failed ({out.returncode}): {out.stderr[-2000:]}")
        print(f"{time.time() - started:.0f} s")
        summary = json.loads(out.stdout)["summary"]
        order = [j["name"][len("working set "):] for j in json.loads(out.stdout)["run"]["jobs"]
                 if j["name"].startswith("working set ")]
        print("order: " + ", ".join(order))
        report(summary, limits)
    finally:
        for agent, _ in agents:
            agent.terminate()
            agent.wait()
        for cg in cgroups:
            remove_cgroup(cg)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
