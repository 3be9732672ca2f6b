//! What `iolab results` prints: the runs kept in the store (`list`) and one run with its points
//! (`show`).

use std::fmt::Write;

use iolab_stats::format::{latency, thousands};
use iolab_stats::result::OpSummary;
use iolab_store::{Point, RunInfo, StoredRun};

/// One line per run, newest first.
pub fn runs_text(runs: &[RunInfo]) -> String {
    if runs.is_empty() {
        return "no runs kept yet: every `iolab run`, `sweep`, `suite` ... is kept here as it runs\n".into();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<13} {:<11} {:<17} {:>6}  what",
        "id", "kind", "status", "started (UTC)", "points"
    );
    for run in runs {
        let _ = writeln!(
            out,
            "{:>5}  {:<13} {:<11} {:<17} {:>6}  {}",
            run.id,
            run.kind,
            run.status.name(),
            utc(run.started_at_unix_s),
            run.points,
            run.label
        );
    }
    crate::shown(out)
}

/// A run's header, its environment lines (`environment`, rendered by the caller) and a table
/// of its points with each one's verdict.
pub fn run_text(run: &StoredRun, environment: &[String]) -> String {
    let info = &run.info;
    let mut out = String::new();
    let _ = writeln!(out, "run {}: {} ({})", info.id, info.label, info.status.name());
    let ended = info.finished_at_unix_s.map_or_else(|| "not recorded".to_string(), utc);
    let _ = writeln!(
        out,
        "  started {} UTC, ended {}, on {}",
        utc(info.started_at_unix_s),
        ended,
        info.host_or_unknown()
    );
    let _ = writeln!(out, "  command: {}", info.command.join(" "));
    let _ = writeln!(out, "  iolab {}", info.iolab_version);
    for line in environment {
        let _ = writeln!(out, "  {line}");
    }
    // An import says what it converted, derived, cut or left out (`iolab import fio`).
    let notes = run.report.as_ref().and_then(|r| r.get("notes")).and_then(|n| n.as_array());
    if let Some(notes) = notes.filter(|n| !n.is_empty()) {
        let _ = writeln!(out, "  import notes:");
        for note in notes.iter().filter_map(|n| n.as_str()) {
            let _ = writeln!(out, "    - {note}");
        }
    }
    if run.points.is_empty() {
        out.push_str("\nno point completed\n");
        return out;
    }
    if info.kind.ends_with("files") {
        files_table(&mut out, &run.points);
    } else {
        block_table(&mut out, &run.points);
    }
    crate::tails::tails_text(
        &mut out,
        run.points.iter().map(|p| crate::tails::MeanAndTail::of(&p.name, p.summary.total.latency.as_ref())),
    );
    let verdicts: Vec<&Point> = run.points.iter().filter(|p| p.verdict.is_some()).collect();
    if !verdicts.is_empty() {
        out.push('\n');
    }
    for point in verdicts {
        if let Some(verdict) = &point.verdict {
            let _ = writeln!(out, "  {} ({}): {}", point.seq, point.name, verdict.summary);
        }
    }
    crate::shown(out)
}

/// The points of a block run: load, rates, latency, CPU and what limited each.
fn block_table(out: &mut String, points: &[Point]) {
    let _ = writeln!(
        out,
        "\n  {:>4}  {:<24}{:>7}{:>8}{:>12}{:>10}{:>10}{:>10}{:>10}{:>10}  limited by",
        "#", "point", "QD", "workers", "IOPS", "MB/s", "mean", "p99", "p99.99", "CPU/I/O"
    );
    for point in points {
        let total = &point.summary.total;
        let cpu = point.summary.cpu_us_per_io.map_or_else(|| "-".to_string(), |us| latency(us * 1e3));
        let _ = writeln!(
            out,
            "  {:>4}  {:<24}{:>7}{:>8}{:>12}{:>10.1}{:>10}{:>10}{:>10}{:>10}  {}",
            point.seq,
            point.name,
            point.summary.qd,
            point.summary.workers,
            thousands(total.iops),
            total.mb_s,
            total.latency.as_ref().map_or_else(|| "-".into(), |l| latency(l.mean_ns)),
            percentile_text(total, 99.0),
            percentile_text(total, 99.99),
            cpu,
            point.verdict.as_ref().map_or("-", |v| v.cause.name())
        );
    }
}

/// The phases of a files run: operations done of planned (a mix's in its time), their rate, latency, CPU per
/// operation and the phase's own verdict (the files rules' cause, which the lines below the
/// table explain), not the block columns of load and IOPS.
fn files_table(out: &mut String, points: &[Point]) {
    let _ = writeln!(
        out,
        "\n  {:>4}  {:<10}{:>22}{:>12}{:>10}{:>10}{:>10}{:>10}{:>10}  limited by",
        "#", "phase", "done of planned", "ops/s", "MB/s", "mean", "p99", "p99.99", "CPU/op"
    );
    for point in points {
        let phase = &point.result;
        let count = |key: &str| phase[key].as_u64().map_or_else(|| "-".to_string(), |n| thousands(n as f64));
        let total = &point.summary.total;
        let cause = phase.pointer("/verdict/cause").and_then(|c| c.as_str()).map(|c| c.replace('_', " "));
        let _ = writeln!(
            out,
            "  {:>4}  {:<10}{:>22}{:>12}{:>10.1}{:>10}{:>10}{:>10}{:>10}  {}",
            point.seq,
            phase["phase"].as_str().unwrap_or(&point.name),
            // A mix runs for a time, not a count: its operations in its seconds.
            match phase["mix"].is_object() {
                true => format!("{} in {:.0} s", count("done"), phase["elapsed_s"].as_f64().unwrap_or(0.0)),
                false => format!("{} of {}", count("done"), count("planned")),
            },
            thousands(phase["ops_per_s"].as_f64().unwrap_or(total.iops)),
            total.mb_s,
            total.latency.as_ref().map_or_else(|| "-".into(), |l| latency(l.mean_ns)),
            percentile_text(total, 99.0),
            percentile_text(total, 99.99),
            point.summary.cpu_us_per_io.map_or_else(|| "-".to_string(), |us| latency(us * 1e3)),
            cause.as_deref().unwrap_or("-")
        );
    }
}

fn percentile_text(op: &OpSummary, p: f64) -> String {
    op.percentile(p).map_or_else(|| "-".into(), |ns| latency(ns as f64))
}

/// "2026-11-22 14:03": the start of a run, to the minute (UTC).
pub fn utc(unix_s: i64) -> String {
    iolab_stats::format::utc(unix_s)[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc(1_795_357_380), "2026-11-22 14:23");
    }
}
