//! `iolab check`: a CI gate, a run against its baseline.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::WorkloadArgs;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// What is checked: a job file to run (iolab's TOML or a fio job file), a kept run (ID or
    /// ID:POINT), or a run exported as JSON (`iolab results export ID -o run.json`). Without
    /// it, the workload the flags give is run, as `iolab run` would.
    #[arg(value_name = "JOB|ID|FILE")]
    pub subject: Option<String>,

    /// What it is checked against: a kept run (ID or ID:POINT) or a run exported as JSON, e.g.
    /// one kept in the repository.
    #[arg(long, value_name = "ID|FILE")]
    pub baseline: String,

    /// How much worse a figure may get before it fails: one percentage for IOPS, MB/s, p99 and
    /// p99.9, or per figure (iops, mb_s, p99, p99.9, cpu), e.g. 5% or 5%,p99.9=20%,cpu=15%. CPU
    /// per I/O is shown, and gated only when named here. A figure fails only when it is also
    /// worse by more than twice the run-to-run noise, the ranges of its repeats apart.
    #[arg(long, value_name = "PCT|FIGURE=PCT,...", default_value = "5%")]
    pub max_regression: String,

    /// Run the job N times in a row (default 3), so that the noise can be measured; a kept or
    /// exported subject is taken as it is.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,

    /// Differences between the runs that do not make them incomparable: kernel (a kernel's
    /// regression test), model (another target of the same workload), engine.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "WHAT,...")]
    pub accept: Vec<Accept>,

    /// Also write the result as markdown here, for a CI job's summary page (e.g. append it to
    /// $GITHUB_STEP_SUMMARY).
    #[arg(long, value_name = "FILE", help_heading = "Results")]
    pub markdown: Option<PathBuf>,

    /// Also write the result as JUnit XML here, which CI systems show as test results: a test
    /// case per point and figure.
    #[arg(long, value_name = "FILE", help_heading = "Results")]
    pub junit: Option<PathBuf>,

    #[command(flatten)]
    pub workload: WorkloadArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Accept {
    Kernel,
    Model,
    Engine,
}
