//! `iolab files`' report: a table per phase of every operation kind it timed (count, rate,
//! latency percentiles to 99.9999), its stonewall rate and its verdict; or the JSON.

use iolab_files::{FilesReport, PhaseResult};
use iolab_spec::Bytes;
use iolab_stats::format::{latency, thousands};

pub use iolab_files::FILES_SCHEMA;

pub fn files_json(report: &FilesReport) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

pub fn files_text(report: &FilesReport) -> String {
    let plan = &report.plan;
    let mut out = format!(
        "files in {}: {} files, {} directories ({}, {} level(s) of {} per directory), sizes {}, {} thread(s){}, {}{}{}\n",
        report.dir,
        thousands(report.total_files as f64),
        thousands(report.total_dirs as f64),
        if plan.shared_dir { "one shared tree".to_string() } else { format!("{} trees", plan.trees()) },
        plan.depth,
        plan.dirs_per_dir,
        plan.sizes.describe(),
        plan.threads,
        if plan.shared_dir { " on one shared tree" } else { "" },
        plan.engine.name(),
        if plan.fsync { ", fsync per file" } else { "" },
        if plan.direct { ", O_DIRECT" } else { "" },
    );
    for phase in &report.phases {
        out.push('\n');
        phase_text(phase, &mut out);
    }
    out.push('\n');
    for note in &report.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out.push_str(&format!("peak memory: {:.1} MiB\n", report.peak_rss_bytes as f64 / f64::from(1 << 20)));
    crate::shown(out)
}

fn phase_text(phase: &PhaseResult, out: &mut String) {
    let bytes =
        if phase.bytes > 0 { format!(", {}/s", Bytes(phase.bytes_per_s as u64)) } else { String::new() };
    out.push_str(&format!(
        "{}: {} of {} in {:.3} s, {}/s{bytes}; stonewall {}/s (first thread done at {:.3} s)\n",
        phase.phase,
        thousands(phase.done as f64),
        thousands(phase.planned as f64),
        phase.elapsed_s,
        thousands(phase.ops_per_s),
        thousands(phase.stonewall.ops_per_s),
        phase.stonewall.first_done_s,
    ));
    if let Some(entries) = phase.entries {
        out.push_str(&format!("  {} directory entries listed\n", thousands(entries as f64)));
    }
    out.push_str(&format!(
        "  {:<10} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "op", "count", "ops/s", "mean", "p50", "p99", "p99.9", "p99.99", "p99.9999", "max"
    ));
    for kind in &phase.kinds {
        let s = &kind.summary;
        let Some(l) = &s.latency else { continue };
        let p = |q: f64| l.percentile(q).map_or("-".to_string(), |ns| latency(ns as f64));
        out.push_str(&format!(
            "  {:<10} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            kind.kind.name(),
            thousands(s.ios as f64),
            thousands(s.iops),
            latency(l.mean_ns),
            p(50.0),
            p(99.0),
            p(99.9),
            p(99.99),
            p(99.9999),
            latency(l.max_ns as f64),
        ));
    }
    let device = phase.device_busy_pct.map_or(String::new(), |d| format!(", device busy {d:.0}%"));
    out.push_str(&format!(
        "  CPU {:.0}% of the threads' time ({:.0}% in the kernel, {:.0}% waiting for a core){device}\n",
        phase.cpu_busy_pct, phase.cpu_sys_pct, phase.runq_wait_pct
    ));
    if let Some(j) =
        phase.journal.as_ref().filter(|j| j.wait_pct.max(j.cpu_pct).max(j.device_wait_pct) >= 0.5)
    {
        out.push_str(&format!(
            "  journal {}: the threads waited for it {:.0}% of their time; it ran {:.0}%, waited for the device {:.0}%\n",
            j.thread, j.wait_pct, j.cpu_pct, j.device_wait_pct
        ));
    }
    out.push_str(&format!("  limited by: {}\n", phase.verdict.summary));
    if let Some(f) = &phase.failure {
        out.push_str(&format!(
            "  stopped: {} of {} failed: {}; {} of {} done\n",
            f.op,
            f.path,
            f.error,
            thousands(phase.done as f64),
            thousands(phase.planned as f64)
        ));
    } else if phase.interrupted {
        out.push_str("  interrupted\n");
    }
}
