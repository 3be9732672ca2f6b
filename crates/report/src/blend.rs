//! The report of `iolab run JOB --each-alone`: each concurrent group alone and beside the
//! others, what it kept, and how its tail grew.

use std::fmt::Write;

use iolab_analysis::blend::BlendSummary;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::RunReport;

use crate::studies::{to_json, verdict};
use crate::text::render_text;

/// Name and version of the JSON schema of an interference report.
pub const BLEND_SCHEMA: &str = "iolab.blend/1";

pub fn blend_json(summary: &BlendSummary, run: &RunReport) -> String {
    to_json(BLEND_SCHEMA, summary, run)
}

pub fn blend_text(summary: &BlendSummary, run: &RunReport) -> String {
    let mut out = render_text(run);
    let _ = writeln!(out, "\neach group alone, then all {} together:\n", summary.rows.len());
    let _ = writeln!(
        out,
        "  {:<16}{:<26}{:>12}{:>12}{:>8}{:>11}{:>11}",
        "group", "workload", "alone IOPS", "together", "kept", "alone p99", "together"
    );
    let p99 = |ns: Option<u64>| ns.map_or_else(|| "-".to_string(), |ns| latency(ns as f64));
    for row in &summary.rows {
        let _ = writeln!(
            out,
            "  {:<16}{:<26}{:>12}{:>12}{:>7.0}%{:>11}{:>11}",
            row.group,
            row.access,
            thousands(row.alone_iops),
            thousands(row.together_iops),
            row.kept_pct,
            p99(row.alone_p99_ns),
            p99(row.together_p99_ns)
        );
    }
    let _ = writeln!(
        out,
        "  {:<16}{:<26}{:>12}{:>12}{:>7.0}%",
        "all",
        "",
        thousands(summary.sum_alone_iops),
        thousands(summary.together_iops),
        summary.kept_pct
    );
    verdict(&mut out, &summary.verdict);
    crate::shown(out)
}
