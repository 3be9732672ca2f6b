//! The command line. Run options come from `iolab_spec::Options`, the table job files use too.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use iolab_spec::Options;

#[derive(Debug, Parser)]
#[command(
    name = "iolab",
    version,
    about = "A storage characterization lab: IOPS, bandwidth, latency distributions, and what limited the run."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload (default: 4 KiB random read, QD 32, 1 worker, 2 s ramp + 10 s, on a
    /// 1 GiB scratch file in the current directory).
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A TOML job file (docs/job-file.md); flags override its values.
    #[arg(value_name = "JOB_FILE")]
    pub job_file: Option<PathBuf>,

    #[command(flatten)]
    pub options: Options,
}
