//! Live figures where teams already look: `--metrics ADDR` serves a running command's figures
//! (IOPS, bytes per second and latency quantiles of the last interval, running totals of I/Os,
//! bytes and errors, per job, group and target) for Prometheus, as OpenMetrics or Prometheus
//! text. The figures come from an `Observer` like the progress line's, so every study that runs
//! in a `Lab` exports them without knowing of it. docs/metrics.md names every family.
//!
//! Nothing secret is ever a label: the figures name jobs, groups, targets, engines and hosts,
//! never a token or a job's contents beyond those.

mod families;
mod observer;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::registry::Registry;

pub use families::{Format, RunLabels};
pub use observer::MetricsObserver;
pub use server::{MetricsError, MetricsServer};

/// The figures of one process: what its observers set and its endpoint serves.
#[derive(Debug, Clone)]
pub struct Metrics {
    families: Arc<families::Families>,
    registry: Arc<Registry>,
}

impl Metrics {
    /// Figures of `command` (run, sweep, agent, ...) on this host.
    pub fn new(command: &str) -> Metrics {
        let read =
            |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
        Metrics::with_run(RunLabels {
            command: command.to_string(),
            host: read("/proc/sys/kernel/hostname"),
            version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }

    pub fn with_run(run: RunLabels) -> Metrics {
        let (families, registry) = families::Families::registered(run);
        Metrics { families: Arc::new(families), registry: Arc::new(registry) }
    }

    /// An observer that keeps these figures up to date with the jobs it hears of.
    pub fn observer(&self) -> MetricsObserver {
        MetricsObserver::new(Arc::clone(&self.families))
    }

    /// Serves the figures on `addr` (GET /metrics) until the returned server is dropped.
    pub fn serve(&self, addr: SocketAddr) -> Result<MetricsServer, MetricsError> {
        MetricsServer::start(addr, Arc::clone(&self.registry))
    }

    /// GET /metrics, for a caller that serves it on a listener of its own (the agent, within
    /// its connection limits).
    pub fn router(&self) -> axum::Router {
        server::router(Arc::clone(&self.registry))
    }

    /// The figures as a scrape would get them.
    pub fn render(&self, format: Format) -> String {
        families::render(&self.registry, format).unwrap_or_default()
    }
}
