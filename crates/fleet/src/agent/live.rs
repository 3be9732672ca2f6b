//! A job's live events, kept in order so a coordinator can (re)read them from any index, and
//! streamed as NDJSON as they come. The session thread writes; any number of streams read.

use std::convert::Infallible;
use std::sync::Mutex;

use axum::body::{Body, Bytes};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use crate::protocol::LiveEvent;

use super::lock;

pub struct EventLog {
    state: Mutex<LogState>,
    /// Bumped on every change, so readers wake without polling.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct LogState {
    /// Which job the events belong to: a new prepare starts a new log.
    generation: u64,
    events: Vec<LiveEvent>,
    closed: bool,
}

/// What a reader gets: events from its index on, and whether the stream is over.
pub struct Batch {
    pub events: Vec<LiveEvent>,
    pub over: bool,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog { state: Mutex::default(), changed: watch::channel(0).0 }
    }
}

impl EventLog {
    pub fn push(&self, event: LiveEvent) {
        lock(&self.state).events.push(event);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Forgets the last job's events: the next job's are numbered from 0.
    pub fn reset(&self) {
        {
            let mut state = lock(&self.state);
            state.generation += 1;
            state.events.clear();
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// The session is over: every stream ends.
    pub fn close(&self) {
        lock(&self.state).closed = true;
        self.changed.send_modify(|n| *n += 1);
    }

    /// Wakes on the next change after this call.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// Events of `generation` from `from` on; over once the job ended, the log moved on to
    /// another job or the session closed.
    fn read(&self, generation: u64, from: usize) -> Batch {
        let state = lock(&self.state);
        if state.generation != generation {
            return Batch { events: Vec::new(), over: true };
        }
        let mut events = Vec::new();
        let mut over = state.closed;
        for event in state.events.iter().skip(from) {
            events.push(event.clone());
            if matches!(event, LiveEvent::Finished | LiveEvent::Failed { .. }) {
                over = true;
                break;
            }
        }
        Batch { events, over }
    }
}

/// How often an idle stream says it is alive (an empty line): a coordinator that hears nothing
/// for several of these knows the agent or the path to it is gone, even with the TCP
/// connection still open.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(1);

/// The NDJSON stream of `log`'s current job from event `from` on, until the job ends; an empty
/// line every `KEEP_ALIVE` while nothing happens.
pub fn ndjson(log: std::sync::Arc<EventLog>, from: usize) -> Body {
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    tokio::spawn(async move {
        let generation = log.generation();
        let mut next = from;
        loop {
            let mut changed = log.subscribe();
            let batch = log.read(generation, next);
            next += batch.events.len();
            for event in batch.events {
                let mut line = serde_json::to_vec(&event).unwrap_or_default();
                line.push(b'\n');
                if tx.send(Ok(Bytes::from(line))).await.is_err() {
                    return; // the reader went away
                }
            }
            if batch.over {
                return;
            }
            tokio::select! {
                woke = changed.changed() => if woke.is_err() { return },
                () = tx.closed() => return,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    if tx.send(Ok(Bytes::from_static(b"\n"))).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    Body::from_stream(ReceiverStream::new(rx))
}
