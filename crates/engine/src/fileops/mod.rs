//! File and directory operations one at a time, for the fileset workload (crates/files): each
//! call is one operation (openat, statx, read, write, fsync, unlinkat, mkdirat, renameat,
//! close, getdents64), done in the calling thread's own io_uring when the kernel runs it there,
//! else as its system call. Here because every `unsafe` of the project lives in this crate;
//! the API is safe: paths are checked to be NUL-terminated (one byte compared, nothing copied)
//! and a ring entry's borrowed memory is held until its completion is reaped.
//!
//! Descriptors are plain `i32`s the caller owns, as the fileset keeps thousands open and shut
//! in its hot loop; closing one the caller does not own is its own bug, not memory unsafety.

mod aligned_buf;
mod beneath;
mod entry;
mod pathq;
mod ring;
mod sys;

use std::io;

pub use aligned_buf::AlignedBuf;
pub use beneath::{close_dir, open_dir_beneath};
pub use entry::{entry_stat, touch, EntryKind, EntryStat};
pub use pathq::{PathDone, PathOp, QUEUE_DEPTH};
pub use sys::FileOps;

/// Where the operations run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOpsEngine {
    /// One ring per thread; each operation an entry, waited for before the next.
    Uring,
    /// Plain system calls.
    Sync,
}

impl FileOpsEngine {
    /// As `iolab files --engine` names it.
    pub fn name(self) -> &'static str {
        match self {
            FileOpsEngine::Uring => "io_uring",
            FileOpsEngine::Sync => "sync",
        }
    }
}

/// A path relative to a directory descriptor, checked to end in NUL so the kernel's reading of
/// it stops inside the borrowed bytes.
#[derive(Clone, Copy)]
struct CPath<'a>(&'a [u8]);

impl<'a> CPath<'a> {
    fn new(path: &'a [u8]) -> io::Result<CPath<'a>> {
        if path.last() == Some(&0) {
            Ok(CPath(path))
        } else {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "a path given to fileops must end in NUL"))
        }
    }

    fn ptr(self) -> *const libc::c_char {
        self.0.as_ptr().cast()
    }
}

#[cfg(test)]
mod tests;
