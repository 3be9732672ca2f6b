//! How faithfully a replay (`iolab replay`) kept its trace: how many of the trace's requests
//! completed, and, when it kept the recorded times, how far behind its time each request
//! started and what share started late.

use iolab_spec::{Nanos, ReplaySpec};
use serde::{Deserialize, Serialize};

use crate::op_stats::OpStats;
use crate::summary::LatencySummary;

/// A request that started more than this behind its recorded time counts as late.
pub const LATE_NS: u64 = 1_000_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The trace, as named.
    pub source: String,
    /// `None`: as fast as the queue allowed.
    pub speed: Option<f64>,
    pub fit: Option<String>,
    /// The trace's requests that move data, all replayed, and those it skipped (discards,
    /// flushes).
    pub requests: u64,
    pub skipped: u64,
    /// Of `requests`, those that completed in the window (all of them, unless the run was
    /// stopped or requests failed).
    pub completed: u64,
    /// Kept times only: how far behind its recorded time (scaled by the speed) each request
    /// started, the most, and the share more than `LATE_NS` late.
    pub lag: Option<LatencySummary>,
    pub max_lag_ns: u64,
    pub late_pct: Option<f64>,
    /// Kept times only: from each request's recorded time to its completion.
    pub response: Option<LatencySummary>,
}

impl ReplayReport {
    /// The report of `replay` from its lanes' `lags` (kept times only), the most lag, the
    /// completions and the response times.
    pub fn new(
        replay: &ReplaySpec,
        lags: Option<&OpStats>,
        max_lag_ns: u64,
        completed: u64,
        response: Option<LatencySummary>,
        slo: &[Nanos],
    ) -> Self {
        let lags = lags.filter(|l| l.ios() > 0);
        ReplayReport {
            source: replay.source.clone(),
            speed: replay.speed,
            fit: replay.fit.clone(),
            requests: replay.ios.len() as u64,
            skipped: replay.skipped,
            completed,
            lag: lags.and_then(|l| l.latency_summary(slo)),
            max_lag_ns,
            late_pct: lags.map(|l| 100.0 - l.within_pct(Nanos(LATE_NS))),
            response,
        }
    }
}
