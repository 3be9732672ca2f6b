//! What a set of results means, in plain words and with its evidence: the API ladder (which
//! I/O interface is cheapest and fastest on a target, and what io_uring's punting to io-wq
//! costs), target scaling (how much of the sum of singles a set of targets delivers together,
//! and what stopped it), each job's bottleneck verdict (what limited it) and a fleet's (what limited the hosts together), and the
//! characterization rules of docs/characterization.md: the sweet spot of a load curve, SNIA
//! steady state, and cache cliffs in a write log; and comparisons of stored runs (which points
//! match, and whether a difference is beyond the run-to-run noise). Pure functions: no I/O, tested on synthetic
//! results and series.

pub mod blend;
pub mod burnin;
pub mod cache;
pub mod cache_capacity;
mod cache_curve;
pub mod cache_fleet;
pub mod check;
pub mod cliff;
pub mod compare;
pub mod cpu;
pub mod fleet_verdict;
pub mod judge;
pub mod knee;
pub mod ladder;
pub mod ramp;
pub mod rated;
pub mod rounds;
pub mod scale;
pub mod steady;
pub mod suite;
pub mod sweep;
pub mod verdict;

#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod check_tests;
#[cfg(test)]
mod cliff_tests;
#[cfg(test)]
mod fleet_verdict_tests;
#[cfg(test)]
mod knee_tests;
#[cfg(test)]
mod pseudo_noise;
#[cfg(test)]
mod read_back_tests;
#[cfg(test)]
mod steady_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_tests;
