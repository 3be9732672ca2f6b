//! Measurement: exact, mergeable latency histograms, per-interval series, CPU accounting, and
//! the result types that every later stage (store, analysis, report) reads.
//!
//! Percentiles are never averaged: workers' histograms are merged and percentiles are read from
//! the merge. Values are recorded in nanoseconds with 3 significant digits (hdrhistogram), so a
//! reported percentile is within 0.1% of the true latency of that rank.

mod activity;
pub mod advice;
pub mod central;
pub mod cpu;
pub mod cpu_idle;
pub mod data;
pub mod encoded;
pub mod fleet;
pub mod format;
pub mod health;
mod interval;
pub mod kernel_threads;
pub mod lane_waits;
pub mod limits;
pub mod machine;
mod op_stats;
pub mod pressure;
pub mod proc_text;
mod rate;
pub mod replay;
pub mod result;
pub mod retry;
pub mod slots;
mod summary;
pub mod threads;
mod verdict;
pub mod verify;

pub use data::{DataReport, DataSample};
pub use interval::IntervalStats;
pub use op_stats::{Moments, OpStats, PERCENTILES};
pub use rate::{SUSTAINED_MAX_LAG_NS, SUSTAINED_MIN_COMPLETED_PCT};
