//! The agent: `iolab agent` serves protocol v1 (see `crate::protocol`) so that a coordinator
//! can run jobs on this host. It trusts a request only with the operator's token, writes only
//! where the operator allowed (`--allow-write`), runs one session at a time, and stops a job
//! whose coordinator goes silent for longer than its lease: it never runs unattended.
//!
//! The HTTP side is async (axum routes on tokio, served by hyper over the agent's own accept
//! loop, `serve.rs`, which times the reading of requests and limits connections); every job
//! runs on its session's own thread, so the engine threads stay synchronous and off the runtime.
//! Targets are opened once, when a job is checked (`targets.rs`, `open_target.rs`).

mod auth;
mod body;
mod command;
mod config;
mod error;
mod files_routes;
mod files_session;
mod files_slot;
mod live;
mod log;
mod metrics_port;
mod netbench;
mod open_target;
mod refusal_log;
mod replay;
mod routes;
mod serve;
mod session;
mod slot;
mod targets;
mod worker;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use iolab_metrics::MetricsError;

pub use config::{read_token, AgentConfig, Judge, DEFAULT_LISTEN, DEFAULT_MAX_SCRATCH};
pub use error::AgentError;
pub use metrics_port::MetricsPort;
pub use netbench::MAX_SEND_MS;
pub use serve::Limits;

use self::log::say;
use auth::Token;
use serve::Port;
use slot::Slot;
use targets::AllowList;

/// After the stop signal, how long open connections (a live stream) get to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// An agent bound to its address, not yet serving.
pub struct Agent {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    slot: Arc<Slot>,
    token: Arc<Token>,
    limits: Limits,
    /// `--metrics`: its bound listener and what it serves.
    metrics: Option<(tokio::net::TcpListener, Router)>,
}

impl Agent {
    /// Checks the configuration and binds the listening socket (port 0: any free port; see
    /// `local_addr`). With a scratch directory, the process's current directory becomes it:
    /// scratch files are laid out in the current directory.
    pub async fn bind(config: AgentConfig) -> Result<Agent, AgentError> {
        if config.token.trim().is_empty() {
            return Err(AgentError::NoToken);
        }
        let allow = Arc::new(
            AllowList::new(&config.allow_write, config.max_scratch)?
                .allowing_hardlinks(config.allow_hardlinks),
        );
        if let Some(dir) = &config.scratch_dir {
            std::env::set_current_dir(dir)
                .map_err(|source| AgentError::ScratchDir { path: dir.clone(), source })?;
        }
        let listener = serve::listen(config.listen)
            .map_err(|source| AgentError::Bind { addr: config.listen, source })?;
        let addr =
            listener.local_addr().map_err(|source| AgentError::Bind { addr: config.listen, source })?;
        let observer = config.metrics.as_ref().map(|port| port.metrics.observer());
        let metrics = match &config.metrics {
            Some(port) => {
                let bind_error = |source| MetricsError::Bind { addr: port.addr, source };
                Some((serve::listen(port.addr).map_err(bind_error)?, metrics_port::router(&port.metrics)))
            }
            None => None,
        };
        Ok(Agent {
            listener,
            addr,
            metrics,
            slot: Arc::new(Slot::new(allow, config.max_lease, config.judge).watched_by(observer)),
            token: Arc::new(Token::new(config.token.trim().to_string())),
            limits: config.limits,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` completes, then closes any session (stopping its job and
    /// removing its scratch file).
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), AgentError> {
        let Agent { listener, addr, slot, token, limits, metrics } = self;
        let log = Arc::new(refusal_log::RefusalLog::default());
        let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
        let metrics_server = metrics.map(|(listener, router)| {
            if let Ok(at) = listener.local_addr() {
                say!("iolab agent: metrics on http://{at}/metrics");
            }
            let limits = (Port::Metrics, metrics_port::limits(&limits, metrics_port::open_file_limit()));
            tokio::spawn(serve::serve(listener, router, limits, Arc::clone(&log), async move {
                let _ = metrics_stopped.await;
            }))
        });
        say!("iolab agent: listening on {addr} ({})", crate::protocol::PROTOCOL);
        let watchdog = tokio::spawn(Arc::clone(&slot).watch_leases());
        let app = routes::router(Arc::clone(&slot), token, Arc::clone(&log));
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let server = serve::serve(listener, app, (Port::Api, limits), log, async move {
            shutdown.await;
            let _ = metrics_stop.send(());
            let _ = stopping_tx.send(());
        });
        let slot_at_stop = Arc::clone(&slot);
        let outcome = tokio::select! {
            () = server => Ok(()),
            () = async move {
                if stopping_rx.await.is_ok() {
                    // Ends any live stream, so graceful shutdown can finish.
                    slot_at_stop.close_all().await;
                    tokio::time::sleep(SHUTDOWN_GRACE).await;
                } else {
                    std::future::pending::<()>().await;
                }
            } => Ok(()),
        };
        watchdog.abort();
        if let Some(metrics_server) = metrics_server {
            metrics_server.abort();
        }
        slot.close_all().await;
        say!("iolab agent: stopped");
        outcome
    }
}

/// Runs an agent until SIGINT or SIGTERM, on a runtime of its own: what `iolab agent` calls.
/// With `until_stdin_closes`, also until stdin reaches its end: an agent started through ssh
/// (`iolab fleet --ssh`) ends with its coordinator.
pub fn run(config: AgentConfig, until_stdin_closes: bool) -> Result<(), AgentError> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(AgentError::Runtime)?;
    let outcome = runtime.block_on(async {
        let agent = Agent::bind(config).await?;
        agent.serve(stop_signal(until_stdin_closes)).await
    });
    // The thread reading stdin never returns while stdin is open: do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    outcome
}

async fn stop_signal(until_stdin_closes: bool) {
    use tokio::signal::unix::{signal, SignalKind};
    let stdin_closed = async {
        if !until_stdin_closes {
            return std::future::pending().await;
        }
        let _ =
            tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink()))
                .await;
        say!("iolab agent: stdin closed (the coordinator has gone)");
    };
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
        _ = stdin_closed => {}
    }
}

/// An agent serving on a thread of its own (tests, and a coordinator's own tests): its address,
/// and a handle that stops it.
pub struct RunningAgent {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), AgentError>>>,
}

impl RunningAgent {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the agent (closing any session) and waits for it.
    pub fn stop(mut self) -> Result<(), AgentError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), AgentError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(AgentError::Serve(std::io::Error::other("the agent's thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for RunningAgent {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

/// Starts an agent on a thread with its own runtime and returns once it listens.
pub fn spawn(config: AgentConfig) -> Result<RunningAgent, AgentError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(AgentError::Runtime)?;
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("iolab-agent".into())
        .spawn(move || {
            runtime.block_on(async move {
                let agent = match Agent::bind(config).await {
                    Ok(agent) => agent,
                    Err(error) => {
                        let _ = bound_tx.send(Err(error));
                        return Ok(());
                    }
                };
                let _ = bound_tx.send(Ok(agent.local_addr()));
                agent
                    .serve(async move {
                        let _ = stop_rx.await;
                    })
                    .await
            })
        })
        .map_err(AgentError::Runtime)?;
    let addr = match bound_rx.recv() {
        Ok(Ok(addr)) => addr,
        Ok(Err(error)) => return Err(error),
        Err(_) => {
            return Err(AgentError::Serve(std::io::Error::other("the agent's thread ended before listening")))
        }
    };
    Ok(RunningAgent { addr, stop: Some(stop_tx), thread: Some(thread) })
}

/// Locks `mutex`, going on after a panic elsewhere: every value behind the agent's locks is
/// whole between statements.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
