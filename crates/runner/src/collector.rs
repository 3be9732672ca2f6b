//! The collector: runs on the job's main thread while lanes do I/O. It merges the lanes'
//! per-second statistics into exact per-group and per-job series and totals, takes the CPU and
//! block-device snapshots at the edges of the measured window, watches for stuck requests and
//! for Ctrl-C, and feeds the progress line.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use iolab_spec::Nanos;
use iolab_stats::cpu::{MachineCpu, ProcessCpu};
use iolab_stats::lane_waits::LaneWaits;
use iolab_stats::machine::MachineReport;
use iolab_stats::result::{DeviceActivity, SeriesPoint, StopReason};
use iolab_stats::threads::ThreadClassCpu;
use iolab_stats::IntervalStats;

use crate::coverage::Touched;
use crate::devices::{DeviceSnapshot, JobDevices};
use crate::lane::{Heartbeat, LaneEvent, LaneRate, KEPT_ERRORS};
use crate::lane_wait_sampler::{LaneWaitSampler, LANE_WAIT_SAMPLE_NS};
use crate::machine_watch::MachineWatch;
use crate::observer::{IntervalDetail, Observer, Phase, ProgressUpdate};
use crate::shared::{Shared, CPU_SAMPLE_NS};
use crate::thread_cpu::ThreadCpuTracker;

const TICK: Duration = Duration::from_millis(200);

/// A failed request, as a lane reported it.
pub struct FailedIo {
    pub lane: usize,
    pub target: u16,
    pub op: iolab_engine::Op,
    pub offset: u64,
    pub len: u32,
    pub result: i32,
}

/// A lane the watchdog gave up on.
pub struct StuckLane {
    pub lane: usize,
    pub outstanding_ns: u64,
    pub in_flight: u32,
}

/// What the collector gathered over a job.
pub struct Collected {
    /// Per group, per target (a group's totals are the merge of its targets').
    pub target_totals: Vec<Vec<IntervalStats>>,
    pub group_series: Vec<Vec<SeriesPoint>>,
    pub job_series: Vec<SeriesPoint>,
    pub failed: Vec<FailedIo>,
    pub failed_count: u64,
    pub stuck: Option<StuckLane>,
    pub engine_error: Option<String>,
    pub cpu: Option<ProcessCpu>,
    pub machine_busy_pct: Vec<f64>,
    /// The process's CPU by thread class over the measured window.
    pub threads: Vec<ThreadClassCpu>,
    /// The devices behind the targets over the measured window.
    pub devices: Vec<DeviceActivity>,
    /// The whole machine over the measured window.
    pub machine: Option<MachineReport>,
    /// Where the lanes and io_uring's io-wq workers were over the measured window, sampled.
    pub lane_waits: Option<LaneWaits>,
    pub io_wq_waits: Option<LaneWaits>,
    /// Lanes that never finished (stuck in the kernel); their threads must not be joined.
    pub abandoned: Vec<usize>,
    /// Per lane, how an open-loop lane kept to its schedule; `None` in closed loop, or when the
    /// lane never finished.
    pub lane_rates: Vec<Option<LaneRate>>,
    /// Per lane, the blocks its I/Os touched (per target of its router); empty until it ends.
    pub lane_touched: Vec<Vec<Touched>>,
    /// Per lane, the measured sample of what it wrote (`LaneEvent::Finished`).
    pub lane_data: Vec<Option<iolab_stats::DataSample>>,
    /// Per group, the distinct dedupe-set blocks its lanes copied, when counted: set by the
    /// job once the lanes ended (`content::SetSeen`); empty until then.
    pub group_set_blocks: Vec<Option<u64>>,
}

pub struct Collector<'a> {
    shared: &'a Shared,
    heartbeats: &'a [Heartbeat],
    lane_group: Vec<usize>,
    /// Targets of each group.
    group_targets: Vec<usize>,
    io_timeout_ns: u64,
    /// Last interval index each lane reported; `i64::MAX` once it finished.
    positions: Vec<i64>,
    /// Per interval index: per group, per target.
    pending: BTreeMap<i64, Vec<Vec<IntervalStats>>>,
    out: Collected,
    cpu_start: Option<(ProcessCpu, MachineCpu)>,
    cpu_done: bool,
    /// Per-thread CPU over the measured window, sampled once per interval so that threads
    /// that exit mid-window (idle io-wq workers) are still counted.
    thread_cpu: Option<ThreadCpuTracker>,
    /// Every thread of the machine, sampled like `thread_cpu`.
    machine: Option<MachineWatch>,
    /// Where the lanes and io-wq workers are, sampled every `LANE_WAIT_SAMPLE_NS` of the window.
    lane_waits: Option<LaneWaitSampler>,
    devices: &'a JobDevices,
    device_start: Option<DeviceSnapshot>,
    job_name: &'a str,
    /// The last closed interval, ramp or measured, for the progress line.
    latest: Option<SeriesPoint>,
    /// The measured interval the series continues with.
    next_index: i64,
    /// Measured intervals closed since the observer last heard of them.
    closed: Vec<(SeriesPoint, IntervalStats)>,
    /// Intervals closed since then, ramp ones included, per group and target.
    closed_detail: Vec<ClosedDetail>,
}

/// An interval as `IntervalDetail` tells it, kept until the observer hears of it.
struct ClosedDetail {
    phase: Phase,
    duration: Nanos,
    per_group: Vec<Vec<IntervalStats>>,
}

impl<'a> Collector<'a> {
    pub fn new(
        shared: &'a Shared,
        heartbeats: &'a [Heartbeat],
        lane_group: Vec<usize>,
        group_targets: Vec<usize>,
        io_timeout: Nanos,
        devices: &'a JobDevices,
        job_name: &'a str,
    ) -> Self {
        let groups = group_targets.len();
        let lanes = lane_group.len();
        Collector {
            shared,
            heartbeats,
            positions: vec![i64::MIN; lane_group.len()],
            lane_group,
            io_timeout_ns: io_timeout.0,
            pending: BTreeMap::new(),
            out: Collected {
                target_totals: group_targets.iter().map(|&n| vec![IntervalStats::default(); n]).collect(),
                group_series: vec![Vec::new(); groups],
                job_series: Vec::new(),
                failed: Vec::new(),
                failed_count: 0,
                stuck: None,
                engine_error: None,
                cpu: None,
                machine_busy_pct: Vec::new(),
                threads: Vec::new(),
                devices: Vec::new(),
                machine: None,
                lane_waits: None,
                io_wq_waits: None,
                abandoned: Vec::new(),
                lane_rates: (0..lanes).map(|_| None).collect(),
                lane_touched: vec![Vec::new(); lanes],
                lane_data: vec![None; lanes],
                group_set_blocks: Vec::new(),
            },
            group_targets,
            cpu_start: None,
            cpu_done: false,
            thread_cpu: None,
            machine: None,
            lane_waits: None,
            devices,
            device_start: None,
            job_name,
            latest: None,
            next_index: 0,
            closed: Vec::new(),
            closed_detail: Vec::new(),
        }
    }

    /// Runs until every lane has finished or been given up on.
    pub fn run(
        mut self,
        events: Receiver<LaneEvent>,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Collected {
        let (mut last_tick, mut last_thread_sample, mut last_wait_sample) = (0, 0, 0);
        while self.positions.iter().any(|&p| p != i64::MAX) {
            let now = self.shared.now_ns();
            if interrupt.load(Relaxed) && !self.shared.stopping() {
                self.shared.request_stop(StopReason::Interrupted, now);
            }
            self.snapshot_cpu(now, false);
            // Once per tick, not per event: the scan covers every lane.
            if now >= last_tick + TICK.as_nanos() as u64 {
                last_tick = now;
                self.watchdog(now);
                observer.progress(&self.progress(now));
            }
            // The lanes' states first: the machine's sample below may take milliseconds of a
            // core the lanes or their io-wq workers would have had.
            if let Some(sampler) = self.lane_waits.as_mut() {
                if now >= last_wait_sample + LANE_WAIT_SAMPLE_NS && !self.shared.window_over(now) {
                    last_wait_sample = now;
                    sampler.sample();
                }
            }
            if now >= last_thread_sample + CPU_SAMPLE_NS {
                last_thread_sample = now;
                if let Some(tracker) = self.thread_cpu.as_mut() {
                    let _ = tracker.update();
                }
                if let Some(machine) = self.machine.as_mut() {
                    machine.sample(now);
                }
            }
            let mut wait = self.next_deadline(now).saturating_sub(now).min(TICK.as_nanos() as u64);
            if self.lane_waits.is_some() {
                let now = self.shared.now_ns();
                wait = wait.min((last_wait_sample + LANE_WAIT_SAMPLE_NS).saturating_sub(now));
            }
            match events.recv_timeout(Duration::from_nanos(wait.max(1_000_000))) {
                Ok(event) => self.handle(event),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.tell_closed(observer);
        }
        self.snapshot_cpu(self.shared.now_ns().max(self.shared.window_end_ns()), true);
        self.close_up_to(i64::MAX);
        self.tell_closed(observer);
        self.out.failed_count = self.heartbeats.iter().map(|beat| beat.errors.load(Relaxed)).sum();
        self.out
    }

    fn tell_closed(&mut self, observer: &mut dyn Observer) {
        if !self.closed_detail.is_empty() {
            let mut errors = vec![0; self.group_targets.len()];
            for (beat, &group) in self.heartbeats.iter().zip(&self.lane_group) {
                errors[group] += beat.errors.load(Relaxed);
            }
            for closed in self.closed_detail.drain(..) {
                observer.interval_detail(&IntervalDetail {
                    phase: closed.phase,
                    duration: closed.duration,
                    stats: &closed.per_group,
                    errors: &errors,
                });
            }
        }
        for (point, stats) in self.closed.drain(..) {
            observer.interval(&point, &stats);
        }
    }

    fn next_deadline(&self, now: u64) -> u64 {
        if self.cpu_start.is_none() {
            self.shared.measure_start_ns.max(now)
        } else if !self.cpu_done {
            self.shared.window_end_ns().max(now)
        } else {
            u64::MAX
        }
    }

    /// Takes the CPU and device snapshots when the measured window opens and closes (`closing`:
    /// the job is over, whatever the window says).
    fn snapshot_cpu(&mut self, now: u64, closing: bool) {
        let window_end = self.shared.window_end_ns();
        if self.cpu_start.is_none() && now >= self.shared.measure_start_ns && now < window_end {
            // The devices first: one small read each, so their window lies closest to the job's
            // (reading every thread of the machine can take milliseconds on a busy one).
            if !self.devices.is_empty() {
                self.device_start = Some(self.devices.snapshot(self.shared.now_ns()));
            }
            self.cpu_start = ProcessCpu::now().ok().zip(MachineCpu::now().ok());
            self.thread_cpu = ThreadCpuTracker::start().ok();
            self.machine = MachineWatch::start(self.shared.now_ns());
            self.lane_waits = Some(LaneWaitSampler::start());
        }
        if !self.cpu_done && (closing || self.shared.window_over(now)) {
            self.cpu_done = true;
            if let Some(start) = &self.device_start {
                self.out.devices = self.devices.activity(start, &self.devices.snapshot(self.shared.now_ns()));
            }
            let window = Nanos(window_end.saturating_sub(self.shared.measure_start_ns));
            if let Some(tracker) = self.thread_cpu.take() {
                self.out.threads = tracker.finish(window).unwrap_or_default();
            }
            if let Some(sampler) = self.lane_waits.take() {
                (self.out.lane_waits, self.out.io_wq_waits) = sampler.finish();
            }
            if let Some(machine) = self.machine.take() {
                self.out.machine = Some(machine.finish(self.shared.now_ns(), window, &self.out.threads));
            }
            if let (Some((process, machine)), Ok(process_end), Ok(machine_end)) =
                (&self.cpu_start, ProcessCpu::now(), MachineCpu::now())
            {
                self.out.cpu = Some(process_end.since(process));
                self.out.machine_busy_pct = machine_end.busy_pct_since(machine);
            }
            self.shared.mark_cpu_snapshot();
        }
    }

    /// A lane with requests in flight and no completion for longer than --io-timeout is stuck.
    fn watchdog(&mut self, now: u64) {
        for (lane, beat) in self.heartbeats.iter().enumerate() {
            if self.positions[lane] == i64::MAX {
                continue;
            }
            let in_flight = beat.in_flight.load(Relaxed);
            let waited = now.saturating_sub(beat.last_progress_ns.load(Relaxed));
            if in_flight > 0 && waited > self.io_timeout_ns {
                if self.out.stuck.is_none() {
                    self.out.stuck = Some(StuckLane { lane, outstanding_ns: waited, in_flight });
                }
                self.shared.request_stop(StopReason::StuckIo, now);
                self.out.abandoned.push(lane);
                // The lane waits in the kernel without holding its interval: take what it
                // completed so far.
                let partial = beat.current.try_lock().ok().and_then(|mut current| current.take());
                if let Some(partial) = partial {
                    self.handle(LaneEvent::Interval { lane, index: partial.index, stats: partial.stats });
                }
                self.positions[lane] = i64::MAX;
            }
        }
    }

    fn handle(&mut self, event: LaneEvent) {
        match event {
            LaneEvent::Interval { lane, index, stats } => {
                let group = self.lane_group[lane];
                let slot = self.pending.entry(index).or_insert_with(|| empty(&self.group_targets));
                for (sum, part) in slot[group].iter_mut().zip(&stats) {
                    sum.merge(part);
                }
                if self.positions[lane] != i64::MAX {
                    self.positions[lane] = index;
                }
            }
            LaneEvent::IoError { lane, target, op, offset, len, result } => {
                if self.out.failed.len() < KEPT_ERRORS {
                    self.out.failed.push(FailedIo { lane, target, op, offset, len, result });
                }
            }
            LaneEvent::Finished { lane, error, rate, touched, data, outstanding_ns } => {
                let group = self.lane_group[lane];
                for (total, ns) in self.out.target_totals[group].iter_mut().zip(outstanding_ns) {
                    total.outstanding_ns += ns;
                }
                self.positions[lane] = i64::MAX;
                self.out.lane_rates[lane] = rate;
                self.out.lane_touched[lane] = touched;
                self.out.lane_data[lane] = data;
                if error.is_some() && self.out.engine_error.is_none() {
                    self.out.engine_error = error;
                }
            }
        }
        let floor = self.positions.iter().copied().min().unwrap_or(i64::MAX);
        self.close_up_to(floor);
    }

    /// Turns every interval below `limit` into series points and adds it to the totals. A second
    /// in which no lane completed anything (a stall) is a point of zero IOPS, never a gap.
    fn close_up_to(&mut self, limit: i64) {
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() >= limit {
                break;
            }
            let (index, per_group) = entry.remove_entry();
            if index < 0 {
                // A ramp second: shown live, never part of the results.
                let mut job = IntervalStats::default();
                per_group.iter().flatten().for_each(|stats| job.merge(stats));
                self.latest = Some(job.point(Nanos(0), Nanos(self.shared.interval_ns)));
                let duration = Nanos(self.shared.interval_ns);
                self.closed_detail.push(ClosedDetail { phase: Phase::Ramp, duration, per_group });
                continue;
            }
            while self.next_index < index {
                self.emit(self.next_index, &empty(&self.group_targets));
            }
            self.emit(index, &per_group);
        }
        if limit == i64::MAX {
            // Seconds of the window after the last completion.
            let window = self.shared.window_end_ns().saturating_sub(self.shared.measure_start_ns);
            let last = window.div_ceil(self.shared.interval_ns) as i64;
            while self.next_index < last {
                self.emit(self.next_index, &empty(&self.group_targets));
            }
        }
    }

    /// Adds measured interval `index` to the series and totals.
    fn emit(&mut self, index: i64, per_group: &[Vec<IntervalStats>]) {
        self.next_index = self.next_index.max(index + 1);
        let start = self.shared.measure_start_ns + index as u64 * self.shared.interval_ns;
        let end = (start + self.shared.interval_ns).min(self.shared.window_end_ns());
        if end <= start {
            return;
        }
        let (offset, duration) = (Nanos(index as u64 * self.shared.interval_ns), Nanos(end - start));
        let mut job = IntervalStats::default();
        for (group, per_target) in per_group.iter().enumerate() {
            let mut stats = IntervalStats::default();
            for (target, part) in per_target.iter().enumerate() {
                self.out.target_totals[group][target].merge(part);
                stats.merge(part);
            }
            self.out.group_series[group].push(stats.point(offset, duration));
            job.merge(&stats);
        }
        let point = job.point(offset, duration);
        self.latest = Some(point.clone());
        self.out.job_series.push(point.clone());
        self.closed.push((point, job));
        self.closed_detail.push(ClosedDetail {
            phase: Phase::Measure,
            duration,
            per_group: per_group.to_vec(),
        });
    }

    fn progress(&self, now: u64) -> ProgressUpdate<'_> {
        let measure_start = self.shared.measure_start_ns;
        let window_end = self.shared.window_end_ns();
        let (phase, elapsed, total) = if now < measure_start {
            (Phase::Ramp, now, measure_start)
        } else {
            (Phase::Measure, now - measure_start, window_end - measure_start)
        };
        let last = self.latest.as_ref();
        ProgressUpdate {
            job: self.job_name,
            phase,
            elapsed: Nanos(elapsed.min(total)),
            total: Nanos(total),
            iops: last.map_or(0.0, |p| p.iops),
            mean_ns: last.map_or(0.0, |p| p.mean_ns),
            p99_ns: last.map_or(0, |p| p.p99_ns),
            limit_done: self.shared.limit_done(),
            hosts: &[],
        }
    }
}

/// An interval with nothing in it: per group, per target.
fn empty(group_targets: &[usize]) -> Vec<Vec<IntervalStats>> {
    group_targets.iter().map(|&n| vec![IntervalStats::default(); n]).collect()
}
