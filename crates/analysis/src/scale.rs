//! What a scaling run found: the aggregate against the sum of the singles (the scaling
//! efficiency) and, when it falls short, what stopped it, with the evidence.

use iolab_stats::central::share_pct;
use iolab_stats::machine::OwnerKind;
use iolab_stats::result::{Bottleneck, JobResult};
use iolab_stats::threads::ThreadClass;
use serde::{Deserialize, Serialize};

use crate::cpu;
use crate::ladder::PUNT_SHARE_PCT;
use crate::verdict::{same_disk, KERNEL_THREAD_LIMIT_PCT};

/// At or above this efficiency, the targets scale.
pub const SCALES_PCT: f64 = 90.0;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScaleRow {
    pub target: String,
    pub alone_iops: f64,
    pub together_iops: f64,
    /// Together as a share of alone, 0..100+.
    pub kept_pct: f64,
    pub alone_cpu_us_per_io: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScaleSummary {
    pub rows: Vec<ScaleRow>,
    pub sum_of_singles_iops: f64,
    pub together_iops: f64,
    /// Aggregate as a share of the sum of singles, 0..100+.
    pub efficiency_pct: f64,
    pub together_cpu_us_per_io: f64,
    pub verdict: Vec<String>,
}

/// `singles[i]` ran target i alone; `together` ran them all, group i on target i.
pub fn summarize(singles: &[&JobResult], together: &JobResult) -> ScaleSummary {
    let rows: Vec<ScaleRow> = singles
        .iter()
        .zip(&together.groups)
        .map(|(alone, group)| {
            let target = group.targets.first().map(|t| t.path.clone()).unwrap_or_default();
            ScaleRow {
                target,
                alone_iops: alone.total.iops,
                together_iops: group.total.iops,
                kept_pct: share_pct(group.total.iops, alone.total.iops),
                alone_cpu_us_per_io: alone.cpu.us_per_io,
            }
        })
        .collect();
    let sum: f64 = rows.iter().map(|r| r.alone_iops).sum();
    let efficiency = share_pct(together.total.iops, sum);
    let verdict = verdict(&rows, singles, together, efficiency);
    ScaleSummary {
        rows,
        sum_of_singles_iops: sum,
        together_iops: together.total.iops,
        efficiency_pct: efficiency,
        together_cpu_us_per_io: together.cpu.us_per_io,
        verdict,
    }
}

/// Kernel threads outside iolab that serve the targets' devices at their limit in the together
/// run, named ("the wall: loop0 workers at 99% of a core (kworker/u8:3-loop0), loop1 workers
/// at 98% ... on a 2-core machine"), and the together run's own verdict when it names a thread
/// or the machine's owners.
fn walls(together: &JobResult) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(machine) = &together.machine {
        let devices: Vec<&str> = together.devices.iter().map(|d| d.device.as_str()).collect();
        let at_limit: Vec<String> = machine
            .owners
            .iter()
            .filter(|o| o.kind == OwnerKind::Kernel && o.busiest_thread_pct >= KERNEL_THREAD_LIMIT_PCT)
            .filter(|o| o.serves.as_deref().is_some_and(|s| devices.iter().any(|d| same_disk(s, d))))
            .map(|o| format!("{} at {:.0}% of a core ({})", o.name, o.busiest_thread_pct, o.busiest_thread))
            .collect();
        if !at_limit.is_empty() {
            words.push(format!("the wall: {} on a {}-core machine", at_limit.join(", "), machine.cores));
        }
    }
    let verdict = crate::verdict::judge(together);
    if matches!(
        verdict.cause,
        Bottleneck::KernelThread
            | Bottleneck::Interrupts
            | Bottleneck::OtherLoad
            | Bottleneck::Steal
            | Bottleneck::KernelCpu
    ) {
        words.push(format!("the together run's verdict ({}): {}", verdict.cause.name(), verdict.summary));
    }
    words
}

fn verdict(rows: &[ScaleRow], singles: &[&JobResult], together: &JobResult, efficiency: f64) -> Vec<String> {
    let mut words = vec![format!(
        "{} targets together gave {:.0} IOPS, {efficiency:.0}% of the sum of their singles ({:.0} IOPS)",
        rows.len(),
        together.total.iops,
        rows.iter().map(|r| r.alone_iops).sum::<f64>()
    )];
    if !rows.iter().any(|r| r.alone_iops > 0.0) {
        // No yardstick: every share below would be 0% and blame something that was not measured.
        words.push(
            "the targets alone completed no I/O, so there is nothing to compare the together run with".into(),
        );
        return words;
    }
    if efficiency >= SCALES_PCT {
        words.push("the targets scale: running them together costs little or nothing".to_string());
        return words;
    }
    words.extend(walls(together));
    match cpu::saturation(together) {
        Some(what) => words.push(format!("scaling stopped at the CPU: {what}")),
        None => {
            let alone_saturated: Vec<String> = singles.iter().filter_map(|j| cpu::saturation(j)).collect();
            if let Some(first) = alone_saturated.first() {
                words.push(format!("even alone a target was CPU-bound ({first})"));
            }
        }
    }
    let (io_wq_s, io_wq_threads) = cpu::class_s(together, ThreadClass::IoWq);
    let process_s = cpu::process_s(together);
    if io_wq_threads > 0 && process_s > 0.0 && io_wq_s / process_s * 100.0 >= PUNT_SHARE_PCT {
        words.push(format!(
            "{io_wq_threads} io-wq kernel threads used {:.0}% of the process's CPU together: io_uring punted requests on these targets to kernel worker threads, and each punted I/O costs a thread hand-off",
            io_wq_s / process_s * 100.0
        ));
    }
    // The singles' cost weighted by their IOPS: what the together run would cost per I/O if
    // nothing contended (a plain mean overstates it when a cheap target is also the slow one).
    let alone_ios: f64 = rows.iter().map(|r| r.alone_iops).sum();
    let alone_us = rows.iter().map(|r| r.alone_cpu_us_per_io * r.alone_iops).sum::<f64>() / alone_ios;
    if alone_us > 0.0 && together.cpu.us_per_io > alone_us * 1.15 {
        words.push(format!(
            "CPU per I/O rose from {alone_us:.2} us alone to {:.2} us together: the targets contend for a shared kernel path or lock",
            together.cpu.us_per_io
        ));
    }
    // A target that did no I/O alone kept "0%" of nothing: say so rather than rank it.
    for row in rows.iter().filter(|r| r.alone_iops <= 0.0) {
        words.push(format!(
            "{} completed no I/O alone, so what it kept together cannot be judged",
            row.target
        ));
    }
    let measured: Vec<&ScaleRow> = rows.iter().filter(|r| r.alone_iops > 0.0).collect();
    let (low, high) =
        measured.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(r.kept_pct), hi.max(r.kept_pct)));
    if high - low > 20.0 {
        if let Some(worst) = measured.iter().min_by(|a, b| a.kept_pct.total_cmp(&b.kept_pct)) {
            words.push(format!(
                "{} lost the most: it kept {:.0}% of the IOPS it gave alone, the others up to {high:.0}%",
                worst.target, worst.kept_pct
            ));
        }
    } else if words.len() == 1 {
        words.push(format!(
            "every target lost about the same share (each kept {low:.0}-{high:.0}%) and no CPU was saturated: a resource they share is the limit (the same backing device, bus or host path)"
        ));
    }
    words
}
