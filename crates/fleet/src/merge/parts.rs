//! The parts of a fleet's merged result that are not histograms: CPU, errors, notes, names on
//! their host, and the series of a group that travelled without histograms.

use iolab_stats::format::latency;
use iolab_stats::lane_waits::LaneWaits;
use iolab_stats::result::{CpuReport, ErrorReport, JobResult, SeriesPoint, TargetResult};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};

use super::{HostOutcome, HostPart};

/// Failed I/Os kept in `ErrorReport::first`, as a runner keeps them on one host: the first ones
/// say what went wrong, the count says how often.
pub const KEPT_ERRORS: usize = 20;

/// "10.0.0.2:7878:/dev/nvme0n1": a path or device on one host; the same name on two hosts is
/// two devices.
pub fn on_host(host: &str, name: &str) -> String {
    format!("{host}:{name}")
}

pub fn target_on_host(host: &str, target: &TargetResult) -> TargetResult {
    TargetResult {
        path: on_host(host, &target.path),
        device: target.device.as_deref().map(|d| on_host(host, d)),
        ..target.clone()
    }
}

/// The fleet's CPU: process time summed (and per I/O over the fleet's `ios`), each host's cores
/// one after the other in host order, thread classes summed by class (the busiest thread is the
/// busiest of any host), the lanes' wait samples summed.
pub fn merge_cpu<'a>(cpus: impl Iterator<Item = &'a CpuReport>, ios: u64) -> CpuReport {
    let cpus: Vec<&CpuReport> = cpus.collect();
    let user_s: f64 = cpus.iter().map(|c| c.user_s).sum();
    let system_s: f64 = cpus.iter().map(|c| c.system_s).sum();
    let threads = ThreadClass::ALL
        .iter()
        .filter_map(|&class| {
            let of: Vec<&ThreadClassCpu> =
                cpus.iter().flat_map(|c| &c.threads).filter(|t| t.class == class).collect();
            (!of.is_empty()).then(|| ThreadClassCpu {
                class,
                threads: of.iter().map(|t| t.threads).sum(),
                user_s: of.iter().map(|t| t.user_s).sum(),
                system_s: of.iter().map(|t| t.system_s).sum(),
                busiest_thread_pct: of.iter().map(|t| t.busiest_thread_pct).fold(0.0, f64::max),
                runqueue_wait_s: of.iter().map(|t| t.runqueue_wait_s).sum(),
                busiest_demand_pct: of.iter().map(|t| t.busiest_demand_pct).fold(0.0, f64::max),
            })
        })
        .collect();
    CpuReport {
        user_s,
        system_s,
        us_per_io: if ios > 0 { (user_s + system_s) * 1e6 / ios as f64 } else { 0.0 },
        machine_busy_pct: cpus.iter().flat_map(|c| c.machine_busy_pct.iter().copied()).collect(),
        threads,
        unattributed_s: cpus.iter().map(|c| c.unattributed_s).sum(),
        lane_waits: LaneWaits::merged(cpus.iter().filter_map(|c| c.lane_waits.as_ref())),
        io_wq_waits: LaneWaits::merged(cpus.iter().filter_map(|c| c.io_wq_waits.as_ref())),
    }
}

/// Every host's errors: counted in full, the first `KEPT_ERRORS` kept in host order with their
/// target on its host; the first stuck I/O and engine failure of any host.
pub fn merge_errors<'a>(hosts: impl Iterator<Item = (&'a str, &'a ErrorReport)>) -> ErrorReport {
    let mut merged = ErrorReport::default();
    for (host, errors) in hosts {
        merged.count += errors.count;
        let room = KEPT_ERRORS.saturating_sub(merged.first.len());
        merged.first.extend(errors.first.iter().take(room).map(|e| {
            let mut e = e.clone();
            e.target = on_host(host, &e.target);
            e
        }));
        if merged.stuck.is_none() {
            merged.stuck = errors.stuck.clone().map(|mut s| {
                s.target = on_host(host, &s.target);
                s
            });
        }
        if merged.engine.is_none() {
            merged.engine = errors.engine.as_ref().map(|e| format!("{host}: {e}"));
        }
    }
    merged
}

/// The hosts' notes, each once, then what the fleet was.
pub fn merge_notes(results: &[&JobResult], parts: &[HostPart], skew_ns: u64) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for note in results.iter().flat_map(|r| &r.notes) {
        if !notes.contains(note) {
            notes.push(note.clone());
        }
    }
    let names: Vec<&str> = parts.iter().map(|p| p.host.as_str()).collect();
    let failed: Vec<&str> = parts
        .iter()
        .filter(|p| matches!(p.outcome, HostOutcome::Failed { .. }))
        .map(|p| p.host.as_str())
        .collect();
    let mut fleet = format!(
        "fleet of {} hosts ({}): latencies are those of every host's I/Os together; IOPS and MB/s the sum of each host's own, over windows that opened up to {} apart",
        parts.len(),
        names.join(", "),
        latency(skew_ns as f64)
    );
    if !failed.is_empty() {
        fleet.push_str(&format!("; not merged (failed): {}", failed.join(", ")));
    }
    notes.push(fleet);
    notes
}

/// A group's series across hosts without its histograms (only the job's intervals travel with
/// theirs): IOPS and MB/s summed, the mean weighted by IOPS (exact up to the hosts' interval
/// lengths), and p99 the highest host's: an upper bound of the union's p99, since each host
/// has at most 1% of its I/Os above its own.
pub fn series_bound<'a>(hosts: impl Iterator<Item = &'a [SeriesPoint]>) -> Vec<SeriesPoint> {
    let mut merged: Vec<SeriesPoint> = Vec::new();
    let mut weighted: Vec<f64> = Vec::new();
    for series in hosts {
        for (i, point) in series.iter().enumerate() {
            if i == merged.len() {
                merged.push(SeriesPoint {
                    iops: 0.0,
                    read_iops: 0.0,
                    write_iops: 0.0,
                    mb_s: 0.0,
                    p99_ns: 0,
                    ..point.clone()
                });
                weighted.push(0.0);
            }
            let sum = &mut merged[i];
            sum.iops += point.iops;
            sum.read_iops += point.read_iops;
            sum.write_iops += point.write_iops;
            sum.mb_s += point.mb_s;
            sum.p99_ns = sum.p99_ns.max(point.p99_ns);
            weighted[i] += point.mean_ns * point.iops;
        }
    }
    for (point, weighted) in merged.iter_mut().zip(weighted) {
        point.mean_ns = if point.iops > 0.0 { weighted / point.iops } else { 0.0 };
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(iops: f64, mean_ns: f64, p99_ns: u64) -> SeriesPoint {
        SeriesPoint {
            t_s: 0.0,
            duration_s: 1.0,
            iops,
            read_iops: iops,
            write_iops: 0.0,
            mb_s: iops * 4096.0 / 1e6,
            mean_ns,
            p99_ns,
        }
    }

    #[test]
    fn a_group_series_sums_rates_weights_means_and_bounds_p99() {
        let a = [point(1000.0, 100.0, 500), point(500.0, 100.0, 400)];
        let b = [point(3000.0, 200.0, 900)];
        let merged = series_bound([&a[..], &b[..]].into_iter());
        assert_eq!(merged.len(), 2);
        assert_eq!((merged[0].iops, merged[0].mean_ns, merged[0].p99_ns), (4000.0, 175.0, 900));
        assert_eq!((merged[1].iops, merged[1].mean_ns, merged[1].p99_ns), (500.0, 100.0, 400));
    }

    #[test]
    fn cpu_sums_by_class_and_keeps_every_core() {
        let class = |class, pct| ThreadClassCpu {
            class,
            threads: 2,
            user_s: 1.0,
            system_s: 0.5,
            busiest_thread_pct: pct,
            runqueue_wait_s: 0.25,
            busiest_demand_pct: pct + 1.0,
        };
        let a = CpuReport {
            user_s: 1.0,
            system_s: 1.0,
            machine_busy_pct: vec![10.0, 20.0],
            threads: vec![class(ThreadClass::Worker, 40.0)],
            ..Default::default()
        };
        let b = CpuReport {
            user_s: 2.0,
            system_s: 0.0,
            machine_busy_pct: vec![30.0],
            threads: vec![class(ThreadClass::Other, 5.0), class(ThreadClass::Worker, 70.0)],
            ..Default::default()
        };
        let cpu = merge_cpu([&a, &b].into_iter(), 4000);
        assert_eq!((cpu.user_s, cpu.system_s, cpu.us_per_io), (3.0, 1.0, 1000.0));
        assert_eq!(cpu.machine_busy_pct, [10.0, 20.0, 30.0]);
        assert_eq!(
            cpu.threads[0],
            ThreadClassCpu {
                class: ThreadClass::Worker,
                threads: 4,
                user_s: 2.0,
                system_s: 1.0,
                busiest_thread_pct: 70.0,
                runqueue_wait_s: 0.5,
                busiest_demand_pct: 71.0,
            }
        );
        assert_eq!(cpu.threads[1].class, ThreadClass::Other);
    }
}
