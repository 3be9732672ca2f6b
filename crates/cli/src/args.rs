//! The command line. Run options come from `iolab_spec::Options`, the table job files use too.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use iolab_analysis::ramp::LatencyLimit;
use iolab_analysis::rounds::Tracked;
use iolab_analysis::steady::SteadyRule;
use iolab_spec::suite::Suite;
use iolab_spec::{Axis, Bytes, Nanos, Options};

use crate::compare_command::CompareArgs;
use crate::fio_job_command::FioJobArgs;
use crate::import_command::ImportSource;
use crate::metrics_args::MetricsArgs;
use crate::recording::StoreArgs;
use crate::report_command::ReportArgs;
use crate::results_command::ResultsAction;

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
    /// Run a suite on the target (default: a 1 GiB scratch file), 5 s + 1 s ramp per test unless
    /// --runtime/--ramp say otherwise. quick: the four classic desktop tests (sequential 1 MiB
    /// Q8T1 and Q1T1, random 4 KiB Q32T16 and Q1T1), read and write. enterprise: QD 1 latency,
    /// random read, write and 70/30 load curves to 512 outstanding I/Os (at most 16 workers)
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
}

#[derive(Debug, Args)]
pub struct FleetArgs {
    /// The agents, host:port (port 7878 when left out), comma-separated.
    #[arg(long, value_name = "HOST:PORT,...", conflicts_with_all = ["hosts_file", "ssh"], help_heading = "Fleet")]
    pub hosts: Option<String>,

    /// A file of agents, one host:port per line (# comments).
    #[arg(long, value_name = "FILE", conflicts_with = "ssh", help_heading = "Fleet")]
    pub hosts_file: Option<PathBuf>,

    /// Start an agent on each of these hosts through your own ssh (bound to 127.0.0.1 there and
    /// reached through an ssh tunnel; the token goes over ssh's stdin), and stop it afterwards.
    #[arg(long, value_name = "HOST,...", help_heading = "Fleet")]
    pub ssh: Option<String>,

    /// The iolab binary on the ssh hosts.
    #[arg(long, value_name = "PATH", default_value = "iolab", requires = "ssh", help_heading = "Fleet")]
    pub ssh_iolab: String,

    /// Extra arguments for each ssh agent, e.g. "--allow-write /dev/nvme1n1".
    #[arg(long, value_name = "ARGS", requires = "ssh", allow_hyphen_values = true, help_heading = "Fleet")]
    pub ssh_agent_args: Option<String>,

    /// The agents' shared token (the file holds it on one line).
    #[arg(long, value_name = "FILE", help_heading = "Fleet")]
    pub token_file: PathBuf,

    /// How long an agent goes on without hearing from this coordinator before it stops the job.
    #[arg(long, value_name = "TIME", default_value = "10s", help_heading = "Fleet")]
    pub lease: Nanos,

    /// First measure each host's network throughput (every host sending to the next at once),
    /// so the verdict can tell a saturated network.
    #[arg(long, help_heading = "Fleet")]
    pub netbench: bool,

    /// How long --netbench sends.
    #[arg(long, value_name = "TIME", default_value = "3s", requires = "netbench", help_heading = "Fleet")]
    pub netbench_time: Nanos,

    #[command(subcommand)]
    pub study: Option<FleetStudy>,

    /// A plain run (no subcommand): its job file and options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// What a fleet runs besides a plain workload.
#[derive(Debug, Subcommand)]
pub enum FleetStudy {
    /// A workload (as `iolab run`).
    Run(RunArgs),
    /// Every combination of the listed values, each point in lock-step (as `iolab sweep`).
    Sweep(SweepArgs),
    /// The latency-vs-IOPS curve of the fleet (as `iolab ramp`).
    Ramp(RampArgs),
    /// Rounds until the fleet is steady (as `iolab steady`).
    Steady(SteadyArgs),
    /// A suite of tests (as `iolab suite`).
    Suite(SuiteArgs),
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Address to listen on; 0.0.0.0:7878 serves every interface.
    #[arg(long, value_name = "ADDR", default_value = iolab_fleet::agent::DEFAULT_LISTEN)]
    pub listen: std::net::SocketAddr,

    /// The token every request must carry (the file holds it on one line); `-` reads it from
    /// stdin, and the agent then stops when stdin closes (how `iolab fleet --ssh` starts it).
    #[arg(long, value_name = "FILE")]
    pub token_file: PathBuf,

    /// A file or device (or a directory of them) coordinators may write to; repeat it. Without
    /// it, the agent only reads, except its own scratch files.
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub allow_write: Vec<PathBuf>,

    /// Where scratch files go for jobs that name no target (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,

    /// The largest scratch file a coordinator may have laid out here.
    #[arg(long, value_name = "SIZE", default_value = "16g")]
    pub max_scratch: Bytes,

    /// Serve this host's live figures for Prometheus at http://ADDR/metrics (off unless
    /// given; no token is needed to read them and none appears in them): docs/metrics.md.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,

    /// Let jobs write files under --allow-write that have more than one hard link (another
    /// name, possibly outside --allow-write, reaches the same data). Refused without it.
    #[arg(long)]
    pub allow_hardlinks: bool,

    /// The most connections the agent keeps open at once; more are answered 503 and closed.
    /// Keep it well under the open-file limit (ulimit -n).
    #[arg(long, value_name = "N", default_value_t = iolab_fleet::agent::Limits::default().max_connections)]
    pub max_connections: usize,

    /// The most connections one address may keep open at once.
    #[arg(long, value_name = "N", default_value_t = iolab_fleet::agent::Limits::default().max_connections_per_peer)]
    pub max_connections_per_peer: usize,
}

#[derive(Debug, Args)]
pub struct RampArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Levels in % of the maximum: a list (25,50,90,100) or a range (10..100/10).
    #[arg(long, value_name = "PCTS", default_value = "10..100/10")]
    pub levels: Axis<u32>,

    /// Stop after the first level whose response time crosses this: p99=2ms, p99.9=5ms, mean=1ms.
    #[arg(long, value_name = "WHAT=TIME")]
    pub max_latency: Option<LatencyLimit>,

    /// Stop after the first level where the machine's cores were busier than this, in %.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub max_cpu: Option<f64>,

    #[command(flatten)]
    pub options: Options,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

fn parse_pct(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage; write e.g. 80 or 80%"))
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// quick, enterprise or pts.
    #[arg(value_name = "SUITE", value_parser = parse_suite)]
    pub suite: Suite,

    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    #[command(flatten)]
    pub options: Options,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

fn parse_suite(text: &str) -> Result<Suite, String> {
    text.parse()
}

#[derive(Debug, Args)]
pub struct CliffArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Bytes to write (default: the whole region once).
    #[arg(long, value_name = "SIZE")]
    pub bytes: Option<Bytes>,

    /// A cliff is a drop of more than this share of the throughput before it.
    #[arg(long, value_name = "PCT", default_value_t = 30.0)]
    pub drop_pct: f64,

    /// ... that lasts at least this many samples.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub hold: usize,

    #[command(flatten)]
    pub options: Options,
}

/// The steady-state detector's settings (SNIA PTS defaults).
#[derive(Debug, Clone, Args)]
pub struct SteadyFlags {
    /// What is compared between rounds: iops, mb-s or mean-latency.
    #[arg(long, value_name = "WHAT", default_value = "iops", help_heading = "Steady state")]
    pub track: Tracked,

    /// Rounds in the measurement window.
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = "Steady state")]
    pub window: usize,

    /// Largest range (max - min) of the window, in % of its average.
    #[arg(long, value_name = "PCT", default_value_t = 20.0, help_heading = "Steady state")]
    pub max_range_pct: f64,

    /// Largest change of the window's least-squares line across it, in % of its average.
    #[arg(long, value_name = "PCT", default_value_t = 10.0, help_heading = "Steady state")]
    pub max_slope_pct: f64,

    /// Rounds after which the test gives up.
    #[arg(long, value_name = "N", default_value_t = 25, help_heading = "Steady state")]
    pub max_rounds: usize,
}

impl SteadyFlags {
    pub fn rule(&self) -> Result<SteadyRule, String> {
        let rule = SteadyRule {
            window: self.window,
            max_range_pct: self.max_range_pct,
            max_slope_pct: self.max_slope_pct,
            max_rounds: self.max_rounds,
        };
        rule.validate().map(|()| rule)
    }
}

#[derive(Debug, Args)]
pub struct SteadyArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    #[command(flatten)]
    pub steady: SteadyFlags,

    #[command(flatten)]
    pub options: Options,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Run each point in rounds until it reaches steady state (the settings of `iolab steady`);
    /// the point's result is its last round.
    #[arg(long, help_heading = "Steady state")]
    pub until_steady: bool,

    #[command(flatten)]
    pub steady: SteadyFlags,

    /// Measure each point N times in a row (default 1): comparisons then tell a difference
    /// from run-to-run noise. The table shows the repeat with the median IOPS.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,

    /// Continue the newest unfinished sweep of exactly these points in the results database
    /// (interrupted or killed): the points it finished are kept, the rest are run.
    #[arg(long)]
    pub resume: bool,

    #[command(flatten)]
    pub options: Options,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct PreconditionArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Times the whole region is written.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub passes: u32,

    /// Discard (trim) the region before writing: BLKDISCARD on a device, a punched hole in a file.
    #[arg(long)]
    pub trim: bool,

    #[command(flatten)]
    pub options: Options,
}

#[derive(Debug, Args)]
pub struct LadderArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    #[command(flatten)]
    pub options: Options,
}

#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Two or more targets: files or block devices.
    #[arg(value_name = "TARGET", num_args = 2.., required = true)]
    pub targets: Vec<PathBuf>,

    #[command(flatten)]
    pub options: Options,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A job file (docs/job-file.md): iolab's TOML, or a fio job file (`.fio`, `.ini`, or a
    /// first line that opens a [section]); flags override its values.
    #[arg(value_name = "JOB_FILE")]
    pub job_file: Option<PathBuf>,

    /// Run each job N times in a row (default 1): comparisons then tell a difference from
    /// run-to-run noise.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,

    #[command(flatten)]
    pub options: Options,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}
