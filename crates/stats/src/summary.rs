//! The figures of one kind of I/O (reads, writes, or both) over a window: counts, rates,
//! latency percentiles to 99.9999 and the share within each threshold; and one interval of the
//! per-second series.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpSummary {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    /// 10^6 bytes per second.
    pub mb_s: f64,
    /// 2^20 bytes per second.
    pub mib_s: f64,
    /// Absent when there were no I/Os of this kind.
    pub latency: Option<LatencySummary>,
}

impl OpSummary {
    /// The latency at percentile `p` (e.g. 99.0) as the result reported it; `None` without
    /// I/Os of this kind or when the source did not give that percentile.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.latency.as_ref()?.percentile(p)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub min_ns: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub max_ns: u64,
    pub percentiles: Vec<Percentile>,
    /// Share of I/Os completed within each threshold (1 ms, 2 ms and the user's --slo).
    pub within: Vec<Within>,
    /// When the mean lies above p99 or a higher percentile: the few I/Os beyond it, which own
    /// the mean. Absent otherwise, and where no histogram was kept (an fio summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<TailShare>,
}

impl LatencySummary {
    /// The latency at percentile `p` (e.g. 99.0), if the summary gives that percentile.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9).map(|x| x.ns)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Percentile {
    pub p: f64,
    pub ns: u64,
}

/// The I/Os beyond a high percentile that the mean lies above, and their share of the mean: a
/// mean of 57.3us with a p99 of 4.51us is a statement about 1% of the I/Os, not about a
/// typical one.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct TailShare {
    /// The highest percentile (99 or above) whose latency lies below the mean.
    pub p: f64,
    pub above_ns: u64,
    /// Share (0..100) of the I/Os that took longer than `above_ns`.
    pub ios_pct: f64,
    /// Share (0..100) of the sum of latencies, and so of the mean, that those I/Os make up.
    pub mean_pct: f64,
}

impl TailShare {
    /// "1.1% of I/Os took over 4.51ms and make up 91% of the mean".
    pub fn sentence(&self) -> String {
        format!(
            "{} of I/Os took over {} (p{}) and make up {:.0}% of the mean",
            share(self.ios_pct),
            crate::format::latency(self.above_ns as f64),
            self.p,
            self.mean_pct
        )
    }
}

impl LatencySummary {
    /// What follows "the mean of X " where the mean lies above its p99: "is its tail's: 1.1% of
    /// I/Os took over ..." from the histogram's shares, or, for a result kept without its
    /// histogram (older, or an fio summary), "lies above its p99, 4.51us: the slowest 1% of I/Os
    /// pull it there; the result kept no histogram to say by how much". `None` otherwise.
    pub fn tail_words(&self) -> Option<String> {
        tail_words(self.mean_ns, self.percentile(99.0), self.tail)
    }
}

/// [`LatencySummary::tail_words`] from its parts.
pub fn tail_words(mean_ns: f64, p99_ns: Option<u64>, tail: Option<TailShare>) -> Option<String> {
    match (tail, p99_ns) {
        (Some(tail), _) => Some(format!("is its tail's: {}", tail.sentence())),
        (None, Some(p99)) if mean_ns > p99 as f64 => Some(format!(
            "lies above its p99, {}: the slowest 1% of I/Os pull it there; the result kept no histogram to say by how much",
            crate::format::latency(p99 as f64)
        )),
        _ => None,
    }
}

/// A small share to two significant digits at most: "12%", "1.1%", "0.2%", "0.013%".
fn share(pct: f64) -> String {
    if pct >= 10.0 {
        return format!("{pct:.0}%");
    }
    let decimals = (1.0 - pct.log10().floor()).clamp(1.0, 8.0) as usize;
    let digits = format!("{pct:.decimals$}");
    format!("{}%", digits.trim_end_matches('0').trim_end_matches('.'))
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Within {
    pub threshold_ns: u64,
    pub pct: f64,
}

/// One interval (normally one second) of the measured phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeriesPoint {
    /// Start of the interval, in seconds after the measurement started.
    pub t_s: f64,
    pub duration_s: f64,
    pub iops: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub mb_s: f64,
    pub mean_ns: f64,
    pub p99_ns: u64,
}
