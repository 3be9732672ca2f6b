//! The commands over kept results: `results`, `compare`, `report`, `import`, and `fio-job`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use iolab_store::RunId;

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// Every kept run, newest first: id, kind, status, start, points, what was measured.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// One run: its command, environment, points and verdicts.
    Show {
        id: RunId,
        /// Everything kept, as JSON (as `export`).
        #[arg(long)]
        json: bool,
        /// Judge every point again with this iolab's bottleneck rules, from the facts kept with
        /// it, and say which verdicts changed (the database is not changed).
        #[arg(long)]
        rejudge: bool,
    },
    /// Runs as JSON (all that is kept, histograms included, to merge again elsewhere) or CSV
    /// (one row per point).
    Export {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<RunId>,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write here instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Delete runs and all their points.
    Delete {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<RunId>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Runs to compare, the first being the baseline: ID (a whole run, point by point) or
    /// ID:POINT (one point, by name or number, with its repeats), e.g. 12 13 or "12:qd 32" 14.
    #[arg(required = true, num_args = 2.., value_name = "ID[:POINT]")]
    pub sides: Vec<String>,

    /// As JSON (schema iolab.compare/2).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The runs to chart, overlaid in that order (as `iolab results list` numbers them).
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<RunId>,

    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "iolab-report.html")]
    pub output: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// fio's JSON output (`--output-format=json` or `json+`, fio 2.x to today's): one run per
    /// file, one point per fio job (per group with group_reporting); with json+ its latency
    /// bins become a histogram, so every percentile to p99.9999 and exact merges are available.
    /// A directory stands for the .json files in it. Files over 16 MiB are refused.
    Fio {
        #[arg(required = true, value_name = "FILE|DIR")]
        files: Vec<PathBuf>,
        /// The files are the points of one sweep (one fio job per file, as bench-fio and
        /// fio-plot write them): stored as one sweep run, each point's iodepth, numjobs, rw and
        /// block size read from the options fio printed in it (never from the file's name).
        #[arg(long)]
        as_sweep: bool,
    },
}

#[derive(Debug, Args)]
pub struct FioJobArgs {
    /// A fio job file (INI: [global] and job sections).
    #[arg(value_name = "FIO_JOB_FILE")]
    pub file: PathBuf,

    /// Print the equivalent iolab job file (TOML) on stdout.
    #[arg(long)]
    pub print: bool,
}
