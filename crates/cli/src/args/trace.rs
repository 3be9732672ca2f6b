//! The commands over block traces: `capture`, `trace show|job|import` and `replay`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iolab_spec::{EngineKind, Nanos};
use iolab_trace::replay_plan::{Fit, Speed};

use super::{CpuIdleMode, KeepArgs};

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The block device whose requests to record.
    #[arg(value_name = "DEVICE")]
    pub device: PathBuf,

    /// How long to record (e.g. 30s, 5m); a stop signal ends it sooner and keeps what it has.
    #[arg(long = "for", value_name = "TIME", default_value = "30s")]
    pub duration: Nanos,

    /// The trace file to write (docs/trace-format.md).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Say what was captured as JSON (as `trace show --json`) instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TraceAction {
    /// What a trace is as a workload: its operations, sizes, sequential share, where it goes
    /// on the device (with a zoned and a zipf fit), how its requests arrive, how many were
    /// outstanding, and the traced device's service times. Reads iolab traces, blktrace's
    /// output (NAME or NAME.blktrace.N) and fio iologs v2 and v3.
    Show {
        #[arg(value_name = "TRACE")]
        file: PathBuf,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// An iolab job file that reproduces the trace as a workload (mix, sizes, random share,
    /// placement fit, rate and room for its concurrency), on stdout or -o; with --check
    /// TARGET, a run of it there and each figure of the trace beside the run's (from a
    /// capture of the run where iolab is root and TARGET a block device).
    Job {
        #[arg(value_name = "TRACE")]
        file: PathBuf,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Run the job on this target and compare.
        #[arg(long, value_name = "PATH")]
        check: Option<PathBuf>,
        /// The check's writes may overwrite a device with a filesystem or data.
        #[arg(long)]
        allow_destroy: bool,
        /// The check's report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        keep: KeepArgs,
    },
    /// Read a blktrace or fio iolog, check every record, and write it as an iolab trace.
    Import {
        #[arg(value_name = "TRACE")]
        file: PathBuf,
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace: an iolab capture, blktrace's output (NAME or NAME.blktrace.N) or a fio iolog
    /// v2 or v3.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    #[command(flatten)]
    pub how: ReplayHow,

    /// How far the CPUs may idle while the trace replays: as-is (default), or poll (root:
    /// /dev/cpu_dma_latency held at 0), so a request due while its core halts is not late by
    /// the wake-up.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = CpuIdleMode::AsIs)]
    pub cpu_idle: CpuIdleMode,
}

/// `iolab fleet ... replay`: a trace per host.
#[derive(Debug, Args)]
pub struct FleetReplayArgs {
    /// One trace per host, in the order the hosts are named; or one trace that every host
    /// replays. Each as `iolab replay` takes it.
    #[arg(value_name = "TRACE", required = true)]
    pub traces: Vec<PathBuf>,

    #[command(flatten)]
    pub how: ReplayHow,
}

/// How a trace is replayed, here or on each host of a fleet.
#[derive(Debug, Args)]
pub struct ReplayHow {
    /// Where to replay it (the same path on each host of a fleet): a block device or a file
    /// (made as large as the trace reaches).
    #[arg(long, value_name = "PATH")]
    pub target: PathBuf,

    /// How fast: 1x issues each request at its recorded time, 2x at half of it, max as fast as
    /// --qd allows (the recorded times are then not kept).
    #[arg(long, value_name = "SPEED", default_value = "1x")]
    pub speed: Speed,

    /// Lay a trace that reaches past the target's end onto it: scale (offsets scaled by the
    /// sizes' ratio) or wrap (offsets modulo the target's size). Without it such a trace is
    /// refused.
    #[arg(long, value_name = "HOW")]
    pub fit: Option<Fit>,

    /// The most requests in flight at once (default: at its recorded times, twice the most the
    /// trace had outstanding, at least 32; at --speed max, the most it had, or 32 when the
    /// trace does not say).
    #[arg(long, value_name = "N")]
    pub qd: Option<u32>,

    /// I/O engine: uring (default), aio or psync.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<EngineKind>,

    /// Allow the trace's writes on a device that holds a filesystem or data.
    #[arg(long)]
    pub allow_destroy: bool,

    /// Go through the page cache instead of O_DIRECT (a trace whose requests are not aligned
    /// to the target's blocks needs it).
    #[arg(long)]
    pub buffered: bool,

    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,

    /// Write the results to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// No progress line and no notes on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub keep: KeepArgs,
}
