//! Several path operations (statx, unlinkat, an empty file's openat and close) in flight on a
//! thread's ring. The kernel runs a ring's statx, unlinkat and openat(O_CREAT) in an io-wq
//! worker, never inline (io_uring forces them async): one at a time, each costs a hand-off to
//! the worker and a wake-up back, and the thread sleeps through both (measured on tmpfs: stat
//! 0.64x of a bare fstatat loop, unlink 0.51x of a bare unlinkat loop, create 0.41x of a bare
//! openat+close loop). With `QUEUE_DEPTH` queued, the worker runs them back to back and the
//! thread sends and reaps them in batches.
//!
//! A create is two entries in one slot: the openat, and once its completion gives the
//! descriptor, the close of it (run inline at submit: a regular file's close needs no worker).
//!
//! Each entry's path and statx live in a slot of this queue, allocated once and never moved
//! or reused while the entry is in flight; the queue is drained before the slots are freed.

use std::io;

use io_uring::{opcode, types};

use super::ring::Ring;
use super::CPath;

/// Path operations one thread keeps in flight on a ring. Deeper queues mean fewer hand-offs and
/// wake-ups per stat: on ext4 over a loop device (2 threads) the process's CPU per stat went
/// from 4.2-5.0 us at 16 to 3.4-3.5 us at 32 (3.2 us at 64), on tmpfs from 3.9-5.0 to 3.0-3.4
/// us; a bare fstatat costs 1.9 us on both (bench/files.py, perf cpu-clock samples). 32 keeps
/// the wait each stat shares with the others in flight to half of 64's.
pub const QUEUE_DEPTH: usize = 32;

/// What a queued entry does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathOp {
    /// statx: the file's size.
    Stat,
    /// unlinkat of a file.
    Unlink,
    /// openat(O_CREAT | O_EXCL | O_WRONLY | `flags`, 0644) of a new file, then close of it:
    /// an empty file made.
    Create { flags: i32 },
}

/// What a queued entry's completion says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathDone {
    /// The stat's file size.
    Size(u64),
    /// The unlink removed the file.
    Unlinked,
    /// A create's openat gave a descriptor; its close is queued and comes as `Closed`.
    Opened,
    /// A create's file was closed: the slot is free again.
    Closed,
}

/// Set in a close entry's user data, beside its slot's tag.
const CLOSE_BIT: u64 = 1 << 32;

struct Slot {
    path: Vec<u8>,
    statx: libc::statx,
    op: PathOp,
    busy: bool,
}

pub(super) struct PathQueue {
    /// Never resized: the kernel holds pointers into the slots of entries in flight.
    slots: Box<[Slot]>,
    in_flight: usize,
    /// Creates whose openat came back this wait, as (tag, descriptor): their closes to queue.
    opened: Vec<(usize, i32)>,
}

impl PathQueue {
    pub(super) fn new() -> PathQueue {
        let slots = (0..QUEUE_DEPTH)
            .map(|_| Slot {
                path: Vec::with_capacity(256),
                // SAFETY: statx is plain old data; all zeroes is a valid value.
                statx: unsafe { std::mem::zeroed() },
                op: PathOp::Stat,
                busy: false,
            })
            .collect();
        PathQueue { slots, in_flight: 0, opened: Vec::with_capacity(QUEUE_DEPTH) }
    }

    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues `op` on `path` in slot `tag` (free, below QUEUE_DEPTH); sent by `wait`. The slot
    /// stays busy until its last completion (a create's close) is reaped.
    pub(super) fn push(
        &mut self,
        ring: &mut Ring,
        op: PathOp,
        dirfd: i32,
        path: CPath<'_>,
        tag: usize,
    ) -> io::Result<()> {
        let slot = self.slots.get_mut(tag).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("queue slot {tag} is beyond {QUEUE_DEPTH}"))
        })?;
        if slot.busy {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("queue slot {tag} is in flight"),
            ));
        }
        slot.path.clear();
        slot.path.extend_from_slice(path.0);
        let entry = match op {
            PathOp::Stat => opcode::Statx::new(
                types::Fd(dirfd),
                slot.path.as_ptr().cast(),
                std::ptr::from_mut(&mut slot.statx).cast::<types::statx>(),
            )
            .mask(libc::STATX_BASIC_STATS)
            .flags(libc::AT_SYMLINK_NOFOLLOW)
            .build(),
            PathOp::Unlink => opcode::UnlinkAt::new(types::Fd(dirfd), slot.path.as_ptr().cast()).build(),
            PathOp::Create { flags } => opcode::OpenAt::new(types::Fd(dirfd), slot.path.as_ptr().cast())
                .flags(libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC | flags)
                .mode(0o644)
                .build(),
        }
        .user_data(tag as u64);
        // The path (copied, NUL-terminated as `CPath` checked) and the statx live in a slot
        // marked busy; the slots are never resized, and `drain` runs before they drop (if it
        // fails, the ring is broken and never entered again, and the slots are leaked).
        // SAFETY: the slot is not written, moved or freed until this entry's completion is
        // reaped, or ever if the ring breaks first.
        unsafe { ring.push(&entry) }?;
        slot.busy = true;
        slot.op = op;
        self.in_flight += 1;
        Ok(())
    }

    /// Sends what is queued, waits for one completion at least, and gives each one there as
    /// (tag, what it did or the error). A create's opened descriptor is closed by an entry queued
    /// here, sent by the next `wait`.
    pub(super) fn wait(
        &mut self,
        ring: &mut Ring,
        mut done: impl FnMut(usize, io::Result<PathDone>),
    ) -> io::Result<()> {
        if self.in_flight == 0 {
            return Ok(());
        }
        // One: an entry is reaped as soon as the thread wakes for it (waiting for more would
        // add their time to its latency); the others done by then come with it.
        ring.submit_and_wait(1)?;
        let slots = &mut self.slots;
        let opened = &mut self.opened;
        let mut reaped = 0;
        ring.reap(|data, res| {
            let (tag, closing) = ((data & !CLOSE_BIT) as usize, data & CLOSE_BIT != 0);
            let Some(slot) = slots.get_mut(tag).filter(|s| s.busy) else { return };
            let result = match (res, slot.op, closing) {
                (..0, ..) => Err(io::Error::from_raw_os_error(-res)),
                (_, PathOp::Stat, _) => Ok(PathDone::Size(slot.statx.stx_size)),
                (_, PathOp::Unlink, _) => Ok(PathDone::Unlinked),
                (_, PathOp::Create { .. }, false) => Ok(PathDone::Opened),
                (_, PathOp::Create { .. }, true) => Ok(PathDone::Closed),
            };
            if matches!(result, Ok(PathDone::Opened)) {
                opened.push((tag, res));
            } else {
                slot.busy = false;
                reaped += 1;
            }
            done(tag, result);
        });
        self.in_flight -= reaped;
        for (tag, fd) in self.opened.drain(..) {
            // SAFETY: the entry holds no pointer.
            let queued = unsafe {
                ring.push(&opcode::Close::new(types::Fd(fd)).build().user_data(tag as u64 | CLOSE_BIT))
            };
            if let Err(e) = queued {
                // The ring broke: the descriptor is closed by the system call, and the slot is
                // free with the ring's error.
                // SAFETY: `fd` was opened by this slot's openat and is closed once.
                unsafe { libc::close(fd) };
                self.slots[tag].busy = false;
                self.in_flight -= 1;
                done(tag, Err(e));
            }
        }
        Ok(())
    }

    /// Waits for every entry in flight, dropping their results. False if the ring failed and
    /// some are still the kernel's (their slots must then never be freed).
    pub(super) fn drain(&mut self, ring: &mut Ring) -> bool {
        while self.in_flight > 0 {
            if self.wait(ring, |_, _| {}).is_err() {
                return false;
            }
        }
        true
    }
}
