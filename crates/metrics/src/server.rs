//! The endpoint: GET /metrics on a socket of its own, served by axum on a one-thread tokio
//! runtime in a thread of its own, so a command without a runtime (run, sweep) serves it the
//! same way the agent does. The socket is bound before the thread starts, so a taken port is the
//! caller's error before anything runs; dropping the server stops it. The agent serves the
//! same `router` on its own runtime, within the limits its API has (iolab_fleet's `serve.rs`).

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;

use crate::families::{render, Format};

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics {addr}: cannot listen there: {source}; choose a free port (port 0 picks one)")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("--metrics: cannot start the metrics endpoint: {0}")]
    Start(std::io::Error),
}

/// A running endpoint; it stops when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    pub(crate) fn start(addr: SocketAddr, registry: Arc<Registry>) -> Result<Self, MetricsError> {
        let bind_error = |source| MetricsError::Bind { addr, source };
        let listener = TcpListener::bind(addr).map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(MetricsError::Start)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MetricsError::Start)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("iolab-metrics".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                    let _ = axum::serve(listener, router(registry))
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .map_err(MetricsError::Start)?;
        Ok(MetricsServer { address, stop: Some(stop), thread: Some(thread) })
    }

    /// Where it listens (the port chosen, when asked for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// GET /metrics, answered from `registry`.
pub(crate) fn router(registry: Arc<Registry>) -> axum::Router {
    axum::Router::new().route("/metrics", get(metrics)).with_state(registry)
}

async fn metrics(State(registry): State<Arc<Registry>>, headers: HeaderMap) -> Response {
    let format = Format::from_accept(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    match render(&registry, format) {
        Ok(text) => ([(header::CONTENT_TYPE, format.content_type())], text).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "the figures could not be encoded\n").into_response(),
    }
}
