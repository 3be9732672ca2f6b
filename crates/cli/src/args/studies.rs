//! The measuring commands' arguments: `run` and each study. Their workload options are
//! `iolab_spec::Options`, the table job files use too.

use std::path::PathBuf;

use clap::Args;
use iolab_analysis::ramp::LatencyLimit;
use iolab_analysis::rounds::Tracked;
use iolab_analysis::steady::SteadyRule;
use iolab_spec::suite::{Suite, UnknownSuite};
use iolab_spec::{Axis, Bytes};

use super::{MetricsArgs, WorkloadArgs};

#[derive(Debug, Args)]
pub struct RampArgs {
    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
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

    /// Measure a level (or the closed-loop maximum) again, up to N times, while its verdict says another load or a stolen
    /// CPU disturbed it (each attempt said and dropped); one still disturbed is kept, marked,
    /// and left out of the level the target sustains. 0: never.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,

    #[command(flatten)]
    pub workload: WorkloadArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// quick, enterprise or pts.
    #[arg(value_name = "SUITE", value_parser = parse_suite)]
    pub suite: Suite,

    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
    pub target: Option<PathBuf>,

    #[command(flatten)]
    pub workload: WorkloadArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct CliffArgs {
    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
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
    pub workload: WorkloadArgs,
}

/// The steady-state detector's settings; the defaults are the SNIA PTS's (`SteadyRule::default`).
#[derive(Debug, Clone, Args)]
pub struct SteadyFlags {
    /// What is compared between rounds: iops, mb-s or mean-latency.
    #[arg(long, value_name = "WHAT", default_value = "iops", help_heading = "Steady state")]
    pub track: Tracked,

    /// Rounds in the measurement window.
    #[arg(long, value_name = "N", default_value_t = SteadyRule::default().window, help_heading = "Steady state")]
    pub window: usize,

    /// Largest range (max - min) of the window, in % of its average.
    #[arg(long, value_name = "PCT", default_value_t = SteadyRule::default().max_range_pct, help_heading = "Steady state")]
    pub max_range_pct: f64,

    /// Largest change of the window's least-squares line across it, in % of its average.
    #[arg(long, value_name = "PCT", default_value_t = SteadyRule::default().max_slope_pct, help_heading = "Steady state")]
    pub max_slope_pct: f64,

    /// Rounds after which the test gives up.
    #[arg(long, value_name = "N", default_value_t = SteadyRule::default().max_rounds, help_heading = "Steady state")]
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
    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
    pub target: Option<PathBuf>,

    #[command(flatten)]
    pub steady: SteadyFlags,

    #[command(flatten)]
    pub workload: WorkloadArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
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

    /// Measure a point again, up to N times, while its verdict says another load or a stolen
    /// CPU disturbed it (each attempt said and dropped); one still disturbed is kept, marked,
    /// and left out of the sweet spot (not with --until-steady: its rounds measure a point again already). 0: never.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,

    #[command(flatten)]
    pub workload: WorkloadArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct PreconditionArgs {
    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
    pub target: Option<PathBuf>,

    /// Times the whole region is written.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub passes: u32,

    /// Discard (trim) the region before writing: BLKDISCARD on a device, a punched hole in a file.
    #[arg(long)]
    pub trim: bool,

    #[command(flatten)]
    pub workload: WorkloadArgs,
}

#[derive(Debug, Args)]
pub struct LadderArgs {
    /// The target (default: a 1 GiB scratch file in the current directory), or a job file
    /// (`*.toml`, a fio job file) as `iolab run` takes one: its groups, target and options, with
    /// flags overriding it (docs/job-file.md, "Studies over a job file").
    #[arg(id = "target_path", value_name = "TARGET|JOB_FILE")]
    pub target: Option<PathBuf>,

    #[command(flatten)]
    pub workload: WorkloadArgs,
}

#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Two or more targets: files or block devices, after a job file of one workload if wanted
    /// (`iolab scale job.toml /dev/a /dev/b`; its own targets if none follow).
    #[arg(value_name = "[JOB_FILE] TARGET", num_args = 1.., required = true)]
    pub targets: Vec<PathBuf>,

    #[command(flatten)]
    pub workload: WorkloadArgs,
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

    /// For a job of several concurrent groups (an I/O blender): run each group alone, then all
    /// together, and say how much of its IOPS each kept beside the others and how its p99 grew.
    #[arg(long)]
    pub each_alone: bool,

    /// The drive's rated figures, to print measured vs rated: iops=540k,mb_s=2100,p99=200us,
    /// or a TOML file of them (docs/burnin.md).
    #[arg(long, value_name = "FIGURES|FILE")]
    pub rated: Option<String>,

    /// Do not test the verdict's advice: by default, a job whose verdict advises a change
    /// (--qd, --workers, --sqpoll) runs about a second more at that setting, and the verdict
    /// says whether it gained what was advised (docs/bottleneck-verdict.md).
    #[arg(long)]
    pub no_confirm: bool,

    #[command(flatten)]
    pub workload: WorkloadArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

fn parse_pct(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage; write e.g. 80 or 80%"))
}

fn parse_suite(text: &str) -> Result<Suite, UnknownSuite> {
    text.parse()
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Working sets to measure, as shares of the region and/or sizes (default
    /// 1%,2%,5%,10%,20%,50%,100%); each tier found is refined between them.
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<iolab_spec::cache::WorkingSets>,

    /// A tier ends where latency rises more than this share above its level.
    #[arg(long, value_name = "PCT", default_value_t = 50.0)]
    pub rise_pct: f64,

    /// Refine each tier until its size is known within this share.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub precision_pct: f64,

    /// How long a cold hot set (half the first tier) is read to see it become fast; 0 skips it.
    #[arg(long, value_name = "TIME", default_value = "10s")]
    pub promotion_time: iolab_spec::Nanos,

    /// Skip the pollution check (a hot set measured, the rest of the region read once, the hot
    /// set measured again).
    #[arg(long)]
    pub no_pollution: bool,

    #[command(flatten)]
    pub workload: WorkloadArgs,
}

#[derive(Debug, Args)]
pub struct BurninArgs {
    /// The target (default: a 1 GiB scratch file in the current directory).
    #[arg(id = "target_path", value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// How long the whole burn-in runs (default 24h): hours to weeks, e.g. 72h or 336h. It runs
    /// whole segments, so it may overrun by up to one --segment.
    #[arg(long, value_name = "TIME", help_heading = "Burn-in")]
    pub duration: Option<iolab_spec::Nanos>,

    /// Length of one segment (default 10m): each is kept in the results database as it ends,
    /// so a killed burn-in loses at most the segment it was in.
    #[arg(long, value_name = "TIME", help_heading = "Burn-in")]
    pub segment: Option<iolab_spec::Nanos>,

    /// How often the drive's health (temperature, media errors, endurance used, data written)
    /// is read (default 5m): NVMe's SMART log (root), SATA/SAS counters in sysfs.
    #[arg(long, value_name = "TIME", help_heading = "Burn-in")]
    pub health_every: Option<iolab_spec::Nanos>,

    /// Carry on past data errors, counting them, instead of stopping at the first.
    #[arg(long, help_heading = "Burn-in")]
    pub keep_going: bool,

    /// The drive's rated figures, to print measured vs rated: iops=540k,mb_s=2100,p99=200us
    /// (keys iops, mb_s, mean, pNN, each also read_ or write_), or a TOML file of them.
    #[arg(long, value_name = "FIGURES|FILE", help_heading = "Burn-in")]
    pub rated: Option<String>,

    /// Continue burn-in run ID (killed, or stopped with Ctrl-C) from the segment after its
    /// last complete one, with its settings; run it from the directory it started in.
    #[arg(long, value_name = "ID", help_heading = "Burn-in")]
    pub resume: Option<i64>,

    #[command(flatten)]
    pub workload: WorkloadArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}
