//! A phase as the results database keeps it: a point whose reads (stat, readdir, read) or
//! writes (the rest) are its own operation kind's figures, with its series, its verdict in the
//! block verdict's terms and its whole result, so `results`, `compare` and `report` read a
//! fileset run as they read any other.

use iolab_stats::result::{Bottleneck, SeriesPoint, Verdict};
use iolab_stats::{IntervalStats, OpStats};
use iolab_store::{now_unix_s, Point, PointSummary};

use crate::plan::FilesPlan;
use crate::report::{OpKind, PhaseResult};
use crate::verdict::FilesCause;

/// Where a phase ran: each tree (a directory, or a fleet host's `host:dir`) with the phase as
/// that tree's own threads did it.
pub struct Tree<'a> {
    pub name: String,
    pub phase: &'a PhaseResult,
}

/// Phase `phase` (over every tree of `trees`, merged) as the `seq`-th point of its run: every
/// tree's threads are its workers, each tree a target, its CPU per operation over all of them.
pub fn point(seq: u32, plan: &FilesPlan, phase: &PhaseResult, trees: &[Tree<'_>]) -> Point {
    let main = OpKind::of_phase(phase.phase);
    let main_stats =
        phase.histograms.iter().find(|(k, _)| *k == main).map(|(_, s)| s.clone()).unwrap_or_default();
    let mut histograms = IntervalStats::default();
    let summary = main_stats.summary(phase.elapsed_s, &[]);
    let none = OpStats::default().summary(phase.elapsed_s, &[]);
    let modifies = phase.phase.modifies();
    let (read, write) = if modifies {
        histograms.write = main_stats;
        (none, summary.clone())
    } else {
        histograms.read = main_stats;
        (summary.clone(), none)
    };
    let series = phase
        .series
        .iter()
        .map(|s| SeriesPoint {
            t_s: s.t_s,
            duration_s: 1.0,
            iops: s.ops as f64,
            read_iops: if modifies { 0.0 } else { s.ops as f64 },
            write_iops: if modifies { s.ops as f64 } else { 0.0 },
            mb_s: s.bytes as f64 / 1e6,
            mean_ns: 0.0,
            p99_ns: 0,
        })
        .collect();
    let stop_reason = if phase.failure.is_some() {
        "io_error"
    } else if phase.interrupted {
        "interrupted"
    } else if phase.mix.is_some() {
        // A mix ends by the clock; a phase when its operations are done.
        "runtime"
    } else {
        "io_limit"
    };
    let threads = f64::from(plan.threads);
    let cpu_s: f64 = trees.iter().map(|t| t.phase.cpu_busy_pct / 100.0 * t.phase.elapsed_s * threads).sum();
    Point {
        seq,
        name: format!("files {}", phase.phase),
        source: "iolab".to_string(),
        completed_at_unix_s: now_unix_s(),
        spec: serde_json::to_value(plan).unwrap_or_default(),
        summary: PointSummary {
            // The engine the phase ran on (with `auto`, the one it took).
            engine: if phase.engine.is_empty() { plan.engine.name() } else { phase.engine.as_str() }
                .to_string(),
            access: format!("files {} {}", phase.phase, plan.sizes.describe()),
            qd: 1,
            workers: plan.threads * trees.len().max(1) as u32,
            targets: trees.iter().map(|t| t.name.clone()).collect(),
            measured_s: phase.elapsed_s,
            read,
            write,
            total: summary,
            cpu_us_per_io: (phase.done > 0).then(|| cpu_s * 1e6 / phase.done as f64),
            stop_reason: stop_reason.to_string(),
        },
        series,
        verdict: Some(Verdict::of(
            bottleneck(phase.verdict.cause),
            phase.verdict.summary.clone(),
            Vec::new(),
        )),
        histograms: Some(iolab_stats::encoded::EncodedHistograms::encode(&histograms)),
        result: serde_json::to_value(phase).unwrap_or_default(),
    }
}

/// A phase's cause as the block verdict names it: the journal is a kernel thread's work.
fn bottleneck(cause: FilesCause) -> Bottleneck {
    match cause {
        FilesCause::Cpu => Bottleneck::SubmittingCpu,
        FilesCause::Device => Bottleneck::Device,
        FilesCause::Journal => Bottleneck::KernelThread,
        _ => Bottleneck::Undetermined,
    }
}

/// What the run was, in one line, as the results list shows it: "files create,stat,unlink
/// (10,000 files in 22 directories, 1 level(s) of 10, sizes 4KiB, io_uring, 2 thread(s)) in
/// /mnt/t": the tree's shape, so that runs of different trees do not look alike; a fleet's run
/// (`fleet`) counts files per host.
pub fn label(plan: &FilesPlan, dir: &str, fleet: bool) -> String {
    let phases: Vec<&str> = plan.phases.iter().map(|p| p.name()).collect();
    let (kind, count) = if fleet { ("fleet files", "files per host") } else { ("files", "files") };
    let thousands = |n: u64| iolab_stats::format::thousands(n as f64);
    format!(
        "{kind} {} ({} {count} in {} directories, {} level(s) of {}, sizes {}, {}, {} thread(s){}{}{}{}) in {dir}",
        phases.join(","),
        thousands(plan.total_files()),
        thousands(plan.total_dirs()),
        plan.depth,
        plan.dirs_per_dir,
        plan.sizes.describe(),
        plan.engine.name(),
        plan.threads,
        if plan.shared_dir { ", shared dir" } else { "" },
        if plan.fsync { ", fsync" } else { "" },
        if plan.direct { ", O_DIRECT" } else { "" },
        plan.mix.as_ref().map_or_else(String::new, |mix| format!("; {}", mix.describe())),
    )
}
