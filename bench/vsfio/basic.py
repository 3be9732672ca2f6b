"""The scenarios of the default run and `psync`: null (engine overhead), randread-file (the
issue's fio command line on a file) and the agreement blocks (both tools measure the same)."""

from .children import medians
from .commands import fio_cmd, iolab_cmd, pair_cmds, psync_qd1_cmds, size_arg
from .noise import (GOAL_CPU_PER_IO_RATIO, GOAL_IOPS_RATIO, GOAL_NULL_IOS_PER_CPU, agreement_verdict,
                    goal_verdict, spread)
from .report import SummaryRow, pair_rows, print_header, render_table, say, table_row
from .runs import per_tool, run_pairs
from .units import fmt_f, fmt_num, fmt_pct, fmt_ratio, fmt_spread, fmt_us, range_text, ratio, rel_diff, table

TOOLS = ("iolab", "fio")
NULL_COLUMNS = ("ios", "iops", "cpu_s", "usr_sys_s", "self_cpu_s", "wall_s", "ios_per_cpu")
RANDREAD_COLUMNS = ("iops", "mean_us", "p99_us", "cpu_s", "usr_sys_s", "self_cpu_s", "cpu_per_mio")
AGREEMENT_COLUMNS = ("iops", "mean_us", "p50_us", "p99_us", "cpu_per_mio")
# (name, figure, format) of the metrics the agreement blocks judge
AGREEMENT_METRICS = (("IOPS", "iops", fmt_num), ("mean latency us", "mean_ns", fmt_us),
                     ("p50 latency us", "p50_ns", fmt_us), ("p99 latency us", "p99_ns", fmt_us))


def tool_medians(pairs):
    """(iolab's Medians, fio's Medians) over the pairs."""
    return medians([a for a, _ in pairs]), medians([b for _, b in pairs])


def scenario_null(session):
    args = session.args
    target = session.targets.null()
    ic, fc = pair_cmds(args, target, "null", "null", 32, fio_target=False)
    print_header(session, "null: 4 KiB randread, QD 32, 1 worker, no I/O (engine overhead)", target,
                 [("iolab", ic), ("fio", fc)])
    say("  (fio's null engine takes no file; iolab still opens its --target but reads nothing)")
    pairs = run_pairs(session, "null", ic, fc)
    meds = tool_medians(pairs)
    rows = pair_rows(pairs, NULL_COLUMNS, ("ios_per_cpu",))
    rows += [table_row("median", tool, m, ("ios", "iops", "cpu_s", "ios_per_cpu")) for tool, m in zip(TOOLS, meds)]
    say()
    say(render_table(NULL_COLUMNS, rows))
    ia, fb = meds[0].ios_per_cpu_s, meds[1].ios_per_cpu_s
    r = ratio(ia, fb)
    verdict = goal_verdict(*per_tool(pairs, "ios_per_cpu_s"), GOAL_NULL_IOS_PER_CPU, True).text
    say()
    say(f"  I/Os per CPU-second: iolab {fmt_num(ia)}, fio {fmt_num(fb)}; ratio iolab/fio = {fmt_ratio(r)} "
        f"(per-pair {range_text([ratio(a.ios_per_cpu_s, b.ios_per_cpu_s) for a, b in pairs])}); "
        f"goal >= {GOAL_NULL_IOS_PER_CPU:.1f}x: {verdict}")
    return [SummaryRow("null", "I/Os per CPU-second", fmt_num(ia), fmt_num(fb), fmt_ratio(r),
                       f">= {GOAL_NULL_IOS_PER_CPU:.1f}x", verdict)]


def scenario_randread_file(session):
    args = session.args
    target = session.targets.io()
    ic, fc = pair_cmds(args, target, "uring", "io_uring", 32)
    print_header(session, "randread-file: 4 KiB random read, QD 32, 1 worker, O_DIRECT, iolab uring vs fio io_uring",
                 target, [("iolab", ic), ("fio", fc)])
    say("  (fio mean = lat_ns.mean, submission to completion; fio p99 = clat_ns, fio's default percentiles)")
    pairs = run_pairs(session, "randread-file", ic, fc)
    mi, mf = tool_medians(pairs)
    rows = pair_rows(pairs, RANDREAD_COLUMNS, ("iops", "cpu_per_mio"))
    rows += [table_row("median", tool, m, ("iops", "mean_us", "p99_us", "cpu_s", "cpu_per_mio"))
             for tool, m in zip(TOOLS, (mi, mf))]
    say()
    say(render_table(RANDREAD_COLUMNS, rows))
    iops, cpm = per_tool(pairs, "iops"), per_tool(pairs, "cpu_s_per_mio")
    iops_r, cpu_r = ratio(mi.iops, mf.iops), ratio(mi.cpu_s_per_mio, mf.cpu_s_per_mio)
    iops_verdict = goal_verdict(*iops, GOAL_IOPS_RATIO, True).text
    cpu_verdict = goal_verdict(*cpm, GOAL_CPU_PER_IO_RATIO, False).text
    say()
    say(f"  IOPS ratio iolab/fio = {fmt_ratio(iops_r)} (per-pair {range_text([ratio(a.iops, b.iops) for a, b in pairs])}, "
        f"run-to-run IOPS spread iolab {fmt_spread(spread(iops[0]))}, fio {fmt_spread(spread(iops[1]))}); "
        f"goal >= {GOAL_IOPS_RATIO:.2f} within noise: {iops_verdict}")
    say(f"  CPU per I/O ratio iolab/fio = {fmt_ratio(cpu_r)} "
        f"(per-pair {range_text([ratio(a.cpu_s_per_mio, b.cpu_s_per_mio) for a, b in pairs])}); "
        f"goal <= {GOAL_CPU_PER_IO_RATIO:.2f}: {cpu_verdict}")
    return [
        SummaryRow("randread-file", "IOPS", fmt_num(mi.iops), fmt_num(mf.iops), fmt_ratio(iops_r),
                   f">= {GOAL_IOPS_RATIO:.2f}x (noise)", iops_verdict),
        SummaryRow("randread-file", "CPU s per M I/O", fmt_f(mi.cpu_s_per_mio), fmt_f(mf.cpu_s_per_mio),
                   fmt_ratio(cpu_r), f"<= {GOAL_CPU_PER_IO_RATIO:.2f}x", cpu_verdict),
        SummaryRow("randread-file", "mean latency us", fmt_us(mi.mean_ns), fmt_us(mf.mean_ns),
                   fmt_ratio(ratio(mi.mean_ns, mf.mean_ns))),
        SummaryRow("randread-file", "p99 latency us", fmt_us(mi.p99_ns), fmt_us(mf.p99_ns),
                   fmt_ratio(ratio(mi.p99_ns, mf.p99_ns))),
    ]


def agreement_block(session, label, title, target, ic, fc):
    """Runs the pairs and judges, metric by metric, whether the two tools agree within noise."""
    print_header(session, title, target, [("iolab", ic), ("fio", fc)])
    say("  (latency = submission to completion for both: fio runs with --lat_percentiles=1 and lat_ns is used;")
    say("   fio runs with --norandommap so both draw offsets uniformly with replacement, as iolab does:")
    say("   with fio's default random map, no block repeats within a pass, which changes hit rates in")
    say("   any cache below the target, such as the host's cache under a VM disk)")
    pairs = run_pairs(session, label, ic, fc)
    meds = tool_medians(pairs)
    rows = pair_rows(pairs, AGREEMENT_COLUMNS)
    rows += [table_row("median", tool, m, AGREEMENT_COLUMNS) for tool, m in zip(TOOLS, meds)]
    say()
    say(render_table(AGREEMENT_COLUMNS, rows))
    say()
    lines, summary = [], []
    for name, attr, f in AGREEMENT_METRICS:
        mine, theirs = getattr(meds[0], attr), getattr(meds[1], attr)
        d = rel_diff(mine, theirs)
        pair_d = [x for x in (rel_diff(getattr(a, attr), getattr(b, attr)) for a, b in pairs) if x is not None]
        iolab_values, fio_values = per_tool(pairs, attr)
        verdict = agreement_verdict(iolab_values, fio_values)
        per_pair = f"{fmt_pct(min(pair_d))}..{fmt_pct(max(pair_d))}" if len(pair_d) > 1 else "-"
        lines.append([name, f(mine), f(theirs), fmt_pct(d), per_pair, fmt_spread(spread(iolab_values)),
                      fmt_spread(spread(fio_values)), verdict])
        summary.append(SummaryRow(label, name, f(mine), f(theirs), fmt_pct(d), "agree within noise", verdict))
    say(table(["metric (medians)", "iolab", "fio", "iolab vs fio", "per pair", "iolab spread", "fio spread", "verdict"],
              lines))
    return summary


def scenario_agreement(session):
    args = session.args
    target = session.targets.io()
    size = size_arg(args, target)
    out = []
    for qd in (1, 4):
        ic = iolab_cmd(args, target, "uring", qd, size)
        fc = fio_cmd(args, target, "io_uring", qd, size, extra=["--lat_percentiles=1", "--norandommap"])
        out += agreement_block(session, f"agreement QD{qd}",
                               f"agreement QD {qd}: 4 KiB random read, 1 worker, O_DIRECT, iolab uring vs fio io_uring",
                               target, ic, fc)
    return out


def scenario_psync(session):
    args = session.args
    target = session.targets.io()
    ic, fc = psync_qd1_cmds(args, target)
    return agreement_block(session, "psync QD1",
                           "psync: 4 KiB random read, QD 1 (one thread), O_DIRECT, iolab psync vs fio psync",
                           target, ic, fc)
