"""iolab with a feature and without it, in alternating pairs: the lines that show each side's
IOPS and CPU per I/O, shared by unique_data.py (the stamp) and verify.py (--verify). The runs,
the ratios and the goals stay with each benchmark. Python 3 standard library only.
"""

import statistics


def show_sides(say, runs, with_label, without_label):
    """Says each side's median IOPS and CPU per I/O, then every run's: with the feature
    (runs[True]) first, then without it (runs[False]), each a list of (IOPS, CPU per I/O in us).
    Returns ((IOPS with, IOPS without), (CPU per I/O with, CPU per I/O without)), every run's."""
    width = max(len(with_label), len(without_label)) + 1
    for side, label in ((True, with_label), (False, without_label)):
        iops = [r[0] for r in runs[side]]
        cpu = [r[1] for r in runs[side]]
        say(f"  iolab {label:<{width}} IOPS {statistics.median(iops):>10,.0f} (runs {', '.join(f'{v:,.0f}' for v in iops)}); "
            f"CPU per I/O {statistics.median(cpu):.3f} us (runs {', '.join(f'{v:.3f}' for v in cpu)})")
    return (([r[0] for r in runs[True]], [r[0] for r in runs[False]]),
            ([r[1] for r in runs[True]], [r[1] for r in runs[False]]))
