//! The commands over block traces: `capture`, `trace show|import|job` and `replay`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iolab_spec::Nanos;

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
    /// Read a blktrace or fio iolog, check every record, and write it as an iolab trace.
    Import {
        #[arg(value_name = "TRACE")]
        file: PathBuf,
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}
