//! The agent's one session slot: who holds it, the lease watchdog that frees it when its
//! coordinator goes silent, and closing (the slot frees only once the session's thread, and
//! with it any scratch file, is gone).

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_metrics::MetricsObserver;

use crate::protocol::{OpenSession, SessionOpened, MAX_COORDINATOR_NAME, MAX_LEASE_MS, MIN_LEASE_MS};

use super::config::Judge;
use super::error::Failure;
use super::lock;
use super::log::say;
use super::refusal_log::capped;
use super::session::Session;
use super::targets::AllowList;
use super::worker;

/// How often the watchdog looks at the lease: a job stops within lease + this + the runner's
/// own reaction to its interrupt flag.
const WATCH_EVERY: Duration = Duration::from_millis(100);

pub struct Slot {
    current: Mutex<Option<Arc<Session>>>,
    allow: Arc<AllowList>,
    max_lease_ms: u64,
    /// Hears the jobs of every session (`iolab agent --metrics`).
    metrics: Option<MetricsObserver>,
    /// Judges each job a session runs (`AgentConfig::judge`).
    judge: Judge,
}

impl Slot {
    pub fn new(allow: Arc<AllowList>, max_lease: Duration, judge: Judge) -> Self {
        let max_lease_ms =
            u64::try_from(max_lease.as_millis()).unwrap_or(u64::MAX).clamp(MIN_LEASE_MS, MAX_LEASE_MS);
        Slot { current: Mutex::new(None), allow, max_lease_ms, metrics: None, judge }
    }

    /// Has `metrics` hear every job a session runs.
    pub fn watched_by(self, metrics: Option<MetricsObserver>) -> Self {
        Slot { metrics, ..self }
    }

    pub fn allow(&self) -> &AllowList {
        &self.allow
    }

    /// Who holds the slot, for `Hello::session`.
    pub fn holder(&self) -> Option<String> {
        lock(&self.current).as_ref().map(|s| s.coordinator.clone())
    }

    pub fn open(&self, request: &OpenSession) -> Result<SessionOpened, Failure> {
        // The name is logged and echoed (`Hello::session`, a busy answer): a sane one only.
        let name = &request.coordinator;
        if name.len() > MAX_COORDINATOR_NAME || name.chars().any(char::is_control) {
            return Err(Failure::bad_request(format!(
                "the coordinator name '{}' is over {MAX_COORDINATOR_NAME} bytes or holds control characters; name it by its host (e.g. its hostname and process id)",
                capped(name, 64)
            )));
        }
        if !(MIN_LEASE_MS..=self.max_lease_ms).contains(&request.lease_ms) {
            return Err(Failure::bad_request(format!(
                "lease_ms {} is outside {MIN_LEASE_MS}..={}, the leases this agent grants; ask for one inside",
                request.lease_ms, self.max_lease_ms
            )));
        }
        let mut current = lock(&self.current);
        if let Some(held) = current.as_ref() {
            let what = if held.closing() { "closing" } else { "live" };
            return Err(Failure::conflict(format!(
                "this agent is busy: a session of coordinator '{}' is {what}; wait for it to end (its lease is {} ms) and try again",
                held.coordinator,
                held.lease.as_millis()
            )));
        }
        let id = session_id()?;
        let lease = Duration::from_millis(request.lease_ms);
        let allow = Arc::clone(&self.allow);
        let session = worker::open_session(
            id.clone(),
            request.coordinator.clone(),
            lease,
            allow,
            self.metrics.clone(),
            self.judge,
        )?;
        *current = Some(session);
        say!(
            "iolab agent: session {id} opened by coordinator '{}' (lease {} ms)",
            request.coordinator,
            request.lease_ms
        );
        Ok(SessionOpened { session: id, lease_ms: request.lease_ms })
    }

    /// The live session `id`, its lease renewed.
    pub fn get(&self, id: &str) -> Result<Arc<Session>, Failure> {
        let current = lock(&self.current);
        match current.as_ref() {
            Some(session) if session.id == id && !session.closing() => {
                session.renew();
                Ok(Arc::clone(session))
            }
            Some(session) if session.id == id => Err(Failure::new(
                axum::http::StatusCode::GONE,
                format!("session {id} is closing; open a new one"),
            )),
            _ => Err(Failure::not_found(format!(
                "no session {id} on this agent (it was closed, or its lease ran out); open a new one"
            ))),
        }
    }

    /// Stops the session's job, waits for its thread and frees the slot.
    pub async fn close(self: &Arc<Self>, session: Arc<Session>, why: &str) {
        session.begin_close();
        let slot = Arc::clone(self);
        let closed = Arc::clone(&session);
        let joined = tokio::task::spawn_blocking(move || closed.join()).await;
        if joined.is_err() {
            say!("iolab agent: could not wait for session {}'s thread", session.id);
        }
        let mut current = lock(&slot.current);
        if current.as_ref().is_some_and(|s| Arc::ptr_eq(s, &session)) {
            *current = None;
        }
        say!("iolab agent: session {} of coordinator '{}' closed ({why})", session.id, session.coordinator);
    }

    /// Closes the session of a coordinator that stopped renewing its lease.
    pub async fn watch_leases(self: Arc<Self>) {
        let mut tick = tokio::time::interval(WATCH_EVERY);
        loop {
            tick.tick().await;
            let expired = {
                let current = lock(&self.current);
                current
                    .as_ref()
                    .filter(|s| !s.closing())
                    .and_then(|s| s.expired(Instant::now()).map(|silent| (Arc::clone(s), silent)))
            };
            if let Some((session, silent)) = expired {
                say!(
                    "iolab agent: coordinator '{}' silent for {:.1}s: stopping the job",
                    session.coordinator,
                    silent.as_secs_f64()
                );
                let slot = Arc::clone(&self);
                tokio::spawn(async move { slot.close(session, "lease expired").await });
            }
        }
    }

    /// Closes any session (the agent is stopping).
    pub async fn close_all(self: &Arc<Self>) {
        let session = lock(&self.current).clone();
        if let Some(session) = session {
            self.close(session, "the agent is stopping").await;
        }
    }
}

/// 128 random bits from the kernel, in hex: a session id nobody can guess.
fn session_id() -> Result<String, Failure> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).map_err(|e| {
        Failure::internal(format!("cannot read /dev/urandom for a session id: {e}; check the agent's host"))
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
