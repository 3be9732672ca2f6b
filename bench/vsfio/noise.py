"""The one noise rule of vs_fio.py, the same as `iolab compare`'s, and the goals judged with it.

Every judgement in vs_fio.py goes through `noise_verdict`: the goals on a ratio iolab/fio
(`goal_verdict`) and the agreement scenarios (`agreement_verdict`). Spreads are fractions here
(0.05 = 5%); the Rust function works in percent, which changes nothing in the rule.
"""

from dataclasses import dataclass
from types import MappingProxyType

from .units import fmt_f, fmt_num, fmt_spread, fmt_us, median, ratio, rel_diff

# The issues' speed goals, on the ratio iolab/fio of the two tools' medians.
GOAL_NULL_IOS_PER_CPU = 2.0  # I/Os per CPU-second, null engine
GOAL_IOPS_RATIO = 1.0  # IOPS: randread-file, loop, loop-best, virtio
GOAL_CPU_PER_IO_RATIO = 0.85  # CPU seconds per I/O, randread-file
GOAL_LOOP_CPU_PER_IO = 0.75  # io_uring on the loop device over tmpfs (loop: defaults; loop-best: best)
GOAL_VIRTIO_CPU_PER_IO = 0.8  # io_uring (each tool's best configuration), O_DIRECT file on the root fs
GOAL_ZRAM_IOS_PER_CPU = 1.1  # I/Os per CPU-second on zram, same engine
GOAL_WORKERS2_IOS_PER_CPU = 1.1  # iolab --workers 2 / fio --numjobs=2, I/Os per CPU-second
GOAL_QD1_MEAN_LATENCY = 1.0  # psync QD 1 mean latency on zram: no higher

BEYOND = "beyond noise"
WITHIN = "within noise"
UNKNOWN = "noise unknown"


def spread(values):
    """How far the repeats of one figure stray from each other: (max - min) / mean, a fraction.

    None with fewer than two values (None values, runs without the figure, are left out) or
    when their mean is not above 0. The full range rather than a standard deviation: repeats
    are few (2 to 5), and the range is what a reader checks by eye in the printed runs.
    """
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean if mean > 0 else None


@dataclass(frozen=True)
class Noise:
    verdict: str  # BEYOND, WITHIN or UNKNOWN
    spread: float | None  # the larger side's spread, a fraction; None when neither side has one


def noise_verdict(diff, base, side):
    """Whether a relative difference `diff` of `side` against `base` is larger than the noise.

    `diff` is (side - base) / base of the two figures compared, a fraction; `base` and `side`
    are the repeats of each (None values left out). The rule, the same as `iolab compare`'s
    (`noise_verdict` in crates/analysis/src/compare/measure.rs): the difference is **beyond
    noise** when (1) the ranges (min..max) of the two sides' repeats do not overlap (a side
    measured once is a range of one value) and (2) |diff| is larger than the larger side's
    spread, (max - min) / mean of that side's repeats. Otherwise it is **within noise**; with
    no repeats on either side (one value each) the noise is **unknown**. Repeats whose mean is
    0 have no spread: within noise, as in the Rust function.

    Why: the rule works from 1-vs-N repeats up, where a t-test needs two a side and, with the
    2 to 5 repeats a benchmark affords, rests on a normality nobody checked. Each condition
    alone is too lax: with 3 repeats a side, six values from one distribution give ranges that
    do not overlap 1 time in 10, and a single run falls outside 3 repeats' range half the time.
    Requiring as well a difference larger than the whole spread makes "beyond noise" from noise
    alone rare, at the price of calling small true differences "within noise" until more
    repeats narrow it: the error to prefer in figures people quote.
    """
    base = [v for v in base if v is not None]
    side = [v for v in side if v is not None]
    spreads = [s for s in (spread(base), spread(side)) if s is not None]
    if not spreads:
        repeated = len(base) > 1 or len(side) > 1
        return Noise(WITHIN if repeated else UNKNOWN, None)
    noise = max(spreads)
    if not base or not side or diff is None:
        return Noise(WITHIN, noise)
    overlap = min(base) <= max(side) and min(side) <= max(base)
    return Noise(BEYOND if not overlap and abs(diff) > noise else WITHIN, noise)


@dataclass(frozen=True)
class Verdict:
    met: bool | None  # None: nothing to judge (a figure is missing)
    text: str


def meets(r, limit, higher_is_better):
    return r >= limit if higher_is_better else r <= limit


def goal_verdict(iolab, fio, limit, higher_is_better):
    """A goal on the ratio iolab/fio of the two tools' medians, e.g. CPU per I/O <= 0.75x fio's.

    MET when the median ratio meets `limit`. Otherwise the noise rule (`noise_verdict`) compares
    iolab's repeats with fio's repeats scaled by `limit` (what iolab would need): "NOT MET" when
    the miss is beyond noise, "MET within noise" when it is within noise, "noise unknown" with
    one repeat a side.
    """
    r = ratio(median(iolab), median(fio))
    if r is None:
        return Verdict(None, "-")
    if meets(r, limit, higher_is_better):
        return Verdict(True, "MET")
    needed = [limit * v for v in fio if v is not None]
    noise = noise_verdict(rel_diff(median(iolab), median(needed)), needed, iolab)
    if noise.verdict == UNKNOWN:
        return Verdict(False, "NOT MET (noise unknown: --repeat >= 2)")
    if noise.verdict == BEYOND:
        return Verdict(False, f"NOT MET (beyond noise, spread {fmt_spread(noise.spread)})")
    return Verdict(True, "MET within noise" + (f" (spread {fmt_spread(noise.spread)})" if noise.spread is not None else ""))


def agreement_verdict(iolab, fio):
    """Whether the two tools agree: the noise rule on iolab's repeats against fio's."""
    d = rel_diff(median(iolab), median(fio))
    if d is None:
        return "-"
    noise = noise_verdict(d, fio, iolab)
    if noise.verdict == UNKNOWN:
        return "noise unknown (--repeat >= 2)"
    return "DIFFERS beyond noise" if noise.verdict == BEYOND else "within noise"


@dataclass(frozen=True)
class Metric:
    name: str
    attr: str  # the figure of a Result (or of Medians)
    higher_is_better: bool
    fmt: object  # formats the figure


METRICS = MappingProxyType({
    "cpu_per_io": Metric("CPU s per M I/O", "cpu_s_per_mio", False, fmt_f),
    "ios_per_cpu": Metric("I/Os per CPU-s", "ios_per_cpu_s", True, fmt_num),
    "mean_latency": Metric("mean latency us", "mean_ns", False, fmt_us),
    "iops": Metric("IOPS", "iops", True, fmt_num),
})


@dataclass(frozen=True)
class Goal:
    metric: str  # a key of METRICS
    limit: float  # on the ratio iolab/fio
    iops_too: bool = False  # "... at equal or higher IOPS": IOPS ratio >= 1.0 (within noise) as well

    def text(self):
        return f"{'>=' if METRICS[self.metric].higher_is_better else '<='} {self.limit:.2f}x"
