//! `iolab files`' report: a table per phase of every operation kind it timed (count, rate,
//! latency percentiles to 99.9999), its stonewall rate and its verdict; or the JSON. Read from
//! the run's result as the store keeps it (schema iolab.files/1, docs/files.md), so the report
//! needs nothing of the crate that measured it.

use iolab_spec::Bytes;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::OpSummary;
use serde::Deserialize;
use serde_json::Value;

/// The parts of a kept files run the text report shows.
#[derive(Deserialize)]
struct FilesRun {
    dir: String,
    #[serde(default)]
    tree: String,
    phases: Vec<Phase>,
    #[serde(default)]
    notes: Vec<String>,
    #[serde(default)]
    peak_rss_bytes: u64,
    #[serde(default)]
    repeats: Vec<Spread>,
}

/// A phase's rate over the repeats (`--repeat`).
#[derive(Deserialize)]
struct Spread {
    phase: String,
    ops_per_s: Vec<f64>,
    mean_ops_per_s: f64,
    spread_pct: f64,
}

#[derive(Deserialize)]
struct Phase {
    phase: String,
    #[serde(default)]
    repeat: u32,
    planned: u64,
    done: u64,
    elapsed_s: f64,
    ops_per_s: f64,
    bytes: u64,
    bytes_per_s: f64,
    stonewall: Stonewall,
    entries: Option<u64>,
    #[serde(default)]
    entries_per_s: Option<f64>,
    kinds: Vec<Kind>,
    cpu_busy_pct: f64,
    cpu_sys_pct: f64,
    #[serde(default)]
    runq_wait_pct: f64,
    device_busy_pct: Option<f64>,
    journal: Option<Journal>,
    verdict: Verdict,
    failure: Option<Failure>,
    interrupted: bool,
}

#[derive(Deserialize)]
struct Stonewall {
    first_done_s: f64,
    ops_per_s: f64,
}

#[derive(Deserialize)]
struct Kind {
    kind: String,
    summary: OpSummary,
}

#[derive(Deserialize)]
struct Journal {
    thread: String,
    wait_pct: f64,
    cpu_pct: f64,
    device_wait_pct: f64,
}

#[derive(Deserialize)]
struct Verdict {
    summary: String,
}

#[derive(Deserialize)]
struct Failure {
    op: String,
    path: String,
    error: String,
}

/// `report` (a files run's whole result) as pretty JSON.
pub fn files_json(report: &Value) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

/// `report` (a files run's whole result) as text; a line saying so when it is not one.
pub fn files_text(report: &Value) -> String {
    let run = match FilesRun::deserialize(report) {
        Ok(run) => run,
        Err(e) => return format!("not a files run's result (schema iolab.files/1): {e}\n"),
    };
    let mut out = format!("files in {}: {}\n", run.dir, run.tree);
    let repeated = !run.repeats.is_empty();
    for phase in &run.phases {
        out.push('\n');
        if repeated {
            out.push_str(&format!("repeat {}, ", phase.repeat));
        }
        phase_text(phase, &mut out);
    }
    if repeated {
        repeats_text(&run.repeats, &mut out);
    }
    out.push('\n');
    for note in &run.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out.push_str(&format!("peak memory: {:.1} MiB\n", run.peak_rss_bytes as f64 / f64::from(1 << 20)));
    crate::shown(out)
}

/// Each phase's rate in every repeat, their mean and spread: "stat  41,203/s  1.9%  40,800 41,602 41,207".
fn repeats_text(spreads: &[Spread], out: &mut String) {
    out.push_str(&format!(
        "\nover the repeats:\n  {:<10} {:>13} {:>8}  each repeat (ops/s)\n",
        "phase", "mean ops/s", "spread"
    ));
    for spread in spreads {
        let each: Vec<String> = spread.ops_per_s.iter().map(|r| thousands(*r)).collect();
        out.push_str(&format!(
            "  {:<10} {:>13} {:>7.1}%  {}\n",
            spread.phase,
            thousands(spread.mean_ops_per_s),
            spread.spread_pct,
            each.join(" ")
        ));
    }
    out.push_str("  (spread: (max - min) / mean, as `iolab compare` judges noise)\n");
}

fn phase_text(phase: &Phase, out: &mut String) {
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
        let rate = phase.entries_per_s.map_or_else(String::new, |r| format!(", {} entries/s", thousands(r)));
        out.push_str(&format!("  {} directory entries listed{rate}\n", thousands(entries as f64)));
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
            kind.kind,
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
