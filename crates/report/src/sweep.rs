//! The report of `iolab sweep`: a table per load curve ("Outstanding I/Os | IOPS | MB/s | avg
//! latency | p99 | p99.99 | CPU per I/O"), the sweet spot marked, then the verdict.

use std::fmt::Write;

use iolab_analysis::sweep::SweepSummary;
use iolab_stats::result::RunReport;

use crate::studies::{target_names, to_json, verdict};
use iolab_stats::format::{latency, thousands};

/// Name and version of the JSON schema of a sweep report.
pub const SWEEP_SCHEMA: &str = "iolab.sweep/1";

pub fn sweep_json(summary: &SweepSummary, run: &RunReport) -> String {
    to_json(SWEEP_SCHEMA, summary, run)
}

pub fn sweep_text(summary: &SweepSummary, run: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "sweep of {} points: {}", summary.rows.len(), setting(run));
    for curve in &summary.curves {
        if !curve.name.is_empty() {
            let _ = writeln!(out, "\n{}", curve.name);
        } else {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "  {:<24}{:>6}{:>8}{:>12}{:>12}{:>10}{:>10}{:>10}{:>10}{:>10}  limited by",
            "point", "QD", "workers", "outstanding", "IOPS", "MB/s", "mean", "p99", "p99.99", "CPU/I/O"
        );
        for &index in &curve.rows {
            let r = &summary.rows[index];
            let mark = if curve.sweet_spot.as_ref().is_some_and(|s| s.row == index) { "*" } else { " " };
            let _ = writeln!(
                out,
                "{mark} {:<24}{:>6}{:>8}{:>12}{:>12}{:>10.1}{:>10}{:>10}{:>10}{:>8.2}us  {}",
                r.name,
                r.qd,
                r.workers,
                r.outstanding,
                thousands(r.iops),
                r.mb_s,
                latency(r.mean_ns),
                latency(r.p99_ns as f64),
                latency(r.p9999_ns as f64),
                r.cpu_us_per_io,
                match (r.disturbed, r.retried) {
                    (true, 0) => format!("{} (disturbed)", r.bottleneck.name()),
                    (true, n) => format!("{} (disturbed in all {} attempts)", r.bottleneck.name(), n + 1),
                    (false, 0) => r.bottleneck.name().to_string(),
                    (false, n) =>
                        format!("{} (after {n} disturbed attempt{})", r.bottleneck.name(), plural(n)),
                }
            );
        }
    }
    if summary.curves.iter().any(|c| c.sweet_spot.is_some()) {
        let _ = writeln!(out, "  (* the sweet spot: the most IOPS before latency grows faster than IOPS)");
    }
    if summary.rows.iter().any(|r| r.disturbed) {
        let _ = writeln!(out, "  (disturbed: another load or a stolen CPU; left out of the sweet spot)");
    }
    if summary.rows.iter().any(|r| r.retried > 0) {
        let _ = writeln!(
            out,
            "  (a disturbed attempt is measured again, up to --retries times; the last is shown)"
        );
    }
    crate::tails::tails_text(
        &mut out,
        summary.rows.iter().map(|r| crate::tails::MeanAndTail {
            name: &r.name,
            mean_ns: r.mean_ns,
            p99_ns: Some(r.p99_ns),
            tail: r.tail,
        }),
    );
    out.push_str(&crate::groups::groups_text(run));
    verdict(&mut out, &summary.verdict);
    if run.interrupted {
        out.push_str("INTERRUPTED: the points above are those that finished.\n");
    }
    crate::shown(out)
}

/// What every point shares: "4KiB random read on /dev/zram1, uring, O_DIRECT, 5.0 s after 1.0 s
/// ramp per point" (the access is the first point's; a swept option shows in the table).
fn setting(run: &RunReport) -> String {
    let Some(job) = run.jobs.first() else { return "nothing ran".to_string() };
    let Some(group) = job.groups.first() else { return String::new() };
    let direct =
        if job.spec.groups.first().is_some_and(|g| g.target.direct) { "O_DIRECT" } else { "buffered" };
    format!(
        "{} on {}, {}, {direct}, {:.1} s after {:.1} s ramp per point",
        group.access,
        target_names(run),
        group.engine,
        job.measured_s,
        job.ramp_s
    )
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
