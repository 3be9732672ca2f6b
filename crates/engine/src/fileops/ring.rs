//! A thread's ring for metadata: one entry at a time, waited for before the next, so each
//! operation's latency is its own. The kernel is probed once; an operation it lacks is done
//! with its system call (and said in the run's notes).

use std::io;

use io_uring::{opcode, squeue, types, IoUring, Probe};

use super::CPath;

/// The ring operations the fileset uses, as a bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RingOp {
    OpenAt = 0,
    Statx,
    Close,
    Read,
    Write,
    UnlinkAt,
    MkDirAt,
    RenameAt,
    Fsync,
}

const RING_OPS: [(RingOp, &str, u8); 9] = [
    (RingOp::OpenAt, "openat", opcode::OpenAt::CODE),
    (RingOp::Statx, "statx", opcode::Statx::CODE),
    (RingOp::Close, "close", opcode::Close::CODE),
    (RingOp::Read, "read", opcode::Read::CODE),
    (RingOp::Write, "write", opcode::Write::CODE),
    (RingOp::UnlinkAt, "unlinkat", opcode::UnlinkAt::CODE),
    (RingOp::MkDirAt, "mkdirat", opcode::MkDirAt::CODE),
    (RingOp::RenameAt, "renameat", opcode::RenameAt::CODE),
    (RingOp::Fsync, "fsync", opcode::Fsync::CODE),
];

/// Room for the stats a thread keeps in flight (`STAT_DEPTH`) and more.
const RING_ENTRIES: u32 = 32;

pub(super) struct Ring {
    ring: IoUring,
    /// Bit `RingOp as u8` set: the kernel runs it in the ring.
    supported: u16,
}

impl Ring {
    /// A small ring for one thread: single issuer with deferred task work where the kernel has
    /// them (completions run when the thread waits, not by interrupting it), plain otherwise.
    pub(super) fn new() -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(RING_ENTRIES)
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(RING_ENTRIES))
            .or_else(|_| IoUring::new(RING_ENTRIES))?;
        let mut probe = Probe::new();
        let mut supported = 0u16;
        if ring.submitter().register_probe(&mut probe).is_ok() {
            for (op, _, code) in RING_OPS {
                if probe.is_supported(code) {
                    supported |= 1 << op as u8;
                }
            }
        }
        Ok(Ring { ring, supported })
    }

    pub(super) fn supports(&self, op: RingOp) -> bool {
        self.supported & (1 << op as u8) != 0
    }

    /// The names of the operations this kernel cannot run in a ring.
    pub(super) fn missing(&self) -> Vec<&'static str> {
        RING_OPS.iter().filter(|(op, _, _)| !self.supports(*op)).map(|(_, name, _)| *name).collect()
    }

    /// Runs `entry` and waits for it: its result, or the error the kernel gave.
    ///
    /// # Safety
    /// Every pointer in `entry` (paths, buffers, statx) must stay valid until this returns.
    unsafe fn run(&mut self, entry: squeue::Entry) -> io::Result<i32> {
        // A failed submit other than EINTR returns with the entry still queued: a known gap
        // (issue 16), see the closing note.
        // SAFETY: the caller keeps the entry's pointers valid until this returns.
        unsafe { self.ring.submission().push(&entry) }
            .map_err(|_| io::Error::other("the ring's submission queue is full"))?;
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if let Some(cqe) = self.ring.completion().next() {
                let res = cqe.result();
                return if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res) };
            }
        }
    }

    /// Queues `entry` (its `user_data` set) without submitting it.
    ///
    /// # Safety
    /// Every pointer in `entry` must stay valid until its completion has been reaped.
    pub(super) unsafe fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        // SAFETY: the caller keeps the entry's pointers valid until its completion is reaped.
        unsafe { self.ring.submission().push(entry) }
            .map_err(|_| io::Error::other("the ring's submission queue is full"))
    }

    /// Submits what is queued and waits until `want` completions are there.
    pub(super) fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Each completion there, as (user_data, result).
    pub(super) fn reap(&mut self, mut done: impl FnMut(u64, i32)) {
        for cqe in self.ring.completion() {
            done(cqe.user_data(), cqe.result());
        }
    }

    pub(super) fn openat(&mut self, dirfd: i32, path: CPath<'_>, flags: i32, mode: u32) -> io::Result<i32> {
        let entry = opcode::OpenAt::new(types::Fd(dirfd), path.ptr())
            .flags(flags | libc::O_CLOEXEC)
            .mode(mode)
            .build();
        // SAFETY: `path` (checked NUL-terminated) is borrowed for the whole call.
        unsafe { self.run(entry) }
    }

    pub(super) fn statx(&mut self, dirfd: i32, path: CPath<'_>, out: &mut libc::statx) -> io::Result<i32> {
        let entry =
            opcode::Statx::new(types::Fd(dirfd), path.ptr(), std::ptr::from_mut(out).cast::<types::statx>())
                .mask(libc::STATX_BASIC_STATS)
                .flags(libc::AT_SYMLINK_NOFOLLOW)
                .build();
        // SAFETY: `path` and `out` are borrowed for the whole call.
        unsafe { self.run(entry) }
    }

    pub(super) fn close(&mut self, fd: i32) -> io::Result<i32> {
        // SAFETY: the entry holds no pointer.
        unsafe { self.run(opcode::Close::new(types::Fd(fd)).build()) }
    }

    pub(super) fn read(&mut self, fd: i32, buf: &mut [u8], offset: u64) -> io::Result<i32> {
        let entry =
            opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), buf.len() as u32).offset(offset).build();
        // SAFETY: `buf` is borrowed mutably for the whole call.
        unsafe { self.run(entry) }
    }

    pub(super) fn write(&mut self, fd: i32, buf: &[u8], offset: u64) -> io::Result<i32> {
        let entry = opcode::Write::new(types::Fd(fd), buf.as_ptr(), buf.len() as u32).offset(offset).build();
        // SAFETY: `buf` is borrowed for the whole call.
        unsafe { self.run(entry) }
    }

    pub(super) fn fsync(&mut self, fd: i32) -> io::Result<i32> {
        // SAFETY: the entry holds no pointer.
        unsafe { self.run(opcode::Fsync::new(types::Fd(fd)).build()) }
    }

    pub(super) fn unlinkat(&mut self, dirfd: i32, path: CPath<'_>, flags: i32) -> io::Result<i32> {
        let entry = opcode::UnlinkAt::new(types::Fd(dirfd), path.ptr()).flags(flags).build();
        // SAFETY: `path` is borrowed for the whole call.
        unsafe { self.run(entry) }
    }

    pub(super) fn mkdirat(&mut self, dirfd: i32, path: CPath<'_>, mode: u32) -> io::Result<i32> {
        let entry = opcode::MkDirAt::new(types::Fd(dirfd), path.ptr()).mode(mode).build();
        // SAFETY: `path` is borrowed for the whole call.
        unsafe { self.run(entry) }
    }

    pub(super) fn renameat(&mut self, dirfd: i32, old: CPath<'_>, new: CPath<'_>) -> io::Result<i32> {
        let entry = opcode::RenameAt::new(types::Fd(dirfd), old.ptr(), types::Fd(dirfd), new.ptr()).build();
        // SAFETY: both paths are borrowed for the whole call.
        unsafe { self.run(entry) }
    }
}
