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
        repeat: 1,
        mix: None,
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
        // The fleet's rate is the hosts' rates summed, as its ops_per_s.
        entries_per_s: parts.iter().filter_map(|(_, p)| p.entries_per_s).reduce(|a, b| a + b),
        kinds,
        series,
        cpu_busy_pct: mean(|p| p.cpu_busy_pct),
        cpu_sys_pct: mean(|p| p.cpu_sys_pct),
        // The hosts' engines, once each ("io_uring", or "sync+io_uring" where they differed).
        engine: {
            let mut engines: Vec<&str> =
                parts.iter().map(|(_, p)| p.engine.as_str()).filter(|e| !e.is_empty()).collect();
            engines.sort_unstable();
            engines.dedup();
            engines.join("+")
        },
        io_wq_pct: mean(|p| p.io_wq_pct),
        runq_wait_pct: mean(|p| p.runq_wait_pct),
        io_wq_workers: sum(|p| p.io_wq_workers),
        // Each host's workers' share, weighted by how many it ran.
        io_wq_wait_pct: {
            let workers = sum(|p| p.io_wq_workers);
            if workers > 0.0 {
                sum(|p| p.io_wq_wait_pct * p.io_wq_workers) / workers
            } else {
                0.0
            }
        },
        device_busy_pct,
        journal: None,
        verdict,
        failure,
        interrupted: parts.iter().any(|(_, p)| p.interrupted),
        histograms: merged.into_iter().map(|(kind, stats, ..)| (kind, stats)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use iolab_files::{FilesCause, Phase};

    use super::*;

    /// A create phase of `latencies` (ns) over `elapsed_s`, its first thread done at `first_s`.
    fn phase(latencies: &[u64], elapsed_s: f64, first_s: f64, failure: Option<&str>) -> PhaseResult {
        let (mut create, mut close) = (OpStats::default(), OpStats::default());
        for &ns in latencies {
            create.record(ns, 4096);
            close.record(ns / 10, 0);
        }
        let done = latencies.len() as u64;
        let kinds = [(OpKind::Create, &create), (OpKind::Close, &close)]
            .iter()
            .map(|(kind, stats)| KindResult { kind: *kind, summary: stats.summary(elapsed_s, &[]) })
            .collect();
        PhaseResult {
            phase: Phase::Create,
            repeat: 1,
            mix: None,
            planned: 100,
            done,
            elapsed_s,
            ops_per_s: done as f64 / elapsed_s,
            bytes: done * 4096,
            bytes_per_s: (done * 4096) as f64 / elapsed_s,
            stonewall: Stonewall { first_done_s: first_s, ops: done / 2, ops_per_s: 7.0, bytes_per_s: 70.0 },
            entries: None,
            entries_per_s: None,
            kinds,
            series: vec![Second { t_s: 0.0, ops: done - 1, bytes: 0 }, Second { t_s: 1.0, ops: 1, bytes: 0 }],
            cpu_busy_pct: 50.0,
            cpu_sys_pct: 20.0,
            engine: "sync".to_string(),
            io_wq_pct: 0.0,
            runq_wait_pct: 0.0,
            io_wq_workers: 0.0,
            io_wq_wait_pct: 0.0,
            device_busy_pct: None,
            journal: None,
            verdict: FilesVerdict { cause: FilesCause::Cpu, summary: format!("{elapsed_s} s") },
            failure: failure.map(|path| Failure {
                op: "open".into(),
                path: path.into(),
                error: "No space left on device".into(),
                errno: Some(28),
                ran_out_of: None,
            }),
            interrupted: false,
            histograms: vec![(OpKind::Create, create), (OpKind::Close, close)],
        }
    }

    #[test]
    fn a_phase_merges_to_the_union_of_the_hosts_operations() {
        // Host a is fast and uniform; host b has a slow tail a p99 of p99s would hide.
        let a_lat: Vec<u64> = (0..100).map(|i| 10_000 + i * 10).collect();
        let b_lat: Vec<u64> = (0..100).map(|i| if i < 90 { 20_000 } else { 5_000_000 }).collect();
        let a = phase(&a_lat, 1.0, 0.8, None);
        let b = phase(&b_lat[..60], 2.0, 1.5, Some("t0/d1/f60"));
        let merged = merge_phase(&[("a:7878", &a), ("b:7878", &b)]).expect("merged");
        assert_eq!((merged.done, merged.planned, merged.bytes), (160, 200, 160 * 4096));
        assert_eq!(merged.elapsed_s, 2.0, "until the last host ended");
        assert!((merged.ops_per_s - (100.0 + 30.0)).abs() < 1e-9, "rates summed");
        assert_eq!(merged.stonewall.first_done_s, 0.8, "the first thread of the fleet");
        assert!((merged.stonewall.ops_per_s - 14.0).abs() < 1e-9);
        assert_eq!(
            merged.series,
            vec![Second { t_s: 0.0, ops: 158, bytes: 0 }, Second { t_s: 1.0, ops: 2, bytes: 0 }]
        );
        // The merged histogram is exactly the one of every operation recorded together.
        let mut union = OpStats::default();
        for &ns in a_lat.iter().chain(&b_lat[..60]) {
            union.record(ns, 4096);
        }
        let (kind, stats) = &merged.histograms[0];
        assert_eq!(*kind, OpKind::Create, "the phase's own kind first");
        assert_eq!(stats.ios(), 160);
        for p in [50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(stats.percentile_ns(p), union.percentile_ns(p), "p{p}");
        }
        assert_eq!(merged.kinds[0].summary.ios, 160);
        assert_eq!(merged.kinds[1].kind, OpKind::Close);
        assert!(
            merged.verdict.summary.starts_with("b:7878 (the slowest host)"),
            "{}",
            merged.verdict.summary
        );
        let failure = merged.failure.expect("b's failure is the fleet's");
        assert_eq!((failure.path.as_str(), failure.errno), ("b:7878:t0/d1/f60", Some(28)));
        assert!(merge_phase(&[]).is_none());
    }
}
