//! The directories a thread works in, held open: every operation names one entry relative to
//! the descriptor of the directory that holds it, and that descriptor was opened beneath the
//! run's directory without following a link (`open_dir_beneath`). A directory of the tree
//! swapped for a symbolic link while the run works is refused when the thread next opens it,
//! and an entry is never made, read or removed through a link, wherever it points.
//!
//! One directory is held per side of the tree (a copy reads the source's leaf and writes the
//! copy's); the next one replaces it. A descriptor that queued operations in flight still name
//! is closed only once the last of them is reaped: the kernel resolves their names against it
//! when it runs them.

use std::io;

use iolab_engine::fileops::{close_dir, open_dir_beneath};

use crate::tree::{Side, Tree};

struct Held {
    side: Side,
    level: u32,
    index: u64,
    fd: i32,
    /// Queued operations in flight that name an entry in it.
    users: usize,
}

pub(crate) struct Parents {
    /// The run's directory, which every tree's root is in (not owned here).
    root: i32,
    current: Vec<Held>,
    /// Replaced while operations in flight still named them.
    retired: Vec<Held>,
    path: Vec<u8>,
}

/// Why a directory could not be opened, said so that a link in the tree is plain.
pub(crate) fn refused(error: io::Error) -> io::Error {
    if error.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            error.kind(),
            "a symbolic link is on the way (the directory, or one above it, was replaced by a link): iolab follows no link in the tree and stopped here",
        )
    } else {
        error
    }
}

impl Parents {
    pub(crate) fn new(root: i32) -> Parents {
        Parents { root, current: Vec::with_capacity(2), retired: Vec::new(), path: Vec::with_capacity(256) }
    }

    /// The descriptor of the directory that holds directory `index` of `level`: the run's
    /// directory for a tree's root.
    pub(crate) fn of_dir(&mut self, tree: &Tree, side: Side, level: u32, index: u64) -> io::Result<i32> {
        match tree.parent_of(level, index) {
            None => Ok(self.root),
            Some(up) => self.dir(tree, side, level - 1, up),
        }
    }

    /// The descriptor of file `index`'s leaf directory.
    pub(crate) fn of_file(&mut self, tree: &Tree, side: Side, index: u64) -> io::Result<i32> {
        self.dir(tree, side, tree.depth, tree.leaf_of(index))
    }

    /// The descriptor of directory `index` of `level` on `side`, opened beneath the run's
    /// directory unless it is the one held.
    pub(crate) fn dir(&mut self, tree: &Tree, side: Side, level: u32, index: u64) -> io::Result<i32> {
        let at = self.current.iter().position(|h| h.side == side);
        if let Some(held) = at.map(|i| &self.current[i]) {
            if held.level == level && held.index == index {
                return Ok(held.fd);
            }
        }
        tree.dir_path(side, level, index, &mut self.path);
        let fd = open_dir_beneath(self.root, &self.path).map_err(refused)?;
        let held = Held { side, level, index, fd, users: 0 };
        let old = match at {
            Some(i) => std::mem::replace(&mut self.current[i], held),
            None => {
                self.current.push(held);
                return Ok(fd);
            }
        };
        if old.users == 0 {
            close_dir(old.fd);
        } else {
            self.retired.push(old);
        }
        Ok(fd)
    }

    /// A queued operation naming an entry in `fd` (one this gave) was sent.
    pub(crate) fn hold(&mut self, fd: i32) {
        if let Some(held) = self.current.iter_mut().chain(self.retired.iter_mut()).find(|h| h.fd == fd) {
            held.users += 1;
        }
    }

    /// A queued operation naming an entry in `fd` was reaped: a replaced directory no longer
    /// named is closed.
    pub(crate) fn release(&mut self, fd: i32) {
        if let Some(held) = self.current.iter_mut().chain(self.retired.iter_mut()).find(|h| h.fd == fd) {
            held.users = held.users.saturating_sub(1);
        }
        self.retired.retain(|h| {
            if h.users == 0 {
                close_dir(h.fd);
            }
            h.users > 0
        });
    }
}

impl Drop for Parents {
    /// Closes what is held; a descriptor operations in flight still name (a ring that broke
    /// before reaping them) stays open rather than let its number name another directory.
    fn drop(&mut self) {
        for held in self.current.drain(..).chain(self.retired.drain(..)) {
            if held.users == 0 {
                close_dir(held.fd);
            }
        }
    }
}
