//! One fileset phase of a fleet, from each host's: the latency histograms of every operation
//! kind merged exactly (the fleet's percentiles are the union's), counts summed, rates summed
//! (each host's over its own phase time, as the block figures are), the per-second series
//! summed per second (the hosts start each phase at one instant), and the stonewall: the
//! fleet's first thread to finish (the earliest of the hosts') beside the sum of the hosts'
//! stonewall rates. A host's failure is the fleet's, named by host.

use iolab_files::{Failure, FilesVerdict, KindResult, OpKind, PhaseResult, Second, Stonewall};
use iolab_stats::OpStats;

/// The fleet's phase from `parts` (host name, its phase), all of the same phase; `None` when
/// there is none.
pub fn merge_phase(parts: &[(&str, &PhaseResult)]) -> Option<PhaseResult> {
    let (_, first) = parts.first()?;
    let phase = first.phase;
    let elapsed_s = parts.iter().map(|(_, p)| p.elapsed_s).fold(0.0, f64::max);
    let sum = |f: fn(&PhaseResult) -> f64| parts.iter().map(|(_, p)| f(p)).sum::<f64>();
    let mean = |f: fn(&PhaseResult) -> f64| sum(f) / parts.len() as f64;

    // Each kind: the union's histogram; its rates, the sum of the hosts'.
    let mut merged: Vec<(OpKind, OpStats, f64, f64, f64)> = Vec::new();
    for (_, part) in parts {
        for (kind, stats) in &part.histograms {
            let rates = part.kinds.iter().find(|k| k.kind == *kind).map(|k| &k.summary);
            let at = match merged.iter().position(|m| m.0 == *kind) {
                Some(at) => at,
                None => {
                    merged.push((*kind, OpStats::default(), 0.0, 0.0, 0.0));
                    merged.len() - 1
                }
            };
            let entry = &mut merged[at];
            entry.1.merge(stats);
            if let Some(rates) = rates {
                entry.2 += rates.iops;
                entry.3 += rates.mb_s;
                entry.4 += rates.mib_s;
            }
        }
    }
    let main = OpKind::of_phase(phase);
    merged.sort_by_key(|m| m.0 != main);
    let kinds = merged
        .iter()
        .map(|(kind, stats, iops, mb_s, mib_s)| {
            let mut summary = stats.summary(elapsed_s, &[]);
            (summary.iops, summary.mb_s, summary.mib_s) = (*iops, *mb_s, *mib_s);
            KindResult { kind: *kind, summary }
        })
        .collect();

    let seconds = parts.iter().map(|(_, p)| p.series.len()).max().unwrap_or(0);
    let series = (0..seconds)
        .map(|t| {
            let at = parts.iter().filter_map(|(_, p)| p.series.get(t));
            let (ops, bytes) = at.fold((0, 0), |(o, b), s| (o + s.ops, b + s.bytes));
            Second { t_s: t as f64, ops, bytes }
        })
        .collect();

    // The slowest host's verdict is the fleet's: it decided when the phase ended.
    let (slowest, slow) = parts.iter().max_by(|a, b| a.1.elapsed_s.total_cmp(&b.1.elapsed_s))?;
    let verdict = FilesVerdict {
        cause: slow.verdict.cause,
        summary: if parts.len() > 1 {
            format!("{slowest} (the slowest host): {}", slow.verdict.summary)
        } else {
            slow.verdict.summary.clone()
        },
    };
    let failure = parts.iter().find_map(|(host, p)| {
        p.failure.as_ref().map(|f| Failure { path: format!("{host}:{}", f.path), ..f.clone() })
    });
    let entries = parts.iter().filter_map(|(_, p)| p.entries).reduce(|a, b| a + b);
    let device_busy_pct = parts.iter().filter_map(|(_, p)| p.device_busy_pct).reduce(f64::max);
    Some(PhaseResult {
        phase,
        planned: parts.iter().map(|(_, p)| p.planned).sum(),
        done: parts.iter().map(|(_, p)| p.done).sum(),
        elapsed_s,
        ops_per_s: sum(|p| p.ops_per_s),
        bytes: parts.iter().map(|(_, p)| p.bytes).sum(),
        bytes_per_s: sum(|p| p.bytes_per_s),
        stonewall: Stonewall {
            first_done_s: parts.iter().map(|(_, p)| p.stonewall.first_done_s).fold(f64::INFINITY, f64::min),
            ops: parts.iter().map(|(_, p)| p.stonewall.ops).sum(),
            ops_per_s: sum(|p| p.stonewall.ops_per_s),
            bytes_per_s: sum(|p| p.stonewall.bytes_per_s),
        },
        entries,
        kinds,
        series,
        cpu_busy_pct: mean(|p| p.cpu_busy_pct),
        cpu_sys_pct: mean(|p| p.cpu_sys_pct),
        runq_wait_pct: mean(|p| p.runq_wait_pct),
        device_busy_pct,
        journal: None,
        verdict,
        failure,
        interrupted: parts.iter().any(|(_, p)| p.interrupted),
        histograms: merged.into_iter().map(|(kind, stats, ..)| (kind, stats)).collect(),
    })
}
