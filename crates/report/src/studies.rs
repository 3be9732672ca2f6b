//! Reports of the multi-job studies: the API ladder and target scaling. Each is a table of
//! its jobs, then the verdict in plain words; the JSON form carries the full run report too.

use std::fmt::Write;

use iolab_analysis::ladder::LadderSummary;
use iolab_analysis::scale::ScaleSummary;
use iolab_stats::result::RunReport;
use serde::Serialize;

use iolab_stats::format::{latency, thousands};

/// Name and version of the JSON schema of a ladder report.
pub const LADDER_SCHEMA: &str = "iolab.ladder/1";
/// Name and version of the JSON schema of a scale report.
pub const SCALE_SCHEMA: &str = "iolab.scale/1";

#[derive(Serialize)]
struct Study<'a, T: Serialize> {
    schema: &'static str,
    summary: &'a T,
    /// Every job of the study in full (schema iolab.run/3).
    run: &'a RunReport,
}

pub(crate) fn to_json<T: Serialize>(schema: &'static str, summary: &T, run: &RunReport) -> String {
    let mut text = serde_json::to_string_pretty(&Study { schema, summary, run })
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

pub fn ladder_json(summary: &LadderSummary, run: &RunReport) -> String {
    to_json(LADDER_SCHEMA, summary, run)
}

pub fn scale_json(summary: &ScaleSummary, run: &RunReport) -> String {
    to_json(SCALE_SCHEMA, summary, run)
}

/// The workload as the first job ran it: "4KiB random read, QD 32 x 1 worker, 5 s after 1 s ramp".
pub(crate) fn workload(run: &RunReport) -> String {
    let Some(job) = run.jobs.first() else { return "nothing ran".to_string() };
    let Some(group) = job.groups.first() else { return String::new() };
    let direct =
        if job.spec.groups.first().is_some_and(|g| g.target.direct) { "O_DIRECT" } else { "buffered" };
    if job.groups.len() > 1 {
        // A job file's blender: its groups are listed per point (crate::groups).
        return format!(
            "{} groups together, {direct}, {:.1} s measured after {:.1} s ramp per step",
            job.groups.len(),
            job.measured_s,
            job.ramp_s
        );
    }
    format!(
        "{}, {:.1} s measured after {:.1} s ramp per step",
        workload_line(&group.access, group.qd, group.workers, direct),
        job.measured_s,
        job.ramp_s
    )
}

/// The workload of `job`'s first group as planned: "randwrite 4KiB, QD 32 x 1 worker(s), O_DIRECT".
pub fn planned_workload(job: &iolab_spec::JobSpec) -> String {
    let Some(group) = job.groups.first() else { return String::new() };
    let direct = if group.target.direct { "O_DIRECT" } else { "buffered" };
    workload_line(&group.describe_access(), group.qd, group.workers, direct)
}

fn workload_line(access: &str, qd: u32, workers: u32, direct: &str) -> String {
    format!("{access}, QD {qd} x {workers} worker(s), {direct}")
}

/// The first job's targets: "/dev/zram1 + /dev/zram2".
pub(crate) fn target_names(run: &RunReport) -> String {
    let group = run.jobs.first().and_then(|j| j.groups.first());
    group
        .map(|g| g.targets.iter().map(|t| t.path.as_str()).collect::<Vec<_>>().join(" + "))
        .unwrap_or_default()
}

pub(crate) fn verdict(out: &mut String, words: &[String]) {
    let _ = writeln!(out, "\nverdict:");
    for line in words {
        let _ = writeln!(out, "  - {line}");
    }
}

pub fn ladder_text(summary: &LadderSummary, run: &RunReport) -> String {
    let mut out = String::new();
    let target = target_names(run);
    let _ = writeln!(out, "API ladder on {target}: {}\n", workload(run));
    let _ = writeln!(
        out,
        "  {:<17}{:<34}{:>11}{:>9}{:>9}{:>10}{:>9}{:>9}{:>9}{:>10}  limited by",
        "step", "what", "IOPS", "p50", "p99", "CPU/I/O", "workers", "io-wq", "sqpoll", "outside"
    );
    for row in &summary.rows {
        if let Some(why) = &row.skipped {
            let _ = writeln!(out, "  {:<17}{:<34}  not run: {why}", row.name, row.what);
            continue;
        }
        // CPU per I/O in the unit that reads best: 1.18ms, not 1175.56us.
        let us = |v: f64| latency(v * 1e3);
        let _ = writeln!(
            out,
            "  {:<17}{:<34}{:>11}{:>9}{:>9}{:>10}{:>9}{:>9}{:>9}{:>10}  {}{}",
            row.name,
            row.what,
            thousands(row.iops),
            latency(row.p50_ns as f64),
            latency(row.p99_ns as f64),
            us(row.cpu_us_per_io),
            us(row.worker_us_per_io),
            us(row.io_wq_us_per_io),
            us(row.sqpoll_us_per_io),
            us(row.outside_us_per_io),
            row.limited_by,
            row.busiest_outside
                .as_ref()
                .map_or_else(String::new, |b| format!("; busiest outside iolab: {b}"))
        );
    }
    let _ = writeln!(
        out,
        "  (CPU/I/O is the whole process; workers, io-wq and sqpoll are its parts by thread; outside is the\n   rest of the machine per I/O: kernel threads serving the device, softirqs, other processes)"
    );
    verdict(&mut out, &summary.verdict);
    crate::shown(out)
}

pub fn scale_text(summary: &ScaleSummary, run: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scaling over {} targets: {}\n", summary.rows.len(), workload(run));
    let _ = writeln!(
        out,
        "  {:<28}{:>14}{:>14}{:>8}{:>12}",
        "target", "alone IOPS", "together", "kept", "CPU/I/O"
    );
    for row in &summary.rows {
        let _ = writeln!(
            out,
            "  {:<28}{:>14}{:>14}{:>7.0}%{:>12}",
            row.target,
            thousands(row.alone_iops),
            thousands(row.together_iops),
            row.kept_pct,
            latency(row.alone_cpu_us_per_io * 1e3)
        );
    }
    let _ = writeln!(
        out,
        "  {:<28}{:>14}{:>14}{:>7.0}%{:>12}",
        "all",
        thousands(summary.sum_of_singles_iops),
        thousands(summary.together_iops),
        summary.efficiency_pct,
        latency(summary.together_cpu_us_per_io * 1e3)
    );
    verdict(&mut out, &summary.verdict);
    crate::shown(out)
}
