//! What a set of results means, in plain words and with its evidence: the API ladder (which
//! I/O interface is cheapest and fastest on a target, and what io_uring's punting to io-wq
//! costs) and target scaling (how much of the sum of singles a set of targets delivers together,
//! and what stopped it). Pure functions over `JobResult`s: no I/O, tested on synthetic results.

pub mod cliff;
pub mod cpu;
pub mod knee;
pub mod ladder;
pub mod rounds;
pub mod scale;
pub mod steady;
pub mod sweep;

#[cfg(test)]
mod tests;
