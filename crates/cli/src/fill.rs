//! A sequential write over the whole region, ended by an I/O limit: what preconditioning and
//! the cliff test both run (the suites' preconditioning too).

use iolab_spec::{Axis, Bytes, IoLimit, JobSpec, Nanos, Options, Rw};

/// Long enough never to end a fill early: the I/O limit ends the job.
const UNBOUNDED: Nanos = Nanos(100 * 365 * 24 * 3600 * 1_000_000_000);

/// The options a fill sets itself, which the user may not give.
pub const FILL_KEYS: &[&str] =
    &["rw", "read_pct", "random_pct", "runtime", "io_limit", "bs_split", "rate_iops", "burst"];

/// Sequential 128 KiB writes at QD 32, no ramp, no time limit. The user's flags lie over it.
pub fn defaults() -> Options {
    Options {
        rw: Some(Rw::Write),
        bs: Some(Axis::one(Bytes(128 << 10))),
        qd: Some(Axis::one(32)),
        runtime: Some(UNBOUNDED),
        ramp: Some(Nanos(0)),
        ..Options::default()
    }
}

/// `job` (from `defaults`) writing `bytes` and stopping: passes x region for preconditioning.
pub fn limited_to(job: &JobSpec, name: String, bytes: u64) -> JobSpec {
    JobSpec { name, io_limit: Some(IoLimit::Bytes(Bytes(bytes))), ..job.clone() }
}
