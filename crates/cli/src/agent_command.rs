//! `iolab agent`: serves jobs for fleet coordinators until SIGINT or SIGTERM (exit 0). With
//! `--token-file -` the token is stdin's first line, and the agent stops when stdin closes:
//! that is how `iolab fleet --ssh` keeps its agents from outliving it.

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

use iolab_fleet::agent::{self, AgentConfig};
use iolab_fleet::protocol::MAX_LEASE_MS;

use iolab_metrics::Metrics;

use crate::args::AgentArgs;
use crate::exit;

pub fn run(args: AgentArgs) -> ExitCode {
    let from_stdin = args.token_file.as_os_str() == "-";
    let token = if from_stdin {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(_) if !line.trim().is_empty() => Ok(line.trim().to_string()),
            Ok(_) => Err("--token-file -: stdin held no token".to_string()),
            Err(e) => Err(format!("--token-file -: cannot read stdin: {e}")),
        }
    } else {
        agent::read_token(&args.token_file).map_err(|e| e.to_string())
    };
    let token = match token {
        Ok(token) => token,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let config = AgentConfig {
        listen: args.listen,
        token,
        allow_write: args.allow_write,
        scratch_dir: args.scratch_dir,
        max_lease: Duration::from_millis(MAX_LEASE_MS),
        max_scratch: args.max_scratch.0,
        // Bound with the API's listener, before the agent serves anything, and served within
        // limits of its own (the agent's metrics_port.rs).
        metrics: args.metrics.map(|addr| agent::MetricsPort { addr, metrics: Metrics::new("agent") }),
        allow_hardlinks: args.allow_hardlinks,
        judge: iolab_analysis::judge::judge,
        limits: agent::Limits {
            max_connections: args.max_connections.max(1),
            max_connections_per_peer: args.max_connections_per_peer.max(1),
            ..agent::Limits::default()
        },
    };
    match agent::run(config, from_stdin) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::fail(exit::USAGE, &e.to_string()),
    }
}
