//! The null engine: every request completes at once, with no system call. It measures what
//! iolab itself costs per I/O, and lets tests run the whole pipeline in milliseconds.

use crate::engine::{Completion, Engine, EngineConfig, IoRequest, Queued};
use crate::error::EngineError;

pub struct NullEngine {
    done: Vec<Completion>,
    depth: usize,
}

impl NullEngine {
    pub fn new(config: EngineConfig) -> Self {
        NullEngine { done: Vec::with_capacity(config.qd as usize), depth: config.qd as usize }
    }
}

impl Engine for NullEngine {
    fn queue(&mut self, request: IoRequest) -> Queued {
        if self.done.len() >= self.depth {
            return Queued::Busy;
        }
        self.done.push(Completion { slot: request.slot, result: request.len as i32 });
        Queued::Accepted
    }

    fn commit(&mut self, _wait_for: u32) -> Result<(), EngineError> {
        Ok(())
    }

    /// Every request completed when it was queued: there is never anything to wait for.
    fn commit_until(&mut self, _wait_for: u32, _timeout_ns: u64) -> Result<(), EngineError> {
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        out.append(&mut self.done);
    }

    fn in_flight(&self) -> u32 {
        self.done.len() as u32
    }
}
