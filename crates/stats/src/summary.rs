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
