//! The results of a run, as printed, exported and (later) stored. The JSON form of these types
//! is the documented schema (docs/results-schema.md); bump `SCHEMA` on any breaking change.

use iolab_spec::{Arrival, JobSpec};
use serde::{Deserialize, Serialize};

pub use crate::activity::{CpuReport, DeviceActivity, QueueInfo};
use crate::fleet::FleetReport;
use crate::interval::IntervalStats;
use crate::machine::MachineReport;
use crate::slots::SlotSplit;
pub use crate::summary::{tail_words, LatencySummary, OpSummary, Percentile, SeriesPoint, TailShare, Within};
pub use crate::verdict::{Bottleneck, Verdict};

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
    /// The submitting threads watch the completion queue before they sleep
    /// (--completion-watch).
    CompletionWatch,
}

impl EngineFeature {
    /// The word the engine reports it by.
    pub fn name(self) -> &'static str {
        match self {
            EngineFeature::Iopoll => "iopoll",
            EngineFeature::Sqpoll => "sqpoll",
            EngineFeature::CompletionWatch => "completion_watch",
        }
    }
}

impl GroupResult {
    /// Whether the kernel granted the group's engine `feature`.
    pub fn granted(&self, feature: EngineFeature) -> bool {
        self.engine_setup.iter().any(|s| s == feature.name())
    }

    /// The group's submitting threads poll (IOPOLL) or watch (`--completion-watch`) for
    /// completions, so they are busy by design and their busy time says nothing of a limit.
    pub fn lanes_poll(&self) -> bool {
        self.granted(EngineFeature::Iopoll) || self.granted(EngineFeature::CompletionWatch)
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
    /// `iolab replay`: how faithfully the group replayed its trace. `None` for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplayReport>,
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
