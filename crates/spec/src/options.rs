//! The option table: one struct that both the command line and job files fill in.
//!
//! Every field is optional so that layers can be stacked: built-in defaults, then a job file's
//! top level, then a `[[job]]`, then a `[[job.group]]`, then the command-line flags, each layer
//! overriding the one below. `resolve` turns the stacked layers into a validated `JobSpec`.

use std::path::PathBuf;

use clap::Args;
use serde::Deserialize;
use thiserror::Error;

use crate::axis::Axis;
use crate::distribution::{Distribution, WorkingSetMoves};
use crate::units::{Bytes, Nanos};
use crate::values::{Arrival, BsSplit, CpuList, EngineKind, IoLimit, NanosList, RingSetup, Rw};

/// Options of a run. In job files the same names are used with `_` (`read_pct = 70`).
#[derive(Debug, Clone, Default, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    // ---- what a group of workers does ----
    /// Target: a regular file (created or extended to --size) or a block device. Repeat it to
    /// spread I/O over several targets (see --stripe). Default: a 1 GiB scratch file in the
    /// current directory, removed afterwards.
    #[arg(long, value_name = "PATH", help_heading = "Target", action = clap::ArgAction::Append)]
    #[serde(default, deserialize_with = "crate::values::one_or_many_paths")]
    pub target: Option<Vec<PathBuf>>,

    /// With several targets: stripe them RAID-0 style in chunks of SIZE (e.g. 128k) into one
    /// volume. Without it, each I/O goes to the next target in turn, at an offset of its own.
    #[arg(long, value_name = "SIZE", help_heading = "Target")]
    pub stripe: Option<Bytes>,

    /// Size of the region to test (default: the whole device or file; 1 GiB for scratch).
    #[arg(long, value_name = "SIZE", help_heading = "Target")]
    pub size: Option<Bytes>,

    /// Where the region starts in the target.
    #[arg(long, value_name = "SIZE", help_heading = "Target")]
    pub offset: Option<Bytes>,

    /// Keep the scratch file after the run, as iolab-kept-<pid>.dat, which no later run removes.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Target")]
    pub keep: Option<bool>,

    /// Allow writes to a block device that holds data (a filesystem, partition table, LVM, RAID).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Target")]
    pub allow_destroy: Option<bool>,

    /// Bypass the page cache with O_DIRECT (the default).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Target")]
    pub direct: Option<bool>,

    /// Go through the page cache (no O_DIRECT).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Target")]
    pub buffered: Option<bool>,

    /// Access pattern shorthand: read, write, randread (default), randwrite, randrw, rw.
    #[arg(long, value_name = "PATTERN", help_heading = "Access")]
    pub rw: Option<Rw>,

    /// Share of I/Os that are reads, 0..100 (overrides the one implied by --rw). Sweeps take a
    /// list: 100,70,0 or 0..100/10.
    #[arg(long, value_name = "PCT", help_heading = "Access")]
    pub read_pct: Option<Axis<u32>>,

    /// Share of I/Os at a random offset, 0..100; the rest continue sequentially. Sweeps take a
    /// list.
    #[arg(long, value_name = "PCT", help_heading = "Access")]
    pub random_pct: Option<Axis<u32>>,

    /// Block size (default 4k). Sweeps take a list: 4k,16k,128k or 4k..1m (doubling).
    #[arg(long, value_name = "SIZE", help_heading = "Access")]
    pub bs: Option<Axis<Bytes>>,

    /// Block-size mix with relative weights, e.g. 4k/70,64k/30.
    #[arg(long, value_name = "MIX", help_heading = "Access")]
    pub bs_split: Option<BsSplit>,

    /// Offset alignment of random I/Os (default: the smallest block size).
    #[arg(long, value_name = "SIZE", help_heading = "Access")]
    pub align: Option<Bytes>,

    /// Which blocks random I/Os favour: uniform (default), zipf:THETA, pareto:H,
    /// normal:STDDEV_PCT or zoned:IO_PCT/SIZE_PCT,... (zoned:80/20,20/80: 80% of the I/Os go to
    /// the first 20% of the region). Sequential I/Os are not affected. See docs/distributions.md.
    #[arg(long, value_name = "DIST", help_heading = "Access")]
    pub distribution: Option<Distribution>,

    /// Keep every I/O inside a working set of SIZE bytes at the start of the region.
    #[arg(long, value_name = "SIZE", help_heading = "Access")]
    pub working_set: Option<Bytes>,

    /// Move the working set DISTANCE further after every IOS I/Os of the group (e.g.
    /// 64m/100000), wrapping back to the start of the region at its end: a drifting hot set.
    #[arg(long, value_name = "DISTANCE/IOS", help_heading = "Access")]
    pub working_set_moves: Option<WorkingSetMoves>,

    /// Iometer burst length: this many I/Os back to back, then --burst-idle.
    #[arg(long, value_name = "N", help_heading = "Access")]
    pub burst: Option<u32>,

    /// Idle time between bursts (Iometer's transfer delay).
    #[arg(long, value_name = "TIME", help_heading = "Access")]
    pub burst_idle: Option<Nanos>,

    /// Open loop: issue the group's I/Os on a schedule at N per second in total (shared by its
    /// threads) instead of as fast as the queue allows. Latency is then also reported from each
    /// I/O's scheduled time (response time), and the result says whether the rate was sustained.
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub rate_iops: Option<u64>,

    /// Spacing of the --rate-iops schedule: uniform (evenly spaced, the default) or poisson
    /// (exponential gaps, as independent clients arrive).
    #[arg(long, value_name = "PROCESS", help_heading = "Load")]
    pub arrival: Option<Arrival>,

    /// Outstanding I/Os per worker (default 32). Sweeps take a list: 1,4,16 or 1..512 (doubling).
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub qd: Option<Axis<u32>>,

    /// Worker threads, each with its own queue of --qd I/Os (default 1). Sweeps take a list.
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub workers: Option<Axis<u32>>,

    /// I/O engine: uring (default), aio (Linux native AIO), psync (one thread per outstanding
    /// I/O) or null (no I/O).
    #[arg(long, value_name = "ENGINE", help_heading = "Load")]
    pub engine: Option<EngineKind>,

    /// Hand queued I/Os to the kernel in batches of at most N (default 1, as fio): smaller
    /// batches let the device start sooner, larger ones cost fewer system calls.
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub submit_batch: Option<u32>,

    /// Wait for N completions per system call before reaping (default 1): fewer calls, later
    /// reaps. Capped at the I/Os in flight.
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub complete_batch: Option<u32>,

    /// Pin the I/O threads to these CPUs, in turn (e.g. 0,1 or 0-3).
    #[arg(long, value_name = "LIST", help_heading = "Load")]
    pub cpus: Option<CpuList>,

    /// io_uring ring setup: auto (probe the kernel for the cheapest: defer-taskrun, then
    /// coop-taskrun, then plain), or insist on defer-taskrun, coop-taskrun or plain.
    #[arg(long, value_name = "MODE", help_heading = "io_uring")]
    pub ring_setup: Option<RingSetup>,

    /// Register the target files, and the ring's own descriptor, with the ring (default on;
    /// off = look each file up per I/O and the ring up per system call).
    #[arg(long, value_name = "on|off", help_heading = "io_uring", value_parser = parse_switch)]
    pub fixed_files: Option<bool>,

    /// Register the I/O buffers with the ring (default on; off = pin pages per I/O).
    #[arg(long, value_name = "on|off", help_heading = "io_uring", value_parser = parse_switch)]
    pub fixed_buffers: Option<bool>,

    /// A kernel thread polls the submission queue, so submitting costs no system call.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "io_uring")]
    pub sqpoll: Option<bool>,

    /// Pin the SQPOLL thread to this CPU (implies --sqpoll).
    #[arg(long, value_name = "CPU", help_heading = "io_uring")]
    pub sqpoll_cpu: Option<u32>,

    /// Poll for completions (IORING_SETUP_IOPOLL) instead of waiting for interrupts; needs
    /// O_DIRECT and a device with poll queues (NVMe with poll_queues set).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "io_uring")]
    pub hipri: Option<bool>,

    /// Watch the completion queue from user space for up to TIME (e.g. 15us) before sleeping
    /// for a completion (default off). The lane stays on its core instead of letting it halt
    /// and wake per completion: more IOPS at shallow queues where the cores' wake-ups are the
    /// limit, at the cost of CPU spent watching. See docs/job-file.md.
    #[arg(long, value_name = "TIME", help_heading = "io_uring")]
    pub completion_watch: Option<Nanos>,

    /// Seed of the offset and read/write choices, for repeatable runs.
    #[arg(long, value_name = "N", help_heading = "Load")]
    #[serde(default, deserialize_with = "crate::values::seed")]
    pub seed: Option<u64>,

    /// Every block written carries its stamp and checksums, every block read is checked, and
    /// what each block should hold is recorded for `iolab verify` (docs/verify.md).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Verify")]
    pub verify: Option<bool>,

    /// The --verify record (8 bytes per 4 KiB block: 2 MiB per GiB); default: under the data
    /// directory, keyed by the target.
    #[arg(long, value_name = "PATH", help_heading = "Verify")]
    pub verify_state: Option<PathBuf>,
    /// Share of written 4 KiB blocks that repeat a block of the dedupe set, 0..100 (default 0:
    /// every block unique). See docs/data.md.
    #[arg(long, value_name = "PCT", help_heading = "Data")]
    pub dedupe_pct: Option<u32>,

    /// How many distinct blocks the --dedupe-pct repeats are drawn from (default 1m: 256 blocks).
    #[arg(long, value_name = "SIZE", help_heading = "Data")]
    pub dedupe_set: Option<Bytes>,

    /// Share of each 4 KiB block that compresses away, 0..100 (default 0: incompressible).
    #[arg(long, value_name = "PCT", help_heading = "Data")]
    pub compress_pct: Option<u32>,

    /// What the blocks hold: random (default: stamped, unique, shaped by --dedupe-pct and
    /// --compress-pct), zero (all-zero blocks, no stamp) or hex bytes repeated (0xdeadbeef, no stamp).
    #[arg(long, value_name = "PATTERN", help_heading = "Data")]
    pub buffer_pattern: Option<crate::data::BufferPattern>,

    // ---- what a job does as a whole ----
    /// Measured time, after the ramp (default 10s).
    #[arg(long, value_name = "TIME", help_heading = "Timing")]
    pub runtime: Option<Nanos>,

    /// Warm-up time before measuring; its I/Os are not counted (default 2s).
    #[arg(long, value_name = "TIME", help_heading = "Timing")]
    pub ramp: Option<Nanos>,

    /// Length of one point of the per-interval series (default 1s; 50ms or more): shorter
    /// intervals show faster changes, such as a write cache filling up.
    #[arg(long, value_name = "TIME", help_heading = "Results")]
    pub interval: Option<Nanos>,

    /// Stop the measured phase after this many bytes (10g) or I/Os (100000ios).
    #[arg(long, value_name = "LIMIT", help_heading = "Timing")]
    pub io_limit: Option<IoLimit>,

    /// A request outstanding this long is reported as stuck and the run stops (default 60s).
    #[arg(long, value_name = "TIME", help_heading = "Timing")]
    pub io_timeout: Option<Nanos>,

    /// Latency thresholds to report the share of I/Os within, e.g. 500us,1ms (1ms and 2ms are always reported).
    #[arg(long, value_name = "LIST", help_heading = "Results")]
    pub slo: Option<NanosList>,

    /// Keep going after I/O errors, counting them, instead of stopping the run.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Timing")]
    pub continue_on_error: Option<bool>,

    // ---- output, for the whole run ----
    /// Print results as JSON (schema: docs/results-schema.md).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Results")]
    pub json: Option<bool>,

    /// Write results to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE", help_heading = "Results")]
    pub output: Option<PathBuf>,

    /// No progress line and no notes on stderr.
    #[arg(long, short = 'q', num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Results")]
    pub quiet: Option<bool>,

    // ---- job-file structure ----
    /// Name of a job or group (job files only).
    #[arg(skip)]
    pub name: Option<String>,

    /// `[[job]]` entries (job files only, at the top level).
    #[arg(skip)]
    #[serde(default, deserialize_with = "crate::values::entries")]
    pub job: Vec<Options>,

    /// `[[group]]` / `[[job.group]]` entries: concurrent worker groups of one job (job files only).
    #[arg(skip)]
    #[serde(default, deserialize_with = "crate::values::entries")]
    pub group: Vec<Options>,
}

/// Keys that apply to a job as a whole, not to one of its groups.
pub const JOB_KEYS: &[&str] =
    &["runtime", "ramp", "interval", "io_limit", "io_timeout", "slo", "continue_on_error"];

/// Keys that tune io_uring, which only `engine = "uring"` takes.
pub const URING_KEYS: &[&str] =
    &["ring_setup", "fixed_files", "fixed_buffers", "sqpoll", "sqpoll_cpu", "hipri", "completion_watch"];

/// The flag spelling of a job-file key: `sqpoll_cpu` is `--sqpoll-cpu`.
pub fn flag_name(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// Keys that apply to the whole run, so only at a job file's top level.
pub const RUN_KEYS: &[&str] = &["json", "output", "quiet"];

/// Calls `$callback!` with every option field (not `name`, `job`, `group`): the one list that
/// overlaying and key listing share, so a new option cannot be forgotten in one of them.
macro_rules! with_option_fields {
    ($callback:ident) => {
        $callback!(
            target,
            stripe,
            size,
            offset,
            keep,
            allow_destroy,
            direct,
            buffered,
            rw,
            read_pct,
            random_pct,
            bs,
            bs_split,
            align,
            distribution,
            working_set,
            working_set_moves,
            burst,
            burst_idle,
            rate_iops,
            arrival,
            qd,
            workers,
            engine,
            submit_batch,
            complete_batch,
            cpus,
            ring_setup,
            fixed_files,
            fixed_buffers,
            sqpoll,
            sqpoll_cpu,
            hipri,
            completion_watch,
            seed,
            verify,
            verify_state,
            dedupe_pct,
            dedupe_set,
            compress_pct,
            buffer_pattern,
            runtime,
            ramp,
            interval,
            io_limit,
            io_timeout,
            slo,
            continue_on_error,
            json,
            output,
            quiet
        )
    };
}

/// A switch that is neither on nor off.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("'{0}' is not a switch; use on or off")]
pub(crate) struct NotASwitch(String);

/// `on`/`off` (also true/false, yes/no, 1/0).
fn parse_switch(text: &str) -> Result<bool, NotASwitch> {
    match text.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(NotASwitch(text.to_string())),
    }
}

impl Options {
    /// This layer with `top` laid over it: every option `top` sets wins.
    ///
    /// Options that describe one thing two ways replace each other: `rw` resets the read and
    /// random shares set below it, `bs` and `bs_split` displace each other, and `direct` and
    /// `buffered` are one switch.
    pub fn overlay(&self, top: &Options) -> Options {
        let mut base = self.clone();
        if top.rw.is_some() {
            base.read_pct = None;
            base.random_pct = None;
        }
        if top.bs.is_some() {
            base.bs_split = None;
        }
        if top.bs_split.is_some() {
            base.bs = None;
        }
        if top.direct.is_some() || top.buffered.is_some() {
            base.direct = None;
            base.buffered = None;
        }
        macro_rules! take_set {
            ($($field:ident),*) => { $( if top.$field.is_some() { base.$field = top.$field.clone(); } )* };
        }
        with_option_fields!(take_set);
        if top.name.is_some() {
            base.name = top.name.clone();
        }
        base
    }

    /// Names of the keys this layer sets, in job-file spelling.
    pub fn keys_set(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        macro_rules! collect {
            ($($field:ident),*) => { $( if self.$field.is_some() { keys.push(stringify!($field)); } )* };
        }
        with_option_fields!(collect);
        keys
    }
}
