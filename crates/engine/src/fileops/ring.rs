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

/// Room for the path operations a thread keeps in flight (`QUEUE_DEPTH`) and more.
const RING_ENTRIES: u32 = 64;

pub(super) struct Ring {
    ring: IoUring,
    /// Bit `RingOp as u8` set: the kernel runs it in the ring.
    supported: u16,
    /// Why the ring is no longer used (set by a failed `io_uring_enter`): entries the kernel
    /// did not take may still sit in the submission queue, pointing at memory their callers
    /// have since freed, and must never be sent. Every way into the kernel checks this first.
    broken: Option<String>,
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
        Ok(Ring { ring, supported, broken: None })
    }

    pub(super) fn supports(&self, op: RingOp) -> bool {
        self.supported & (1 << op as u8) != 0
    }

    /// The names of the operations this kernel cannot run in a ring.
    pub(super) fn missing(&self) -> Vec<&'static str> {
        RING_OPS.iter().filter(|(op, _, _)| !self.supports(*op)).map(|(_, name, _)| *name).collect()
    }

    /// An error if an earlier `io_uring_enter` failed: the ring is not entered again.
    fn usable(&self) -> io::Result<()> {
        match &self.broken {
            None => Ok(()),
            Some(why) => Err(io::Error::other(format!("the ring is no longer used: {why}"))),
        }
    }

    /// Marks the ring unusable after `error` and gives it back.
    fn broke(&mut self, error: io::Error) -> io::Error {
        self.broken.get_or_insert_with(|| format!("io_uring_enter failed ({error})"));
        error
    }

    /// Runs `entry` and waits for it: its result, or the error the kernel gave.
    ///
    /// The entry's memory is the kernel's from the submit that takes it until its completion,
    /// so this returns only before the kernel took it (the ring then marked broken: the entry
    /// stays queued and is never sent) or after its completion is reaped. Nothing else is in
    /// flight: the completion reaped is this entry's.
    ///
    /// # Safety
    /// Every pointer in `entry` (paths, buffers, statx) must stay valid until this returns.
    unsafe fn run(&mut self, entry: squeue::Entry) -> io::Result<i32> {
        self.usable()?;
        // SAFETY: the caller keeps the entry's pointers valid until this returns, and this
        // returns with the entry either reaped or never to be sent (see above).
        unsafe { self.ring.submission().push(&entry) }
            .map_err(|_| io::Error::other("the ring's submission queue is full"))?;
        // Until the kernel has taken the entry (the queue's head moved past it). An enter that
        // takes it answers with the count even when its wait part fails, so an error means it
        // was not taken (EINTR included: tried again).
        loop {
            let sent = self.ring.submit_and_wait(1);
            if self.ring.submission().is_empty() {
                break;
            }
            match sent {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.broke(e)),
                Ok(_) => return Err(self.broke(io::Error::other("the kernel did not take the entry"))),
            }
        }
        // Taken: its completion must be reaped before the caller's memory is let go.
        let mut failures = 0u32;
        loop {
            if let Some(cqe) = self.ring.completion().next() {
                let res = cqe.result();
                return if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res) };
            }
            match self.ring.submit_and_wait(1) {
                Ok(_) => failures = 0,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let e = self.broke(e);
                    failures += 1;
                    // The wait fails only if completions were lost (EBADR: the CQ has room for
                    // every entry this ring holds) or from another thread (EEXIST: a single-
                    // issuer ring was moved mid-call). Returning would hand the caller back
                    // memory the kernel may still write; stopping the process is what is sound.
                    if failures >= 1000 {
                        eprintln!(
                            "iolab: an io_uring operation in flight cannot be waited for ({e}); stopping"
                        );
                        std::process::abort();
                    }
                }
            }
        }
    }

    /// Queues `entry` (its `user_data` set) without submitting it.
    ///
    /// # Safety
    /// Every pointer in `entry` must stay valid until its completion has been reaped, or, if
    /// `submit_and_wait` fails (the ring then broken, never entered again), for ever.
    pub(super) unsafe fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        self.usable()?;
        // SAFETY: the caller keeps the entry's pointers valid as the contract above says.
        unsafe { self.ring.submission().push(entry) }
            .map_err(|_| io::Error::other("the ring's submission queue is full"))
    }

    /// Submits what is queued and waits until `want` completions are there. An error other
    /// than EINTR breaks the ring: entries still queued are never sent, and those in flight
    /// may never be reaped (their memory must then never be freed).
    pub(super) fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        self.usable()?;
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.broke(e)),
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
