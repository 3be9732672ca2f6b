//! Running one job: start its lanes together, collect, and assemble the `JobResult`.

use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use iolab_engine::Op;
use iolab_spec::{EngineKind, JobSpec};
use iolab_stats::result::{CpuReport, ErrorReport, GroupResult, IoErrorRecord, JobResult, StuckIo};
use iolab_stats::IntervalStats;

use crate::access::AccessGenerator;
use crate::collector::{Collected, Collector};
use crate::error::RunError;
use crate::lane::{self, Heartbeat, LanePlan};
use crate::observer::Observer;
use crate::prepare::PreparedTarget;
use crate::shared::Shared;

/// Runs `job` on its prepared targets (one per group).
pub fn run_job(
    job: &JobSpec,
    targets: &[PreparedTarget],
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<JobResult, RunError> {
    let mut plans = Vec::new();
    let mut lane_group = Vec::new();
    for (g, (group, target)) in job.groups.iter().zip(targets).enumerate() {
        let threads = group.threads();
        for index in 0..threads {
            plans.push(LanePlan {
                lane: plans.len(),
                engine: group.engine,
                depth: group.depth_per_thread(),
                fd: target.file.as_raw_fd(),
                max_len: group.access.max_bs().0 as u32,
                generator: AccessGenerator::new(
                    &group.access,
                    target.region_start,
                    target.region_size,
                    group.seed,
                    index,
                    threads,
                ),
                burst: group.access.burst,
                submit_batch: group.submit_batch,
            });
            lane_group.push(g);
        }
    }

    let heartbeats: Arc<[Heartbeat]> = (0..plans.len()).map(|_| Heartbeat::default()).collect();
    let (event_tx, event_rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), RunError>>();
    let mut starts = Vec::new();
    let mut handles = Vec::new();
    for plan in plans {
        let (start_tx, start_rx) = mpsc::channel::<Option<Arc<Shared>>>();
        starts.push(start_tx);
        let (events, ready, beats) = (event_tx.clone(), ready_tx.clone(), heartbeats.clone());
        let handle = std::thread::Builder::new()
            .name(format!("iolab-lane{}", plan.lane))
            .spawn(move || {
                let engine = match lane::open(&plan) {
                    Ok(engine) => {
                        let _ = ready.send(Ok(()));
                        engine
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e.into()));
                        return;
                    }
                };
                if let Ok(Some(shared)) = start_rx.recv() {
                    let beat = &beats[plan.lane];
                    lane::run(plan, engine, &shared, beat, &events);
                }
            })
            .map_err(|source| RunError::Internal { context: "cannot start an I/O thread".into(), source })?;
        handles.push(handle);
    }
    drop((event_tx, ready_tx));

    // Every engine must open before any I/O starts, so a failure costs nothing.
    let mut failure = None;
    for _ in 0..handles.len() {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(_) => break,
        }
    }
    if let Some(error) = failure {
        starts.iter().for_each(|s| drop(s.send(None)));
        handles.into_iter().for_each(|h| drop(h.join()));
        return Err(error);
    }

    let shared =
        Arc::new(Shared::new(Instant::now(), job.ramp.0, job.runtime.0, job.io_limit, job.continue_on_error));
    for start in &starts {
        let _ = start.send(Some(shared.clone()));
    }
    let collected = Collector::new(&shared, &heartbeats, lane_group.clone(), job.io_timeout, &job.name)
        .run(event_rx, interrupt, observer);
    observer.finish();
    for (lane, handle) in handles.into_iter().enumerate() {
        if !collected.abandoned.contains(&lane) {
            let _ = handle.join();
        }
    }
    Ok(assemble(job, targets, &shared, &lane_group, collected))
}

fn assemble(
    job: &JobSpec,
    targets: &[PreparedTarget],
    shared: &Shared,
    lane_group: &[usize],
    collected: Collected,
) -> JobResult {
    let measured_s = shared.window_end_ns().saturating_sub(shared.measure_start_ns) as f64 / 1e9;
    let slo = &job.slo;
    let mut all = IntervalStats::default();
    let groups: Vec<GroupResult> = job
        .groups
        .iter()
        .zip(targets)
        .zip(collected.group_totals.iter().zip(collected.group_series))
        .map(|((group, target), (totals, series))| {
            all.merge(totals);
            GroupResult {
                name: group.name.clone(),
                target: target.path.display().to_string(),
                access: group.access.describe(),
                engine: group.engine.to_string(),
                qd: group.qd,
                workers: group.workers,
                threads: group.threads(),
                read: totals.read.summary(measured_s, slo),
                write: totals.write.summary(measured_s, slo),
                total: totals.combined().summary(measured_s, slo),
                series,
            }
        })
        .collect();

    let total = all.combined();
    let cpu = collected.cpu.map_or_else(CpuReport::default, |cpu| CpuReport {
        user_s: cpu.user_ns as f64 / 1e9,
        system_s: cpu.system_ns as f64 / 1e9,
        us_per_io: if total.ios() > 0 {
            (cpu.user_ns + cpu.system_ns) as f64 / 1e3 / total.ios() as f64
        } else {
            0.0
        },
        machine_busy_pct: collected.machine_busy_pct,
    });

    let where_ = |lane: usize| {
        let g = lane_group[lane];
        (job.groups[g].name.clone(), targets[g].path.display().to_string())
    };
    let errors = ErrorReport {
        count: collected.failed_count,
        first: collected
            .failed
            .iter()
            .map(|f| {
                let (group, target) = where_(f.lane);
                let op = match f.op {
                    Op::Read => "read",
                    Op::Write => "write",
                };
                let (errno, message) = if f.result < 0 {
                    (-f.result, std::io::Error::from_raw_os_error(-f.result).to_string())
                } else {
                    (0, format!("short {op}: {} of {} bytes", f.result, f.len))
                };
                IoErrorRecord { group, target, op, offset: f.offset, len: f.len, errno, message }
            })
            .collect(),
        stuck: collected.stuck.map(|s| {
            let (group, target) = where_(s.lane);
            let first_lane = lane_group.iter().position(|&g| g == lane_group[s.lane]).unwrap_or(0);
            StuckIo {
                group,
                target,
                thread: (s.lane - first_lane) as u32,
                outstanding_ms: s.outstanding_ns / 1_000_000,
                in_flight: s.in_flight,
            }
        }),
        engine: collected.engine_error,
    };

    JobResult {
        name: job.name.clone(),
        spec: job.clone(),
        stop_reason: shared.stop_reason(),
        measured_s,
        ramp_s: job.ramp.as_secs_f64(),
        read: all.read.summary(measured_s, slo),
        write: all.write.summary(measured_s, slo),
        total: total.summary(measured_s, slo),
        groups,
        series: collected.job_series,
        cpu,
        errors,
        notes: notes(job, targets),
    }
}

/// How the run was done, where it differs from what the user may assume.
fn notes(job: &JobSpec, targets: &[PreparedTarget]) -> Vec<String> {
    let mut notes = Vec::new();
    for (group, target) in job.groups.iter().zip(targets) {
        let label = if job.groups.len() > 1 { format!("group '{}': ", group.name) } else { String::new() };
        notes.extend(target.notes.iter().map(|note| format!("{label}{note}")));
        if group.engine == EngineKind::Psync && group.qd > 1 {
            notes.push(format!(
                "{label}psync holds one I/O per thread, so QD {} ran as {} threads ({} per worker)",
                group.qd,
                group.threads(),
                group.qd
            ));
        }
        if !group.target.direct {
            notes.push(format!(
                "{label}buffered I/O: results include the page cache of {}",
                target.path.display()
            ));
        }
        if group.engine == EngineKind::Null {
            notes.push(format!("{label}null engine: no I/O was done; figures are iolab's own overhead"));
        }
    }
    notes
}
