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
    /// A TOML job file (docs/job-file.md); flags override its values.
    #[arg(value_name = "JOB_FILE")]
    pub job_file: Option<PathBuf>,

    #[command(flatten)]
    pub options: Options,
}
