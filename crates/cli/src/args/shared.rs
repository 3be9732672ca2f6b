//! Arguments every command takes: where results are kept, and the live metrics endpoint.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use iolab_spec::Options;

#[derive(Debug, Clone, Args, Default)]
pub struct StoreArgs {
    /// The results database every run is kept in (default: $IOLAB_DB, else
    /// $XDG_DATA_HOME/iolab/results.db, else ~/.local/share/iolab/results.db).
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    /// Set from a measuring command's `--no-store` (`KeepArgs`): the commands that only read
    /// the database do not offer it.
    #[arg(skip)]
    pub no_store: bool,
}

/// What every measuring command takes: the workload's options (the table job files use too)
/// and whether the run is kept.
#[derive(Debug, Clone, Default, Args)]
pub struct WorkloadArgs {
    #[command(flatten)]
    pub options: Options,

    #[command(flatten)]
    pub keep: KeepArgs,

    /// How far the CPUs may idle while the run measures: as-is (default), or poll, which keeps
    /// every CPU polling instead of halting or sleeping in a C-state (root: holds
    /// /dev/cpu_dma_latency at 0 until iolab exits). At shallow queue depths a completion
    /// otherwise waits for its CPU to wake; on a VM that halts, each wake-up is a VM exit
    #[arg(long, value_name = "MODE", value_enum, default_value_t = CpuIdleMode::AsIs, help_heading = "Machine")]
    pub cpu_idle: CpuIdleMode,
}

/// `--cpu-idle`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CpuIdleMode {
    /// The CPUs idle as the machine has them.
    #[default]
    AsIs,
    /// Every CPU polls while iolab runs.
    Poll,
}

/// Whether a measuring command keeps its run.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct KeepArgs {
    /// Keep nothing of this run in the results database.
    #[arg(long, help_heading = "Results")]
    pub no_store: bool,
}

impl StoreArgs {
    /// The database for a measuring command, keeping its run or not as `keep` says.
    pub fn keeping(&self, keep: KeepArgs) -> StoreArgs {
        StoreArgs { no_store: keep.no_store, ..self.clone() }
    }

    /// The database to use: --db, $IOLAB_DB, then the user's data directory.
    pub fn path(&self) -> Result<PathBuf, String> {
        self.db
            .clone()
            .or_else(|| std::env::var_os("IOLAB_DB").filter(|v| !v.is_empty()).map(PathBuf::from))
            .or_else(iolab_store::default_path)
            .ok_or_else(|| {
                "no results database: give --db PATH (neither HOME nor XDG_DATA_HOME is set)".into()
            })
    }

    /// The database was named (--db, $IOLAB_DB), not taken by default.
    pub fn named(&self) -> bool {
        self.db.is_some() || std::env::var_os("IOLAB_DB").is_some_and(|v| !v.is_empty())
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Serve the live figures for Prometheus at http://ADDR/metrics while the command runs,
    /// e.g. 127.0.0.1:9464 (port 0 picks a free port; the address is printed on stderr).
    /// The metric families are in docs/metrics.md.
    #[arg(long, value_name = "ADDR", help_heading = "Results")]
    pub metrics: Option<SocketAddr>,
}
