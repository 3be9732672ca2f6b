//! The report of `iolab cliff`: throughput against bytes written (a coarse profile, the full
//! log in JSON), then each cliff with the fast tier's size and the rates before and after.

use std::fmt::Write;

use iolab_analysis::cliff::CliffSummary;
use iolab_spec::Bytes;
use iolab_stats::result::RunReport;

use crate::studies::to_json;
use crate::text::render_text;

/// Name and version of the JSON schema of a cliff report.
pub const CLIFF_SCHEMA: &str = "iolab.cliff/1";
/// Rows of the profile in the text report.
const PROFILE_ROWS: usize = 20;
/// Width of the longest bar of the profile.
const BAR_WIDTH: f64 = 40.0;

pub fn cliff_json(summary: &CliffSummary, run: &RunReport) -> String {
    to_json(CLIFF_SCHEMA, summary, run)
}

pub fn cliff_text(summary: &CliffSummary, run: &RunReport) -> String {
    let CliffSummary { found, samples } = summary;
    let mut out = render_text(run);
    let _ = writeln!(out, "\nthroughput against bytes written ({} samples):", samples.len());
    let peak = samples.iter().map(|s| s.mb_s).fold(0.0, f64::max);
    let per_row = samples.len().div_ceil(PROFILE_ROWS).max(1);
    for chunk in samples.chunks(per_row) {
        let mean = chunk.iter().map(|s| s.mb_s).sum::<f64>() / chunk.len() as f64;
        let upto = chunk.last().map_or(0, |s| s.bytes_done);
        let bar =
            if peak > 0.0 { "#".repeat((BAR_WIDTH * mean / peak).round() as usize) } else { String::new() };
        let _ = writeln!(out, "  up to {:>10}  {:>9.0} MB/s  {bar}", Bytes(upto).to_string(), mean);
    }
    let _ = writeln!(out);
    if !found.judged {
        let _ = writeln!(out, "cliff: not judged: {}", found.note.as_deref().unwrap_or("too few samples"));
        return out;
    }
    if found.cliffs.is_empty() {
        let _ = writeln!(out, "cliff: none: throughput never dropped and stayed down in this fill");
    }
    for (index, cliff) in found.cliffs.iter().enumerate() {
        let tier = if index == 0 { "fast tier".to_string() } else { format!("tier {}", index + 1) };
        let _ = writeln!(
            out,
            "cliff {}: after {} written ({tier} size), throughput fell {:.0}%: {:.0} MB/s before, {:.0} MB/s after",
            index + 1,
            Bytes(cliff.at_bytes),
            cliff.drop_pct,
            cliff.before_mb_s,
            cliff.after_mb_s
        );
    }
    if let Some(note) = &found.note {
        let _ = writeln!(out, "  note: {note}");
    }
    crate::shown(out)
}
