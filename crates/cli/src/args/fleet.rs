//! `iolab fleet` and `iolab agent`: the coordinator's and the agent's arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iolab_spec::{Bytes, Nanos};

use super::{CacheArgs, RampArgs, RunArgs, SteadyArgs, SuiteArgs, SweepArgs};

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
    /// Each host's read cache and tiers, every working set (a share of each host's own region)
    /// in lock-step (as `iolab cache`; docs/fleet-cache.md).
    Cache(CacheArgs),
    /// A file tree built and worked on every host, phase by phase in lock-step (as `iolab
    /// files`; DIR must be under each agent's --allow-write).
    Files(super::FilesArgs),
    /// Each host replays its own trace (one per host, in the order the hosts are named, or one
    /// for every host) on its own target, every host starting at one instant (as `iolab
    /// replay`).
    Replay(super::FleetReplayArgs),
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
