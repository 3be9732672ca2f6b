"""Sizes, number formatting, medians and ratios, and the plain text table. All pure."""

import statistics


def parse_size(text):
    """'1g' -> 1073741824 (binary units, as both iolab and fio read them by default)."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def human_size(n):
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {unit}"
    return f"{n} B"


def fmt_num(x):
    """Compact number, three or four significant digits: 1234567 -> '1.23M'."""
    if x is None:
        return "-"
    suffix, v = "", float(x)
    for s, mult in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= mult:
            suffix, v = s, v / mult
            break
    if not suffix and float(x).is_integer():
        return str(int(x))
    digits = 2 if abs(v) < 10 else 1 if abs(v) < 100 else 0
    return f"{v:.{digits}f}{suffix}"


def fmt_f(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def fmt_us(ns):
    """Nanoseconds as microseconds: QD 1 on a RAM disk is 1-2 us, so two decimals below 10 us."""
    return "-" if ns is None else f"{ns / 1000:.2f}" if ns < 10_000 else f"{ns / 1000:.1f}"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}x"


def fmt_pct(r):
    """A relative difference (a fraction) as a signed percentage: 0.031 -> '+3.1%'."""
    return "-" if r is None else f"{r * 100:+.1f}%"


def fmt_spread(s):
    """A spread (a fraction) as a percentage; 'n/a' when there is none (fewer than two runs)."""
    return "n/a" if s is None else f"{s * 100:.1f}%"


def range_text(values):
    """Per-pair ratios as 'min..max': '0.71x..0.78x'."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}x"
    return f"{min(values):.2f}x..{max(values):.2f}x"


def median(values):
    """Median of the values that exist (None is a run without that figure); None if none do."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def rel_diff(a, b):
    """(a - b) / b, a fraction; None without both figures or when b is 0."""
    return (a - b) / b if a is not None and b else None


def table(headers, rows, indent="  "):
    """Plain aligned text table; first column left-aligned, the rest right-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, r in enumerate(cells):
        parts = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append(indent + "  ".join(parts).rstrip())
        if n == 0:
            lines.append(indent + "  ".join("-" * w for w in widths))
    return "\n".join(lines)
