//! The burn-in report: each segment (the first and the latest of a long one), the whole
//! burn-in from merged histograms, the trend of IOPS and p99, the drive's health trend, the
//! datasheet check, and why it ended, with the command that continues it. Its JSON is the
//! summary alone: the segments' full results are the run's points in the store.

use std::fmt::Write;

use iolab_analysis::burnin::{BurninSummary, Ending, Segment};
use iolab_analysis::rated::RatedLine;
use iolab_stats::format::{decimal_bytes, latency, thousands};
use iolab_stats::result::OpSummary;
use serde::Serialize;

use crate::utc;

/// Name and version of the JSON schema of a burn-in report.
pub const BURNIN_SCHEMA: &str = "iolab.burnin/1";

/// Segments shown at the start and the end of a long burn-in's table.
const HEAD_ROWS: usize = 10;
const TAIL_ROWS: usize = 30;

pub fn burnin_json(summary: &BurninSummary) -> String {
    #[derive(Serialize)]
    struct Report<'a> {
        schema: &'static str,
        summary: &'a BurninSummary,
    }
    let mut text = serde_json::to_string_pretty(&Report { schema: BURNIN_SCHEMA, summary })
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

pub fn burnin_text(summary: &BurninSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "burn-in on {}: {}, {} segments of {}, {} planned",
        summary.target,
        summary.workload,
        summary.planned_segments,
        span(summary.segment_s),
        span(summary.segment_s * f64::from(summary.planned_segments))
    );
    if summary.resumed_from > 0 {
        let _ = writeln!(out, "resumed after segment {}", summary.resumed_from);
    }
    out.push('\n');
    segments_table(&mut out, &summary.segments);
    if let Some(whole) = &summary.whole {
        let _ = writeln!(
            out,
            "\nwhole burn-in: {} segments, {} measured, every I/O's latency merged exactly:",
            summary.segments.len(),
            span(whole.measured_s)
        );
        let _ = writeln!(out, "  {}", op_line(&whole.total));
    }
    if let Some(perf) = &summary.perf {
        let slope = perf
            .slope_pct_per_day
            .map_or_else(String::new, |s| format!(", least-squares trend {s:+.1}% per day"));
        let p99 = match (perf.first_p99_ns, perf.last_p99_ns, perf.max_p99_ns) {
            (Some(first), Some(last), Some(max)) => format!(
                "; p99 {} -> {} (worst segment {})",
                latency(first as f64),
                latency(last as f64),
                latency(max as f64)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "trend: IOPS {} -> {} ({:+.1}%){slope}{p99}",
            thousands(perf.first_iops),
            thousands(perf.last_iops),
            perf.change_pct
        );
    }
    health(&mut out, summary);
    if !summary.rated.is_empty() {
        rated_lines(&mut out, summary.rated_model.as_deref(), &summary.rated);
    }
    let _ = writeln!(out, "\n{}", ending(summary));
    crate::shown(out)
}

/// The datasheet check, one line a figure: "IOPS  measured 512,460 vs rated 540,000: 5.1%
/// below rated  (misses)".
pub fn rated_text(model: Option<&str>, lines: &[RatedLine]) -> String {
    let mut out = String::new();
    rated_lines(&mut out, model, lines);
    crate::shown(out)
}

fn rated_lines(out: &mut String, model: Option<&str>, lines: &[RatedLine]) {
    let of = model.map_or_else(String::new, |m| format!(" ({m})"));
    let _ = writeln!(out, "\nmeasured vs rated{of}:");
    let width = lines.iter().map(|l| l.figure.chars().count()).max().unwrap_or(0);
    for line in lines {
        let meets = match line.meets {
            Some(true) => "  meets",
            Some(false) => "  MISSES",
            None => "",
        };
        let _ = writeln!(out, "  {:<width$}  {}{meets}", line.figure, line.wording);
    }
}

fn segments_table(out: &mut String, segments: &[Segment]) {
    if segments.is_empty() {
        out.push_str("no segment completed\n");
        return;
    }
    let _ = writeln!(
        out,
        "  {:>7}  {:<16}{:>12}{:>10}{:>10}{:>10}{:>8}",
        "segment", "ended (UTC)", "IOPS", "MB/s", "mean", "p99", "errors"
    );
    let skip = segments.len().saturating_sub(HEAD_ROWS + TAIL_ROWS);
    for (i, s) in segments.iter().enumerate() {
        if skip > 0 && i == HEAD_ROWS {
            let _ =
                writeln!(out, "  {:>7}  ({skip} segments not shown: see the JSON or `iolab report`)", "...");
        }
        if skip > 0 && i >= HEAD_ROWS && i < HEAD_ROWS + skip {
            continue;
        }
        let ns = |v: Option<f64>| v.map_or_else(|| "-".to_string(), latency);
        let _ = writeln!(
            out,
            "  {:>7}  {:<16}{:>12}{:>10.1}{:>10}{:>10}{:>8}",
            s.index,
            utc(s.completed_at_unix_s),
            thousands(s.iops),
            s.mb_s,
            ns(s.mean_ns),
            ns(s.p99_ns.map(|p| p as f64)),
            s.data_errors
        );
    }
}

fn op_line(op: &OpSummary) -> String {
    let mut parts = vec![format!("{} IOPS", thousands(op.iops)), format!("{:.1} MB/s", op.mb_s)];
    if let Some(l) = &op.latency {
        parts.push(format!("mean {}", latency(l.mean_ns)));
        for p in [50.0, 99.0, 99.9, 99.99] {
            if let Some(ns) = l.percentile(p) {
                parts.push(format!("p{p} {}", latency(ns as f64)));
            }
        }
        parts.push(format!("max {}", latency(l.max_ns as f64)));
    }
    parts.join(", ")
}

fn health(out: &mut String, summary: &BurninSummary) {
    let Some(trend) = &summary.health else {
        let why = summary.health_skipped.as_deref().unwrap_or("no sample was taken");
        let _ = writeln!(out, "health: not sampled: {why}");
        return;
    };
    let mut parts = Vec::new();
    if let (Some(low), Some(high)) = (trend.min_temperature_celsius, trend.max_temperature_celsius) {
        let last = trend.last_temperature_celsius.map_or_else(String::new, |c| format!(", last {c} °C"));
        parts.push(format!("temperature {low}-{high} °C{last}"));
    }
    if let Some(n) = trend.new_media_errors {
        parts.push(format!("{n} new media errors"));
    }
    if let (Some(first), Some(last)) = (trend.percentage_used_first, trend.percentage_used_last) {
        parts.push(format!("{first}% -> {last}% used"));
    }
    if let Some(bytes) = trend.data_written_bytes {
        parts.push(format!("{} written as the drive counts", decimal_bytes(bytes)));
    }
    if let Some(n) = trend.new_io_errors {
        parts.push(format!("{n} new failed commands (ioerr_cnt)"));
    }
    let _ = writeln!(
        out,
        "health of {} ({}, {} samples every {} from {} to {} UTC): {}",
        trend.device,
        trend.source,
        trend.samples,
        span(summary.health_every_s),
        utc(trend.first_unix_s),
        utc(trend.last_unix_s),
        parts.join(", ")
    );
    for warning in &trend.warnings {
        let _ = writeln!(out, "  WARNING: {warning}");
    }
}

/// Why it ended, and what to do next.
fn ending(summary: &BurninSummary) -> String {
    let done = summary.segments.len();
    let planned = summary.planned_segments;
    let errors = if summary.data_errors == 0 {
        "no data errors".to_string()
    } else {
        format!("{} data errors (counted with --keep-going)", thousands(summary.data_errors as f64))
    };
    let resume = summary.run.map_or_else(
        || "the run was not kept (--no-store): it cannot be resumed".to_string(),
        |run| format!("continue it with `iolab burnin --resume {run}`"),
    );
    match &summary.ending {
        Ending::Completed => format!("completed: all {planned} segments ran, {errors}"),
        Ending::DataErrors { segment, errors } => format!(
            "STOPPED at segment {segment} of {planned}: {errors} data error{} (the first error stops a \
             burn-in; --keep-going counts them and carries on); it cannot be resumed: start a new burn-in",
            if *errors == 1 { "" } else { "s" }
        ),
        Ending::Interrupted => format!("INTERRUPTED after {done} of {planned} segments, {errors}: {resume}"),
        // A failed run is not resumable (`--resume` refuses it): the drive or the setup needs
        // a look first.
        Ending::Failed { reason } => format!(
            "FAILED after {done} of {planned} segments ({reason}), {errors}: a failed burn-in cannot be \
             resumed; start a new burn-in"
        ),
    }
}

/// "10 min", "2.5 h", "3.0 days".
fn span(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 3.0 * 86_400.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.1} days", seconds / 86_400.0)
    }
}

#[cfg(test)]
#[path = "burnin_tests.rs"]
mod tests;
