//! The agent's metrics port (`--metrics`): served by the API's own accept loop (`serve.rs`), with
//! its header-read timeout, but with a few connections only, fewer than the descriptors the API
//! leaves. It was served by `axum::serve`, which takes every connection and waits for a head as
//! long as a peer likes: 1,135 idle connections to it under `ulimit -n 1024` took every
//! descriptor, and the coordinator's requests to the API went unanswered.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use iolab_metrics::Metrics;

use super::serve::{ConnectionProof, Limits};

/// Where the agent serves its figures, and the figures.
#[derive(Debug, Clone)]
pub struct MetricsPort {
    pub addr: SocketAddr,
    pub metrics: Metrics,
}

/// The most connections the metrics port holds at once: a Prometheus or two and a curl.
const MOST_CONNECTIONS: u64 = 16;

/// Descriptors kept for the agent's own work besides the API's connections: the runtime,
/// stdio, a job's targets and scratch files, a files session's tree.
const OWN_RESERVE: u64 = 128;

/// The metrics port's limits beside the API's `api`, in a process that may open `open_files`
/// descriptors (`None`: no limit known): the API's timeouts, and at most what the descriptor
/// limit leaves once the API's connections and the agent's own reserve are counted (at least
/// one, so the port still answers). A connection beyond makes the oldest one that has not yet
/// sent a request go, or is refused at once: either way it never holds a descriptor for long.
pub fn limits(api: &Limits, open_files: Option<u64>) -> Limits {
    let left = open_files.map_or(MOST_CONNECTIONS, |open| {
        open.saturating_sub(api.max_connections as u64).saturating_sub(OWN_RESERVE)
    });
    let most = usize::try_from(left.min(MOST_CONNECTIONS)).unwrap_or(1).max(1);
    Limits { max_connections: most, max_connections_per_peer: (most / 2).max(1), ..*api }
}

/// The process's soft limit on open descriptors (`ulimit -n`), if it can be read.
pub fn open_file_limit() -> Option<u64> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok().map(|(soft, _)| soft)
}

/// GET /metrics, where any whole request proves its connection: a scrape in progress is never
/// the one closed to make room, a peer that never finishes its head is.
pub fn router(metrics: &Metrics) -> Router {
    metrics.router().layer(axum::middleware::from_fn(whole_request_proves))
}

async fn whole_request_proves(request: Request, next: Next) -> Response {
    if let Some(proof) = request.extensions().get::<ConnectionProof>() {
        proof.proven();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_port_takes_only_what_the_descriptor_limit_leaves() {
        let api = Limits::default();
        let roomy = limits(&api, Some(1024));
        assert_eq!(roomy.max_connections, 16);
        assert_eq!(roomy.header_read, api.header_read, "the API's header timeout");
        let tight = limits(&api, Some(256 + 128 + 5));
        assert_eq!((tight.max_connections, tight.max_connections_per_peer), (5, 2));
        assert_eq!(limits(&api, Some(100)).max_connections, 1, "still answers one at a time");
        assert_eq!(limits(&api, None).max_connections, 16);
    }
}
