//! The command line, all of it in this directory: the commands (here), the measuring
//! commands' arguments (`studies`), the fleet's (`fleet`), the commands over kept results
//! (`stored`) and what every command takes (`shared`). Workload options are
//! `iolab_spec::Options`, the table job files use too. Nothing here runs anything.

mod check;
mod files;
mod fleet;
mod shared;
mod stored;
mod studies;
mod study_help;
mod trace;
mod verify;

use clap::{CommandFactory, Parser, Subcommand};

pub use check::{Accept, CheckArgs};
pub use files::FilesArgs;
pub use fleet::{AgentArgs, FleetArgs, FleetStudy};
pub use shared::{CpuIdleMode, KeepArgs, MetricsArgs, StoreArgs, WorkloadArgs};
pub use stored::{CompareArgs, ExportFormat, FioJobArgs, ImportSource, ReportArgs, ResultsAction};
pub use studies::CacheArgs;
pub use studies::{
    BurninArgs, CliffArgs, LadderArgs, PreconditionArgs, RampArgs, RunArgs, ScaleArgs, SteadyArgs, SuiteArgs,
    SweepArgs,
};
pub use trace::{CaptureArgs, FleetReplayArgs, ReplayArgs, ReplayHow, TraceAction};
pub use verify::VerifyArgs;

/// The command line as iolab parses it and shows its help: the studies' timing said as they use it.
pub fn command() -> clap::Command {
    study_help::with_study_timing(Cli::command())
}

/// Parses this process's arguments.
pub fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
}

#[derive(Debug, Parser)]
#[command(
    name = "iolab",
    version,
    about = "A storage characterization lab: IOPS, bandwidth, latency distributions, and what limited the run."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload (default: 4 KiB random read, QD 32, 1 worker, 2 s ramp + 10 s, on a
    /// 1 GiB scratch file in the current directory).
    Run(RunArgs),
    /// Climb the API ladder on one target: the same workload through psync, aio, io_uring,
    /// io_uring with ring flags, with registered files and buffers, with SQPOLL and with IOPOLL
    /// (where the device has poll queues); a table of IOPS, latency and CPU per I/O by thread,
    /// and which interface is cheapest here (default 5 s + 1 s ramp per step).
    Ladder(LadderArgs),
    /// Run the workload on each target alone, then on all at once, and report the scaling
    /// efficiency (together vs the sum of singles) and what stopped it (default 5 s + 1 s ramp
    /// per step).
    Scale(ScaleArgs),
    /// Put a device in a known state, the SNIA way: optionally discard it (--trim), then write
    /// the whole region sequentially in 128 KiB blocks, --passes times (default 2), with a
    /// progress bar and ETA.
    Precondition(PreconditionArgs),
    /// Run every combination of the lists given to --qd, --workers, --bs, --read-pct and
    /// --random-pct (e.g. --qd 1..512 for 1,2,4,...,512), one after another in one process
    /// (default 5 s + 1 s ramp per point); a table per load curve with IOPS, MB/s, latency and
    /// CPU per I/O, and the sweet spot: the most IOPS before latency grows faster than IOPS.
    Sweep(SweepArgs),
    /// Measure rounds of a workload (--runtime each, default 60 s) until steady state, the SNIA
    /// way: the last --window rounds (5) within --max-range-pct (20%) of their average and a
    /// least-squares slope excursion within --max-slope-pct (10%); give up after --max-rounds (25).
    Steady(SteadyArgs),
    /// Write the whole target (or --bytes) sequentially, logging throughput against bytes
    /// written every 100 ms (--interval), and find each cliff where throughput drops by more
    /// than --drop-pct and stays down: the size of a write cache or fast tier, with the rates
    /// before and after.
    Cliff(CliffArgs),
    /// The read side of `cliff`: random reads (4 KiB, QD 1 by default) over growing working sets
    /// (--sizes, default 1% to 100% of the region), each read once first, refined until each
    /// cache or fast tier's size is known within --precision-pct (10%): its size, the latency
    /// and IOPS inside and beyond it, how fast a cold hot set is promoted and whether a scan
    /// pollutes a hot one.
    Cache(CacheArgs),
    /// Run a suite on the target (default: a 1 GiB scratch file), 5 s + 1 s ramp per test unless
    /// --runtime/--ramp say otherwise. quick: the four classic desktop tests (sequential 1 MiB
    /// Q8T1 and Q1T1, random 4 KiB Q32T16 and Q1T1), read and write. enterprise: QD 1 latency,
    /// random read, write, 70/30 and zipf-skewed 70/30 load curves to 512 outstanding I/Os (at most 16 workers)
    /// with their sweet spots, sequential read and write. pts: precondition (2 passes), 4 KiB
    /// random write rounds until steady state, then an IOPS matrix of block size by mix.
    Suite(SuiteArgs),
    /// The latency-vs-IOPS curve: find the workload's maximum IOPS (closed loop), then run it
    /// open-loop at --levels shares of that maximum (default 10%, 20% ... 100%), stopping early
    /// at --max-latency (e.g. p99=2ms, on response time) or --max-cpu (machine busy %).
    Ramp(RampArgs),
    /// Compare kept runs side by side, each against the first: IOPS, MB/s, latency percentiles
    /// and CPU per I/O, with relative differences and, for runs measured with --repeat,
    /// whether each difference is larger than the run-to-run noise.
    Compare(CompareArgs),
    /// A gate for CI: run a job (or take a kept or exported run) and compare it with a
    /// baseline, point by point and figure by figure (IOPS, MB/s, p99, p99.9; CPU per I/O when
    /// --max-regression names it); exit 0 when no figure got worse past --max-regression and
    /// by more than twice the run-to-run noise, 1 on a regression (which figure, by how much,
    /// against which noise), 2 when the runs are not comparable (another workload, target
    /// model, kernel or engine). --markdown and --junit write the result for a CI's pages
    /// (docs/check.md).
    Check(CheckArgs),
    /// Write one self-contained HTML file (no network needed) with the charts of kept runs,
    /// overlaid: IOPS and latency against load with the sweet spot, latency vs IOPS,
    /// percentiles to 99.9999 and histograms, per-second series, CPU per I/O, cliffs,
    /// steady-state rounds, and every verdict.
    Report(ReportArgs),
    /// Run a workload, or a sweep, ramp, steady-state study or suite, on many hosts at once:
    /// each job starts on every host at one instant, the live figures are the fleet's, and the
    /// result is one, with exactly merged histograms (the percentiles of every host's I/Os
    /// together) and each host's share. `iolab fleet --hosts a:7878,b:7878 --token-file T
    /// job.toml`, or `... sweep --qd 1..32 /dev/nvme0n1`.
    Fleet(Box<FleetArgs>),
    /// Serve jobs for fleet coordinators (`iolab fleet`) over HTTP: on 127.0.0.1:7878 unless
    /// --listen says otherwise, every request checked against --token-file, writes only where
    /// --allow-write allows.
    Agent(AgentArgs),
    /// Check a fio job file against what iolab can run, and with --print show the iolab job
    /// file it becomes (`iolab run job.fio` runs that file): options without an equivalent are
    /// refused, all listed (docs/job-file.md, "fio job files").
    FioJob(FioJobArgs),
    /// Burn a drive in: hours to weeks of one workload (default 24 h of the run defaults, in
    /// 10 min segments), each segment kept as it ends, the drive's health read every 5 min,
    /// stopping at the first data error unless --keep-going; --resume ID continues a killed one,
    /// --rated compares with the datasheet (docs/burnin.md).
    Burnin(BurninArgs),
    /// Bring results of another tool into the results database (`iolab import fio out.json`).
    Import {
        #[command(subcommand)]
        source: ImportSource,
    },
    /// The results database (every run is kept there as it runs): list, show, export (JSON or
    /// CSV) or delete runs.
    Results {
        #[command(subcommand)]
        action: ResultsAction,
    },
    /// Build and work a tree of files (default: 10,000 empty files in a scratch directory here,
    /// removed afterwards): mkdir, create, stat, statdir, readdir, read, setattr, xattr, link,
    /// symlink, rename, copy, unlink, rmdir in the order given, each operation timed exactly, on
    /// io_uring or plain system calls (docs/files.md).
    Files(FilesArgs),
    /// Record every request the block layer issues to a device and completes, for --for
    /// (default 30 s), into a trace file (root: the kernel's block tracing), with whether it
    /// saw them all and what it cost.
    Capture(CaptureArgs),
    /// Block traces (a capture, blktrace's output, a fio iolog): what one is as a workload, the
    /// job file that reproduces it, or one imported as an iolab trace.
    Trace {
        #[command(subcommand)]
        action: TraceAction,
    },
    /// Replay a trace on a target: each request at its recorded time (--speed 2x, max),
    /// offsets fitted onto a smaller target with --fit, writes only with --allow-destroy; a
    /// normal run (kept, reported, judged) with how faithfully it kept the trace's times and
    /// its latencies beside the capture's service times.
    Replay(ReplayArgs),
    /// Read a region a --verify run wrote and check every block against its record: lost,
    /// stale, misdirected, torn or corrupted blocks, by offset (docs/verify.md).
    Verify(VerifyArgs),
}

impl Command {
    /// How far the CPUs may idle while a command that measures on this host runs.
    pub fn cpu_idle(&self) -> Option<CpuIdleMode> {
        match self {
            Command::Replay(a) => Some(a.cpu_idle),
            other => other.workload().map(|w| w.cpu_idle),
        }
    }

    /// The workload options of a command that measures on this host, `None` for the others.
    pub fn workload(&self) -> Option<&WorkloadArgs> {
        match self {
            Command::Run(a) => Some(&a.workload),
            Command::Ladder(a) => Some(&a.workload),
            Command::Scale(a) => Some(&a.workload),
            Command::Precondition(a) => Some(&a.workload),
            Command::Sweep(a) => Some(&a.workload),
            Command::Steady(a) => Some(&a.workload),
            Command::Cliff(a) => Some(&a.workload),
            Command::Cache(a) => Some(&a.workload),
            Command::Suite(a) => Some(&a.workload),
            Command::Ramp(a) => Some(&a.workload),
            Command::Check(a) => Some(&a.workload),
            Command::Burnin(a) => Some(&a.workload),
            _ => None,
        }
    }
}
