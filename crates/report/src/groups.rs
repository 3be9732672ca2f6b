//! The groups of a study's points when a point is a job of several (a job file's blender swept
//! or ramped): what each group was asked for and what it got, so that a total never hides a
//! starved group. The JSON carries every figure of every group (`run.jobs[].groups`).

use std::fmt::Write;

use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{GroupResult, RunReport};

/// Up to this many groups a point shows a line per group; more (a VM fleet) show their spread.
const LISTED_GROUPS: usize = 8;

/// The per-group lines of every job of several groups in `run`; empty when every job has one.
pub(crate) fn groups_text(run: &RunReport) -> String {
    let mut out = String::new();
    let many: Vec<_> = run.jobs.iter().filter(|j| j.groups.len() > 1).collect();
    if many.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nper group (every figure of every group is in the JSON: run.jobs[].groups):");
    let widest = many.iter().map(|j| j.groups.len()).max().unwrap_or(0);
    // Points of a ramp over lists are named "read 90%: 50% of the maximum": the column fits them.
    let w = many.iter().map(|j| j.name.chars().count() + 2).max().unwrap_or(0).max(24);
    if widest <= LISTED_GROUPS {
        let _ = writeln!(
            out,
            "  {:<w$}{:<16}{:>6}{:>8}{:>12}{:>12}{:>10}",
            "point", "group", "QD", "workers", "asked IOPS", "IOPS", "p99"
        );
        for job in many {
            for (index, group) in job.groups.iter().enumerate() {
                let point = if index == 0 { job.name.as_str() } else { "" };
                let _ = writeln!(
                    out,
                    "  {:<w$}{:<16}{:>6}{:>8}{:>12}{:>12}{:>10}",
                    point,
                    group.name,
                    group.qd,
                    group.workers,
                    asked(group),
                    thousands(group.total.iops),
                    p99(group)
                );
            }
        }
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<w$}{:>7}{:>14}{:>12}{:>12}{:>12}{:>10}{:>10}",
        "point", "groups", "asked each", "IOPS min", "median", "max", "p99 min", "max"
    );
    for job in many {
        let mut iops: Vec<f64> = job.groups.iter().map(|g| g.total.iops).collect();
        iops.sort_by(f64::total_cmp);
        let p99s: Vec<u64> = job.groups.iter().filter_map(|g| g.total.percentile(99.0)).collect();
        let rates: Vec<f64> =
            job.groups.iter().filter_map(|g| g.rate.as_ref().map(|r| r.target_iops)).collect();
        let (low, high) = rates.iter().fold((f64::MAX, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
        let asked = match rates.len() {
            0 => "-".to_string(),
            _ if low == high => thousands(low),
            _ => format!("{}..{}", thousands(low), thousands(high)),
        };
        let _ = writeln!(
            out,
            "  {:<w$}{:>7}{:>14}{:>12}{:>12}{:>12}{:>10}{:>10}",
            job.name,
            job.groups.len(),
            asked,
            thousands(iops[0]),
            thousands(iops[iops.len() / 2]),
            thousands(iops[iops.len() - 1]),
            p99s.iter().min().map_or("-".into(), |&ns| latency(ns as f64)),
            p99s.iter().max().map_or("-".into(), |&ns| latency(ns as f64)),
        );
    }
    out
}

/// The group's scheduled rate, or "-" in closed loop.
fn asked(group: &GroupResult) -> String {
    group.rate.as_ref().map_or("-".into(), |r| thousands(r.target_iops))
}

fn p99(group: &GroupResult) -> String {
    group.total.percentile(99.0).map_or("-".into(), |ns| latency(ns as f64))
}
