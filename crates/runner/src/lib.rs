//! Runs workloads: prepares targets, drives worker threads through ramp and measurement,
//! enforces stop conditions (runtime, I/O limit, errors, Ctrl-C, the stuck-request watchdog),
//! and assembles results. It knows jobs, not sweeps: a sweep is many jobs, run in one `Lab`.

mod access;
mod collector;
mod coverage;
mod cpus_polling;
mod devices;
mod distribution;
mod error;
mod idle_reader;
mod job;
mod kernel_file;
mod lab;
mod lane;
mod lane_wait_sampler;
mod leftovers;
mod limits_reader;
mod machine_watch;
mod observer;
mod open_devices;
mod poison;
mod prepare;
mod pressure_reader;
mod proc_reader;
mod remote;
mod routing;
mod run;
mod schedule;
mod shared;
mod start_gate;
mod thread_cpu;
pub mod verify;

pub use cpus_polling::CpusPolling;
pub use distribution::{Sampler, SamplerError};
pub use error::RunError;
pub use lab::Lab;
pub use lab::OnFailedStart;
pub use observer::{Both, HostRate, IntervalDetail, Observer, Phase, ProgressUpdate, ResultSink, Silent};
pub use prepare::{OpenedTargets, PreparedTarget, SCRATCH_SIZE};
pub use remote::{EachHost, Remote};
pub use run::run_jobs;
