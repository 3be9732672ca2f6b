//! The report of `iolab cache`: latency and IOPS against the working-set size (the sizes asked
//! for and those measured to refine a tier), each tier with its size and the figures inside and
//! beyond it, then promotion and pollution.

use std::fmt::Write;

use iolab_analysis::cache::{CachePoint, CacheSummary, Tier};
use iolab_analysis::cache_capacity::{sure_points, MAX_HIT_SHARE};
use iolab_spec::Bytes;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{JobResult, RunReport};

use crate::studies::{target_names, to_json, workload};

/// Name and version of the JSON schema of a cache report.
pub const CACHE_SCHEMA: &str = "iolab.cache/1";

pub fn cache_json(summary: &CacheSummary, run: &RunReport) -> String {
    to_json(CACHE_SCHEMA, summary, run)
}

/// The run with only the first working set measured as its jobs: what its workload line
/// describes (the first job of a cache study is a warm pass).
pub(crate) fn first_measured(run: &RunReport) -> RunReport {
    let measured: Vec<JobResult> =
        run.jobs.iter().filter(|j| j.name.starts_with("working set")).take(1).cloned().collect();
    RunReport {
        schema: run.schema,
        iolab_version: run.iolab_version,
        host: run.host.clone(),
        started_at_unix_s: run.started_at_unix_s,
        interrupted: run.interrupted,
        peak_rss_bytes: run.peak_rss_bytes,
        jobs: measured,
    }
}

pub fn cache_text(summary: &CacheSummary, run: &RunReport) -> String {
    let mut out = String::new();
    let described = first_measured(run);
    let _ = writeln!(
        out,
        "read cache and tiers on {}: {}",
        target_names(run),
        workload(&described).replace("per step", "per working set")
    );
    let _ = writeln!(
        out,
        "each working set read once sequentially, then at random; region {}\n",
        Bytes(summary.region_bytes)
    );
    cache_body(&mut out, summary);
    if run.interrupted {
        out.push_str("INTERRUPTED: the working sets above are those that finished.\n");
    }
    crate::shown(out)
}

/// The working sets, tiers, promotion, pollution and notes of one curve (`iolab cache`'s, or a
/// fleet host's).
pub(crate) fn cache_body(out: &mut String, summary: &CacheSummary) {
    points_table(out, &summary.points, summary.region_bytes, |p| marks(summary, p.working_set_bytes));
    let _ =
        writeln!(out, "  (mean 99%: the mean of the fastest 99% of reads, what the tiers are judged on)\n");
    let found = &summary.found;
    if !found.judged || found.tiers.is_empty() {
        let _ = writeln!(out, "tiers: none: {}", found.note.as_deref().unwrap_or("nothing judged"));
    }
    for (index, tier) in found.tiers.iter().enumerate() {
        tier_lines(out, index, tier, summary.rule.precision_pct);
    }
    if let Some(p) = &summary.promotion {
        let when = match (p.fast_after_s, p.fast_from_start) {
            (_, true) => {
                "fast from the first interval: it was cached already, nothing to promote".to_string()
            }
            (Some(s), false) => {
                format!("fast after {s:.2} s (every later interval at most {})", latency(p.target_ns))
            }
            (None, false) => format!(
                "NOT fast within {:.1} s (never at most {} for the rest of the run)",
                p.samples.last().map_or(0.0, |s| s.t_s),
                latency(p.target_ns)
            ),
        };
        let first = p.samples.first().map_or(0.0, |s| s.mean_ns);
        let last = p.samples.last().map_or(0.0, |s| s.mean_ns);
        let _ = writeln!(
            out,
            "promotion: a cold hot set of {} read at random: {when}; mean {} in the first interval, {} in the last",
            Bytes(p.hot_set_bytes),
            latency(first),
            latency(last)
        );
    }
    if let Some(p) = &summary.pollution {
        let verdict = if p.polluted { "POLLUTED: the scan evicted it" } else { "stayed fast" };
        let _ = writeln!(
            out,
            "pollution: a hot set of {} {verdict} after a scan of {}: mean {} before, {} after ({} -> {} IOPS)",
            Bytes(p.hot_set_bytes),
            Bytes(p.scan_bytes),
            latency(p.before.mean_ns),
            latency(p.after.mean_ns),
            thousands(p.before.iops),
            thousands(p.after.iops)
        );
    }
    for note in &summary.notes {
        let _ = writeln!(out, "note: {note}");
    }
}

fn tier_name(index: usize) -> String {
    format!("tier {}", index + 1)
}

/// A curve's working sets, one row each (size, share of `region_bytes`, latencies, IOPS), each
/// ending with what `mark` says of it.
pub(crate) fn points_table(
    out: &mut String,
    points: &[CachePoint],
    region_bytes: u64,
    mark: impl Fn(&CachePoint) -> String,
) {
    let _ = writeln!(
        out,
        "  {:>12}{:>8}{:>11}{:>11}{:>10}{:>10}{:>12}",
        "working set", "region", "mean 99%", "mean", "p50", "p99", "IOPS"
    );
    for p in points {
        let share = p.working_set_bytes as f64 / region_bytes.max(1) as f64 * 100.0;
        let _ = writeln!(
            out,
            "  {:>12}{:>7.1}%{:>11}{:>11}{:>10}{:>10}{:>12}{}{}{}",
            Bytes(p.working_set_bytes).to_string(),
            share,
            latency(p.level_ns()),
            latency(p.mean_ns),
            latency(p.p50_ns as f64),
            latency(p.p99_ns as f64),
            thousands(p.iops),
            if p.refined { " (refining)" } else { "" },
            if p.after_larger { " (after a larger one)" } else { "" },
            mark(p)
        );
    }
}

/// What a working set is to each tier: the last that fits it, or one its capacity is judged on.
fn marks(summary: &CacheSummary, working_set: u64) -> String {
    let mut marks = String::new();
    for (index, tier) in summary.found.tiers.iter().enumerate() {
        if tier.fits_bytes == working_set {
            let _ = write!(marks, "  <- {} fits: misses begin above", tier_name(index));
        }
        if let Some(s) = tier.hit_shares.iter().find(|s| s.used && s.working_set_bytes == working_set) {
            let _ = write!(
                marks,
                "  <- {:.0}% hit {}: {}",
                s.share * 100.0,
                tier_name(index),
                Bytes(s.capacity_bytes)
            );
        }
    }
    marks
}

fn tier_lines(out: &mut String, index: usize, tier: &Tier, precision_pct: f64) {
    let known = if tier.resolved {
        format!("known within {precision_pct}%")
    } else {
        "NOT refined to the precision asked".to_string()
    };
    let used: Vec<f64> = tier.hit_shares.iter().filter(|s| s.used).map(|s| s.share * 100.0).collect();
    let (lo, hi) = used.iter().fold((100.0f64, 0.0f64), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    let capacity = match (used.len(), sure_points(tier)) {
        (0, _) => "capacity not judged (no latency distribution beyond it): the largest working set inside it".to_string(),
        (n, sure) if sure == n => format!(
            "capacity: the median of hit share x working set over {n} working set(s) beyond it, {lo:.0}-{hi:.0}% of reads hit it (took at most {})",
            latency(tier.threshold_ns)
        ),
        (n, _) => format!(
            "capacity: the median of hit share x working set over {n} working set(s) beyond it, {lo:.0}-{hi:.0}% of reads hit it: none at or under {:.0}%, the region is short of twice the tier, LOW if the cache thrashes before it is full",
            MAX_HIT_SHARE * 100.0
        ),
    };
    let _ = writeln!(out, "{}: {} ({capacity})", tier_name(index), Bytes(tier.size_bytes));
    let _ = writeln!(
        out,
        "  misses begin between {} (the largest working set all hits) and {} ({known})",
        Bytes(tier.fits_bytes),
        Bytes(tier.upper_bytes)
    );
    let _ = writeln!(
        out,
        "  a hit costs {}, a miss {}; inside (at {}): mean {}, {} IOPS; beyond (at {}): mean {}, {} IOPS",
        latency(tier.hit_ns),
        latency(tier.miss_ns),
        Bytes(tier.inside.working_set_bytes),
        latency(tier.inside.mean_ns),
        thousands(tier.inside.iops),
        Bytes(tier.beyond.working_set_bytes),
        latency(tier.beyond.mean_ns),
        thousands(tier.beyond.iops)
    );
}

#[cfg(test)]
mod tests {
    use iolab_analysis::cache::CachePoint;

    use super::*;

    #[test]
    fn a_working_set_measured_after_a_larger_one_is_marked() {
        let point = |mib: u64, after_larger| CachePoint {
            working_set_bytes: mib << 20,
            refined: after_larger,
            after_larger,
            ..CachePoint::default()
        };
        let summary = CacheSummary {
            region_bytes: 64 << 20,
            points: vec![point(32, true), point(64, false)],
            ..CacheSummary::default()
        };
        let mut out = String::new();
        cache_body(&mut out, &summary);
        let lines: Vec<&str> = out.lines().filter(|l| l.contains("MiB")).collect();
        assert!(lines[0].ends_with("(refining) (after a larger one)"), "{out}");
        assert!(!lines[1].contains("after a larger"), "{out}");
    }
}
