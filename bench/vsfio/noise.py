"""The goals of vs_fio.py and how they are judged against the run-to-run noise."""

from dataclasses import dataclass
from types import MappingProxyType

from .units import fmt_f, fmt_num, fmt_us, median, ratio, rel_diff

# The issues' speed goals, on the ratio iolab/fio of the two tools' medians.
GOAL_NULL_IOS_PER_CPU = 2.0  # I/Os per CPU-second, null engine
GOAL_IOPS_RATIO = 1.0  # IOPS: randread-file, loop, loop-best, virtio
GOAL_CPU_PER_IO_RATIO = 0.85  # CPU seconds per I/O, randread-file
GOAL_LOOP_CPU_PER_IO = 0.75  # io_uring on the loop device over tmpfs (loop: defaults; loop-best: best)
GOAL_VIRTIO_CPU_PER_IO = 0.8  # io_uring (each tool's best configuration), O_DIRECT file on the root fs
GOAL_ZRAM_IOS_PER_CPU = 1.1  # I/Os per CPU-second on zram, same engine
GOAL_WORKERS2_IOS_PER_CPU = 1.1  # iolab --workers 2 / fio --numjobs=2, I/Os per CPU-second
GOAL_QD1_MEAN_LATENCY = 1.0  # psync QD 1 mean latency on zram: no higher

def spread(values):
    """Relative run-to-run spread: (max - min) / median; None with fewer than two values."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return None
    m = median(values)
    return (max(values) - min(values)) / m if m else None


@dataclass(frozen=True)
class Verdict:
    met: bool | None  # None: nothing to judge (a figure is missing)
    text: str


def meets(r, limit, higher_is_better):
    return r >= limit if higher_is_better else r <= limit


def noise_verdict(r, limit, higher_is_better, noise, pair_ratios):
    """A goal on a ratio that may be met "within noise": when it misses the limit by no more than
    the larger run-to-run spread of the two tools, unless it misses in every pair (3 or more),
    whichever tool ran first: that is a systematic difference, not noise."""
    if r is None:
        return "-"
    if (r >= limit) if higher_is_better else (r <= limit):
        return "MET"
    if noise is None:
        return "NOT MET (noise unknown: --repeat >= 2)"
    pair_ratios = [x for x in pair_ratios if x is not None]
    if len(pair_ratios) >= 3 and all((x < limit) if higher_is_better else (x > limit) for x in pair_ratios):
        return f"NOT MET ({'below' if higher_is_better else 'above'} fio in all {len(pair_ratios)} pairs)"
    if (r >= limit - noise) if higher_is_better else (r <= limit + noise):
        return f"MET within noise ({noise * 100:.1f}%)"
    return f"NOT MET (noise {noise * 100:.1f}%)"


def goal_verdict(iolab, fio, limit, higher_is_better, within_noise=False):
    """A goal on the ratio iolab/fio of the two tools' medians: strictly, or, with within_noise,
    by noise_verdict."""
    r = ratio(median(iolab), median(fio))
    if within_noise:
        noise = max([s for s in (spread(iolab), spread(fio)) if s is not None], default=None)
        text = noise_verdict(r, limit, higher_is_better, noise, [ratio(a, b) for a, b in zip(iolab, fio)])
    else:
        text = "-" if r is None else "MET" if meets(r, limit, higher_is_better) else "NOT MET"
    return Verdict(None if text == "-" else text.startswith("MET"), text)


def agreement_verdict(iolab, fio):
    """Within noise when the difference of the medians is no larger than the larger spread; says
    so when the difference has the same sign in every pair (3 or more)."""
    d = rel_diff(median(iolab), median(fio))
    noise = max([s for s in (spread(iolab), spread(fio)) if s is not None], default=None)
    if d is None:
        verdict = "-"
    elif noise is None:
        verdict = "noise unknown (--repeat >= 2)"
    else:
        verdict = "within noise" if abs(d) <= noise else "DIFFERS beyond noise"
    pair_d = [x for x in (rel_diff(a, b) for a, b in zip(iolab, fio)) if x is not None]
    if len(pair_d) >= 3 and (all(x > 0 for x in pair_d) or all(x < 0 for x in pair_d)):
        # Same sign in every pair: possibly a systematic difference hiding in the noise.
        verdict += f"; iolab {'higher' if pair_d[0] > 0 else 'lower'} in all {len(pair_d)} pairs"
    return verdict


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
