"""What vs_fio.py prints: the rows of a block's table and of the summary, each a small dataclass
built by one function and rendered by one, the block headers and the final summary."""

import os
import shlex
import sys
from dataclasses import dataclass, fields
from types import MappingProxyType

from .units import fmt_f, fmt_num, fmt_ratio, fmt_us, ratio, table


class OutputClosed(Exception):
    """Standard output went away (e.g. piped into `head`): stop running, clean up, exit."""


def say(text=""):
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Broken pipe is not an error to report; send the rest nowhere and stop the runs.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise OutputClosed from None


@dataclass(frozen=True)
class TableRow:
    """One line of a block's table of runs, as shown: a run, a median, or the ratios of two of
    them. A table shows some of these columns (see `render_table`); cells left out are blank."""

    run: str
    tool: str
    ios: str = ""
    iops: str = ""
    mean_us: str = ""
    p50_us: str = ""
    p99_us: str = ""
    cpu_s: str = ""
    usr_sys_s: str = ""
    self_cpu_s: str = ""
    wall_s: str = ""
    other_cpu_s: str = ""
    cpu_per_mio: str = ""
    ios_per_cpu: str = ""


HEADERS = MappingProxyType({
    "run": "run", "tool": "tool", "ios": "I/Os", "iops": "IOPS", "mean_us": "mean us", "p50_us": "p50 us",
    "p99_us": "p99 us", "cpu_s": "CPU s", "usr_sys_s": "usr/sys s", "self_cpu_s": "self-rep CPU s",
    "wall_s": "wall s", "other_cpu_s": "other CPU s", "cpu_per_mio": "CPU s per M I/O",
    "ios_per_cpu": "I/Os per CPU-s",
})
# column -> (figure of a Result or Medians, its format)
FIGURES = MappingProxyType({
    "ios": ("ios", fmt_num), "iops": ("iops", fmt_num), "mean_us": ("mean_ns", fmt_us),
    "p50_us": ("p50_ns", fmt_us), "p99_us": ("p99_ns", fmt_us), "cpu_s": ("cpu_s", fmt_f),
    "self_cpu_s": ("self_cpu_s", fmt_f), "wall_s": ("wall_s", fmt_f), "other_cpu_s": ("other_cpu_s", fmt_f),
    "cpu_per_mio": ("cpu_s_per_mio", fmt_f), "ios_per_cpu": ("ios_per_cpu_s", fmt_num),
})


def table_row(run, tool, figs, columns, vs=None, disturbed=False):
    """The row of `figs` (a Result or Medians) with the given columns filled: its figures, or,
    with `vs`, the ratios figs/vs of them. `disturbed` marks the other-CPU cell with '*'."""
    cells = {}
    for column in columns:
        if column == "usr_sys_s":
            user, sys_ = figs.user_s, figs.sys_s
            cells[column] = "-" if user is None or sys_ is None else f"{user:.2f}/{sys_:.2f}"
            continue
        attr, fmt = FIGURES[column]
        value = getattr(figs, attr)
        cells[column] = fmt_ratio(ratio(value, getattr(vs, attr))) if vs is not None else fmt(value)
    if disturbed and "other_cpu_s" in cells:
        cells["other_cpu_s"] += "*"
    return TableRow(run, tool, **cells)


def run_label(k, r):
    """'2 (1st)': pair k + 1, and whether r ran first or second in it (or third, the limit)."""
    return f"{k + 1} ({({1: '1st', 2: '2nd'}).get(r.order, '3rd')})"


def pair_rows(pairs, columns, ratio_columns=(), disturbed=()):
    """The rows of every pair: iolab's and fio's runs in the order they ran, then, with
    ratio_columns, the ratios iolab/fio of those. Runs in `disturbed` ((pair, tool)) are marked."""
    rows = []
    for k, (a, b) in enumerate(pairs):
        for r in (a, b):
            rows.append(table_row(run_label(k, r), r.tool, r, columns, disturbed=(k, r.tool) in disturbed))
        if ratio_columns:
            rows.append(table_row("", "ratio", a, ratio_columns, vs=b))
    return rows


def render_table(columns, rows):
    """The table of rows with the columns `run`, `tool`, then `columns`, in that order."""
    names = ("run", "tool") + tuple(columns)
    return table([HEADERS[n] for n in names], [[getattr(r, n) for n in names] for r in rows])


@dataclass(frozen=True)
class SummaryRow:
    """One line of the final summary: a figure of a scenario, both tools', and its verdict."""

    scenario: str
    metric: str
    iolab: str = ""
    fio: str = ""
    ratio: str = ""
    goal: str = ""
    verdict: str = ""


def render_summary(rows):
    names = [f.name for f in fields(SummaryRow)]
    headers = ["scenario", "metric", "iolab", "fio", "iolab/fio", "goal", "verdict"]
    return table(headers, [[getattr(r, n) for n in names] for r in rows])


def print_header(session, title, target, cmds):
    """Starts a block: its title, target and the exact command lines (recorded for the summary)."""
    session.blocks.append((title.split(":")[0], target, cmds))
    say()
    say("=" * 100)
    say(f"[{title}]")
    say(f"target: {target.describe()}")
    if target.layout_cmd:
        say(f"  layout (once, before): $ {shlex.join(target.layout_cmd)}")
    for cmd in target.setup_cmds:
        say(f"  made by this script (once, before): $ {shlex.join(cmd)}")
    for note in target.notes:
        say(f"  {note}")
    for name, cmd in cmds:
        say(f"  {name}: $ {session.shown(cmd)}")
    say(f"  repeats: {session.args.repeat}, alternating order (run 1: iolab first); CPU = wait4 rusage of the child")


def print_summary(session, rows):
    """The final summary: every block's commands, the variant searches, and the summary rows."""
    args = session.args
    say()
    say("=" * 100)
    say(f"[summary] runtime {args.runtime} s, repeat {args.repeat}, medians; CPU = wait4 rusage (user+sys) of each tool")
    for title, target, cmds in session.blocks:
        say(f"{title}: target {target.describe()}")
        for tool, cmd in cmds:
            say(f"  {tool}: $ {session.shown(cmd)}")
    for label, target, measured, desc in session.probes:
        say(f"{label}: io_uring variants on {target.path}, one run each (CPU s per M I/O, IOPS): "
            + "; ".join(f"{n} {c:.2f} @ {fmt_num(i)}" for n, c, i in measured))
        say(f"  -> {desc}")
    say(render_summary(rows))
