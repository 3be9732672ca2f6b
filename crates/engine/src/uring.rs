//! io_uring: one ring per worker, up to `depth` requests in flight, submitted and reaped in
//! batches.
//!
//! By default the ring takes the cheapest setup the running kernel accepts, probed at creation
//! and never assumed: a single-issuer ring with deferred task work (6.1+), else cooperative task
//! work (5.19+), else a plain ring; `--ring-setup` insists on one mode instead. The targets are
//! registered files and every slot's buffer is a registered (fixed) buffer, so the kernel
//! neither looks up the file nor pins the pages of each request; either falls back to the plain
//! form if registration is refused, and either can be switched off. SQPOLL (a kernel thread
//! that polls the submission queue) and IOPOLL (polled completions) are opt-in. `setup()` says
//! what the kernel granted. With the files, the ring's own descriptor is registered with the
//! lane's thread (IORING_REGISTER_RING_FDS, 5.18+), so each io_uring_enter names it by index
//! and the kernel does not look the descriptor up (fget/fput: 1.4% of a loop-device profile at
//! one enter per I/O; fio's t/io_uring does the same).
//!
//! A wait with a deadline (`commit_until`, for open-loop lanes) passes the timeout to
//! io_uring_enter itself (IORING_ENTER_EXT_ARG, 5.11+). Older kernels get liburing's fallback: a
//! timer request (IORING_OP_TIMEOUT) joins the submission, and its completion, which ends the
//! wait, is never reported as an I/O. An IOPOLL ring polls until a request completes, so there
//! the deadline is only as good as the device's next completion. A wait of `SPIN_NS` or less
//! (longer where the lane asked, `spin_waits_up_to`) arms no timer at all: it watches the completion queue and the clock from user space (not with
//! SQPOLL or IOPOLL). The ring asks the kernel to flag completions whose task work is pending
//! (IORING_SETUP_TASKRUN_FLAG), so the spin enters the kernel only when there is one to post.
//!
//! `--completion-watch` (off by default) has every wait for completions watch the queue the
//! same way for up to its time before it sleeps. A lane that sleeps lets its core halt, and the
//! completion that follows waits for the core to wake (on a VM whose idle cores halt, a VM exit
//! each); measured on a loop device over tmpfs in this VM (bench/vs_fio.py parity), a 15 us
//! watch gave 1.17x fio's IOPS at QD 4 and 2.43x at QD 8 (4 KiB 70/30), where without it iolab
//! read 0.88x and 0.92x; but 0.62x at QD 1, where every watch ends before the completion comes
//! (0.82x without it), and at QD 32, where the lane slept between batches, 1.13x fio's CPU per
//! I/O (0.73x without it): so it is asked for, never assumed. The setup reports it as
//! `completion_watch`, and the verdict takes such lanes as busy by design, as IOPOLL's.

use std::os::fd::AsRawFd;

use io_uring::{opcode, squeue, types, IoUring};

use crate::buffers::AlignedBuffers;
use crate::engine::{Completion, Engine, EngineConfig, IoRequest, Op, Queued};
use crate::error::EngineError;
use crate::probe;
use iolab_spec::{RingSetup, UringSpec};

pub struct UringEngine {
    // Declared before `buffers`: the ring (and its buffer registration) goes first on drop.
    ring: IoUring,
    files: Vec<std::os::fd::RawFd>,
    fixed_files: bool,
    fixed_buffers: bool,
    /// The setup flags the kernel accepted, for the report.
    granted: Vec<&'static str>,
    /// `None` only while being dropped.
    buffers: Option<AlignedBuffers>,
    in_flight: u32,
    /// The kernel takes a timeout with the wait (IORING_FEAT_EXT_ARG).
    ext_arg: bool,
    /// The ring's index among its thread's registered rings, when registered.
    registered: Option<RegisteredRing>,
    /// The fallback's timer requests whose completions have not been reaped yet.
    timers_pending: u32,
    /// Short waits spin on the clock instead of arming a kernel timer (not with SQPOLL or IOPOLL).
    spin: bool,
    /// How short: `SPIN_NS`, or longer for a lane that must start I/Os on time.
    spin_ns: u64,
    /// How long a wait for completions watches the queue before it sleeps
    /// (`--completion-watch`); 0: it sleeps at once.
    watch_ns: u64,
    /// The fallback timer's duration, where the kernel reads it when the timer is submitted;
    /// boxed so its address holds while the engine moves, and dropped after the ring.
    timer: Box<types::Timespec>,
}

/// Waits up to this long spin instead of sleeping. Arming a timer, sleeping and waking cost
/// several microseconds of CPU (measured in a VM on a loop device over tmpfs: about 5 us for
/// the timer alone; 10 us spins cut CPU per I/O by 9% at 28.7k IOPS, 20 us or more raise it):
/// a shorter wait costs less on the clock, and ends on time rather than a wake-up late.
const SPIN_NS: u64 = 10_000;

/// `user_data` of the fallback's timer requests: no slot has this number.
const TIMER: u64 = u64::MAX;

/// io_uring_enter's flags and io_uring_register's opcodes (linux/io_uring.h) for the
/// registered-ring path, which calls the kernel itself.
const IORING_ENTER_GETEVENTS: libc::c_uint = 1 << 0;
const IORING_ENTER_REGISTERED_RING: libc::c_uint = 1 << 4;
const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;

/// struct io_uring_rsrc_update: one entry of a ring-descriptor (un)registration.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// A ring registered with one thread. The index means something only on that thread (the
/// kernel keeps a table per task), so the engine checks it is there before using it.
struct RegisteredRing {
    index: u32,
    thread: usize,
}

thread_local! {
    static THREAD_MARK: u8 = const { 0 };
}

/// Tells the calling thread from every other live thread: the address of its own thread-local.
fn this_thread() -> usize {
    THREAD_MARK.with(|mark| mark as *const u8 as usize)
}

/// Registers `ring`'s descriptor with the calling thread; `None` where the kernel refuses
/// (before 5.18) or the table is full.
fn register_ring(ring: &IoUring) -> Option<RegisteredRing> {
    // u32::MAX: any free index; the kernel writes back the one it chose.
    let mut update = RsrcUpdate { offset: u32::MAX, resv: 0, data: ring.as_raw_fd() as u64 };
    let done = update_ring_fds(ring, IORING_REGISTER_RING_FDS, &mut update);
    (done == 1).then_some(RegisteredRing { index: update.offset, thread: this_thread() })
}

/// Registers or releases (`opcode`) one ring descriptor of the calling thread; the kernel's
/// answer: entries done, or -1.
fn update_ring_fds(ring: &IoUring, opcode: libc::c_uint, update: &mut RsrcUpdate) -> libc::c_long {
    // The kernel reads one entry, and writes back the index it chose when registering.
    // SAFETY: `update` is a live, writable io_uring_rsrc_update for the call's duration.
    unsafe {
        libc::syscall(libc::SYS_io_uring_register, ring.as_raw_fd(), opcode, update as *mut RsrcUpdate, 1)
    }
}

/// How long an idle SQPOLL thread spins before it sleeps (and the next submit must wake it).
const SQPOLL_IDLE_MS: u32 = 1000;

/// One way to set up a ring: its flags and their names in the report.
struct RingMode {
    names: &'static [&'static str],
    apply: fn(&mut io_uring::Builder),
}

const DEFER_TASKRUN: RingMode = RingMode {
    names: &["single_issuer", "defer_taskrun"],
    apply: |b| {
        b.setup_single_issuer().setup_defer_taskrun().setup_taskrun_flag();
    },
};
const COOP_TASKRUN: RingMode = RingMode {
    names: &["coop_taskrun"],
    apply: |b| {
        b.setup_coop_taskrun().setup_taskrun_flag();
    },
};
const SINGLE_ISSUER: RingMode = RingMode {
    names: &["single_issuer"],
    apply: |b| {
        b.setup_single_issuer();
    },
};
const PLAIN: RingMode = RingMode { names: &[], apply: |_| {} };

/// The modes to try, cheapest first. A polled submission queue refuses the task-work flags.
fn candidate_modes(spec: &UringSpec) -> Vec<RingMode> {
    match (spec.ring_setup, spec.sqpoll) {
        (RingSetup::Auto, false) => vec![DEFER_TASKRUN, COOP_TASKRUN, PLAIN],
        (RingSetup::Auto, true) => vec![SINGLE_ISSUER, PLAIN],
        (RingSetup::DeferTaskrun, _) => vec![DEFER_TASKRUN],
        (RingSetup::CoopTaskrun, _) => vec![COOP_TASKRUN],
        (RingSetup::Plain, _) => vec![PLAIN],
    }
}

/// Creates a ring in the cheapest mode of `spec` that the kernel accepts; returns it with the
/// names of the setup flags in effect.
fn build_ring(entries: u32, spec: &UringSpec) -> Result<(IoUring, Vec<&'static str>), EngineError> {
    let modes = candidate_modes(spec);
    let mut last = None;
    for mode in &modes {
        let mut builder = IoUring::builder();
        (mode.apply)(&mut builder);
        let mut granted = mode.names.to_vec();
        if spec.sqpoll {
            builder.setup_sqpoll(SQPOLL_IDLE_MS);
            granted.push("sqpoll");
            if let Some(cpu) = spec.sqpoll_cpu {
                builder.setup_sqpoll_cpu(cpu);
            }
        }
        if spec.hipri {
            builder.setup_iopoll();
            granted.push("iopoll");
        }
        match builder.build(entries) {
            Ok(ring) => return Ok((ring, granted)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(probe::uring_setup_error(e)),
        }
    }
    let error = last.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL));
    if spec.ring_setup != RingSetup::Auto || spec.sqpoll || spec.hipri {
        return Err(EngineError::Unavailable(format!(
            "this kernel refused the requested io_uring setup ({}): {error}; try --ring-setup auto{}",
            describe_request(spec),
            if spec.sqpoll || spec.hipri { " without --sqpoll/--hipri" } else { "" }
        )));
    }
    Err(probe::uring_setup_error(error))
}

fn describe_request(spec: &UringSpec) -> String {
    let mut parts = vec![format!("ring setup {}", spec.ring_setup.name())];
    if spec.sqpoll {
        parts.push(match spec.sqpoll_cpu {
            Some(cpu) => format!("SQPOLL on CPU {cpu}"),
            None => "SQPOLL".into(),
        });
    }
    if spec.hipri {
        parts.push("IOPOLL".into());
    }
    parts.join(", ")
}

impl UringEngine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let spec = config.uring;
        let entries = config.qd.max(1).next_power_of_two();
        let (ring, mut granted) = build_ring(entries, &spec)?;
        let buffers = AlignedBuffers::new(config.qd, config.max_len, config.seed, config.origin)?
            .sealed(config.verify)
            .with_content(crate::content::Content::new(
                &config.content,
                config.origin.unwrap_or(config.seed),
            ));
        let fixed_files = spec.fixed_files && ring.submitter().register_files(&config.files).is_ok();
        let iovecs: Vec<libc::iovec> = (0..config.qd)
            .map(|slot| libc::iovec {
                iov_base: buffers.span(slot, config.max_len).cast(),
                iov_len: config.max_len as usize,
            })
            .collect();
        // The ring (and its registration) is dropped before the buffers, which are leaked
        // instead if requests are still in flight.
        let indexable = config.qd <= u32::from(u16::MAX);
        let fixed_buffers = spec.fixed_buffers
            && indexable
            // SAFETY: every iovec points into `buffers`, which outlives the registration (above).
            && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        if fixed_files {
            granted.push("fixed_files");
        }
        if fixed_buffers {
            granted.push("fixed_buffers");
        }
        let ext_arg = ring.params().is_feature_ext_arg();
        let spin = !spec.sqpoll && !spec.hipri;
        // The ring's own descriptor is registered with the files (`--fixed-files off` is the
        // plain path). An SQPOLL ring keeps the crate's enter, which knows when the polling
        // thread sleeps.
        let registered = if spec.fixed_files && !spec.sqpoll { register_ring(&ring) } else { None };
        if registered.is_some() {
            granted.push("registered_ring");
        }
        let watch_ns = if spin { spec.completion_watch.0 } else { 0 };
        if watch_ns > 0 {
            granted.push("completion_watch");
        }
        Ok(UringEngine {
            ring,
            files: config.files,
            fixed_files,
            fixed_buffers,
            granted,
            ext_arg,
            registered,
            spin,
            spin_ns: SPIN_NS,
            watch_ns,
            buffers: Some(buffers),
            in_flight: 0,
            timers_pending: 0,
            timer: Box::new(types::Timespec::new()),
        })
    }

    /// Hands over the queued requests, then watches the completion queue until `want` entries
    /// are in it or `timeout_ns` has passed, entering the kernel again only when it flags
    /// completions whose task work has yet to run (IORING_SQ_TASKRUN: deferred or cooperative
    /// task work; a plain ring posts them unasked).
    /// Returns the time it took, which may pass `timeout_ns` by one enter.
    fn spin_until(&mut self, want: usize, timeout_ns: u64) -> Result<u64, EngineError> {
        let start = std::time::Instant::now();
        self.commit(0)?;
        loop {
            let spent = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            if self.ring.completion().len() >= want || spent >= timeout_ns {
                return Ok(spent);
            }
            if self.ring.submission().taskrun() {
                self.commit(0)?;
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Waits with the timeout in the enter call itself (EXT_ARG).
    fn wait_with_timeout(&mut self, want: usize, timeout: &types::Timespec) -> Result<(), EngineError> {
        let args = types::SubmitArgs::new().timespec(timeout);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(()),
            Err(e) => match e.raw_os_error() {
                // The deadline passed (ETIME), a signal came (the caller loops and waits again),
                // or the completion queue is full (the caller reaps first).
                Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN) => Ok(()),
                _ => Err(EngineError::Syscall { call: "io_uring_enter", source: e }),
            },
        }
    }

    /// Waits for one completion, a timer request's included (kernels without EXT_ARG).
    fn wait_with_timer(&mut self, timeout: types::Timespec) -> Result<(), EngineError> {
        *self.timer = timeout;
        let timer = opcode::Timeout::new(&*self.timer).build().user_data(TIMER);
        // The kernel reads the timespec when it takes the request (the box lives as long as
        // the ring), and the request uses no buffer.
        // SAFETY: so the entry stays valid for as long as the kernel needs it.
        let mut pushed = unsafe { self.ring.submission().push(&timer) }.is_ok();
        if !pushed {
            // The submission queue is full of queued I/O: hand that over first.
            self.commit(0)?;
            // SAFETY: the same entry as above: the timespec it points to lives in a box as long
            // as the ring, and the request uses no buffer.
            pushed = unsafe { self.ring.submission().push(&timer) }.is_ok();
        }
        if !pushed {
            return self.enter(1);
        }
        self.timers_pending += 1;
        // The timer or an I/O, whichever completes first, ends the wait (the watch, if any,
        // is behind it).
        self.enter(1)
    }

    /// Hands over the queued entries and waits for `want` completions, as the crate's
    /// `submit_and_wait` does, naming the ring by its registered index where it has one on
    /// this thread.
    fn submit_and_wait(&mut self, want: u32) -> std::io::Result<usize> {
        let index = match &self.registered {
            Some(ring) if ring.thread == this_thread() => ring.index,
            _ => return self.ring.submit_and_wait(want as usize),
        };
        let iopoll = self.ring.params().is_setup_iopoll();
        let queue = self.ring.submission();
        let to_submit = queue.len() as libc::c_uint;
        // Deferred task work runs, completions held back by a full completion queue are
        // posted, and IOPOLL reaps, only in an enter that asks for completions.
        let get_events = want > 0 || iopoll || queue.taskrun() || queue.cq_overflow();
        drop(queue);
        let flags = IORING_ENTER_REGISTERED_RING | if get_events { IORING_ENTER_GETEVENTS } else { 0 };
        // The queued entries are valid until completion (see `queue`), and the call takes no
        // argument structure.
        // SAFETY: so the kernel reads only what the ring's own memory holds.
        let done = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                index,
                to_submit,
                want,
                flags,
                std::ptr::null::<libc::c_void>(),
                0usize,
            )
        };
        if done < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(done as usize)
        }
    }

    /// Hands over the queued requests and sleeps until `want` completions are in the queue
    /// (no watch), entering again where a signal cut the wait short.
    fn enter(&mut self, want: u32) -> Result<(), EngineError> {
        loop {
            match self.submit_and_wait(want) {
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

    fn entry(&self, request: &IoRequest) -> squeue::Entry {
        let buf = self.buffers.as_ref().map_or(std::ptr::null_mut(), |b| b.io_span(request.slot, request));
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
    fn data_sample(&self) -> Option<iolab_stats::DataSample> {
        self.buffers.as_ref().and_then(AlignedBuffers::data_sample)
    }

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
        let want = wait_for.min(self.in_flight);
        if want > 0 && self.watch_ns > 0 {
            self.spin_until(want as usize, self.watch_ns)?;
            if self.ring.completion().len() >= want as usize {
                return Ok(());
            }
        }
        self.enter(want)
    }

    fn spin_waits_up_to(&mut self, ns: u64) {
        self.spin_ns = ns.max(SPIN_NS);
    }

    fn commit_until(&mut self, wait_for: u32, timeout_ns: u64) -> Result<(), EngineError> {
        let want = wait_for.min(self.in_flight);
        if want == 0 || timeout_ns == 0 {
            return self.commit(0);
        }
        if self.spin && timeout_ns <= self.spin_ns.max(self.watch_ns) {
            return self.spin_until(want as usize, timeout_ns).map(drop);
        }
        let mut timeout_ns = timeout_ns;
        if self.watch_ns > 0 {
            let spent = self.spin_until(want as usize, self.watch_ns)?;
            if self.ring.completion().len() >= want as usize || spent >= timeout_ns {
                return Ok(());
            }
            timeout_ns -= spent;
        }
        let timeout =
            types::Timespec::new().sec(timeout_ns / 1_000_000_000).nsec((timeout_ns % 1_000_000_000) as u32);
        if self.ext_arg {
            self.wait_with_timeout(want as usize, &timeout)
        } else {
            self.wait_with_timer(timeout)
        }
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        let before = out.len();
        let completions = self.ring.completion();
        if self.timers_pending == 0 {
            out.extend(
                completions.map(|cqe| Completion { slot: cqe.user_data() as u32, result: cqe.result() }),
            );
        } else {
            for cqe in completions {
                if cqe.user_data() == TIMER {
                    self.timers_pending -= 1;
                } else {
                    out.push(Completion { slot: cqe.user_data() as u32, result: cqe.result() });
                }
            }
        }
        self.in_flight -= (out.len() - before) as u32;
    }

    fn in_flight(&self) -> u32 {
        self.in_flight
    }

    fn data(&self, slot: u32, len: u32) -> Option<&[u8]> {
        self.buffers.as_ref().map(|b| b.data(slot, len))
    }

    fn setup(&self) -> Vec<&'static str> {
        self.granted.clone()
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // The registration holds the ring open: undo it (on its own thread only; elsewhere the
        // index names another thread's ring), so the ring closes with the engine.
        if let Some(ring) = self.registered.take().filter(|ring| ring.thread == this_thread()) {
            let mut update = RsrcUpdate { offset: ring.index, resv: 0, data: 0 };
            update_ring_fds(&self.ring, IORING_UNREGISTER_RING_FDS, &mut update);
        }
        // Requests still in flight (a stuck device) may write into the buffers after the ring is
        // gone: leaking is the only safe answer.
        if self.in_flight > 0 {
            if let Some(buffers) = self.buffers.take() {
                buffers.leak();
            }
        }
    }
}

#[cfg(test)]
#[path = "uring_tests.rs"]
mod tests;
