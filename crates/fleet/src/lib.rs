//! Fleet mode: one workload on many hosts in lock-step. An agent (`iolab agent`) runs jobs for
//! a coordinator over a small versioned HTTP API; the coordinator (`iolab fleet`) checks every
//! host first, starts them at one instant, follows their live figures and merges their
//! histograms exactly, so the fleet's percentiles are those of the union of every I/O.
//!
//! A remote host is just another kind of worker: the coordinator is a `iolab_runner::Remote`,
//! so every study that runs in a `Lab` runs across a fleet unchanged.

pub mod agent;
pub mod coordinator;
pub mod merge;
pub mod protocol;
pub mod replay_wire;

#[cfg(test)]
mod merge_tests;
