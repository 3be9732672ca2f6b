//! Engine errors: the failing call and the OS error, so a user sees what the kernel refused.

use std::io;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    /// The I/O interface itself is not available (io_uring disabled or missing).
    #[error("{0}")]
    Unavailable(String),
    /// A system call of the engine failed (not an I/O error of a request).
    #[error("{call} failed: {source}")]
    Syscall {
        call: &'static str,
        #[source]
        source: io::Error,
    },
}
