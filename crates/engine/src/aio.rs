//! Linux native AIO (io_setup / io_submit / io_getevents): one context per lane, up to its `qd`
//! requests in flight (`nr_events`, the kernel's word), for kernels or setups where io_uring is missing or disabled, and to compare
//! against fio's libaio engine.
//!
//! The syscalls are made directly, with the kernel's own structures (linux/aio_abi.h) mirrored
//! below, so nothing links libaio. Each slot owns one `iocb`, written in `queue` and handed to the
//! kernel by pointer in `commit`: no allocation per I/O. The kernel copies an iocb when it accepts
//! it, but the slot's buffer belongs to the request until its event is harvested.
//!
//! Native AIO is only asynchronous with O_DIRECT: on a buffered file `io_submit` performs the I/O
//! before returning, so the queue depth is fictitious. `setup()` says which case a result came from.

use std::os::fd::RawFd;

use crate::buffers::AlignedBuffers;
use crate::engine::{Completion, Engine, EngineConfig, IoRequest, Op, Queued};
use crate::error::EngineError;

/// `aio_context_t` of linux/aio_abi.h.
type AioContext = libc::c_ulong;

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// `struct iocb` of linux/aio_abi.h. The kernel orders `aio_key` and `aio_rw_flags` by
/// endianness (its `PADDED` macro), so the pair fills the same 64-bit word either way.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    #[cfg(target_endian = "little")]
    aio_key: u32,
    aio_rw_flags: i32,
    #[cfg(target_endian = "big")]
    aio_key: u32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event` of linux/aio_abi.h.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct IoEvent {
    /// The iocb's `aio_data`: here, the slot.
    data: u64,
    /// The iocb's user address.
    obj: u64,
    /// Bytes transferred, or -errno.
    res: i64,
    res2: i64,
}

// The ABI is fixed by the kernel: catch a mistyped field at compile time, not as corrupt I/O.
const _: () = {
    assert!(std::mem::size_of::<Iocb>() == 64);
    assert!(std::mem::offset_of!(Iocb, aio_lio_opcode) == 16);
    assert!(std::mem::offset_of!(Iocb, aio_fildes) == 20);
    assert!(std::mem::offset_of!(Iocb, aio_buf) == 24);
    assert!(std::mem::offset_of!(Iocb, aio_offset) == 40);
    assert!(std::mem::offset_of!(Iocb, aio_flags) == 56);
    assert!(std::mem::size_of::<IoEvent>() == 32);
};

pub struct AioEngine {
    ctx: AioContext,
    files: Vec<RawFd>,
    depth: u32,
    /// One iocb per slot. Only ever reached through `as_mut_ptr`, so the pointers in `pending`
    /// stay valid (no reference to the elements is created after construction), and never
    /// resized, so they never move.
    iocbs: Vec<Iocb>,
    /// Queued and not yet accepted by `io_submit`, oldest first; capacity `depth`.
    pending: Vec<*mut Iocb>,
    /// Accepted by the kernel and not yet harvested by `io_getevents`.
    submitted: u32,
    /// Finished and not yet reaped: harvested events, plus requests `io_submit` refused (as
    /// -errno). Capacity `depth`, which `queue` keeps it within.
    events: Vec<IoEvent>,
    sync_submit: bool,
    /// `None` only while being dropped.
    buffers: Option<AlignedBuffers>,
}

// SAFETY: the pointers in `pending` point into `iocbs`' heap buffer, owned by this struct and not
// moved with it; the context and buffers are used only by whichever thread owns the engine.
unsafe impl Send for AioEngine {}

fn syscall_error(call: &'static str) -> EngineError {
    EngineError::Syscall { call, source: std::io::Error::last_os_error() }
}

fn setup_error(depth: u32) -> EngineError {
    let source = std::io::Error::last_os_error();
    match source.raw_os_error() {
        Some(libc::ENOSYS) => EngineError::Unavailable(
            "native AIO is not available: this kernel was built without CONFIG_AIO; use --engine uring \
             or psync"
                .into(),
        ),
        Some(libc::EAGAIN) => EngineError::Syscall {
            call: "io_setup",
            source: std::io::Error::new(
                source.kind(),
                format!(
                    "the system-wide AIO limit is exhausted (a context of {depth} requests does not fit \
                     under /proc/sys/fs/aio-max-nr, see /proc/sys/fs/aio-nr); raise \
                     /proc/sys/fs/aio-max-nr or lower the queue depth ({source})"
                ),
            ),
        },
        _ => EngineError::Syscall { call: "io_setup", source },
    }
}

/// Whether `fd` was opened without O_DIRECT (or cannot be asked).
fn is_buffered(fd: RawFd) -> bool {
    // SAFETY: F_GETFL reads the descriptor's flags; an invalid fd only yields -1.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    flags < 0 || flags & libc::O_DIRECT == 0
}

impl AioEngine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let depth = config.qd.max(1);
        let buffers = AlignedBuffers::new(depth, config.max_len, config.seed, config.origin)?
            .sealed(config.verify)
            .with_content(crate::content::Content::new(
                &config.content,
                config.origin.unwrap_or(config.seed),
            ));
        let mut ctx: AioContext = 0;
        // io_setup requires `*ctx == 0` on entry and writes the new context there.
        // SAFETY: `ctx` is a live, zeroed aio_context_t the kernel may write.
        let ret = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
        if ret < 0 {
            return Err(setup_error(depth));
        }
        Ok(AioEngine {
            ctx,
            sync_submit: config.files.iter().any(|&fd| is_buffered(fd)),
            files: config.files,
            depth,
            iocbs: vec![Iocb::default(); depth as usize],
            pending: Vec::with_capacity(depth as usize),
            submitted: 0,
            events: Vec::with_capacity(depth as usize),
            buffers: Some(buffers),
        })
    }

    /// Hands `pending` to the kernel, oldest first, until it is empty or the kernel has no room.
    fn submit(&mut self) -> Result<(), EngineError> {
        while !self.pending.is_empty() {
            // SAFETY: `pending` holds `len` pointers to initialised iocbs inside `iocbs`, whose
            // buffers stay valid until the events are harvested (or leaked, see Drop).
            let ret = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    self.pending.len() as libc::c_long,
                    self.pending.as_mut_ptr(),
                )
            };
            if ret >= 0 {
                // A partial count means the request after the last accepted one failed; the next
                // round reports its error.
                let accepted = ret as usize;
                self.pending.drain(..accepted);
                self.submitted += accepted as u32;
                continue;
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                // No room in the kernel's ring now: what was accepted runs; the rest waits for
                // the next commit.
                Some(libc::EAGAIN) => return Ok(()),
                Some(libc::ENOSYS) => return Err(EngineError::Syscall { call: "io_submit", source: error }),
                // The first iocb was refused (EBADF, EINVAL, EFAULT...): that is this request's
                // result, not the engine's failure; the others still go.
                errno => {
                    let iocb = self.pending.remove(0);
                    // SAFETY: `iocb` points into `iocbs` (see `pending`); the kernel refused it,
                    // so nothing else reads or writes it.
                    let data = unsafe { (*iocb).aio_data };
                    let res = -i64::from(errno.unwrap_or(libc::EIO));
                    self.events.push(IoEvent { data, obj: iocb as u64, res, res2: 0 });
                }
            }
        }
        Ok(())
    }

    /// Harvests at least `min_nr` events (fewer if a signal interrupts the wait) into `events`;
    /// `timeout` `None` waits as long as it takes.
    fn harvest(&mut self, min_nr: u32, timeout: Option<&libc::timespec>) -> Result<(), EngineError> {
        let len = self.events.len();
        let room = self.events.capacity() - len;
        let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: the kernel writes at most `room` events past `len`, inside the capacity of
        // `events`; `timeout` is null or points at a live timespec.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min_nr as libc::c_long,
                room as libc::c_long,
                self.events.as_mut_ptr().add(len),
                timeout,
            )
        };
        if ret < 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => Ok(()),
                _ => Err(syscall_error("io_getevents")),
            };
        }
        let got = (ret as usize).min(room);
        // SAFETY: the kernel initialised `got <= room` events starting at `len`.
        unsafe { self.events.set_len(len + got) };
        self.submitted -= got as u32;
        Ok(())
    }
}

impl Engine for AioEngine {
    fn data_sample(&self) -> Option<iolab_stats::DataSample> {
        self.buffers.as_ref().and_then(AlignedBuffers::data_sample)
    }

    fn queue(&mut self, request: IoRequest) -> Queued {
        // Also keeps every request's event within the capacity of `events`.
        if self.in_flight() >= self.depth {
            return Queued::Busy;
        }
        assert!(request.slot < self.depth, "slot {} out of range", request.slot);
        let buf = self.buffers.as_ref().map_or(std::ptr::null_mut(), |b| b.io_span(request.slot, &request));
        let iocb = Iocb {
            aio_data: u64::from(request.slot),
            aio_lio_opcode: match request.op {
                Op::Read => IOCB_CMD_PREAD,
                Op::Write => IOCB_CMD_PWRITE,
            },
            aio_fildes: self.files[request.file as usize] as u32,
            aio_buf: buf as u64,
            aio_nbytes: u64::from(request.len),
            aio_offset: request.offset as i64,
            ..Iocb::default()
        };
        let ptr = self.iocbs.as_mut_ptr().wrapping_add(request.slot as usize);
        // The caller reuses a slot only after reaping it, so the kernel no longer needs this iocb
        // (it copied it at io_submit) nor this slot's buffer.
        // SAFETY: `slot < depth == iocbs.len()` (asserted above), so `ptr` is inside `iocbs`.
        unsafe { ptr.write(iocb) };
        self.pending.push(ptr);
        Queued::Accepted
    }

    fn commit(&mut self, wait_for: u32) -> Result<(), EngineError> {
        self.submit()?;
        // Completions not yet reaped count toward the wait, as they do for io_uring.
        let target = wait_for.min(self.in_flight()) as usize;
        while self.events.len() < target && self.submitted > 0 {
            let missing = (target - self.events.len()) as u32;
            self.harvest(missing.min(self.submitted), None)?;
        }
        Ok(())
    }

    fn commit_until(&mut self, wait_for: u32, timeout_ns: u64) -> Result<(), EngineError> {
        self.submit()?;
        let target = wait_for.min(self.in_flight()) as usize;
        if self.events.len() < target && self.submitted > 0 {
            let missing = (target - self.events.len()) as u32;
            let timeout = libc::timespec {
                tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
            };
            // One wait: io_getevents returns at `missing` events or at the timeout, and a signal
            // only ends it early, which the caller's loop absorbs.
            self.harvest(missing.min(self.submitted), Some(&timeout))?;
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        if self.submitted > 0 {
            let now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // A failed poll only means nothing is reaped now; the next commit reports the error.
            let _ = self.harvest(0, Some(&now));
        }
        out.extend(self.events.drain(..).map(|event| Completion {
            slot: event.data as u32,
            result: event.res.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        }));
    }

    fn in_flight(&self) -> u32 {
        self.pending.len() as u32 + self.submitted + self.events.len() as u32
    }

    fn data(&self, slot: u32, len: u32) -> Option<&[u8]> {
        self.buffers.as_ref().map(|b| b.data(slot, len))
    }

    fn setup(&self) -> Vec<&'static str> {
        if self.sync_submit {
            vec!["sync_submit"]
        } else {
            vec!["o_direct"]
        }
    }
}

impl Drop for AioEngine {
    fn drop(&mut self) {
        if self.submitted > 0 {
            let now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            let _ = self.harvest(0, Some(&now));
        }
        if self.submitted > 0 {
            // io_destroy cancels what it can (plain reads and writes cannot be cancelled) and
            // then blocks until every request of the context has completed: on a stuck device
            // (a dead path, a hard NFS mount) that is forever, and the run could not even report
            // what it measured. So the context is left to the kernel, which tears it down at
            // process exit (its slots stay counted in /proc/sys/fs/aio-nr until then), and the
            // buffers the requests still target are leaked rather than freed under the kernel.
            if let Some(buffers) = self.buffers.take() {
                buffers.leak();
            }
            return;
        }
        // SAFETY: `ctx` came from io_setup and is destroyed once; no request is in the kernel.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

#[cfg(test)]
#[path = "aio_tests.rs"]
mod tests;
