//! Keeps the agents' leases alive while the coordinator lives: a thread that renews every
//! session a few times per lease. When the coordinator dies, the renewals stop and each agent
//! stops its job when the lease runs out.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::client::AgentClient;

type Sessions = Arc<Mutex<Vec<(Arc<AgentClient>, String)>>>;

pub struct Heartbeat {
    sessions: Sessions,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Renews each of `sessions` every `every`.
    pub fn start(sessions: Vec<(Arc<AgentClient>, String)>, every: Duration) -> Heartbeat {
        let sessions: Sessions = Arc::new(Mutex::new(sessions));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (sessions, stop) = (sessions.clone(), stop.clone());
            std::thread::Builder::new()
                .name("iolab-heartbeat".into())
                .spawn(move || {
                    let mut last = Instant::now();
                    while !stop.load(Relaxed) {
                        std::thread::sleep(Duration::from_millis(20));
                        if last.elapsed() < every {
                            continue;
                        }
                        last = Instant::now();
                        let current = sessions.lock().map(|s| s.clone()).unwrap_or_default();
                        // One at a time would let one slow host starve the others' leases.
                        std::thread::scope(|scope| {
                            for (client, session) in &current {
                                scope.spawn(move || client.heartbeat(session));
                            }
                        });
                    }
                })
                .expect("a thread can be started")
        };
        Heartbeat { sessions, stop, thread: Some(thread) }
    }

    /// Stops renewing `session` (its host dropped out).
    pub fn forget(&self, session: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|(_, s)| s != session);
        }
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop();
    }
}
