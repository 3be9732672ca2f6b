//! The results of a run, as printed, exported and (later) stored. The JSON form of these types
//! is the documented schema (docs/results-schema.md); bump `SCHEMA` on any breaking change.

use iolab_spec::{Arrival, JobSpec};
use serde::{Deserialize, Serialize};

use crate::fleet::FleetReport;
use crate::interval::IntervalStats;
use crate::machine::MachineReport;
use crate::slots::SlotSplit;
use crate::threads::ThreadClassCpu;

/// Name and version of the JSON schema of `RunReport`.
pub const SCHEMA: &str = "iolab.run/3";

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub schema: &'static str,
    pub iolab_version: &'static str,
    pub host: HostInfo,
    /// Seconds since the Unix epoch when the run started.
    pub started_at_unix_s: u64,
    pub interrupted: bool,
    /// The most resident memory iolab held at any point of the run (ru_maxrss).
    pub peak_rss_bytes: u64,
    pub jobs: Vec<JobResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostInfo {
    pub hostname: String,
    pub kernel: String,
    pub cpus: usize,
}

/// Why the measured phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Runtime,
    IoLimit,
    Interrupted,
    IoError,
    StuckIo,
    EngineError,
}

impl StopReason {
    /// A job that ended this way ends the run: the target or the engine is in trouble.
    pub fn ends_the_run(self) -> bool {
        matches!(self, StopReason::IoError | StopReason::StuckIo | StopReason::EngineError)
    }
}

/// Deserializing is for results that travel (a fleet agent's to its coordinator): the spec is
/// not read back, since only `resolve` builds one; the reader puts in the spec it sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    pub name: String,
    #[serde(skip_deserializing, default = "unread_spec")]
    pub spec: JobSpec,
    pub stop_reason: StopReason,
    /// Length of the measured window; rates are per second of it.
    pub measured_s: f64,
    pub ramp_s: f64,
    /// The wall clock when the measured window opened, in ns since the Unix epoch: to line the
    /// job up with other logs, and a fleet's hosts with each other.
    #[serde(default)]
    pub window_start_unix_ns: u64,
    pub groups: Vec<GroupResult>,
    /// All groups together.
    pub read: OpSummary,
    pub write: OpSummary,
    pub total: OpSummary,
    pub series: Vec<SeriesPoint>,
    pub cpu: CpuReport,
    pub errors: ErrorReport,
    /// Things the user should know about how the run was done (e.g. psync threads).
    pub notes: Vec<String>,
    /// The block devices behind the job's targets, one per distinct device, over the measured
    /// window; empty when no target has one (tmpfs) or the window never opened.
    pub devices: Vec<DeviceActivity>,
    /// Where the job's outstanding I/Os were over the window (all groups): Little's law.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<SlotSplit>,
    /// The whole machine over the measured window: CPU by owner (iolab's thread classes, kernel
    /// threads by what they serve, other processes), each core's time, interrupts. `None` when
    /// it was not sampled (the window never opened, or results of iolab.run/2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineReport>,
    /// What limited the job, with the figures that show it.
    pub verdict: Verdict,
    /// A job run across a fleet: each host's share, the start skew, the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetReport>,
    /// The merged latency histograms of the whole job (all groups): what the store keeps so a
    /// result can be merged again later. Not part of the run schema (the summaries are).
    #[serde(skip)]
    pub histograms: IntervalStats,
    /// What `--verify` found (docs/verify.md); `None` without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::VerifySummary>,
    /// The short run at the setting the verdict advised, after the job (`iolab run`); `None`
    /// when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<crate::advice::Trial>,
    /// A study's earlier attempts at this point, dropped because another load or a stolen CPU
    /// disturbed them (`--retries`); this result is the last attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_attempts: Vec<crate::retry::DisturbedAttempt>,
}

impl JobResult {
    /// Bad blocks `--verify` found (every kind); 0 without verify.
    pub fn data_errors(&self) -> u64 {
        self.verify.as_ref().map_or(0, crate::verify::VerifySummary::data_errors)
    }
}

/// A feature of an engine's setup, as `GroupResult::engine_setup` names what the kernel granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineFeature {
    /// io_uring polls the device for completions (--hipri).
    Iopoll,
    /// A kernel thread polls the submission queue (--sqpoll).
    Sqpoll,
}

impl EngineFeature {
    /// The word the engine reports it by.
    pub fn name(self) -> &'static str {
        match self {
            EngineFeature::Iopoll => "iopoll",
            EngineFeature::Sqpoll => "sqpoll",
        }
    }
}

impl GroupResult {
    /// Whether the kernel granted the group's engine `feature`.
    pub fn granted(&self, feature: EngineFeature) -> bool {
        self.engine_setup.iter().any(|s| s == feature.name())
    }
}

fn direct_by_default() -> bool {
    true
}

/// The spec of a deserialized `JobResult` until its reader sets the one it ran: the default job.
fn unread_spec() -> JobSpec {
    let plan =
        iolab_spec::resolve(None, &iolab_spec::Options::default()).expect("the built-in defaults resolve");
    plan.jobs.into_iter().next().expect("the default plan has a job")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupResult {
    pub name: String,
    /// Each target's own share of the group's I/O, in the order given.
    pub targets: Vec<TargetResult>,
    /// RAID-0 chunk size when the targets were striped into one volume.
    pub stripe_bytes: Option<u64>,
    pub access: String,
    pub engine: String,
    /// What the kernel granted the engine, e.g. ["single_issuer", "defer_taskrun",
    /// "fixed_files", "fixed_buffers"] for a tuned io_uring; empty for psync and null.
    pub engine_setup: Vec<String>,
    /// Where the group's outstanding I/Os were over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<SlotSplit>,
    /// O_DIRECT (the default); false when the group went through the page cache (--buffered).
    #[serde(default = "direct_by_default")]
    pub direct: bool,
    pub qd: u32,
    pub workers: u32,
    /// Threads that issued I/O (workers x QD for a synchronous engine).
    pub threads: u32,
    /// CPUs the threads were pinned to (in turn); empty when not pinned.
    pub cpus: Vec<u32>,
    /// Service time (from the hand-over to the kernel) and throughput, as in closed loop.
    pub read: OpSummary,
    pub write: OpSummary,
    pub total: OpSummary,
    pub series: Vec<SeriesPoint>,
    /// Open loop (`--rate-iops`): how the group kept to its schedule. `None` in closed loop.
    pub rate: Option<RateReport>,
    /// The share of the group's blocks its I/Os touched. `None` in results from before it was
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<BlockCoverage>,
    /// What the group wrote and what a sample of it measured (`--dedupe-pct`, `--compress-pct`,
    /// `--buffer-pattern`); `None` for a group that only reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<crate::data::DataReport>,
    /// The group's merged histograms (as `JobResult::histograms`), so groups merge exactly too.
    #[serde(skip)]
    pub histograms: IntervalStats,
}

/// Distinct blocks a group's I/Os touched over the whole run, ramp included (a block is
/// `--align` bytes; an I/O touches every block it covers). Counted exactly up to 2^16 blocks
/// per target (fewer for a group of many threads); beyond, estimated from a fixed sample of
/// that many (`sampled`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlockCoverage {
    pub block_bytes: u64,
    /// Blocks in the group's regions (every target's).
    pub blocks: u64,
    pub touched_pct: f64,
    pub sampled: bool,
}

impl BlockCoverage {
    /// Several hosts' or targets' coverage as one: blocks add up, and so do the touched ones.
    pub fn sum(parts: &[BlockCoverage]) -> Option<BlockCoverage> {
        let first = parts.first()?;
        let blocks: u64 = parts.iter().map(|c| c.blocks).sum();
        let touched: f64 = parts.iter().map(|c| c.touched_pct / 100.0 * c.blocks as f64).sum();
        Some(BlockCoverage {
            block_bytes: first.block_bytes,
            blocks,
            touched_pct: if blocks == 0 { 0.0 } else { touched / blocks as f64 * 100.0 },
            sampled: parts.iter().any(|c| c.sampled),
        })
    }
}

/// How a rate-limited group kept to its schedule (built by `RateReport::new`, which holds the
/// definition of "sustained").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RateReport {
    /// The group's scheduled I/Os per second (`--rate-iops`).
    pub target_iops: f64,
    pub arrival: Arrival,
    /// I/Os whose scheduled time fell inside the measured window.
    pub scheduled_ios: u64,
    /// I/Os that completed inside the measured window (the group's `total.ios`).
    pub completed_ios: u64,
    /// `completed_ios` per second of the window.
    pub achieved_iops: f64,
    /// How far completions fell short of the schedule: (scheduled - completed) / scheduled x 100,
    /// 0 when they did not.
    pub shortfall_pct: f64,
    /// At least 99% of the scheduled I/Os completed and none started more than 100 ms late.
    pub sustained: bool,
    /// The most any I/O issued in the window started behind its scheduled time: waiting for a
    /// free slot (the QD was all in flight) or for the thread to wake.
    pub max_lag_ns: u64,
    /// Response time, reads and writes together: from each I/O's scheduled time to its
    /// completion, so a late start counts against it (no coordinated omission).
    pub response: Option<LatencySummary>,
}

/// One target of a group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetResult {
    pub path: String,
    /// The block device that served the target's I/O (named as in `JobResult.devices`): the
    /// target itself, or the device under its filesystem; `None` when sysfs lists none.
    pub device: Option<String>,
    /// The target lives in memory (tmpfs, ramfs): no device ever saw its I/O.
    pub in_memory: bool,
    pub read: OpSummary,
    pub write: OpSummary,
    pub total: OpSummary,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpSummary {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    /// 10^6 bytes per second.
    pub mb_s: f64,
    /// 2^20 bytes per second.
    pub mib_s: f64,
    /// Absent when there were no I/Os of this kind.
    pub latency: Option<LatencySummary>,
}

impl OpSummary {
    /// The latency at percentile `p` (e.g. 99.0) as the result reported it; `None` without
    /// I/Os of this kind or when the source did not give that percentile.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.latency.as_ref()?.percentile(p)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub min_ns: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub max_ns: u64,
    pub percentiles: Vec<Percentile>,
    /// Share of I/Os completed within each threshold (1 ms, 2 ms and the user's --slo).
    pub within: Vec<Within>,
}

impl LatencySummary {
    /// The latency at percentile `p` (e.g. 99.0), if the summary gives that percentile.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9).map(|x| x.ns)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Percentile {
    pub p: f64,
    pub ns: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Within {
    pub threshold_ns: u64,
    pub pct: f64,
}

/// One interval (normally one second) of the measured phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeriesPoint {
    /// Start of the interval, in seconds after the measurement started.
    pub t_s: f64,
    pub duration_s: f64,
    pub iops: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub mb_s: f64,
    pub mean_ns: f64,
    pub p99_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct CpuReport {
    /// User time of the whole iolab process (every thread, io_uring kernel workers included).
    pub user_s: f64,
    pub system_s: f64,
    /// Microseconds of process CPU per completed I/O.
    pub us_per_io: f64,
    /// Busy share of each core of the machine during the measured phase, 0..100.
    pub machine_busy_pct: Vec<f64>,
    /// The process's CPU by thread class: submitting workers, the SQPOLL thread, io-wq
    /// workers (requests io_uring punted to kernel threads), other (collector, main).
    pub threads: Vec<ThreadClassCpu>,
    /// Process CPU seconds no thread sample accounts for: threads that exited between samples.
    pub unattributed_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct ErrorReport {
    /// I/Os that failed or transferred fewer bytes than asked.
    pub count: u64,
    /// The first failures, in completion order.
    pub first: Vec<IoErrorRecord>,
    /// A request the watchdog found outstanding for longer than --io-timeout.
    pub stuck: Option<StuckIo>,
    /// An engine failure that ended the job (not an error of one I/O).
    pub engine: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct IoErrorRecord {
    pub group: String,
    pub target: String,
    pub op: String,
    pub offset: u64,
    pub len: u32,
    /// The errno, or 0 for a short transfer.
    pub errno: i32,
    /// "Input/output error (os error 5)", or "short read: 512 of 4096 bytes".
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StuckIo {
    pub group: String,
    pub target: String,
    pub thread: u32,
    pub outstanding_ms: u64,
    pub in_flight: u32,
}

/// A block device's request queue: its limits and settings, as sysfs shows them; what sysfs does
/// not have is `None`. The engine reads it (`BlockDevice::queue`); the environment's
/// `DeviceFacts` and a job's `DeviceActivity` hold it flattened: its fields sit beside the
/// device's own in the JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueInfo {
    /// `queue/nr_requests`: the requests the block layer holds per hardware queue (in the
    /// scheduler and the driver together). Bio-based devices (zram, device-mapper) have none.
    pub nr_requests: Option<u32>,
    /// The commands the device (or its driver) takes at once, per hardware queue:
    /// `device/queue_depth` for SCSI (SATA, SAS), else blk-mq's `mq/0/nr_tags`.
    pub hw_queue_depth: Option<u32>,
    /// The hardware queues (`mq/*`): NVMe has one per CPU or so, most others one.
    pub hw_queues: Option<u32>,
    /// The active I/O scheduler ("none", "mq-deadline", "bfq", "kyber"); `None` for bio-based
    /// devices (zram, device-mapper), which have no choice.
    pub scheduler: Option<String>,
    /// `queue/rotational` (virtual disks often claim 1 whatever backs them).
    pub rotational: Option<bool>,
    /// `queue/max_sectors_kb`: the most one request moves, in KiB; a larger I/O is split.
    pub max_sectors_kb: Option<u32>,
    /// `queue/max_segments`: the most memory segments one request takes (a user buffer's pages
    /// need not be contiguous, so a segment may be one page); a larger I/O is split.
    pub max_segments: Option<u32>,
    /// `queue/max_segment_size`: the most bytes one segment holds.
    pub max_segment_size: Option<u32>,
}

/// What one block device did over the measured window, from its sysfs `stat` counters, and its
/// request queue. The counters are the device's own: they include I/O of other processes (and
/// the filesystem's metadata and writeback) on the same device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceActivity {
    /// The kernel's name: "vda", "nvme0n1p2", "dm-0", "loop0".
    pub device: String,
    /// Requests the device completed (after merging), and the bytes they moved.
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// (reads + writes) per second of the window.
    pub iops: f64,
    /// Share of the window with at least one request in the device (io_ticks), 0..100. A device
    /// that serves requests in parallel (SSD, NVMe) can be 100% busy and still take more.
    pub util_pct: f64,
    /// Mean requests in the device over the window (time_in_queue growth / window).
    pub avg_queue: f64,
    /// Mean time from issue to completion of a read, in the device; `None` without reads.
    pub read_await_us: Option<f64>,
    pub write_await_us: Option<f64>,
    /// The device's request queue; its fields sit beside the counters in the JSON.
    #[serde(flatten)]
    pub queue: QueueInfo,
}

/// What limited a job; `Undetermined` by default (a stored summary that does not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// A thread that submits and reaps I/O (or the cores, mostly busy with those threads).
    SubmittingCpu,
    /// Kernel work outside the submitting threads: io-wq workers, the SQPOLL thread.
    KernelCpu,
    /// A kernel thread outside iolab that serves the target: the loop driver's worker, an md
    /// RAID thread, dm-crypt; or, on saturated cores, the device's kernel work as a whole.
    KernelThread,
    /// A core saturated by hardirq and softirq work (completions).
    Interrupts,
    /// Another load: other processes' I/O on the device, or their CPU on saturated cores.
    OtherLoad,
    /// io_uring punted the job's I/O because the file's pages were being written back.
    Writeback,
    /// The hypervisor took the VM's CPU (steal).
    Steal,
    /// A target no block device serves (FUSE, NFS): the filesystem or its server.
    Target,
    /// The device: busy all the time with every request the job kept outstanding.
    Device,
    /// The device's request queue holds fewer requests than the job kept outstanding.
    Queue,
    /// The page cache (or a memory filesystem) served the I/O; the device was not measured.
    PageCache,
    /// The job ran at the rate it was asked for (open loop).
    RateLimit,
    /// A limit of the machine's configuration, not its hardware: a cgroup's CPU quota, an
    /// affinity mask narrower than the job's threads.
    ConfiguredLimit,
    /// Nothing was saturated: the job's own outstanding I/Os (QD x workers) limited it.
    Concurrency,
    /// A fleet's network: a host moved storage traffic near its measured link capacity, or its
    /// agents waited with nothing else busy.
    Network,
    /// A fleet's coordinator: hosts did not run together (start skew), or it fell behind.
    Coordinator,
    /// No evidence either way.
    #[default]
    Undetermined,
}

impl Bottleneck {
    /// How the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::SubmittingCpu => "submitting CPU",
            Bottleneck::KernelCpu => "kernel CPU",
            Bottleneck::KernelThread => "kernel thread",
            Bottleneck::Interrupts => "interrupts",
            Bottleneck::OtherLoad => "another load",
            Bottleneck::Writeback => "writeback",
            Bottleneck::Steal => "steal",
            Bottleneck::Target => "target",
            Bottleneck::Device => "device",
            Bottleneck::Queue => "device queue",
            Bottleneck::PageCache => "page cache",
            Bottleneck::RateLimit => "rate limit",
            Bottleneck::ConfiguredLimit => "configured limit",
            Bottleneck::Concurrency => "concurrency",
            Bottleneck::Network => "network",
            Bottleneck::Coordinator => "coordinator",
            Bottleneck::Undetermined => "undetermined",
        }
    }
}

/// What limited a job, in plain words, with the figures that support it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub cause: Bottleneck,
    /// One plain sentence.
    pub summary: String,
    /// The figures behind it, one per line.
    pub evidence: Vec<String>,
    /// The setting the verdict advises, and whether a trial confirmed it; `None`: no advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<crate::advice::Advice>,
}

impl Verdict {
    /// A measured result's verdict until it is judged (after it is kept; never by the runner).
    pub fn not_judged() -> Verdict {
        Verdict::of(Bottleneck::Undetermined, String::new(), Vec::new())
    }

    /// A verdict that advises nothing.
    pub fn of(cause: Bottleneck, summary: String, evidence: Vec<String>) -> Verdict {
        Verdict { cause, summary, evidence, advice: None }
    }
}
