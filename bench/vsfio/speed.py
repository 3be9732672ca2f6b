"""Issue 3's speed goals: CPU per I/O against fio's io_uring (loop, loop-best, virtio), I/Os per
CPU-second engine by engine on zram, QD 1 latency, two workers. One block shape for all
(`speed_block`), with t/io_uring shown as the limit where it applies."""

import os
from dataclasses import replace

from .best import fio_best_uring, iolab_best_uring, t_io_uring_best
from .children import ToolFailed, medians
from .commands import (fio_cmd, iolab_cmd, pair_cmds, psync_qd1_cmds, size_arg, t_io_uring_note,
                       t_io_uring_ref)
from .noise import (GOAL_IOPS_RATIO, GOAL_LOOP_CPU_PER_IO, GOAL_QD1_MEAN_LATENCY, GOAL_VIRTIO_CPU_PER_IO,
                    GOAL_WORKERS2_IOS_PER_CPU, GOAL_ZRAM_IOS_PER_CPU, METRICS, Goal, goal_verdict, spread)
from .report import SummaryRow, print_header, render_table, run_label, say, table_row
from .runs import disturbed_runs, noisy_reason, per_tool, run_pair, run_ref
from .targets import fs_device_note
from .units import fmt_num, fmt_ratio, fmt_spread, range_text, ratio

SPEED_COLUMNS = ("iops", "mean_us", "p99_us", "cpu_s", "usr_sys_s", "self_cpu_s", "other_cpu_s", "cpu_per_mio",
                 "ios_per_cpu")
RATIO_COLUMNS = ("iops", "mean_us", "cpu_per_mio", "ios_per_cpu")
LIMIT_RATIO_COLUMNS = ("iops", "cpu_per_mio", "ios_per_cpu")
LIMIT_MEDIAN_COLUMNS = tuple(c for c in SPEED_COLUMNS if c != "usr_sys_s")


def block_pairs(session, label, ic, fc, goals, ref):
    """--repeat pairs, then more (up to --max-repeat) while the goal figures are noisy; with a
    limit, t/io_uring runs third after every pair. Returns (pairs, limit runs or None each)."""
    args = session.args
    pairs, refs = [], []

    def one_pair():
        pairs.append(run_pair(session, label, len(pairs), ic, fc))
        refs.append(run_ref(session, label, len(pairs) - 1, ref) if ref is not None and ref.cmd else None)

    for _ in range(args.repeat):
        one_pair()
    while len(pairs) < args.max_repeat:
        reason = noisy_reason(args, pairs, goals)
        if reason is None:
            break
        say(f"  noisy: {reason}; pair {len(pairs) + 1} of at most {args.max_repeat}")
        one_pair()
    return pairs, refs


def block_table(pairs, refs, meds, bad):
    """Every run, the ratios of each pair (and the limit's to fio), then the medians."""
    rows = []
    for k, ((a, b), t) in enumerate(zip(pairs, refs)):
        for r in (a, b):
            rows.append(table_row(run_label(k, r), r.tool, r, SPEED_COLUMNS, disturbed=(k, r.tool) in bad))
        rows.append(table_row("", "ratio", a, RATIO_COLUMNS, vs=b))
        if t is not None:
            rows.append(table_row(run_label(k, t), t.tool, t, SPEED_COLUMNS))
            rows.append(table_row("", "t/io_uring/fio", t, LIMIT_RATIO_COLUMNS, vs=b))
    mi, mf, mt = meds
    rows += [table_row("median", "iolab", mi, SPEED_COLUMNS), table_row("median", "fio", mf, SPEED_COLUMNS)]
    if mt is not None:
        rows.append(table_row("median", "t/io_uring", mt, LIMIT_MEDIAN_COLUMNS))
    return rows


def judged(label, metric, limit, pairs, meds):
    """Prints and returns (SummaryRow, Verdict) of a goal on the ratio iolab/fio of `metric`."""
    m = METRICS[metric]
    mine, theirs = getattr(meds[0], m.attr), getattr(meds[1], m.attr)
    r = ratio(mine, theirs)
    iolab_v, fio_v = per_tool(pairs, m.attr)
    verdict = goal_verdict(iolab_v, fio_v, limit, m.higher_is_better)
    goal = f"{'>=' if m.higher_is_better else '<='} {limit:.2f}x"
    say(f"  {m.name}: iolab {m.fmt(mine)}, fio {m.fmt(theirs)}; ratio iolab/fio {fmt_ratio(r)} "
        f"(per pair {range_text([ratio(x, y) for x, y in zip(iolab_v, fio_v)])}; spread iolab "
        f"{fmt_spread(spread(iolab_v))}, fio {fmt_spread(spread(fio_v))}); goal {goal}: {verdict.text}")
    return SummaryRow(label, m.name, m.fmt(mine), m.fmt(theirs), fmt_ratio(r), goal, verdict.text), verdict


def goal_rows(session, label, goals, pairs, meds):
    """The block's goals judged (a goal "at equal or higher IOPS" with the IOPS goal too)."""
    out = []
    for g in goals:
        row, verdict = judged(label, g.metric, g.limit, pairs, meds)
        if not g.iops_too:
            out.append(row)
            continue
        iops_row, iops_verdict = judged(label, "iops", GOAL_IOPS_RATIO, pairs, meds)
        both = "MET" if verdict.met and iops_verdict.met else "NOT MET"
        say(f"  goal ({METRICS[g.metric].name} {g.text()} at equal or higher IOPS): {both}")
        out += [replace(iops_row, goal=">= 1.00x (noise)"), replace(row, verdict=f"{row.verdict}; with IOPS: {both}")]
    if len(pairs) > session.args.repeat:  # noisy: more pairs than asked for; the summary says so
        out = [replace(row, verdict=f"{row.verdict} [{len(pairs)} pairs]") for row in out]
    return out


def limit_line(label, goals, pairs, refs, meds, ref):
    """Prints what the limit (t/io_uring) reaches against fio in this block, on the block's goal
    metric (CPU per I/O or I/Os per CPU-second); returns its summary row, without a verdict."""
    metric = goals[0].metric if goals[0].metric in ("cpu_per_io", "ios_per_cpu") else "cpu_per_io"
    m = METRICS[metric]
    mi, mf, mt = meds
    if mt is None:
        say(f"  the limit (t/io_uring): {ref.unavailable}")
        return SummaryRow(label, f"limit: t/io_uring/fio {m.name}", "-", "-", "-", "(reference)", ref.unavailable)
    t, f, i = getattr(mt, m.attr), getattr(mf, m.attr), getattr(mi, m.attr)
    r = ratio(t, f)
    pr = [ratio(getattr(x, m.attr), getattr(b, m.attr)) for (_, b), x in zip(pairs, refs) if x is not None]
    say(f"  the limit (t/io_uring): {m.name} {m.fmt(t)}, fio {m.fmt(f)}: t/io_uring/fio {fmt_ratio(r)} here "
        f"(per pair {range_text(pr)}), at {fmt_num(mt.iops)} IOPS ({fmt_ratio(ratio(mt.iops, mf.iops))} "
        f"of fio's); iolab/t/io_uring {fmt_ratio(ratio(i, t))}")
    return SummaryRow(label, f"limit: t/io_uring/fio {m.name}", f"t/io_uring {m.fmt(t)}", m.fmt(f), fmt_ratio(r),
                      "(reference)", "")


def speed_block(session, label, title, target, ic, fc, goals, remarks=(), ref=None):
    """Runs --repeat pairs, more (up to --max-repeat) while the goal figures are noisy, prints
    every run and the medians, and returns the summary rows. With ref (a Ref), t/io_uring runs
    third after every pair and is shown as the limit, with its ratio to fio; no goal on it."""
    args = session.args
    cmds = [("iolab", ic), ("fio", fc)]
    if ref is not None and ref.cmd:
        cmds.append(("limit (t/io_uring)", ref.cmd))
    print_header(session, title, target, cmds)
    for line in remarks:
        say(f"  ({line})")
    if ref is not None:
        say(f"  (the limit, t/io_uring, runs third in every pair; {t_io_uring_note(args)})" if ref.cmd
            else f"  (the limit: {ref.unavailable})")
    pairs, refs = block_pairs(session, label, ic, fc, goals, ref)
    limit_runs = [t for t in refs if t is not None]
    meds = (medians([a for a, _ in pairs]), medians([b for _, b in pairs]),
            medians(limit_runs) if limit_runs else None)
    bad = disturbed_runs(args, pairs)
    say()
    say(render_table(SPEED_COLUMNS, block_table(pairs, refs, meds, bad)))
    say("  (CPU s = wait4 rusage of the tool; self-rep = the tool's own figure; other = the rest of the machine")
    say("   meanwhile: kernel workers serving the device (loop), interrupts, and anything else running)")
    if bad:
        say(f"  (* = disturbed: the rest of the machine used more than {0.1 * args.runtime * os.cpu_count():.1f} CPU s "
            "above this block's median; kept in the medians, which more pairs make robust)")
    say()
    out = goal_rows(session, label, goals, pairs, meds)
    if ref is not None:
        out.append(limit_line(label, goals, pairs, refs, meds, ref))
    return out


def scenario_loop(session):
    # Issue 3's words: "process CPU per I/O at most 0.75x fio io_uring's (t/io_uring reaches
    # 0.68x)": fio io_uring as it comes, against iolab as it comes; loop-best compares the best.
    args = session.args
    target = session.targets.device("loop")
    ic, fc = pair_cmds(args, target, "uring", "io_uring", 32)
    return speed_block(session, "loop", "loop: 4 KiB random read, QD 32, 1 worker, loop device with direct I/O "
                       "over tmpfs, iolab uring vs fio io_uring, both with their defaults", target, ic, fc,
                       [Goal("cpu_per_io", GOAL_LOOP_CPU_PER_IO, iops_too=True)],
                       ["both tools' defaults: submit one I/O and wait for one per call; fio without extra options",
                        "the limit, t/io_uring -s1 -c1, also submits and reaps one at a time; issue 3: it reaches "
                        "0.68x of fio's CPU per I/O on such a device"],
                       ref=t_io_uring_ref(args, target, "uring", 32))


def scenario_loop_best(session):
    args = session.args
    target = session.targets.device("loop")
    size = size_arg(args, target)
    best, desc = fio_best_uring(session, target, size, 32, "loop-best")
    own, own_desc = iolab_best_uring(session, target, size, 32, "loop-best")
    ref = t_io_uring_best(session, target, 32, "loop-best")
    ic = iolab_cmd(args, target, "uring", 32, size, extra=own)
    fc = fio_cmd(args, target, "io_uring", 32, size, extra=best)
    limit_desc = session.best.get(("t/io_uring", str(target.path), 32), (None, f"the limit: {ref.unavailable}"))[1]
    return speed_block(session, "loop-best", "loop-best: 4 KiB random read, QD 32, 1 worker, loop device with "
                       "direct I/O over tmpfs, iolab uring vs fio io_uring, each in its best configuration", target,
                       ic, fc, [Goal("cpu_per_io", GOAL_LOOP_CPU_PER_IO, iops_too=True)],
                       [desc, own_desc, limit_desc], ref=ref)


def scenario_virtio(session):
    args = session.args
    target = session.targets.io()
    size = size_arg(args, target)
    best, desc = fio_best_uring(session, target, size, 32, "virtio")
    own, own_desc = iolab_best_uring(session, target, size, 32, "virtio")
    ic = iolab_cmd(args, target, "uring", 32, size, extra=own)
    fc = fio_cmd(args, target, "io_uring", 32, size, extra=best)
    where = "the target is a block device, not a file on the root filesystem" if target.is_device \
        else fs_device_note(target.path)
    return speed_block(session, "virtio", "virtio: 4 KiB random read, QD 32, 1 worker, O_DIRECT file on the root "
                       "filesystem, iolab uring vs fio io_uring, each in its best configuration", target, ic, fc,
                       [Goal("cpu_per_io", GOAL_VIRTIO_CPU_PER_IO, iops_too=True)], [desc, own_desc, where])


ZRAM_ENGINES = (("uring", "io_uring", 32), ("aio", "libaio", 32), ("psync", "psync", 1))


def zram_remarks(engine):
    remarks = ["fio with the engine's defaults, as the issue compares 'with the same engine'"]
    if engine == "uring":
        remarks.append("zram cannot take a request without blocking: io_uring hands every one to io-wq "
                       "threads, which belong to the process and are in its rusage")
    if engine == "psync":
        remarks.append("one thread each: iolab --qd 1 (psync runs one thread per outstanding I/O), fio --iodepth=1")
    return remarks


def scenario_zram(session):
    args = session.args
    target = session.targets.device("zram")
    size = size_arg(args, target)
    out = []
    for engine, fio_engine, qd in ZRAM_ENGINES:
        label = f"zram {engine}"
        ic = iolab_cmd(args, target, engine, qd, size)
        fc = fio_cmd(args, target, fio_engine, qd, size)
        ref = t_io_uring_ref(args, target, engine, qd)
        try:
            out += speed_block(session, label, f"{label}: 4 KiB random read, QD {qd}, 1 worker, zram filled with "
                               f"random data, iolab {engine} vs fio {fio_engine}", target, ic, fc,
                               [Goal("ios_per_cpu", GOAL_ZRAM_IOS_PER_CPU)], zram_remarks(engine), ref=ref)
        except ToolFailed as e:
            if e.tool != "iolab" or engine != "aio":
                raise
            first = next((ln.strip() for ln in str(e).splitlines() if "stderr:" in ln), str(e).splitlines()[0])
            say(f"\n  iolab aio unavailable: {first}")
            out.append(SummaryRow(label, "I/Os per CPU-s", "-", "-", "-", f">= {GOAL_ZRAM_IOS_PER_CPU:.2f}x",
                                  "iolab aio unavailable"))
            out.append(SummaryRow(label, "limit: t/io_uring/fio I/Os per CPU-s", "-", "-", "-", "(reference)",
                                  "not run: iolab aio unavailable"))
    return out


def scenario_zram_qd1_latency(session):
    args = session.args
    target = session.targets.device("zram")
    ic, fc = psync_qd1_cmds(args, target)
    return speed_block(session, "zram-qd1-latency", "zram-qd1-latency: 4 KiB random read, QD 1, psync, zram "
                       "filled with random data, iolab psync vs fio psync", target, ic, fc,
                       [Goal("mean_latency", GOAL_QD1_MEAN_LATENCY)],
                       ["mean latency = submission to completion for both: fio's lat_ns (--lat_percentiles=1); "
                        "fio --norandommap draws offsets as iolab does"])


def scenario_workers2(session):
    # On the loop device, not zram: the loop driver copies the data in its own kernel workers,
    # outside both processes, so the rusage is the tools' own per-I/O work. On zram io_uring's
    # io-wq threads would do the copy inside each process, the same for both tools, and the
    # ratio would say more about io-wq than about iolab (zram uring covers that).
    args = session.args
    target = session.targets.device("loop")
    size = size_arg(args, target)
    ic = iolab_cmd(args, target, "uring", 32, size, workers=2)
    fc = fio_cmd(args, target, "io_uring", 32, size, numjobs=2)
    return speed_block(session, "workers2", "workers2: 4 KiB random read, QD 32 per worker, 2 workers, loop device "
                       "with direct I/O over tmpfs, iolab --workers 2 uring vs fio --numjobs=2 io_uring",
                       target, ic, fc, [Goal("ios_per_cpu", GOAL_WORKERS2_IOS_PER_CPU)],
                       ["fio with the engine's defaults and --group_reporting (one result for both jobs)",
                        "loop device rather than zram: the loop driver copies in its own kernel workers, outside "
                        "both processes, so the rusage is each tool's own work"])
