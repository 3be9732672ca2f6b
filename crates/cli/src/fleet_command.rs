//! `iolab fleet`: connects to the agents (or starts them through ssh), checks every host, then
//! runs the chosen command with its jobs on the fleet (`Place::Fleet`).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use iolab_fleet::coordinator::ssh::{self, SshAgents};
use iolab_fleet::coordinator::{hosts, Fleet, FleetConfig};
use iolab_spec::user_file;

use crate::args::{FleetArgs, FleetStudy, KeepArgs, MetricsArgs, StoreArgs};
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::{
    exit, fleet_files_command, fleet_replay_command, metrics_args, ramp_command, run_command, steady_command,
    suite_command, sweep_command,
};

pub fn run(args: FleetArgs, store: &StoreArgs) -> ExitCode {
    if args.study.is_some()
        && (args.run.job_file.is_some() || !args.run.workload.options.keys_set().is_empty())
    {
        return exit::fail(
            exit::USAGE,
            "put the workload's options after the subcommand: iolab fleet --hosts ... sweep --qd 1..32",
        );
    }
    if args.netbench && args.ssh.is_some() {
        return exit::fail(
            exit::USAGE,
            "--netbench needs agents that reach each other; agents started with --ssh listen on their hosts' loopback only: start them with --listen on a reachable address and use --hosts",
        );
    }
    let (quiet, metrics, keep) = match &args.study {
        None => (args.run.workload.options.quiet, &args.run.metrics, args.run.workload.keep),
        Some(FleetStudy::Run(run)) => (run.workload.options.quiet, &run.metrics, run.workload.keep),
        Some(FleetStudy::Sweep(sweep)) => (sweep.workload.options.quiet, &sweep.metrics, sweep.workload.keep),
        Some(FleetStudy::Ramp(ramp)) => (ramp.workload.options.quiet, &ramp.metrics, ramp.workload.keep),
        Some(FleetStudy::Steady(steady)) => {
            (steady.workload.options.quiet, &steady.metrics, steady.workload.keep)
        }
        Some(FleetStudy::Suite(suite)) => (suite.workload.options.quiet, &suite.metrics, suite.workload.keep),
        Some(FleetStudy::Cache(cache)) => {
            (cache.workload.options.quiet, &args.run.metrics, cache.workload.keep)
        }
        Some(FleetStudy::Files(files)) => (Some(files.quiet || files.json), &args.run.metrics, files.store),
        Some(FleetStudy::Replay(replay)) => (Some(replay.how.quiet), &args.run.metrics, replay.how.keep),
    };
    // Before the subcommand or after it, as --metrics.
    let store = &store.keeping(KeepArgs { no_store: keep.no_store || args.run.workload.keep.no_store });
    // Before the subcommand (`iolab fleet --metrics ADDR sweep ...`) or after it: either serves.
    let metrics = MetricsArgs { metrics: metrics.metrics.or(args.run.metrics.metrics) };
    // Bound before any host is asked for anything: a taken port costs nothing.
    let mut served = match metrics_args::serve(&metrics, "fleet") {
        Ok(served) => served,
        Err(code) => return code,
    };
    let token = match read_token(&args.token_file) {
        Ok(token) => token,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    // Kept until the command ends: dropping it stops the agents it started.
    let mut launched: Option<SshAgents> = None;
    let addresses = match (&args.hosts, &args.hosts_file, &args.ssh) {
        (Some(list), _, _) => hosts::parse_list(list),
        (_, Some(file), _) => hosts::load_file(file),
        (_, _, Some(list)) => hosts::ssh_list(list).and_then(|names| {
            let agent_args = args.ssh_agent_args.as_deref().unwrap_or("");
            let agents = ssh::launch(&names, &args.ssh_iolab, agent_args, &token)?;
            let addresses = agents.addresses.clone();
            launched = Some(agents);
            Ok(addresses)
        }),
        _ => Err("name the agents: --hosts host:port,..., --hosts-file FILE or --ssh host,...".into()),
    };
    let addresses = match addresses {
        Ok(addresses) => addresses,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let config = FleetConfig {
        hosts: addresses,
        token,
        lease: Duration::from_nanos(args.lease.0),
        netbench: args.netbench.then(|| Duration::from_nanos(args.netbench_time.0)),
    };
    let mut fleet = match Fleet::connect(&config, &mut ProgressLine::new(quiet == Some(true))) {
        Ok(fleet) => fleet,
        Err(e) => return exit::fail(exit::run_error_code(&e), &e.to_string()),
    };
    let watcher = served.as_mut().map(|served| &mut served.observer as &mut dyn iolab_runner::Observer);
    let mut place = Place::fleet(&mut fleet).watched_by(watcher);
    let code = match args.study {
        None => run_command::run(args.run, store, &mut place),
        Some(FleetStudy::Run(run)) => run_command::run(run, store, &mut place),
        Some(FleetStudy::Sweep(sweep)) => sweep_command::run(sweep, store, &mut place),
        Some(FleetStudy::Ramp(ramp)) => ramp_command::run(ramp, store, &mut place),
        Some(FleetStudy::Steady(steady)) => steady_command::run(steady, store, &mut place),
        Some(FleetStudy::Suite(suite)) => suite_command::run(suite, store, &mut place),
        Some(FleetStudy::Cache(cache)) => crate::fleet_cache_command::run(cache, store, &mut place),
        Some(FleetStudy::Files(files)) => fleet_files_command::run(files, store, &mut fleet),
        Some(FleetStudy::Replay(replay)) => fleet_replay_command::run(replay, store, &mut place),
    };
    drop(fleet);
    drop(launched);
    code
}

/// The token on the file's first line; a token anyone on the host can read is said.
pub fn read_token(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let text = user_file::read_to_string(path, user_file::TOKEN_FILE).map_err(|e| e.to_string())?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(format!("the token file {shown} is empty; put a long random token in it, e.g. head -c 32 /dev/urandom | base64"));
    }
    Ok(token)
}
