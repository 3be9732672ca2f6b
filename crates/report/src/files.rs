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
    /// How its operations reached the kernel (empty in results kept before phases said it).
    #[serde(default)]
    engine: String,
    #[serde(default)]
    io_wq_workers: f64,
    #[serde(default)]
    io_wq_wait_pct: f64,
    device_busy_pct: Option<f64>,
    journal: Option<Journal>,
    verdict: Verdict,
    failure: Option<Failure>,
    interrupted: bool,
    #[serde(default)]
    series: Vec<Second>,
    mix: Option<MixPart>,
}

/// A mix's own figures (`MixFigures`).
#[derive(Deserialize)]
struct MixPart {
    files_at_start: u64,
    files_at_end: u64,
    names: u64,
    swapped: u64,
    #[serde(default)]
    unplaced: Vec<(String, u64)>,
    warmup_s: f64,
}

#[derive(Deserialize)]
struct Second {
    ops: u64,
    bytes: u64,
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

/// The engine a phase ran on, as its heading ends: "; io_uring" (nothing for results kept
/// before phases said it).
fn engine_said(phase: &Phase) -> String {
    if phase.engine.is_empty() {
        String::new()
    } else {
        format!("; {}", phase.engine)
    }
}

/// A mix's heading: its operations in its time, its files' population, and its rate over time:
/// "mix: 390,894 operations in 60.000 s (after 5 s of warm-up), 6,514/s, 82.1 MiB/s".
fn mix_heading(phase: &Phase, mix: &MixPart, bytes: &str, out: &mut String) {
    let warmup =
        if mix.warmup_s > 0.0 { format!(" (after {} s of warm-up)", mix.warmup_s) } else { String::new() };
    out.push_str(&format!(
        "{}: {} operations in {:.3} s{warmup}, {}/s{bytes}{}\n",
        phase.phase,
        thousands(phase.done as f64),
        phase.elapsed_s,
        thousands(phase.ops_per_s),
        engine_said(phase),
    ));
    let swapped = if mix.swapped > 0 {
        format!("; {} creates and unlinks swapped to hold it", thousands(mix.swapped as f64))
    } else {
        String::new()
    };
    out.push_str(&format!(
        "  files: {} at the start, {} at the end, of {} names{swapped}\n",
        thousands(mix.files_at_start as f64),
        thousands(mix.files_at_end as f64),
        thousands(mix.names as f64)
    ));
    if !mix.unplaced.is_empty() {
        let each: Vec<String> =
            mix.unplaced.iter().map(|(op, n)| format!("{op} {}", thousands(*n as f64))).collect();
        out.push_str(&format!(
            "  not done, no file in the state they need near the drawn one: {}\n",
            each.join(", ")
        ));
    }
    // Whole seconds only: the last, cut short by the end, would read low.
    let whole = &phase.series[..phase.series.len().min(phase.elapsed_s.floor() as usize)];
    if whole.len() >= 2 {
        let mut ops: Vec<u64> = whole.iter().map(|s| s.ops).collect();
        ops.sort_unstable();
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        let (low, high) = whole.iter().fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s.bytes), hi.max(s.bytes)));
        out.push_str(&format!(
            "  per second over {} s: {} to {} operations (median {}), {:.1} to {:.1} MiB/s\n",
            whole.len(),
            thousands(ops[0] as f64),
            thousands(ops[ops.len() - 1] as f64),
            thousands(ops[ops.len() / 2] as f64),
            mib(low),
            mib(high)
        ));
    }
}

fn phase_text(phase: &Phase, out: &mut String) {
    let bytes =
        if phase.bytes > 0 { format!(", {}/s", Bytes(phase.bytes_per_s as u64)) } else { String::new() };
    match &phase.mix {
        Some(mix) => mix_heading(phase, mix, &bytes, out),
        None => out.push_str(&format!(
            "{}: {} of {} in {:.3} s, {}/s{bytes}; stonewall {}/s (first thread done at {:.3} s){}\n",
            phase.phase,
            thousands(phase.done as f64),
            thousands(phase.planned as f64),
            phase.elapsed_s,
            thousands(phase.ops_per_s),
            thousands(phase.stonewall.ops_per_s),
            phase.stonewall.first_done_s,
            engine_said(phase),
        )),
    }
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
    if phase.io_wq_workers >= 0.05 {
        out.push_str(&format!(
            "  io_uring workers: {:.1} at a time on average, each waiting for a core {:.0}% of its time\n",
            phase.io_wq_workers, phase.io_wq_wait_pct
        ));
    }
    if let Some(j) =
        phase.journal.as_ref().filter(|j| j.wait_pct.max(j.cpu_pct).max(j.device_wait_pct) >= 0.5)
    {
        out.push_str(&format!(
            "  journal {}: the threads (and their io_uring workers) waited for it {:.0}% of their time at work; it ran {:.0}%, waited for the device {:.0}%\n",
            j.thread, j.wait_pct, j.cpu_pct, j.device_wait_pct
        ));
    }
    out.push_str(&format!("  limited by: {}\n", phase.verdict.summary));
    if let Some(f) = &phase.failure {
        let done = if phase.mix.is_some() {
            format!("{} operations done", thousands(phase.done as f64))
        } else {
            format!("{} of {} done", thousands(phase.done as f64), thousands(phase.planned as f64))
        };
        out.push_str(&format!("  stopped: {} of {} failed: {}; {done}\n", f.op, f.path, f.error));
    } else if phase.interrupted {
        out.push_str("  interrupted\n");
    }
}
