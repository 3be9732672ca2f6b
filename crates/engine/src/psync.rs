//! psync: pread/pwrite, one request at a time. A thread holds one I/O, so the runner gives a
//! queue depth of N to N threads, each with its own engine of depth 1.

use crate::buffers::AlignedBuffers;
use crate::engine::{Completion, Engine, EngineConfig, IoRequest, Op, Queued};
use crate::error::EngineError;

pub struct PsyncEngine {
    files: Vec<std::os::fd::RawFd>,
    buffers: AlignedBuffers,
    queued: Option<IoRequest>,
    done: Option<Completion>,
}

impl PsyncEngine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        Ok(PsyncEngine {
            buffers: AlignedBuffers::new(1, config.max_len, config.seed, config.origin)?
                .sealed(config.verify)
                .with_content(crate::content::Content::new(
                    &config.content,
                    config.origin.unwrap_or(config.seed),
                )),
            files: config.files,
            queued: None,
            done: None,
        })
    }
}

impl Engine for PsyncEngine {
    fn data_sample(&self) -> Option<iolab_stats::DataSample> {
        self.buffers.data_sample()
    }

    fn queue(&mut self, request: IoRequest) -> Queued {
        if self.queued.is_some() || self.done.is_some() {
            return Queued::Busy;
        }
        self.queued = Some(request);
        Queued::Accepted
    }

    fn commit(&mut self, _wait_for: u32) -> Result<(), EngineError> {
        let Some(request) = self.queued.take() else { return Ok(()) };
        let fd = self.files[request.file as usize];
        let buf = self.buffers.io_span(0, &request);
        let len = request.len as usize;
        let offset = request.offset as libc::off_t;
        const _: () = assert!(usize::BITS == 64, "pread64's offset is one register only on 64-bit Linux");
        // The system calls themselves, not libc's wrappers: those make each call a pthread
        // cancellation point (two more calls inside every measured latency), and no lane is
        // ever cancelled.
        let number = match request.op {
            Op::Read => libc::SYS_pread64,
            Op::Write => libc::SYS_pwrite64,
        };
        let n = loop {
            // pread64/pwrite64 take (fd, buffer, count, offset) in registers on 64-bit Linux.
            // SAFETY: `buf` points at `len` bytes owned by `self.buffers` (`span` checked that
            // they fit), used by no other request: this engine holds one at a time.
            let n = unsafe { libc::syscall(number, fd, buf, len, offset) };
            if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        let result = if n < 0 {
            -std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
        } else {
            n as i32
        };
        self.done = Some(Completion { slot: request.slot, result });
        Ok(())
    }

    /// The one request completes inside the commit, so the wait never outlasts it: a timeout
    /// has nothing to cut short.
    fn commit_until(&mut self, wait_for: u32, _timeout_ns: u64) -> Result<(), EngineError> {
        self.commit(wait_for)
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        out.extend(self.done.take());
    }

    fn in_flight(&self) -> u32 {
        u32::from(self.queued.is_some() || self.done.is_some())
    }

    fn data(&self, _slot: u32, len: u32) -> Option<&[u8]> {
        // One request at a time, always in the one buffer.
        Some(self.buffers.data(0, len))
    }
}
