//! The barrier that separates a shared tree's directory levels, with a way out: a thread that
//! will never arrive (its ring could not be made, it panicked) breaks the gate, and every
//! thread waiting at it, or arriving later, is let through with `false` instead of waiting
//! forever for it (std's `Barrier` has no such exit).

use std::sync::{Condvar, Mutex, PoisonError};

pub struct Gate {
    threads: usize,
    state: Mutex<State>,
    opened: Condvar,
}

struct State {
    waiting: usize,
    /// Counts the times the gate opened, so a waiter knows its own round is over.
    round: u64,
    broken: bool,
}

impl Gate {
    pub fn new(threads: usize) -> Gate {
        Gate {
            threads,
            state: Mutex::new(State { waiting: 0, round: 0, broken: false }),
            opened: Condvar::new(),
        }
    }

    /// Waits until all `threads` are here: true. False when the gate is broken (now or while
    /// waiting): some thread will not come, and the caller must stop.
    pub fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.broken {
            return false;
        }
        state.waiting += 1;
        if state.waiting >= self.threads {
            state.waiting = 0;
            state.round += 1;
            self.opened.notify_all();
            return true;
        }
        let round = state.round;
        while state.round == round && !state.broken {
            state = self.opened.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.round != round
    }

    /// Lets every waiter through, now and later, with `false`.
    pub fn break_open(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.broken = true;
        self.opened.notify_all();
    }
}

/// Breaks the gate if the thread holding it unwinds from a panic before the end.
pub struct BreakOnPanic<'a>(pub &'a Gate);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.break_open();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Gate;

    #[test]
    fn the_gate_opens_each_round_for_all_threads() {
        let gate = Gate::new(3);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..3).map(|_| s.spawn(|| (0..50).all(|_| gate.wait()))).collect();
            for h in handles {
                assert!(h.join().expect("thread"), "every round opened");
            }
        });
    }

    #[test]
    fn a_thread_that_never_comes_breaks_the_gate_for_the_others() {
        let gate = Gate::new(3);
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..2).map(|_| s.spawn(|| gate.wait())).collect();
            gate.break_open();
            for w in waiters {
                assert!(!w.join().expect("thread"), "a broken gate lets its waiters out with false");
            }
        });
        assert!(!gate.wait(), "and anyone arriving later");
    }
}
