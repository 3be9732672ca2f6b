//! How faithfully a replay (`iolab replay`) kept its trace: how many of the trace's requests
//! completed, and, when it kept the recorded times, how far behind its time each request
//! started and what share started late.

use iolab_spec::{Nanos, ReplaySpec};
use serde::{Deserialize, Serialize};

use crate::interval::IntervalStats;
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

    /// A fleet's replay: each host replayed its own trace (`reports`, one per host), and
    /// `stats` holds the union of their histograms (the lags and the response times, merged
    /// exactly). Counts are summed, the most lag is the worst host's, and the sources and fits
    /// are every host's, in order, without repeats. `None` without a report.
    pub fn merged(reports: &[&ReplayReport], stats: &IntervalStats, slo: &[Nanos]) -> Option<Self> {
        let first = reports.first()?;
        let distinct = |each: Vec<&str>| {
            let mut seen: Vec<&str> = Vec::new();
            each.into_iter().filter(|s| !s.is_empty()).for_each(|s| {
                if !seen.contains(&s) {
                    seen.push(s);
                }
            });
            seen.join(", ")
        };
        let fits = distinct(reports.iter().filter_map(|r| r.fit.as_deref()).collect());
        let lags = stats.lag.as_ref().filter(|l| l.ios() > 0);
        Some(ReplayReport {
            source: distinct(reports.iter().map(|r| r.source.as_str()).collect()),
            speed: first.speed,
            fit: (!fits.is_empty()).then_some(fits),
            requests: reports.iter().map(|r| r.requests).sum(),
            skipped: reports.iter().map(|r| r.skipped).sum(),
            completed: reports.iter().map(|r| r.completed).sum(),
            lag: lags.and_then(|l| l.latency_summary(slo)),
            max_lag_ns: reports.iter().map(|r| r.max_lag_ns).max().unwrap_or(0),
            late_pct: lags.map(|l| 100.0 - l.within_pct(Nanos(LATE_NS))),
            response: stats.response.as_ref().and_then(|r| r.latency_summary(slo)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lags(ns: &[u64]) -> OpStats {
        let mut stats = OpStats::default();
        ns.iter().for_each(|&n| stats.record(n, 0));
        stats
    }

    fn host(source: &str, fit: Option<&str>, lag: &OpStats, max_lag_ns: u64) -> ReplayReport {
        ReplayReport {
            source: source.into(),
            speed: Some(1.0),
            fit: fit.map(String::from),
            requests: lag.ios() + 1,
            skipped: 2,
            completed: lag.ios(),
            lag: lag.latency_summary(&[]),
            max_lag_ns,
            late_pct: Some(100.0 - lag.within_pct(Nanos(LATE_NS))),
            response: None,
        }
    }

    /// The fleet's lag is that of every host's requests together, never an average of the
    /// hosts' percentiles; counts add up, and each source and fit is named once.
    #[test]
    fn a_fleets_replay_is_the_union_of_its_hosts() {
        let (a, b) = (lags(&[100_000; 99]), lags(&[5_000_000]));
        let reports = [host("a.trc", Some("wrap"), &a, 100_000), host("b.trc", None, &b, 5_000_000)];
        let reports: Vec<&ReplayReport> = reports.iter().collect();
        let mut union = IntervalStats { lag: Some(a.clone()), ..Default::default() };
        union.merge(&IntervalStats { lag: Some(b), ..Default::default() });
        let merged = ReplayReport::merged(&reports, &union, &[]).expect("two reports");
        assert_eq!((merged.requests, merged.skipped, merged.completed), (102, 4, 100));
        assert_eq!((merged.source.as_str(), merged.fit.as_deref()), ("a.trc, b.trc", Some("wrap")));
        assert_eq!(merged.max_lag_ns, 5_000_000);
        // One request of 100 was late: 1%, where the hosts' own shares average 50%.
        assert!((merged.late_pct.expect("kept times") - 1.0).abs() < 1e-9, "{merged:?}");
        assert!(ReplayReport::merged(&[], &union, &[]).is_none());
        let same = [host("a.trc", None, &a, 1), host("a.trc", None, &a, 1)];
        let same = ReplayReport::merged(&same.iter().collect::<Vec<_>>(), &union, &[]).expect("two");
        assert_eq!((same.source.as_str(), same.fit), ("a.trc", None));
    }
}
