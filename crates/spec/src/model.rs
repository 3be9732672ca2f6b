//! The validated workload: what the runner executes. Built only by `resolve`, so every value
//! here has passed the checks that need no I/O. Field names carry their units in JSON.

use std::path::PathBuf;

use serde::Serialize;

use crate::distribution::{Distribution, WorkingSet};
use crate::units::{Bytes, Nanos};
use crate::values::{Arrival, BsWeight, EngineKind, IoLimit, RingSetup};

/// Everything one `iolab run` does: jobs one after another, and where results go.
#[derive(Debug, Clone, Serialize)]
pub struct RunPlan {
    pub jobs: Vec<JobSpec>,
    #[serde(skip)]
    pub output: OutputSpec,
}

#[derive(Debug, Clone, Default)]
pub struct OutputSpec {
    pub json: bool,
    pub path: Option<PathBuf>,
    pub quiet: bool,
}

/// One job: concurrent worker groups measured together for the same time.
#[derive(Debug, Clone, Serialize)]
pub struct JobSpec {
    pub name: String,
    #[serde(rename = "runtime_ns")]
    pub runtime: Nanos,
    #[serde(rename = "ramp_ns")]
    pub ramp: Nanos,
    /// Length of one point of the per-interval series.
    #[serde(rename = "interval_ns")]
    pub interval: Nanos,
    pub io_limit: Option<IoLimit>,
    #[serde(rename = "io_timeout_ns")]
    pub io_timeout: Nanos,
    /// Latency thresholds reported as "% of I/Os within": 1 ms, 2 ms and the user's own.
    #[serde(rename = "slo_ns")]
    pub slo: Vec<Nanos>,
    pub continue_on_error: bool,
    pub groups: Vec<GroupSpec>,
}

/// Workers that share one access specification, target and queue depth.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSpec {
    pub name: String,
    pub target: TargetSpec,
    pub access: AccessSpec,
    /// Outstanding I/Os per worker.
    pub qd: u32,
    pub workers: u32,
    pub engine: EngineKind,
    /// Queued requests handed to the kernel per system call, at most.
    pub submit_batch: u32,
    /// Completions waited for per system call, at most (capped at the I/Os in flight).
    pub complete_batch: u32,
    /// CPUs the group's threads are pinned to, in turn; empty: not pinned.
    pub cpus: Vec<u32>,
    pub uring: UringSpec,
    /// Open loop: I/Os issued on a schedule. `None`: closed loop, each thread keeps its queue full.
    pub rate: Option<RateSpec>,
    pub seed: u64,
    /// `--verify`: writes carry checksums, reads check them (docs/verify.md).
    pub verify: crate::verify::VerifySpec,
    /// What the group's writes hold (`--dedupe-pct`, `--compress-pct`, `--buffer-pattern`).
    pub data: crate::data::DataSpec,
    /// `iolab replay`: a trace's requests instead of the access pattern. `None` for every
    /// other run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySpec>,
}

/// A trace replayed by a group: each I/O's operation, offset and length, and when it is due.
#[derive(Clone, Serialize)]
pub struct ReplaySpec {
    /// The trace file, as the user named it.
    pub source: String,
    /// How fast: 2.0 issues each request at half its recorded time; `None` as fast as the
    /// queue allows (the times are then not kept).
    pub speed: Option<f64>,
    /// How the trace's offsets were laid onto a smaller target ("scale", "wrap"), if they were.
    pub fit: Option<String>,
    /// Requests of the trace not replayed (discards and flushes: no data to move).
    pub skipped: u64,
    /// The requests, in issue order; lane i of T issues i, i + T, i + 2T, ...
    #[serde(skip)]
    pub ios: std::sync::Arc<[ReplayIo]>,
}

/// Its requests are counted, not listed: a trace holds millions.
impl std::fmt::Debug for ReplaySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaySpec")
            .field("source", &self.source)
            .field("speed", &self.speed)
            .field("fit", &self.fit)
            .field("skipped", &self.skipped)
            .field("ios", &self.ios.len())
            .finish()
    }
}

/// One request of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayIo {
    /// Nanoseconds from the job's start (0 for every request of a replay as fast as possible).
    pub due_ns: u64,
    pub write: bool,
    /// Within the target's region.
    pub offset: u64,
    pub len: u32,
}

/// The schedule of a rate-limited group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateSpec {
    /// I/Os per second for the whole group, shared evenly by its threads.
    pub iops: u64,
    pub arrival: Arrival,
}

/// io_uring tuning of a group. Defaults: the cheapest ring setup the kernel accepts, registered
/// files and buffers (each falling back to the plain form where the kernel refuses), no SQPOLL,
/// no IOPOLL. The report records what the kernel actually granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct UringSpec {
    pub ring_setup: RingSetup,
    pub fixed_files: bool,
    pub fixed_buffers: bool,
    pub sqpoll: bool,
    pub sqpoll_cpu: Option<u32>,
    /// IORING_SETUP_IOPOLL: poll the device for completions.
    pub hipri: bool,
    /// How long a lane watches the completion queue before it sleeps for a completion
    /// (`--completion-watch`); 0: it sleeps at once.
    #[serde(rename = "completion_watch_ns")]
    pub completion_watch: Nanos,
}

impl UringSpec {
    /// The tuned default: the kernel's cheapest ring, registered files and buffers.
    pub fn tuned() -> Self {
        UringSpec { fixed_files: true, fixed_buffers: true, ..UringSpec::default() }
    }
}

impl GroupSpec {
    /// The group's lanes, the threads that issue its I/O: one per `--workers` with an engine
    /// that queues (io_uring, aio, null), and one per outstanding I/O with a synchronous one
    /// (psync: `--workers` x `--qd`).
    pub fn lanes(&self) -> u32 {
        self.workers * (self.qd / self.engine.qd_per_lane(self.qd))
    }

    /// What the group's I/Os are: its access pattern, or the trace it replays and that
    /// trace's mix ("replay of t.trace at 1x: mix 4KiB/60,64KiB/40 random 70% read").
    pub fn describe_access(&self) -> String {
        let Some(replay) = &self.replay else { return self.access.describe() };
        let speed = replay.speed.map_or_else(|| "as fast as possible".to_string(), |x| format!("at {x}x"));
        format!("replay of {} {speed}: {}", replay.source, self.access.describe())
    }

    /// I/Os each lane keeps in flight: the group's `--qd`, or 1 with a synchronous engine.
    pub fn qd_per_lane(&self) -> u32 {
        self.engine.qd_per_lane(self.qd)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetSpec {
    /// Empty: a scratch file that iolab creates in the current directory.
    pub paths: Vec<PathBuf>,
    /// With several paths: RAID-0 chunk size. `None`: each I/O goes to the next path in turn.
    #[serde(rename = "stripe_bytes")]
    pub stripe: Option<Bytes>,
    /// Region size; `None` means the whole device or file (1 GiB for a scratch file).
    #[serde(rename = "size_bytes")]
    pub size: Option<Bytes>,
    #[serde(rename = "offset_bytes")]
    pub offset: Bytes,
    pub direct: bool,
    pub allow_destroy: bool,
    pub keep: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct AccessSpec {
    pub read_pct: u32,
    pub random_pct: u32,
    pub bs_split: Vec<BsWeight>,
    #[serde(rename = "align_bytes")]
    pub align: Bytes,
    pub burst: Option<Burst>,
    /// Which blocks random I/Os favour.
    pub distribution: Distribution,
    /// The region every I/O stays in, if smaller than the target's.
    pub working_set: Option<WorkingSet>,
}

impl AccessSpec {
    pub fn max_bs(&self) -> Bytes {
        self.bs_split.iter().map(|w| w.bs).max().unwrap_or_default()
    }

    pub fn min_bs(&self) -> Bytes {
        self.bs_split.iter().map(|w| w.bs).min().unwrap_or_default()
    }

    pub fn writes(&self) -> bool {
        self.read_pct < 100
    }

    /// "4KiB random read", "64KiB sequential 70% read", "mix 4KiB/70,64KiB/30 random write".
    pub fn describe(&self) -> String {
        let bs = match self.bs_split.as_slice() {
            [one] => one.bs.to_string(),
            mix => {
                let parts: Vec<String> = mix.iter().map(|w| format!("{}/{}", w.bs, w.weight)).collect();
                format!("mix {}", parts.join(","))
            }
        };
        let pattern = match self.random_pct {
            100 => "random".to_string(),
            0 => "sequential".to_string(),
            pct => format!("{pct}% random"),
        };
        let op = match self.read_pct {
            100 => "read".to_string(),
            0 => "write".to_string(),
            pct => format!("{pct}% read"),
        };
        let mut text = format!("{bs} {pattern} {op}");
        if !self.distribution.is_uniform() && self.random_pct > 0 {
            text += &format!(" {}", self.distribution);
        }
        if let Some(set) = self.working_set {
            text += &format!(" in a {} working set", set.size);
            if let Some(moves) = set.moves {
                text += &format!(" moving {} every {} I/Os", moves.distance, moves.every_ios);
            }
        }
        text
    }
}

/// Iometer's burst: `ios` back to back, then `idle`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Burst {
    pub ios: u32,
    #[serde(rename = "idle_ns")]
    pub idle: Nanos,
}
