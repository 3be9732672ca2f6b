//! io_uring: one ring per worker, up to `depth` requests in flight, submitted and reaped in
//! batches.
//!
//! The ring takes the cheapest setup the running kernel accepts, probed at creation and never
//! assumed: a single-issuer ring with deferred task work (6.1+), else cooperative task work
//! (5.19+), else a plain ring. The target is a registered file and every slot's buffer is a
//! registered (fixed) buffer, so the kernel neither looks up the file nor pins the pages of each
//! request; either falls back to the plain form if registration is refused.

use io_uring::{opcode, squeue, types, IoUring};

use crate::buffers::AlignedBuffers;
use crate::engine::{Completion, Engine, EngineConfig, IoRequest, Op, Queued};
use crate::error::EngineError;
use crate::probe;

pub struct UringEngine {
    // Declared before `buffers`: the ring (and its buffer registration) goes first on drop.
    ring: IoUring,
    files: Vec<std::os::fd::RawFd>,
    fixed_files: bool,
    fixed_buffers: bool,
    /// `None` only while being dropped.
    buffers: Option<AlignedBuffers>,
    in_flight: u32,
}

/// Creates a ring with the cheapest task-work mode the kernel accepts.
fn build_ring(entries: u32) -> std::io::Result<IoUring> {
    let attempts: [fn(&mut io_uring::Builder); 3] = [
        |b| {
            b.setup_single_issuer().setup_defer_taskrun();
        },
        |b| {
            b.setup_coop_taskrun();
        },
        |_| {},
    ];
    let mut last = None;
    for configure in attempts {
        let mut builder = IoUring::builder();
        configure(&mut builder);
        match builder.build(entries) {
            Ok(ring) => return Ok(ring),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL)))
}

impl UringEngine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let entries = config.depth.max(1).next_power_of_two();
        let ring = build_ring(entries).map_err(probe::uring_setup_error)?;
        let buffers = AlignedBuffers::new(config.depth, config.max_len, config.seed)?;
        let fixed_files = ring.submitter().register_files(&config.files).is_ok();
        let iovecs: Vec<libc::iovec> = (0..config.depth)
            .map(|slot| libc::iovec {
                iov_base: buffers.slot_ptr(slot).cast(),
                iov_len: config.max_len as usize,
            })
            .collect();
        // The ring (and its registration) is dropped before the buffers, which are leaked
        // instead if requests are still in flight.
        let indexable = config.depth <= u32::from(u16::MAX);
        // SAFETY: every iovec points into `buffers`, which outlives the registration (above).
        let fixed_buffers = indexable && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(UringEngine {
            ring,
            files: config.files,
            fixed_files,
            fixed_buffers,
            buffers: Some(buffers),
            in_flight: 0,
        })
    }

    fn entry(&self, request: &IoRequest) -> squeue::Entry {
        let buf = self.buffers.as_ref().map_or(std::ptr::null_mut(), |b| b.slot_ptr(request.slot));
        let (len, offset, slot) = (request.len, request.offset, request.slot as u16);
        macro_rules! build {
            ($fd:expr) => {
                match (request.op, self.fixed_buffers) {
                    (Op::Read, true) => opcode::ReadFixed::new($fd, buf, len, slot).offset(offset).build(),
                    (Op::Write, true) => opcode::WriteFixed::new($fd, buf, len, slot).offset(offset).build(),
                    (Op::Read, false) => opcode::Read::new($fd, buf, len).offset(offset).build(),
                    (Op::Write, false) => opcode::Write::new($fd, buf, len).offset(offset).build(),
                }
            };
        }
        let entry = if self.fixed_files {
            build!(types::Fixed(u32::from(request.file)))
        } else {
            build!(types::Fd(self.files[request.file as usize]))
        };
        entry.user_data(u64::from(request.slot))
    }
}

impl Engine for UringEngine {
    fn queue(&mut self, request: IoRequest) -> Queued {
        let entry = self.entry(&request);
        // The buffer of `request.slot` lives as long as `self` (leaked, not freed, if requests
        // are in flight at drop), and the caller reuses a slot only after reaping it.
        // SAFETY: so the entry's buffer stays valid until the kernel is done with it.
        match unsafe { self.ring.submission().push(&entry) } {
            Ok(()) => {
                self.in_flight += 1;
                Queued::Accepted
            }
            Err(_) => Queued::Busy,
        }
    }

    fn commit(&mut self, wait_for: u32) -> Result<(), EngineError> {
        loop {
            match self.ring.submit_and_wait(wait_for.min(self.in_flight) as usize) {
                Ok(_) => return Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // The completion queue is full: the caller reaps, then commits again.
                    Some(libc::EBUSY) | Some(libc::EAGAIN) => return Ok(()),
                    _ => return Err(EngineError::Syscall { call: "io_uring_enter", source: e }),
                },
            }
        }
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        let before = out.len();
        out.extend(
            self.ring
                .completion()
                .map(|cqe| Completion { slot: cqe.user_data() as u32, result: cqe.result() }),
        );
        self.in_flight -= (out.len() - before) as u32;
    }

    fn in_flight(&self) -> u32 {
        self.in_flight
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Requests still in flight (a stuck device) may write into the buffers after the ring is
        // gone: leaking is the only safe answer.
        if self.in_flight > 0 {
            if let Some(buffers) = self.buffers.take() {
                buffers.leak();
            }
        }
    }
}
