"""Each tool's best io_uring configuration on a target (loop-best, virtio): every variant runs
once, for --runtime seconds, and the one with the lowest CPU per I/O is used for the pairs.
fio's, iolab's and t/io_uring's are searched over the same batches (commands.batch_variants)."""

import shlex

from .children import ToolFailed
from .commands import (FIO_URING_BASE, Ref, batch_name, batch_variants, fio_batch, fio_cmd, iolab_cmd,
                       t_io_uring_cmd, t_io_uring_note, t_io_uring_ref)
from .report import say
from .runs import wait_for_quiet
from .units import fmt_f, fmt_num


def lowest_cpu_variant(session, label, tool, target, variants, run):
    """Runs each (name, options) of `variants` once with `run(options)`, prints them, and returns
    the list of (name, options, result) measured; the caller picks the lowest CPU per I/O."""
    say()
    say("=" * 100)
    say(f"[{label}: {tool} io_uring variants, one run each, on {target.path}; lowest CPU per I/O is used]")
    results = []
    for name, opts in variants:
        if session.args.pause:
            wait_for_quiet(session.args)
        r = run(opts)
        results.append((name, opts, r))
        say(f"  {name:40s} {fmt_num(r.iops):>7s} IOPS  {r.cpu_s_per_mio:6.2f} CPU s per M I/O  "
            f"(usr/sys {r.user_s:.2f}/{r.sys_s:.2f}, other {fmt_f(r.other_cpu_s)})  $ {shlex.join(opts) or '(none)'}")
    return results


def chosen(session, key, label, tool, target, results):
    """Records (for the block and the summary) the variant with the lowest CPU per I/O."""
    best = min(results, key=lambda x: x[2].cpu_s_per_mio)
    desc = f"{tool} best configuration here: {best[0]} ({shlex.join(best[1]) or 'no extra options'})"
    say(f"  -> {desc}")
    session.best[key] = (best[1], desc)
    session.probes.append((f"{label} ({tool})", target, [(n, r.cpu_s_per_mio, r.iops) for n, _, r in results], desc))
    return session.best[key]


def fio_best_uring(session, target, size, qd, label):
    """fio io_uring options with the lowest CPU per I/O on this target: given with
    --fio-uring-opts, or measured once here (one run per variant) and reused for the target."""
    args = session.args
    if args.fio_uring_opts is not None:
        opts = shlex.split(args.fio_uring_opts)
        return opts, f"given with --fio-uring-opts: {shlex.join(opts)}"
    key = ("fio", str(target.path), qd)
    if key in session.best:
        return session.best[key]
    base = list(FIO_URING_BASE)
    variants = [("plain", []), ("registered files + fixed buffers", base)]
    for submit, wait in batch_variants(qd):
        variants.append((f"... + {batch_name(submit, wait)}", base + fio_batch(qd, wait, submit)))

    def run(opts):
        return session.runner.fio(fio_cmd(args, target, "io_uring", qd, size, extra=opts), 1)

    results = lowest_cpu_variant(session, label, "fio", target, variants, run)
    best = min(results, key=lambda x: x[2].cpu_s_per_mio)
    # fio's random map (no block read twice per pass) costs CPU; iolab has none: try without it.
    name, opts = f"{best[0]} + --norandommap", best[1] + ["--norandommap"]
    results.append((name, opts, run(opts)))
    say(f"  {name:40s} {fmt_num(results[-1][2].iops):>7s} IOPS  {results[-1][2].cpu_s_per_mio:6.2f} CPU s per M I/O")
    return chosen(session, key, label, "fio", target, results)


def iolab_best_uring(session, target, size, qd, label):
    """iolab's io_uring batching chosen exactly as fio's is: the same batches (batch_variants),
    one run each, the lowest CPU per I/O. iolab's defaults (1 and 1) are fio's."""
    key = ("iolab", str(target.path), qd)
    if key in session.best:
        return session.best[key]
    variants = [("defaults", [])]
    for submit, wait in batch_variants(qd):
        variants.append((batch_name(submit, wait), ["--submit-batch", str(submit), "--complete-batch", str(wait)]))

    def run(opts):
        return session.runner.iolab(iolab_cmd(session.args, target, "uring", qd, size, extra=opts), 1)

    results = lowest_cpu_variant(session, label, "iolab", target, variants, run)
    return chosen(session, key, label, "iolab", target, results)


def t_io_uring_best(session, target, qd, label):
    """t/io_uring's batching with the lowest CPU per I/O on this target, from the batches both
    tools are searched over (batch_variants), one run each: a Ref, shown as the limit."""
    args = session.args
    ref = t_io_uring_ref(args, target, "uring", qd)
    if ref.cmd is None:
        say(f"\n  [{label}: the limit: {ref.unavailable}]")
        return ref
    key = ("t/io_uring", str(target.path), qd)
    if key not in session.best:
        variants = [(batch_name(submit, wait), [f"-s{submit}", f"-c{wait}"]) for submit, wait in batch_variants(qd)]

        def run(opts):
            submit, wait = int(opts[0][2:]), int(opts[1][2:])
            return session.runner.t_io_uring(t_io_uring_cmd(args, target, "uring", qd, submit, wait), 1, args.runtime)

        try:
            results = lowest_cpu_variant(session, label, "t/io_uring", target, variants, run)
        except ToolFailed as e:
            say(f"  !! t/io_uring failed: {e}")
            return Ref(unavailable="t/io_uring failed (see above)")
        say(f"  ({t_io_uring_note(args)})")
        chosen(session, key, label, "t/io_uring", target, results)
    opts, _ = session.best[key]
    return t_io_uring_ref(args, target, "uring", qd, int(opts[0][2:]), int(opts[1][2:]))
