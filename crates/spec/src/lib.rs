//! iolab's workload specification: the one source of every option.
//!
//! Command-line flags and job files fill the same `Options` table; `resolve` stacks the layers
//! (defaults < file < job < group < flags) and validates them into a `RunPlan`. Nothing here
//! touches a target: checks that need it live in the runner. The one reading done here is of
//! files the user named (job files and the like), each through `user_file`.

pub mod axis;
pub mod cache;
pub mod data;
mod distribution;
mod error;
pub mod jobfile;
pub mod ladder;
mod model;
mod options;
pub mod printable;
mod resolve;
pub mod scale;
pub mod suite;
pub mod sweep;
mod units;
pub mod user_file;
mod values;
mod verify;
pub mod wire;

pub use axis::Axis;
pub use data::{BufferPattern, DataSpec};
pub use distribution::{Distribution, DistributionError, WorkingSet, WorkingSetMoves, Zone, MAX_ZIPF_THETA};
pub use error::{SpecError, TomlError};
pub use model::{
    AccessSpec, Burst, GroupSpec, JobSpec, OutputSpec, RateSpec, ReplayIo, ReplaySpec, RunPlan, TargetSpec,
    UringSpec,
};
pub use options::{flag_name, Options, JOB_KEYS, RUN_KEYS, URING_KEYS};
pub use resolve::{defaults, resolve, DEFAULT_SEED, MAX_RATE_IOPS, STANDARD_SLO};
pub use units::{Bytes, Nanos, UnitError};
pub use values::{
    Arrival, BsSplit, BsWeight, CpuList, EngineKind, IoLimit, NanosList, RingSetup, Rw, SplitFault,
    ValueError,
};
pub use verify::{VerifySpec, VERIFY_BLOCK};

#[cfg(test)]
mod tests;
