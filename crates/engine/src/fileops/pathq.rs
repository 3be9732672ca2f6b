//! Several path operations (statx, unlinkat) in flight on a thread's ring. The kernel runs a
//! ring's statx and unlinkat in an io-wq worker, never inline (io_uring forces both async):
//! one at a time, each costs a hand-off to the worker and a wake-up back, and the thread sleeps
//! through both (measured on tmpfs: stat 0.64x of a bare fstatat loop, unlink 0.51x of a bare
//! unlinkat loop). With `QUEUE_DEPTH` queued, the worker runs them back to back and the thread
//! sends and reaps them in batches.
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
}

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
        PathQueue { slots, in_flight: 0 }
    }

    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues `op` on `path` in slot `tag` (free, below QUEUE_DEPTH); sent by `wait`.
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
    /// (tag, the file's size for a stat, 0 for an unlink, or the error).
    pub(super) fn wait(
        &mut self,
        ring: &mut Ring,
        mut done: impl FnMut(usize, io::Result<u64>),
    ) -> io::Result<()> {
        if self.in_flight == 0 {
            return Ok(());
        }
        // One: an entry is reaped as soon as the thread wakes for it (waiting for more would
        // add their time to its latency); the others done by then come with it.
        ring.submit_and_wait(1)?;
        let slots = &mut self.slots;
        let mut reaped = 0;
        ring.reap(|tag, res| {
            let Some(slot) = slots.get_mut(tag as usize).filter(|s| s.busy) else { return };
            slot.busy = false;
            reaped += 1;
            let result = match (res, slot.op) {
                (..0, _) => Err(io::Error::from_raw_os_error(-res)),
                (_, PathOp::Stat) => Ok(slot.statx.stx_size),
                (_, PathOp::Unlink) => Ok(0),
            };
            done(tag as usize, result);
        });
        self.in_flight -= reaped;
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
