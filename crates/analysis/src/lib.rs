//! What a set of results means, in plain words and with its evidence: the API ladder (which
//! I/O interface is cheapest and fastest on a target, and what io_uring's punting to io-wq
//! costs), target scaling (how much of the sum of singles a set of targets delivers together,
//! and what stopped it) and each job's bottleneck verdict (what limited it). Pure functions
//! over `JobResult`s: no I/O, tested on synthetic results.

pub mod cpu;
pub mod ladder;
pub mod scale;
pub mod verdict;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_tests;
