//! The directories a thread works in, held open: every operation names one entry relative to
//! the descriptor of the directory that holds it, and that descriptor was opened beneath the
//! run's directory without following a link (`open_dir_beneath`). A directory of the tree
//! swapped for a symbolic link while the run works is refused when the thread next opens it,
//! and an entry is never made, read or removed through a link, wherever it points.
//!
//! Up to `capacity` directories are held per side of the tree (a copy reads the source's leaf
//! and writes the copy's), the least recently used replaced first: in index order one would
//! do, but `--order random` moves between leaves at every file, and reopening the leaf beneath
//! the run's directory for each (an openat2 and a close) cost random stat 44% of its rate. The
//! capacity shares a quarter of the process's descriptor limit among the threads. A descriptor
//! that queued operations in flight still name is closed only once the last of them is reaped:
//! the kernel resolves their names against it when it runs them.

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
    /// When it was last given out (`Parents::clock`): the least recent is replaced first.
    used: u64,
}

/// Directories held per side at most.
const MOST_HELD: usize = 64;

pub(crate) struct Parents {
    /// The run's directory, which every tree's root is in (not owned here).
    root: i32,
    current: Vec<Held>,
    /// Directories held per side.
    capacity: usize,
    clock: u64,
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
    /// For one of `threads` threads working beneath `root`.
    pub(crate) fn new(root: i32, threads: u32) -> Parents {
        let capacity =
            (descriptor_limit() / 4 / u64::from(threads.max(1))).clamp(1, MOST_HELD as u64) as usize;
        Parents {
            root,
            current: Vec::with_capacity(capacity),
            capacity,
            clock: 0,
            retired: Vec::new(),
            path: Vec::with_capacity(256),
        }
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
        self.clock += 1;
        let clock = self.clock;
        if let Some(held) =
            self.current.iter_mut().find(|h| h.side == side && h.level == level && h.index == index)
        {
            held.used = clock;
            return Ok(held.fd);
        }
        tree.dir_path(side, level, index, &mut self.path);
        let fd = open_dir_beneath(self.root, &self.path).map_err(refused)?;
        let held = Held { side, level, index, fd, users: 0, used: clock };
        if self.current.iter().filter(|h| h.side == side).count() < self.capacity {
            self.current.push(held);
            return Ok(fd);
        }
        let oldest = (0..self.current.len())
            .filter(|&i| self.current[i].side == side)
            .min_by_key(|&i| self.current[i].used)
            .expect("a full side holds a directory");
        let old = std::mem::replace(&mut self.current[oldest], held);
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

/// The soft limit on this process's open descriptors (1024 where it cannot be read).
fn descriptor_limit() -> u64 {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::FilesOptions;

    /// `--order random` moves between leaves at every file: each leaf is opened once while the
    /// leaves fit, the least recently used replaced past that.
    #[test]
    fn leaves_stay_open_while_they_fit_and_the_least_recent_goes_first() {
        let temp = tempfile::tempdir().expect("a temp dir");
        for leaf in 0..5 {
            std::fs::create_dir_all(temp.path().join(format!("t0/d{leaf}"))).expect("a leaf");
        }
        let plan = FilesOptions { files: Some(50), dirs_per_dir: Some(5), ..Default::default() }
            .plan()
            .expect("plan");
        let tree = Tree::new(&plan, 0);
        let root = std::fs::File::open(temp.path()).expect("the run's directory");
        let mut parents = Parents::new(std::os::fd::AsRawFd::as_raw_fd(&root), 1);
        parents.capacity = 3;
        let first: Vec<i32> =
            (0..3).map(|leaf| parents.dir(&tree, Side::Source, 1, leaf).expect("open")).collect();
        // Back and forth among three: the same descriptors, nothing reopened.
        for leaf in [2, 0, 1, 0, 2] {
            assert_eq!(parents.dir(&tree, Side::Source, 1, leaf).expect("held"), first[leaf as usize]);
        }
        // A fourth replaces the least recently used (leaf 1), and the others stay.
        parents.dir(&tree, Side::Source, 1, 3).expect("open");
        assert_eq!(parents.current.len(), 3);
        assert!(!parents.current.iter().any(|h| h.index == 1), "leaf 1 was the least recent");
        assert_eq!(parents.dir(&tree, Side::Source, 1, 2).expect("held"), first[2]);
    }
}
