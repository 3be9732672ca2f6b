//! `--metrics ADDR`: serve a measuring command's live figures for Prometheus while it runs
//! (iolab_metrics). The socket is bound before anything runs, so a taken port is a usage error
//! that costs nothing; the endpoint stops with the command.

use std::process::ExitCode;

use iolab_metrics::{Metrics, MetricsObserver, MetricsServer};
use iolab_runner::Observer;

use crate::args::MetricsArgs;
use crate::exit;
use crate::exit::say;
use crate::place::Place;

/// A running endpoint and the observer that feeds it; dropping it stops the endpoint.
pub struct Served {
    pub observer: MetricsObserver,
    _server: MetricsServer,
}

/// Starts the endpoint `args` asks for, if any, for `command` (its `iolab_run_info` label).
pub fn serve(args: &MetricsArgs, command: &str) -> Result<Option<Served>, ExitCode> {
    let Some(addr) = args.metrics else { return Ok(None) };
    let metrics = Metrics::new(command);
    let server = metrics.serve(addr).map_err(|e| exit::fail(exit::USAGE, &e.to_string()))?;
    // Said even with --quiet: with port 0, this line is the only way to find the endpoint.
    say!("iolab: metrics on http://{}/metrics", server.address());
    Ok(Some(Served { observer: metrics.observer(), _server: server }))
}

/// Runs a measuring command in this process, its jobs watched by the endpoint `args` asks for.
pub fn here(args: &MetricsArgs, command: &str, run: impl FnOnce(&mut Place<'_>) -> ExitCode) -> ExitCode {
    let mut served = match serve(args, command) {
        Ok(served) => served,
        Err(code) => return code,
    };
    let watcher = served.as_mut().map(|served| &mut served.observer as &mut dyn Observer);
    run(&mut Place::here().watched_by(watcher))
}
