//! I/O engines behind one trait, the targets they work on, and the checks made before writing.
//!
//! The contract follows fio's: `queue` a request (or hear "busy"), `commit` queued requests to
//! the kernel and wait for some to finish, `reap` what finished. An engine never knows about
//! phases or sweeps; it moves bytes. Every `unsafe` of the project lives in this crate.

mod aio;
pub mod block;
pub mod blockcheck;
mod buffers;
pub mod content;
mod engine;
mod error;
pub mod exit_cleanup;
pub mod fileops;
mod null;
pub mod nvme_admin;
mod open;
pub mod probe;
mod psync;
pub mod readback;
pub mod safety;
pub mod stamp;
pub mod target;
mod uring;

pub use engine::{Completion, Engine, EngineConfig, IoRequest, Op, Queued};
pub use error::EngineError;
pub use open::{open_engine, WithEngine};
