//! The API ladder: one workload through each I/O interface in turn, from the simplest
//! (synchronous psync) to the most tuned io_uring, so the cost of each step is measured on the
//! user's own target rather than assumed.

use serde::{Deserialize, Serialize};

use crate::model::{JobSpec, UringSpec};
use crate::values::{EngineKind, RingSetup};

/// One rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rung {
    /// pread/pwrite, one thread per outstanding I/O.
    Psync,
    /// Linux native AIO.
    Aio,
    /// io_uring as an older kernel or a default fio ring has it: no setup flags, no registration.
    Uring,
    /// With the ring setup flags the kernel offers (probed: defer_taskrun, else coop_taskrun).
    UringFlags,
    /// Plus registered files, fixed buffers and the registered ring (iolab's default).
    UringRegistered,
    /// Plus a kernel thread polling the submission queue.
    UringSqpoll,
    /// Registered, with polled completions; only on devices with poll queues.
    UringIopoll,
}

impl Rung {
    pub const ALL: [Rung; 7] = [
        Rung::Psync,
        Rung::Aio,
        Rung::Uring,
        Rung::UringFlags,
        Rung::UringRegistered,
        Rung::UringSqpoll,
        Rung::UringIopoll,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rung::Psync => "psync",
            Rung::Aio => "aio",
            Rung::Uring => "uring",
            Rung::UringFlags => "uring+flags",
            Rung::UringRegistered => "uring+registered",
            Rung::UringSqpoll => "uring+sqpoll",
            Rung::UringIopoll => "uring+iopoll",
        }
    }

    /// What the rung adds, for the table.
    pub fn describe(self) -> &'static str {
        match self {
            Rung::Psync => "pread/pwrite, one thread per I/O",
            Rung::Aio => "io_submit/io_getevents",
            Rung::Uring => "plain ring, no registration",
            Rung::UringFlags => "+ ring setup flags (probed)",
            Rung::UringRegistered => "+ registered files, buffers and ring",
            Rung::UringSqpoll => "+ SQPOLL kernel thread",
            Rung::UringIopoll => "+ IOPOLL polled completions",
        }
    }

    pub fn is_uring(self) -> bool {
        !matches!(self, Rung::Psync | Rung::Aio)
    }

    /// `base` run through this rung: every group gets the rung's engine and tuning.
    pub fn apply(self, base: &JobSpec) -> JobSpec {
        let (engine, uring) = match self {
            Rung::Psync => (EngineKind::Psync, UringSpec::default()),
            Rung::Aio => (EngineKind::Aio, UringSpec::default()),
            Rung::Uring => {
                (EngineKind::Uring, UringSpec { ring_setup: RingSetup::Plain, ..UringSpec::default() })
            }
            Rung::UringFlags => (EngineKind::Uring, UringSpec::default()),
            Rung::UringRegistered => (EngineKind::Uring, UringSpec::tuned()),
            Rung::UringSqpoll => (EngineKind::Uring, UringSpec { sqpoll: true, ..UringSpec::tuned() }),
            Rung::UringIopoll => (EngineKind::Uring, UringSpec { hipri: true, ..UringSpec::tuned() }),
        };
        let mut job = base.clone();
        job.name = self.name().to_string();
        for group in &mut job.groups {
            group.engine = engine;
            group.uring = uring;
        }
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{defaults, resolve};

    #[test]
    fn rungs_set_engine_and_tuning_and_keep_the_workload() {
        let flags = crate::Options { qd: Some(crate::Axis::one(8)), ..defaults() };
        let base = resolve(None, &flags).expect("plan").jobs.remove(0);
        let psync = Rung::Psync.apply(&base);
        assert_eq!((psync.name.as_str(), psync.groups[0].engine), ("psync", EngineKind::Psync));
        assert_eq!(psync.groups[0].lanes(), 8, "psync holds one I/O per thread");
        let plain = Rung::Uring.apply(&base);
        assert_eq!(plain.groups[0].uring.ring_setup, RingSetup::Plain);
        assert!(!plain.groups[0].uring.fixed_files && !plain.groups[0].uring.fixed_buffers);
        let sqpoll = Rung::UringSqpoll.apply(&base);
        assert!(sqpoll.groups[0].uring.sqpoll && sqpoll.groups[0].uring.fixed_buffers);
        assert_eq!(sqpoll.groups[0].qd, 8);
        assert_eq!(sqpoll.groups[0].access.describe(), base.groups[0].access.describe());
    }
}
