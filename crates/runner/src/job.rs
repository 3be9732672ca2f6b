//! Running one job: start its lanes together, collect, and assemble the `JobResult`.

use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::SystemTime;

use iolab_engine::content::ContentConfig;
use iolab_engine::{Engine, Op, WithEngine};
use iolab_spec::{EngineKind, GroupSpec, JobSpec, Nanos, RateSpec};
use iolab_stats::replay::ReplayReport;
use iolab_stats::result::{
    BlockCoverage, CpuReport, ErrorReport, GroupResult, IoErrorRecord, JobResult, RateReport, StuckIo,
    TargetResult, Verdict,
};
use iolab_stats::slots::SlotSplit;
use iolab_stats::threads::WORKER_THREAD_PREFIX;
use iolab_stats::{DataReport, DataSample, IntervalStats, OpStats};

use crate::collector::{Collected, Collector};
use crate::coverage::{Coverage, Touched};
use crate::devices::{Behind, JobDevices};
use crate::error::RunError;
use crate::lane::{self, Heartbeat, LaneEvent, LanePlan, LaneRate};
use crate::observer::Observer;
use crate::prepare::PreparedTarget;
use crate::routing::{Region, Router};
use crate::schedule::Schedule;
use crate::shared::Shared;
use crate::start_gate;

/// Runs `job` on its prepared targets (per group, its targets); with `start_at`, its I/O
/// begins at that instant (once every engine is open), not at once.
pub fn run_job(
    job: &JobSpec,
    targets: &[Vec<PreparedTarget>],
    start_at: Option<SystemTime>,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<JobResult, RunError> {
    // sysfs is read here and by the collector, never by the lanes.
    let devices = JobDevices::find(targets);
    let verify = crate::verify::JobVerify::open(job, targets)?;
    let mut plans = Vec::new();
    let mut lane_group = Vec::new();
    // One per group: its lanes share the count of dedupe-set blocks copied.
    let contents: Vec<ContentConfig> =
        job.groups.iter().map(|g| ContentConfig::new(&g.data, g.seed, g.lanes() as usize)).collect();
    for (g, (group, group_targets)) in job.groups.iter().zip(targets).enumerate() {
        let threads = group.lanes();
        let regions: Vec<Region> =
            group_targets.iter().map(|t| Region { start: t.region_start, size: t.region_size }).collect();
        for index in 0..threads {
            let router = match &group.replay {
                Some(replay) => {
                    let block = group.access.align.0;
                    Router::replay(replay.ios.clone(), regions[0], block, index, threads)
                }
                None => Router::new(
                    &group.access,
                    &regions,
                    group.target.stripe.map(|s| s.0),
                    group.seed,
                    index,
                    threads,
                )
                .map_err(|e| RunError::Invalid(format!("group '{}': {e}", group.name)))?,
            };
            let (schedule, issue_limit) = match &group.replay {
                Some(replay) if replay.speed.is_some() => {
                    (Some(Schedule::replay(replay.ios.clone(), threads, index, job.ramp.0)), None)
                }
                Some(replay) => (None, Some(lane_share(replay.ios.len() as u64, threads, index))),
                None => (
                    group.rate.map(|rate| Schedule::new(&rate, threads, index, group.seed, job.ramp.0)),
                    None,
                ),
            };
            plans.push(LanePlan {
                lane: plans.len(),
                engine: group.engine,
                uring: group.uring,
                qd: group.qd_per_lane(),
                files: group_targets.iter().map(|t| t.file.as_raw_fd()).collect(),
                max_len: group.access.max_bs().0 as u32,
                router,
                burst: group.access.burst,
                submit_batch: group.submit_batch,
                complete_batch: group.complete_batch,
                cpu: (!group.cpus.is_empty()).then(|| group.cpus[index as usize % group.cpus.len()]),
                schedule,
                issue_limit,
                verify: verify.lane(g, group.qd_per_lane(), group.access.max_bs().0 as u32),
                content: contents[g].clone(),
            });
            lane_group.push(g);
        }
    }

    let heartbeats: Arc<[Heartbeat]> = (0..plans.len()).map(|_| Heartbeat::default()).collect();
    let (event_tx, event_rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel::<(usize, Result<Vec<&'static str>, RunError>)>();
    let mut starts = Vec::new();
    let mut handles = Vec::new();
    for plan in plans {
        let (start_tx, start_rx) = mpsc::channel::<Option<Arc<Shared>>>();
        starts.push(start_tx);
        let (events, ready, beats) = (event_tx.clone(), ready_tx.clone(), heartbeats.clone());
        let handle = std::thread::Builder::new()
            .name(format!("{WORKER_THREAD_PREFIX}{}", plan.lane))
            .spawn(move || {
                let (lane, cpu) = (plan.lane, plan.cpu);
                // The engine is made from a copy of what it needs; the thread keeps the plan.
                let engine = lane::engine_config(&plan);
                let then = LaneThread { plan, ready: ready.clone(), start_rx, beats, events };
                let opened = pin(cpu).and_then(|()| Ok(lane::open(engine, then)?));
                if let Err(e) = opened {
                    let _ = ready.send((lane, Err(e)));
                }
            })
            .map_err(|source| RunError::Internal { context: "cannot start an I/O thread".into(), source })?;
        handles.push(handle);
    }
    drop((event_tx, ready_tx));

    // Every engine must open before any I/O starts, so a failure costs nothing.
    let mut failure = None;
    let mut setups = vec![Vec::new(); handles.len()];
    for _ in 0..handles.len() {
        match ready_rx.recv() {
            Ok((lane, Ok(setup))) => setups[lane] = setup,
            Ok((_, Err(e))) => failure = failure.or(Some(e)),
            Err(_) => break,
        }
    }
    if let Some(error) = failure {
        starts.iter().for_each(|s| drop(s.send(None)));
        handles.into_iter().for_each(|h| drop(h.join()));
        return Err(error);
    }

    // Calibrated before the start, so the clock costs the job nothing once it runs.
    let clock = crate::shared::job_clock();
    if let Some(at) = start_at {
        start_gate::wait_until(at, interrupt);
    }
    let finite_lanes = job.groups.iter().filter(|g| g.replay.is_some()).map(GroupSpec::lanes).sum();
    let shared = Arc::new(
        Shared::new(clock, job.ramp.0, job.runtime.0, job.interval.0, job.io_limit, job.continue_on_error)
            .with_finite_lanes(finite_lanes),
    );
    for start in &starts {
        let _ = start.send(Some(shared.clone()));
    }
    let group_targets = targets.iter().map(Vec::len).collect();
    let mut collected = Collector::new(
        &shared,
        &heartbeats,
        lane_group.clone(),
        group_targets,
        job.io_timeout,
        &devices,
        &job.name,
    )
    .run(event_rx, interrupt, observer);
    observer.finish();
    for (lane, handle) in handles.into_iter().enumerate() {
        if !collected.abandoned.contains(&lane) {
            let _ = handle.join();
        }
    }
    collected.group_set_blocks = contents.iter().map(|c| c.seen.distinct()).collect();
    let mut result = assemble(job, targets, &devices, &shared, &lane_group, &setups, collected);
    result.verify = verify.finish()?;
    Ok(result)
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: Option<u32>) -> Result<(), RunError> {
    let Some(cpu) = cpu else { return Ok(()) };
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu as usize)
        .and_then(|()| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set))
        .map_err(|e| {
            RunError::Invalid(format!(
                "--cpus: cannot pin a thread to CPU {cpu} ({e}); this machine has CPUs 0-{}",
                std::thread::available_parallelism().map_or(0, |n| n.get() - 1)
            ))
        })
}

/// The job's results; its verdict is judged from them afterwards.
fn assemble(
    job: &JobSpec,
    targets: &[Vec<PreparedTarget>],
    devices: &JobDevices,
    shared: &Shared,
    lane_group: &[usize],
    setups: &[Vec<&'static str>],
    mut collected: Collected,
) -> JobResult {
    let measured_s = shared.window_end_ns().saturating_sub(shared.measure_start_ns) as f64 / 1e9;
    let slo = &job.slo;
    let mut lane_rates = std::mem::take(&mut collected.lane_rates);
    let lane_data = std::mem::take(&mut collected.lane_data);
    let mut all = IntervalStats::default();
    let groups: Vec<GroupResult> = job
        .groups
        .iter()
        .enumerate()
        .zip(collected.group_series)
        .map(|((g, group), series)| {
            let mut totals = IntervalStats::default();
            collected.target_totals[g].iter().for_each(|t| totals.merge(t));
            let mut max_lag_ns = 0;
            if group.replay.as_ref().is_some_and(|r| r.speed.is_some()) {
                let mut lags = OpStats::default();
                let lanes = lane_group.iter().zip(lane_rates.iter()).filter(|(&lg, _)| lg == g);
                for lane in lanes.filter_map(|(_, rate)| rate.as_ref()) {
                    lags.merge(&lane.lags);
                    max_lag_ns = max_lag_ns.max(lane.max_lag_ns);
                }
                totals.lag = Some(lags);
            }
            all.merge(&totals);
            let first_lane = lane_group.iter().position(|&lg| lg == g).unwrap_or(0);
            GroupResult {
                name: group.name.clone(),
                targets: targets[g]
                    .iter()
                    .zip(&collected.target_totals[g])
                    .enumerate()
                    .map(|(t, (target, stats))| TargetResult {
                        path: target.path.display().to_string(),
                        device: match devices.behind(g, t) {
                            Behind::Device(index) => devices.name(index).map(str::to_string),
                            Behind::Memory | Behind::Unknown => None,
                        },
                        in_memory: devices.behind(g, t) == Behind::Memory,
                        read: stats.read.summary(measured_s, slo),
                        write: stats.write.summary(measured_s, slo),
                        total: stats.combined().summary(measured_s, slo),
                    })
                    .collect(),
                stripe_bytes: group.target.stripe.map(|s| s.0),
                access: group.describe_access(),
                engine: group.engine.to_string(),
                engine_setup: setups
                    .get(first_lane)
                    .map_or_else(Vec::new, |s| s.iter().map(|name| name.to_string()).collect()),
                direct: group.target.direct,
                slots: Some(SlotSplit::of(
                    &totals,
                    f64::from(group.qd) * f64::from(group.workers),
                    measured_s,
                )),
                qd: group.qd,
                workers: group.workers,
                threads: group.lanes(),
                cpus: group.cpus.clone(),
                read: totals.read.summary(measured_s, slo),
                write: totals.write.summary(measured_s, slo),
                total: totals.combined().summary(measured_s, slo),
                series,
                rate: group.rate.map(|rate| {
                    let lanes = lane_group.iter().zip(lane_rates.iter_mut()).filter(|(&lg, _)| lg == g);
                    let window = (shared.measure_start_ns, shared.window_end_ns());
                    let (scheduled, max_lag_ns) =
                        schedule_kept(&rate, group.lanes(), lanes.map(|l| l.1), window);
                    let response = totals.response.as_ref().and_then(|r| r.latency_summary(slo));
                    RateReport::new(&rate, scheduled, totals.ios(), measured_s, max_lag_ns, response)
                }),
                replay: group.replay.as_ref().map(|replay| {
                    let response = totals.response.as_ref().and_then(|r| r.latency_summary(slo));
                    ReplayReport::new(replay, totals.lag.as_ref(), max_lag_ns, totals.ios(), response, slo)
                }),
                blocks: group_coverage(lane_group, &collected.lane_touched, g),
                data: group.access.writes().then(|| {
                    let mut sample = DataSample::default();
                    let lanes = lane_group.iter().zip(&lane_data).filter(|(&lg, _)| lg == g);
                    lanes.filter_map(|(_, d)| d.as_ref()).for_each(|d| sample.merge(d));
                    DataReport::new(
                        &group.data,
                        &sample,
                        collected.group_set_blocks.get(g).copied().flatten(),
                    )
                }),
                histograms: totals,
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
        unattributed_s: ((cpu.user_ns + cpu.system_ns) as f64 / 1e9
            - collected.threads.iter().map(|t| t.user_s + t.system_s).sum::<f64>())
        .max(0.0),
        threads: collected.threads,
        lane_waits: collected.lane_waits,
        io_wq_waits: collected.io_wq_waits,
    });

    let group_paths = |g: usize| targets[g].iter().map(|t| t.path.display().to_string()).collect::<Vec<_>>();
    let where_ = |lane: usize, target: Option<u16>| {
        let g = lane_group[lane];
        let paths = group_paths(g);
        let path = match target {
            Some(t) => paths.get(t as usize).cloned().unwrap_or_default(),
            None => paths.join(", "),
        };
        (job.groups[g].name.clone(), path)
    };
    let errors = ErrorReport {
        count: collected.failed_count,
        first: collected
            .failed
            .iter()
            .map(|f| {
                let (group, target) = where_(f.lane, Some(f.target));
                let op = match f.op {
                    Op::Read => "read",
                    Op::Write => "write",
                };
                let (errno, message) = if f.result < 0 {
                    (-f.result, std::io::Error::from_raw_os_error(-f.result).to_string())
                } else {
                    (0, format!("short {op}: {} of {} bytes", f.result, f.len))
                };
                IoErrorRecord {
                    group,
                    target,
                    op: op.to_string(),
                    offset: f.offset,
                    len: f.len,
                    errno,
                    message,
                }
            })
            .collect(),
        stuck: collected.stuck.map(|s| {
            let (group, target) = where_(s.lane, None);
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

    let slots = SlotSplit::sum(&groups.iter().filter_map(|g| g.slots).collect::<Vec<_>>());
    JobResult {
        name: job.name.clone(),
        spec: job.clone(),
        stop_reason: shared.stop_reason(),
        measured_s,
        ramp_s: job.ramp.as_secs_f64(),
        window_start_unix_ns: wall_clock_of(shared, shared.measure_start_ns),
        read: all.read.summary(measured_s, slo),
        write: all.write.summary(measured_s, slo),
        total: total.summary(measured_s, slo),
        groups,
        series: collected.job_series,
        cpu,
        errors,
        notes: notes(job, targets, lane_group, setups, shared.empty_extension_ns()),
        slots: Some(slots),
        devices: collected.devices,
        machine: collected.machine,
        verdict: Verdict::not_judged(),
        fleet: None,
        histograms: all,
        verify: None,
        trial: None,
        disturbed_attempts: Vec::new(),
    }
}

/// A lane's thread once its engine is open: says it is ready, waits for the start, and drives
/// the engine as its own type.
struct LaneThread {
    plan: LanePlan,
    ready: mpsc::Sender<(usize, Result<Vec<&'static str>, RunError>)>,
    start_rx: mpsc::Receiver<Option<Arc<Shared>>>,
    beats: Arc<[Heartbeat]>,
    events: mpsc::Sender<LaneEvent>,
}

impl WithEngine for LaneThread {
    type Output = ();

    fn with<E: Engine>(self, engine: E) {
        let _ = self.ready.send((self.plan.lane, Ok(engine.setup())));
        if let Ok(Some(shared)) = self.start_rx.recv() {
            let beat = &self.beats[self.plan.lane];
            lane::run(self.plan, engine, &shared, beat, &self.events);
        }
    }
}

/// The wall clock (ns since the Unix epoch) at `at`, a time of the job's own clock.
fn wall_clock_of(shared: &Shared, at: u64) -> u64 {
    let now_unix = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    now_unix.saturating_sub(shared.now_ns().saturating_sub(at))
}

/// Of `total` I/Os dealt to `lanes` lanes in turn, how many lane `lane` gets.
fn lane_share(total: u64, lanes: u32, lane: u32) -> u64 {
    let lanes = u64::from(lanes.max(1));
    total / lanes + u64::from(u64::from(lane) < total % lanes)
}

/// The I/Os a group's lanes had due in the measured `window` (start, end) and the most any of
/// them started late. A lane given up on (stuck in the kernel) never reported its schedule: it
/// counts for its share of the rate.
fn schedule_kept<'a>(
    rate: &RateSpec,
    threads: u32,
    lanes: impl Iterator<Item = &'a mut Option<LaneRate>>,
    (start, end): (u64, u64),
) -> (u64, u64) {
    let (mut scheduled, mut max_lag_ns) = (0, 0);
    for lane in lanes {
        match lane {
            Some(lane) => {
                scheduled += lane.schedule.due_between(start, end);
                max_lag_ns = max_lag_ns.max(lane.max_lag_ns);
            }
            None => {
                let share = rate.iops as f64 / f64::from(threads.max(1));
                scheduled += (share * end.saturating_sub(start) as f64 / 1e9).round() as u64;
            }
        }
    }
    (scheduled, max_lag_ns)
}

/// How the run was done, where it differs from what the user may assume.
fn notes(
    job: &JobSpec,
    targets: &[Vec<PreparedTarget>],
    lane_group: &[usize],
    setups: &[Vec<&'static str>],
    empty_extension_ns: u64,
) -> Vec<String> {
    let mut notes = Vec::new();
    if empty_extension_ns > 0 {
        notes.push(format!(
            "no I/O completed in the {} window asked (the device took longer than that to answer): the window was extended by {} until it held completions; measure with a longer --runtime (and a --ramp) on a device this slow",
            job.runtime,
            Nanos(empty_extension_ns)
        ));
    }
    for (g, (group, group_targets)) in job.groups.iter().zip(targets).enumerate() {
        let label = if job.groups.len() > 1 { format!("group '{}': ", group.name) } else { String::new() };
        for target in group_targets {
            notes.extend(target.notes.iter().map(|note| format!("{label}{note}")));
        }
        let lanes: Vec<&Vec<&str>> =
            lane_group.iter().zip(setups).filter(|(&lg, _)| lg == g).map(|(_, s)| s).collect();
        if lanes.windows(2).any(|pair| pair[0] != pair[1]) {
            notes.push(format!(
                "{label}the kernel did not grant every thread the same engine setup (e.g. registration refused under RLIMIT_MEMLOCK): {}",
                lanes.iter().map(|s| s.join("+")).collect::<Vec<_>>().join(" / ")
            ));
        }
        if group.engine == EngineKind::Aio && !group.target.direct {
            notes.push(format!(
                "{label}Linux AIO without O_DIRECT submits synchronously: each io_submit waits for its I/O"
            ));
        }
        if group.engine == EngineKind::Psync && group.qd > 1 {
            notes.push(format!(
                "{label}psync holds one I/O per thread, so QD {} ran as {} threads ({} per worker)",
                group.qd,
                group.lanes(),
                group.qd
            ));
        }
        if !group.target.direct {
            let paths: Vec<String> = group_targets.iter().map(|t| t.path.display().to_string()).collect();
            notes
                .push(format!("{label}buffered I/O: results include the page cache of {}", paths.join(", ")));
        }
        if group.engine == EngineKind::Null {
            notes.push(format!("{label}null engine: no I/O was done; figures are iolab's own overhead"));
        }
    }
    notes
}

/// The blocks group `g`'s lanes touched: each target's (or the striped volume's) bitmaps
/// merged over the lanes, then the targets added up. `None` when no lane reported (stuck).
fn group_coverage(lane_group: &[usize], touched: &[Vec<Touched>], g: usize) -> Option<BlockCoverage> {
    let mut merged: Vec<Touched> = Vec::new();
    for lane in lane_group.iter().zip(touched).filter(|(&lg, _)| lg == g).map(|(_, t)| t) {
        if merged.is_empty() {
            merged = lane.clone();
        } else {
            merged.iter_mut().zip(lane).for_each(|(sum, part)| sum.merge(part));
        }
    }
    let parts: Vec<Coverage> = merged.iter().map(Touched::coverage).collect();
    let whole = Coverage::sum(&parts)?;
    Some(BlockCoverage {
        block_bytes: whole.block_bytes,
        blocks: whole.blocks,
        touched_pct: whole.touched / whole.blocks.max(1) as f64 * 100.0,
        sampled: whole.sampled,
    })
}
