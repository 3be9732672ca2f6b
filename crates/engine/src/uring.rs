//! io_uring: one ring per worker, up to `depth` requests in flight, submitted and reaped in
//! batches (one `io_uring_enter` per batch submits everything queued and waits).

use io_uring::{opcode, squeue, types, IoUring};

use crate::buffers::AlignedBuffers;
use crate::engine::{Completion, Engine, EngineConfig, IoRequest, Op, Queued};
use crate::error::EngineError;
use crate::probe;

pub struct UringEngine {
    ring: IoUring,
    files: Vec<std::os::fd::RawFd>,
    /// `None` only while being dropped.
    buffers: Option<AlignedBuffers>,
    in_flight: u32,
}

impl UringEngine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let entries = config.depth.max(1).next_power_of_two();
        let ring = IoUring::new(entries).map_err(probe::uring_setup_error)?;
        Ok(UringEngine {
            ring,
            buffers: Some(AlignedBuffers::new(
                config.depth,
                config.max_len,
                config.depth as u64 ^ 0x5bd1e995,
            )?),
            files: config.files,
            in_flight: 0,
        })
    }

    fn entry(&self, request: &IoRequest) -> squeue::Entry {
        let fd = types::Fd(self.files[request.file as usize]);
        let buf = self.buffers.as_ref().map_or(std::ptr::null_mut(), |b| b.slot_ptr(request.slot));
        let entry = match request.op {
            Op::Read => opcode::Read::new(fd, buf, request.len).offset(request.offset).build(),
            Op::Write => opcode::Write::new(fd, buf, request.len).offset(request.offset).build(),
        };
        entry.user_data(u64::from(request.slot))
    }
}

impl Engine for UringEngine {
    fn queue(&mut self, request: IoRequest) -> Queued {
        let entry = self.entry(&request);
        // SAFETY: the entry points at the buffer of `request.slot`, which lives as long as
        // `self` (and is leaked, not freed, if requests are still in flight at drop), and the
        // caller does not reuse the slot before its completion is reaped.
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
