//! Keeps the agents' leases alive while the coordinator lives: a thread per session renews it
//! a few times per lease, each on its own, so a host that hangs cannot delay the others'
//! renewals past their leases. When the coordinator dies, the renewals stop and each agent
//! stops its job when its lease runs out.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::client::AgentClient;

struct Renewal {
    session: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

pub struct Heartbeat {
    renewals: Vec<Renewal>,
}

impl Heartbeat {
    /// Renews each of `sessions` every `every`; a renewal that takes longer is given up, the
    /// next one tries again.
    pub fn start(sessions: Vec<(Arc<AgentClient>, String)>, every: Duration) -> Heartbeat {
        let renewals = sessions
            .into_iter()
            .map(|(client, session)| {
                let stop = Arc::new(AtomicBool::new(false));
                let (flag, id) = (stop.clone(), session.clone());
                let thread = std::thread::Builder::new()
                    .name("iolab-heartbeat".into())
                    .spawn(move || {
                        let mut last = Instant::now();
                        while !flag.load(Relaxed) {
                            std::thread::sleep(Duration::from_millis(20));
                            if last.elapsed() >= every {
                                last = Instant::now();
                                let _ = client.heartbeat(&id, every);
                            }
                        }
                    })
                    .expect("a thread can be started");
                Renewal { session, stop, thread: Some(thread) }
            })
            .collect();
        Heartbeat { renewals }
    }

    /// Stops renewing `session` (its host dropped out).
    pub fn forget(&self, session: &str) {
        self.renewals.iter().filter(|r| r.session == session).for_each(|r| r.stop.store(true, Relaxed));
    }

    /// Stops every renewal; a renewal in flight is not waited for.
    pub fn stop(&mut self) {
        for renewal in &mut self.renewals {
            renewal.stop.store(true, Relaxed);
            drop(renewal.thread.take());
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop();
    }
}
