//! Several path operations (statx, unlinkat, an empty file's openat and close) in flight on a
//! thread's ring. The kernel runs a ring's statx, unlinkat and openat(O_CREAT) in an io-wq
//! worker, never inline (io_uring forces them async): one at a time, each costs a hand-off to
//! the worker and a wake-up back, and the thread sleeps through both (measured on tmpfs: stat
//! 0.64x of a bare fstatat loop, unlink 0.51x of a bare unlinkat loop, create 0.41x of a bare
//! openat+close loop). With `QUEUE_DEPTH` queued, the worker runs them back to back and the
//! thread sends and reaps them in batches.
//!
//! A create is up to four entries in one slot, each queued once the one before it is reaped:
//! the openat; with its descriptor, the write of the file's bytes (one, from the queue's own
//! data) when it has any; its fsync when asked; and the close (run inline at submit: a regular
//! file's close needs no worker). Each thread so keeps `QUEUE_DEPTH` files being made, where
//! one at a time it waited for each open, write and fsync in turn.
//!
//! Each entry's path and statx live in a slot of this queue, and a write's bytes in the
//! queue's data; both are allocated once and never moved or reused while an entry is in
//! flight; the queue is drained before they are freed.

use std::io;

use io_uring::{opcode, types};

use super::aligned_buf::AlignedBuf;
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
    /// openat(O_CREAT | O_EXCL | O_WRONLY | `flags`, 0644) of a new file, a write of the
    /// first `len` bytes of the queue's data (`set_data`; none when 0), fsync with `sync`,
    /// then close: a file made.
    Create { flags: i32, len: u32, sync: bool },
}

/// What a queued entry's completion says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathDone {
    /// The stat's file size.
    Size(u64),
    /// The unlink removed the file.
    Unlinked,
    /// A create's openat gave a descriptor; its next entry is queued.
    Opened,
    /// A create's write wrote its bytes (all of them: a short write is an error).
    Wrote(u64),
    /// A create's fsync returned.
    Synced,
    /// A create's file was closed: the slot is free again.
    Closed,
}

/// A create's entries, in order; the stage rides in an entry's user data above its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Open = 0,
    Write,
    Fsync,
    Close,
}

const STAGE_SHIFT: u32 = 32;

impl Stage {
    fn of(data: u64) -> Stage {
        match data >> STAGE_SHIFT {
            0 => Stage::Open,
            1 => Stage::Write,
            2 => Stage::Fsync,
            _ => Stage::Close,
        }
    }

    /// The entry after this one of a create writing `len` bytes, fsynced with `sync`.
    fn next(self, len: u32, sync: bool) -> Stage {
        match self {
            Stage::Open if len > 0 => Stage::Write,
            Stage::Open | Stage::Write if sync => Stage::Fsync,
            _ => Stage::Close,
        }
    }
}

struct Slot {
    path: Vec<u8>,
    statx: libc::statx,
    op: PathOp,
    busy: bool,
    /// A create's descriptor, once its openat gave it.
    fd: i32,
}

pub(super) struct PathQueue {
    /// Never resized: the kernel holds pointers into the slots of entries in flight.
    slots: Box<[Slot]>,
    in_flight: usize,
    /// Creates whose last entry came back this wait, with the entry to queue next.
    advancing: Vec<(usize, Stage)>,
    /// The bytes creates write (`set_data`), never changed while a create is in flight.
    data: Option<AlignedBuf>,
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
                fd: -1,
            })
            .collect();
        PathQueue { slots, in_flight: 0, advancing: Vec::with_capacity(QUEUE_DEPTH), data: None }
    }

    /// The bytes creates write from now on (a copy, aligned for O_DIRECT).
    pub(super) fn set_data(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.in_flight > 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the queue's data is in use"));
        }
        let mut data = AlignedBuf::new(bytes.len(), 0);
        data.as_mut()[..bytes.len()].copy_from_slice(bytes);
        self.data = Some(data);
        Ok(())
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
        if let PathOp::Create { len, .. } = op {
            let held = self.data.as_ref().map_or(0, |d| d.as_ref().len());
            if len as usize > held {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a create of {len} bytes from the queue's {held}"),
                ));
            }
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
            PathOp::Create { flags, .. } => opcode::OpenAt::new(types::Fd(dirfd), slot.path.as_ptr().cast())
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
    /// (tag, what it did or the error). A create's next entry (write, fsync, close) is queued
    /// here as its last comes back, and sent by the next `wait`.
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
        let advancing = &mut self.advancing;
        let mut reaped = 0;
        ring.reap(|data, res| {
            let (tag, stage) = ((data & u64::from(u32::MAX)) as usize, Stage::of(data));
            let Some(slot) = slots.get_mut(tag).filter(|s| s.busy) else { return };
            let result = match (res, slot.op, stage) {
                (..0, ..) => Err(io::Error::from_raw_os_error(-res)),
                (_, PathOp::Stat, _) => Ok(PathDone::Size(slot.statx.stx_size)),
                (_, PathOp::Unlink, _) => Ok(PathDone::Unlinked),
                (_, PathOp::Create { .. }, Stage::Open) => {
                    slot.fd = res;
                    Ok(PathDone::Opened)
                }
                (_, PathOp::Create { len, .. }, Stage::Write) if res as u32 != len => Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("wrote {res} of the file's {len} bytes"),
                )),
                (_, PathOp::Create { .. }, Stage::Write) => Ok(PathDone::Wrote(res as u64)),
                (_, PathOp::Create { .. }, Stage::Fsync) => Ok(PathDone::Synced),
                (_, PathOp::Create { .. }, Stage::Close) => Ok(PathDone::Closed),
            };
            match (&result, slot.op) {
                (
                    Ok(PathDone::Opened | PathDone::Wrote(_) | PathDone::Synced),
                    PathOp::Create { len, sync, .. },
                ) => {
                    advancing.push((tag, stage.next(len, sync)));
                }
                _ => {
                    // A create that failed after its open is closed here, its error the one said.
                    if matches!(stage, Stage::Write | Stage::Fsync) && slot.fd >= 0 {
                        // SAFETY: `fd` was opened by this slot's openat and is closed once.
                        unsafe { libc::close(slot.fd) };
                    }
                    slot.fd = -1;
                    slot.busy = false;
                    reaped += 1;
                }
            }
            done(tag, result);
        });
        self.in_flight -= reaped;
        for (tag, stage) in std::mem::take(&mut self.advancing) {
            let slot = &mut self.slots[tag];
            let PathOp::Create { len, .. } = slot.op else { unreachable!("only a create advances") };
            let fd = types::Fd(slot.fd);
            let entry = match stage {
                Stage::Write => {
                    let data = self.data.as_ref().map_or(std::ptr::null(), |d| d.as_ref().as_ptr());
                    opcode::Write::new(fd, data, len).offset(0).build()
                }
                Stage::Fsync => opcode::Fsync::new(fd).build(),
                Stage::Open | Stage::Close => opcode::Close::new(fd).build(),
            }
            .user_data(tag as u64 | (stage as u64) << STAGE_SHIFT);
            // SAFETY: a write reads the queue's data, which `set_data` does not replace while
            // an entry is in flight and which drops after the queue is drained; the others
            // hold no pointer.
            let queued = unsafe { ring.push(&entry) };
            if let Err(e) = queued {
                // The ring broke: the descriptor is closed by the system call, and the slot is
                // free with the ring's error.
                // SAFETY: `fd` was opened by this slot's openat and is closed once.
                unsafe { libc::close(slot.fd) };
                slot.fd = -1;
                slot.busy = false;
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
