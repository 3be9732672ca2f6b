#!/usr/bin/env python3
"""An agent under a slow-connection flood (issue 19): starts `iolab agent` on loopback with an
open-file limit of 1,024 (`--nofile`), opens 1,500 connections (`--connections`) from 127.0.0.2
(`--sources N`: spread over N addresses from 127.0.0.2 up) that each send half a request head
and then wait, reopening any the agent closes, for 60 s (`--duration`); meanwhile, once a
second, the coordinator's handshake (POST /v1/hello with the token) goes out from 127.0.0.1
and its latency is recorded. Prints the command, the median and largest latency, the failed
handshakes, how many attack connections the agent turned away or closed, and whether every
handshake was answered within 1 s.

    cargo build -p iolab                                  # or --release, and --iolab PATH
    python3 bench/agent_attack.py                         # 1,500 connections for 60 s
    python3 bench/agent_attack.py --sources 50            # from 50 addresses: fills --max-connections
    python3 bench/agent_attack.py --connections 300 --duration 10

Loopback only, bounded in count and time; the agent and every socket are closed at the end,
also after Ctrl-C.
"""

import argparse
import http.client
import json
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "agent-attack-bench-token-0123456789abcdef"
HALF_HEAD = b"POST /v1/hello HTTP/1.1\r\nHost: agent\r\nAuthoriz"


def start_agent(iolab, workdir, nofile):
    token = os.path.join(workdir, "token")
    with open(token, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token, 0o600)

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    command = [iolab, "agent", "--listen", "127.0.0.1:0", "--token-file", token]
    proc = subprocess.Popen(command, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    line = proc.stderr.readline()
    if "listening on " not in line:
        proc.kill()
        raise SystemExit(f"the agent did not start: {line.strip()}")
    addr = line.split("listening on ")[1].split()[0]
    host, port = addr.rsplit(":", 1)
    log_lines = []
    # Drain the agent's log so it never blocks on a full pipe; count its lines.
    threading.Thread(target=lambda: log_lines.extend(proc.stderr), daemon=True).start()
    return proc, (host, int(port)), command, log_lines


class Attack:
    """Up to `count` half-sent requests from `sources` in turn, reopened as the agent closes them."""

    def __init__(self, target, sources, count):
        self.target, self.sources, self.count = target, sources, count
        self.selector = selectors.DefaultSelector()
        self.open = 0
        self.opened = 0
        self.closed_by_agent = 0
        self.answered_503 = 0
        self.connect_failures = 0

    def connect_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((self.sources[self.opened % len(self.sources)], 0))
            s.settimeout(2)
            s.connect(self.target)
            s.sendall(HALF_HEAD)
            s.setblocking(False)
        except OSError:
            s.close()
            self.connect_failures += 1
            return
        self.selector.register(s, selectors.EVENT_READ)
        self.open += 1
        self.opened += 1

    def run(self, until):
        while time.monotonic() < until:
            while self.open < self.count and time.monotonic() < until:
                self.connect_one()
                if self.connect_failures and self.connect_failures % 200 == 0:
                    time.sleep(0.05)
                # Look at closed ones now and then, so reopening keeps pace.
                if self.opened % 100 == 0:
                    self.reap(0)
            self.reap(0.5)

    def reap(self, timeout):
        for key, _ in self.selector.select(timeout):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                self.answered_503 += 1
            self.selector.unregister(s)
            s.close()
            self.open -= 1
            self.closed_by_agent += 1

    def close(self):
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        self.selector.close()


def handshake(target):
    """The coordinator's handshake: latency in seconds, or the error."""
    body = json.dumps({"protocol": "iolab.fleet/2"}).encode()
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection(target[0], target[1], timeout=10, source_address=("127.0.0.1", 0))
        conn.request("POST", "/v1/hello", body=body, headers={
            "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        conn.close()
        elapsed = time.monotonic() - started
        # A 400 (another protocol name) still proves the agent answered; a 503 does not.
        if response.status in (200, 400):
            return elapsed, None
        return elapsed, f"HTTP {response.status}"
    except OSError as e:
        return time.monotonic() - started, str(e) or type(e).__name__


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iolab", default=None, help="default: target/release/iolab, else target/debug/iolab")
    parser.add_argument("--connections", type=int, default=1500)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--nofile", type=int, default=1024, help="the agent's open-file limit")
    parser.add_argument("--sources", type=int, default=1,
                        help="how many loopback addresses the attack comes from (127.0.0.2 and up)")
    args = parser.parse_args()
    if args.connections > 5000 or args.duration > 600 or not 1 <= args.sources <= 250:
        raise SystemExit("bounded: at most 5,000 connections, 600 s and 250 addresses")
    sources = [f"127.0.0.{2 + i}" for i in range(args.sources)]
    iolab = args.iolab or next((p for p in ("target/release/iolab", "target/debug/iolab") if os.path.exists(p)), None)
    if not iolab:
        raise SystemExit("no iolab binary: cargo build -p iolab, or give --iolab PATH")
    iolab = os.path.abspath(iolab)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.connections + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    print(f"$ {' '.join(sys.argv)}")
    with tempfile.TemporaryDirectory(prefix="iolab-agent-attack-") as workdir:
        proc, target, command, log_lines = start_agent(iolab, workdir, args.nofile)
        print(f"agent: {' '.join(command)} (ulimit -n {args.nofile}), at {target[0]}:{target[1]}")
        baseline = [handshake(target) for _ in range(5)]
        attack = Attack(target, sources, args.connections)
        until = time.monotonic() + args.duration
        attacker = threading.Thread(target=attack.run, args=(until,), daemon=True)
        try:
            attacker.start()
            samples = []
            while time.monotonic() < until:
                tick = time.monotonic()
                samples.append(handshake(target))
                time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
            attacker.join(timeout=10)
        finally:
            attack.close()
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    answered = [s for s, error in samples if error is None]
    failed = [(round(s, 3), error) for s, error in samples if error is not None]
    base = [s for s, error in baseline if error is None]
    origin = sources[0] if len(sources) == 1 else f"{sources[0]}-{sources[-1]}"
    print(f"attack: {args.connections} slow connections from {origin} for {args.duration:.0f} s: "
          f"{attack.opened} opened, {attack.closed_by_agent} closed by the agent "
          f"({attack.answered_503} of them answered 503 first), {attack.connect_failures} could not connect")
    if base:
        print(f"handshake before the attack: median {statistics.median(base) * 1000:.1f} ms")
    if answered:
        print(f"handshake during the attack: {len(answered)} of {len(samples)} answered, "
              f"median {statistics.median(answered) * 1000:.1f} ms, max {max(answered) * 1000:.1f} ms")
    if failed:
        print(f"failed handshakes: {len(failed)} (first: {failed[:3]})")
    print(f"agent log: {len(log_lines)} lines")
    ok = samples and not failed and max(answered) < 1.0
    print(f"every handshake answered within 1 s: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
