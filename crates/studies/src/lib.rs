//! The studies: what each of iolab's commands runs in a lab, in what order, and what it keeps
//! of the results for the analysis. Each study is resolved from the user's options first (a bad
//! flag fails before any I/O), then runs its jobs in a `Lab` (here or on a fleet) and hands the
//! results to `iolab_analysis`. No store, terminal or exit code here: the binary wires these to
//! the command line (crates/cli).

pub mod burnin;
pub mod burnin_resume;
pub mod cache;
pub mod cache_fleet;
pub mod cliff;
pub mod fill;
pub mod groups;
pub mod ladder;
pub mod plan;
pub mod ramp;
pub mod rounds;
pub mod scale;
pub mod suite;
pub mod sweep;
pub mod timing;
pub mod trial;

#[cfg(test)]
mod tests;
