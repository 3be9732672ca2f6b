#!/usr/bin/env python3
"""Issue 35's measurements in one run: what `iolab capture` costs and whether it sees every
request, how faithfully `iolab replay` keeps a capture, and how close `iolab trace job` comes.

On two loop devices over /dev/shm (made, filled with random data and removed here; root):
1. fio runs a known mix on A (4 KiB/64 KiB 60/40, 70% reads, zoned:60/10:30/20:10/70, QD 8)
   for --seconds, in alternating rounds without and with `iolab capture A`: fio's IOPS with
   over without (the capture's overhead on the device), iolab's CPU per captured request, and
   the capture's completions beside the device's counters; `trace show` of the capture against
   what fio was asked.
2. The capture replayed on B at 1x, as-is and with --cpu-idle poll: lag p50/p99/max and the
   share late; B captured meanwhile: the (op, offset, length) it was given against the trace's,
   as a multiset and in order.
3. `--speed max` against `iolab run` of the same mix closed loop at the same QD on B.
4. `iolab trace job --check B`: each figure of the trace beside its job's run.

    cargo build --release -p iolab
    sudo python3 bench/trace_replay.py [--seconds 5] [--rounds 3]
"""

import argparse
import collections
import json
import os
import struct
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


class Loop:
    def __init__(self, name, mib=1024):
        self.img = f"/dev/shm/iolab-bench-trace-{name}-{os.getpid()}.img"
        sh("truncate", "-s", f"{mib}M", self.img)
        self.dev = sh("losetup", "--direct-io=on", "-f", "--show", self.img).strip()
        sh("dd", "if=/dev/urandom", f"of={self.dev}", "bs=1M", f"count={mib}", "oflag=direct", "status=none")

    def remove(self):
        subprocess.run(["losetup", "-d", self.dev], check=False)
        os.unlink(self.img)


def fio(dev, seconds):
    return subprocess.Popen(
        ["fio", "--name=mix", f"--filename={dev}", "--direct=1", "--ioengine=io_uring", "--iodepth=8",
         "--rw=randrw", "--rwmixread=70", "--bssplit=4k/60:64k/40",
         "--random_distribution=zoned:60/10:30/20:10/70", "--time_based", f"--runtime={seconds}",
         "--output-format=json"], stdout=subprocess.PIPE, text=True)


def fio_iops(proc):
    out, _ = proc.communicate()
    job = json.loads(out)["jobs"][0]
    return job["read"]["iops"] + job["write"]["iops"]


def capture(dev, seconds, path):
    return subprocess.Popen([IOLAB, "capture", dev, "--for", f"{seconds}s", "-o", path, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def requests(path):
    """(op, offset, length) of an iolab trace's reads and writes, in order, read from the file
    as docs/trace-format.md lays it out."""
    data = open(path, "rb").read()
    assert data[:8] == b"IOLABTRC"
    hlen = struct.unpack_from("<I", data, 12)[0]
    header = json.loads(data[16:16 + hlen])
    at, out = 16 + hlen, []

    def varint():
        nonlocal at
        value = shift = 0
        while True:
            b = data[at]
            at += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    for _ in range(header["requests"]):
        varint()
        code = data[at]
        at += 1
        offset, length = varint(), varint()
        varint(), varint()
        if code & 0x80:
            varint()
        if code & 3 in (0, 1):
            out.append(("read" if code & 3 == 0 else "write", offset, length))
    return out


def replay(trace, dev, extra):
    out = sh(IOLAB, "replay", trace, "--target", dev, "--allow-destroy", "--json", "--no-store", "-q", *extra)
    return json.loads(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    a, b = Loop("a"), Loop("b")
    scratch = tempfile.mkdtemp(prefix="iolab-bench-trace-")
    try:
        plain, captured, costs = [], [], []
        trace = os.path.join(scratch, "a.trace")
        for r in range(args.rounds):
            for with_capture in ((False, True) if r % 2 == 0 else (True, False)):
                load = fio(a.dev, args.seconds + 2)
                if with_capture:
                    subprocess.run(["sleep", "1"])
                    cap = capture(a.dev, args.seconds, trace)
                    out, err = cap.communicate()
                    assert cap.returncode == 0, err
                    shown = json.loads(out)
                    costs.append(shown)
                    captured.append(fio_iops(load))
                else:
                    plain.append(fio_iops(load))
        last = costs[-1]
        cost = last["trace"]["capture_cost"]
        print(f"1. capture: fio {statistics.median(captured):,.0f} IOPS captured against {statistics.median(plain):,.0f} "
              f"uncaptured ({statistics.median(captured) / statistics.median(plain):.3f}x, medians of {args.rounds}); "
              f"iolab's CPU per captured request {statistics.median(c['trace']['capture_cost']['cpu_ns_per_request'] for c in costs) / 1e3:.2f} us; "
              f"last capture: {cost['captured_completed']:,} completions traced, {cost['device_completed']:,} counted by the device, "
              f"{cost['dropped_events']} events dropped")
        shape = last["shape"]
        sizes = ", ".join(f"{s['bytes']} {s['pct']:.1f}%" for s in shape["sizes"])
        zones = ",".join(f"{io}/{size}" for io, size in shape["placement"]["zoned_fit"])
        print(f"   trace show: read {shape['read_pct']:.1f}% (asked 70), sizes {sizes} (asked 60/40), "
              f"zoned:{zones} (asked 60/10,30/20,10/70), misplacing {shape['placement']['zoned_error_pct']:.1f}%")

        asked = requests(trace)
        for label, extra in (("as-is", []), ("--cpu-idle poll", ["--cpu-idle", "poll"])):
            b_trace = os.path.join(scratch, "b.trace")
            cap = capture(b.dev, args.seconds + 4, b_trace)
            subprocess.run(["sleep", "1"])
            report = replay(trace, b.dev, extra)
            cap.communicate()
            rep = report["run"]["jobs"][0]["groups"][0]["replay"]
            lag = {p["p"]: p["ns"] for p in rep["lag"]["percentiles"]}
            got = requests(b_trace)
            same = collections.Counter(asked) - collections.Counter(got)
            wanted = set(asked)
            in_order = sum(1 for x, y in zip(asked, [g for g in got if g in wanted]) if x == y)
            print(f"2. replay at 1x ({label}): {rep['completed']:,} of {rep['requests']:,} completed; lag p50 "
                  f"{lag[50.0] / 1e3:.1f} us p99 {lag[99.0] / 1e3:.1f} us max {rep['max_lag_ns'] / 1e3:.1f} us; "
                  f"{rep['late_pct']:.2f}% over 1 ms late; B was given every request of the trace: {not same} "
                  f"({sum(same.values())} missing), {100 * in_order / len(asked):.1f}% in the trace's order")

        fast = replay(trace, b.dev, ["--speed", "max"])["run"]["jobs"][0]["groups"][0]
        qd = str(fast["qd"])
        runs = []
        for _ in range(args.rounds):
            out = sh(IOLAB, "run", "--target", b.dev, "--allow-destroy", "--no-store", "--json", "-q", "--qd", qd,
                     "--bs-split", "4k/60,64k/40", "--read-pct", "70", "--distribution", "zoned:60/10,30/20,10/70",
                     "--runtime", f"{args.seconds}s", "--ramp", "1s")
            runs.append(json.loads(out)["jobs"][0]["groups"][0]["total"]["iops"])
        print(f"3. --speed max at QD {qd}: {fast['total']['iops']:,.0f} IOPS; iolab run of the mix at QD {qd}: "
              f"{statistics.median(runs):,.0f} (median of {args.rounds}); {fast['total']['iops'] / statistics.median(runs):.3f}x")

        checked = json.loads(sh(IOLAB, "trace", "job", trace, "--check", b.dev, "--allow-destroy", "--no-store", "--json"))
        cells = "; ".join(f"{f['name']} {f['difference']:+.1f}{' points' if f['unit'] == '%' else '%'}"
                          for f in checked["summary"]["figures"])
        print(f"4. trace job --check (captured: {checked['summary']['captured']}): {cells}")
    finally:
        a.remove()
        b.remove()
        subprocess.run(["rm", "-rf", scratch], check=False)


if __name__ == "__main__":
    main()
