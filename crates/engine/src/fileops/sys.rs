//! The operations, on either engine: each call is one operation, done in the thread's ring
//! when the kernel runs it there, else as its system call. Paths are relative to `dirfd` and
//! NUL-terminated (checked: an unterminated one is refused with InvalidInput).

use std::io;

use super::pathq::{PathDone, PathOp, PathQueue, QUEUE_DEPTH};
use super::ring::{Ring, RingOp};
use super::{CPath, FileOpsEngine};

/// One thread's operations: its ring (for `FileOpsEngine::Uring`) or none.
pub struct FileOps {
    ring: Option<Ring>,
    /// Path operations in flight (`queue_push`, `queue_wait`); made on first use.
    queue: Option<PathQueue>,
}

fn check(ret: libc::c_int) -> io::Result<i32> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_len(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

impl FileOps {
    /// A single-issuer ring belongs to the thread that made it: make one per thread.
    pub fn new(engine: FileOpsEngine) -> io::Result<FileOps> {
        let ring = match engine {
            FileOpsEngine::Uring => Some(Ring::new()?),
            FileOpsEngine::Sync => None,
        };
        Ok(FileOps { ring, queue: None })
    }

    /// Ring operations this kernel lacks (done as system calls instead).
    pub fn missing(&self) -> Vec<&'static str> {
        self.ring.as_ref().map(Ring::missing).unwrap_or_default()
    }

    fn ring(&mut self, op: RingOp) -> Option<&mut Ring> {
        // One-at-a-time operations take the ring's next completion as theirs: nothing queued
        // may be in flight (a caller's slip, drained here rather than misread). A drain fails
        // only on a broken ring, which then answers the operation with its error.
        if let (Some(ring), Some(queue)) = (self.ring.as_mut(), self.queue.as_mut()) {
            if queue.in_flight() > 0 {
                queue.drain(ring);
            }
        }
        self.ring.as_mut().filter(|r| r.supports(op))
    }

    /// How many `op`s this engine keeps in flight with `queue_push` and `queue_wait`:
    /// `QUEUE_DEPTH` on a ring that runs the operation, else 1 (use `stat`, `unlinkat`, or
    /// `openat` and `close`).
    pub fn queue_depth(&self, op: PathOp) -> usize {
        let ring_ops: &[RingOp] = match op {
            PathOp::Stat => &[RingOp::Statx],
            PathOp::Unlink => &[RingOp::UnlinkAt],
            PathOp::Create { sync: false, .. } => &[RingOp::OpenAt, RingOp::Write, RingOp::Close],
            PathOp::Create { sync: true, .. } => {
                &[RingOp::OpenAt, RingOp::Write, RingOp::Fsync, RingOp::Close]
            }
        };
        if self.ring.as_ref().is_some_and(|r| ring_ops.iter().all(|&op| r.supports(op))) {
            QUEUE_DEPTH
        } else {
            1
        }
    }

    /// Queues `op` on `path` (NUL-terminated, relative to `dirfd`) as `tag`, a number below
    /// `queue_depth(op)` not in flight; `queue_wait` sends it.
    pub fn queue_push(&mut self, op: PathOp, dirfd: i32, path: &[u8], tag: usize) -> io::Result<()> {
        let path = CPath::new(path)?;
        if self.queue_depth(op) == 1 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("no ring {op:?} here: one at a time"),
            ));
        }
        let Some(ring) = self.ring.as_mut() else { unreachable!("a queue depth above 1 has a ring") };
        self.queue.get_or_insert_with(PathQueue::new).push(ring, op, dirfd, path, tag)
    }

    /// The bytes queued creates write (`PathOp::Create`'s `len` of them), copied; refused while
    /// a create is in flight.
    pub fn queue_data(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.queue.get_or_insert_with(PathQueue::new).set_data(bytes)
    }

    /// Sends what is queued, waits for one at least to finish, and gives each finished one as
    /// (tag, what it did or its error). A create comes once per entry, `Opened`, `Wrote` when
    /// it writes, `Synced` when it syncs, then `Closed` (the slot is free after it), or its
    /// first error (the slot is free then, its descriptor closed).
    pub fn queue_wait(&mut self, done: impl FnMut(usize, io::Result<PathDone>)) -> io::Result<()> {
        match (self.ring.as_mut(), self.queue.as_mut()) {
            (Some(ring), Some(queue)) => queue.wait(ring, done),
            _ => Ok(()),
        }
    }

    /// Operations queued and not yet reaped.
    pub fn queued_in_flight(&self) -> usize {
        self.queue.as_ref().map_or(0, PathQueue::in_flight)
    }

    pub fn openat(&mut self, dirfd: i32, path: &[u8], flags: i32, mode: u32) -> io::Result<i32> {
        let path = CPath::new(path)?;
        if let Some(ring) = self.ring(RingOp::OpenAt) {
            return ring.openat(dirfd, path, flags, mode);
        }
        // SAFETY: `path` is a NUL-terminated string borrowed for the call.
        check(unsafe { libc::openat(dirfd, path.ptr(), flags | libc::O_CLOEXEC, mode) })
    }

    pub fn close(&mut self, fd: i32) -> io::Result<()> {
        if let Some(ring) = self.ring(RingOp::Close) {
            return ring.close(fd).map(drop);
        }
        // SAFETY: `fd` was opened by this thread and is closed once.
        check(unsafe { libc::close(fd) }).map(drop)
    }

    /// The file's size.
    pub fn stat(&mut self, dirfd: i32, path: &[u8]) -> io::Result<u64> {
        let path = CPath::new(path)?;
        if let Some(ring) = self.ring(RingOp::Statx) {
            // SAFETY: statx is plain old data; all zeroes is a valid value.
            let mut out: libc::statx = unsafe { std::mem::zeroed() };
            ring.statx(dirfd, path, &mut out)?;
            return Ok(out.stx_size);
        }
        let mut out = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `path` is NUL-terminated; `out` has room for a stat the kernel fills.
        check(unsafe { libc::fstatat(dirfd, path.ptr(), out.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) })?;
        // SAFETY: fstatat returned 0, so it filled `out`.
        Ok(unsafe { out.assume_init() }.st_size as u64)
    }

    pub fn read(&mut self, fd: i32, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if let Some(ring) = self.ring(RingOp::Read) {
            return ring.read(fd, buf, offset).map(|n| n as usize);
        }
        // SAFETY: `buf` is writable for its length for the whole call.
        check_len(unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset as libc::off_t) })
    }

    pub fn write(&mut self, fd: i32, buf: &[u8], offset: u64) -> io::Result<usize> {
        if let Some(ring) = self.ring(RingOp::Write) {
            return ring.write(fd, buf, offset).map(|n| n as usize);
        }
        // SAFETY: `buf` is readable for its length for the whole call.
        check_len(unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), offset as libc::off_t) })
    }

    pub fn fsync(&mut self, fd: i32) -> io::Result<()> {
        if let Some(ring) = self.ring(RingOp::Fsync) {
            return ring.fsync(fd).map(drop);
        }
        // SAFETY: plain system call on a descriptor this thread owns.
        check(unsafe { libc::fsync(fd) }).map(drop)
    }

    pub fn unlinkat(&mut self, dirfd: i32, path: &[u8], dir: bool) -> io::Result<()> {
        let path = CPath::new(path)?;
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        if let Some(ring) = self.ring(RingOp::UnlinkAt) {
            return ring.unlinkat(dirfd, path, flags).map(drop);
        }
        // SAFETY: `path` is NUL-terminated and borrowed for the call.
        check(unsafe { libc::unlinkat(dirfd, path.ptr(), flags) }).map(drop)
    }

    pub fn mkdirat(&mut self, dirfd: i32, path: &[u8]) -> io::Result<()> {
        let path = CPath::new(path)?;
        if let Some(ring) = self.ring(RingOp::MkDirAt) {
            return ring.mkdirat(dirfd, path, 0o755).map(drop);
        }
        // SAFETY: `path` is NUL-terminated and borrowed for the call.
        check(unsafe { libc::mkdirat(dirfd, path.ptr(), 0o755) }).map(drop)
    }

    pub fn renameat(&mut self, dirfd: i32, old: &[u8], new: &[u8]) -> io::Result<()> {
        let (old, new) = (CPath::new(old)?, CPath::new(new)?);
        if let Some(ring) = self.ring(RingOp::RenameAt) {
            return ring.renameat(dirfd, old, new).map(drop);
        }
        // SAFETY: both paths are NUL-terminated and borrowed for the call.
        check(unsafe { libc::renameat(dirfd, old.ptr(), dirfd, new.ptr()) }).map(drop)
    }

    /// A hard link `new` to `old`, both in directory `dirfd`, not following `old` if it is a
    /// link. As a system call on every engine (the ring's linkat is not used).
    pub fn linkat(&mut self, dirfd: i32, old: &[u8], new: &[u8]) -> io::Result<()> {
        let (old, new) = (CPath::new(old)?, CPath::new(new)?);
        // SAFETY: both paths are NUL-terminated and borrowed for the call.
        check(unsafe { libc::linkat(dirfd, old.ptr(), dirfd, new.ptr(), 0) }).map(drop)
    }

    /// A symbolic link `name` in directory `dirfd` holding `target` (never resolved here). As a
    /// system call on every engine.
    pub fn symlinkat(&mut self, target: &[u8], dirfd: i32, name: &[u8]) -> io::Result<()> {
        let (target, name) = (CPath::new(target)?, CPath::new(name)?);
        // SAFETY: both strings are NUL-terminated and borrowed for the call.
        check(unsafe { libc::symlinkat(target.ptr(), dirfd, name.ptr()) }).map(drop)
    }

    /// Sets the entry's access and modification times to now, not following a link (a metadata
    /// write, as touch). No ring operation sets times: utimensat on every engine.
    pub fn setattr(&mut self, dirfd: i32, path: &[u8]) -> io::Result<()> {
        let path = CPath::new(path)?;
        // SAFETY: `path` is NUL-terminated; a null `times` means now for both.
        check(unsafe { libc::utimensat(dirfd, path.ptr(), std::ptr::null(), libc::AT_SYMLINK_NOFOLLOW) })
            .map(drop)
    }

    /// Sets extended attribute `name` (NUL-terminated) of open file `fd` to `value`. As a system
    /// call on every engine (the ring's xattr operations are not used).
    pub fn set_xattr(&mut self, fd: i32, name: &[u8], value: &[u8]) -> io::Result<()> {
        let name = CPath::new(name)?;
        // SAFETY: `name` is NUL-terminated and `value` readable for its length for the call.
        check(unsafe { libc::fsetxattr(fd, name.ptr(), value.as_ptr().cast(), value.len(), 0) }).map(drop)
    }

    /// Reads extended attribute `name` (NUL-terminated) of open file `fd` into `buf`: its length.
    pub fn get_xattr(&mut self, fd: i32, name: &[u8], buf: &mut [u8]) -> io::Result<usize> {
        let name = CPath::new(name)?;
        // SAFETY: `name` is NUL-terminated and `buf` writable for its length for the call.
        check_len(unsafe { libc::fgetxattr(fd, name.ptr(), buf.as_mut_ptr().cast(), buf.len()) })
    }

    /// Reads directory `fd` to its end: the entries other than "." and "..". No ring operation
    /// reads a directory, so this is getdents64 on every engine.
    pub fn read_dir(&mut self, fd: i32, buf: &mut [u8]) -> io::Result<u64> {
        let mut entries = 0;
        loop {
            // SAFETY: `buf` is writable for its length; getdents64 writes at most that much.
            let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Ok(entries);
            }
            let mut at = 0usize;
            while at < n as usize {
                // linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name...
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                let name = &buf[at + 19..at + reclen];
                let is_dot = name.starts_with(b".\0") || name.starts_with(b"..\0");
                entries += u64::from(!is_dot);
                at += reclen.max(1);
            }
        }
    }
}

impl Drop for FileOps {
    /// Queued operations still in flight own their slots until reaped: wait for them, and if
    /// the ring cannot, leave the slots allocated rather than free memory the kernel may still
    /// write.
    fn drop(&mut self) {
        if let (Some(ring), Some(mut queue)) = (self.ring.as_mut(), self.queue.take()) {
            if !queue.drain(ring) {
                std::mem::forget(queue);
            }
        }
    }
}
