//! The open-loop schedule of one lane: when each of its I/Os is due.
//!
//! A group's rate is shared by its lanes (threads). Uniform: the group's k-th I/O is due at
//! k / rate after the job starts, and lane i of T takes k = n T + i, so the group as a whole is
//! evenly spaced instead of issuing T I/Os at once every T / rate. Poisson: each lane draws
//! exponential gaps of mean T / rate from a generator seeded by the group's seed and the lane's
//! index (a run repeats with its --seed); T independent Poisson processes of rate / T add up to
//! one of the group's rate.
//!
//! Times are nanoseconds on the job's clock (`Shared::now_ns`), from when the lanes were told to
//! start: the ramp is scheduled too, so the measured window opens on a schedule in progress.
//! Due times are computed from the index (uniform) or summed in `f64` (Poisson), never by adding
//! rounded gaps, so they do not drift.

use std::sync::Arc;

use iolab_spec::{Arrival, RateSpec, ReplayIo};

const NS_PER_SEC: u128 = 1_000_000_000;

/// The most arrivals `due_between` draws one by one for a lane that fell behind; past that it
/// counts the rest of the window at the mean rate (its expected value).
const MAX_DRAWN: u64 = 1_000_000;

pub struct Schedule {
    kind: Kind,
    /// Index of the lane's next I/O (0 for its first) and when it is due.
    index: u64,
    next_due_ns: u64,
    measure_start_ns: u64,
    /// Index of the lane's first I/O due at or after `measure_start_ns`, once drawn.
    first_measured: Option<u64>,
}

enum Kind {
    /// Lane `lane` of `threads` sharing `group_iops`. The next due time is (n T + lane) 10^9 /
    /// rate, kept as quotient `due_ns` and remainder `rest`, and advanced by the quotient and
    /// remainder of T 10^9 / rate: exact, and no division per I/O.
    Uniform {
        group_iops: u64,
        threads: u64,
        lane: u64,
        due_ns: u64,
        rest: u64,
        step_ns: u64,
        step_rest: u64,
    },
    Poisson {
        rng: fastrand::Rng,
        mean_gap_ns: f64,
        due_ns: f64,
    },
    /// A trace's recorded times (`iolab replay`): lane `lane` of `step` takes requests lane,
    /// lane + step, ...; after its last, nothing is ever due.
    Replay {
        ios: Arc<[ReplayIo]>,
        lane: usize,
        step: usize,
    },
}

impl Schedule {
    /// The schedule of lane `lane` (0-based) of the `threads` lanes of a group run at `rate`,
    /// whose measured window opens at `measure_start_ns`.
    pub fn new(rate: &RateSpec, threads: u32, lane: u32, seed: u64, measure_start_ns: u64) -> Self {
        let threads = u64::from(threads.max(1));
        let lane = u64::from(lane);
        let iops = rate.iops.max(1);
        let kind = match rate.arrival {
            Arrival::Uniform => {
                let (first, step) = (u128::from(lane) * NS_PER_SEC, u128::from(threads) * NS_PER_SEC);
                let iops128 = u128::from(iops);
                Kind::Uniform {
                    group_iops: iops,
                    threads,
                    lane,
                    due_ns: (first / iops128) as u64,
                    rest: (first % iops128) as u64,
                    step_ns: (step / iops128) as u64,
                    step_rest: (step % iops128) as u64,
                }
            }
            Arrival::Poisson => Kind::Poisson {
                // Not the access generator's stream: a schedule of its own.
                rng: fastrand::Rng::with_seed(
                    seed.rotate_left(29) ^ 0x5c4e_d01e ^ (lane + 1).wrapping_mul(0xa076_1d64_78bd_642f),
                ),
                mean_gap_ns: threads as f64 * 1e9 / iops as f64,
                due_ns: 0.0,
            },
        };
        let mut schedule =
            Schedule { kind, index: 0, next_due_ns: 0, measure_start_ns, first_measured: None };
        schedule.next_due_ns = match &schedule.kind {
            Kind::Uniform { due_ns, .. } => *due_ns,
            Kind::Poisson { .. } | Kind::Replay { .. } => schedule.draw(),
        };
        schedule.note_measured();
        schedule
    }

    /// The schedule of lane `lane` of `lanes` replaying `ios` at their due times.
    pub fn replay(ios: Arc<[ReplayIo]>, lanes: u32, lane: u32, measure_start_ns: u64) -> Self {
        let (lane, step) = (lane as usize, lanes.max(1) as usize);
        let mut schedule = Schedule {
            kind: Kind::Replay { ios, lane, step },
            index: 0,
            next_due_ns: 0,
            measure_start_ns,
            first_measured: None,
        };
        schedule.next_due_ns = schedule.draw();
        schedule.note_measured();
        schedule
    }

    /// When the lane's next I/O is due.
    #[inline]
    /// Whether it replays a trace (its times are the trace's, kept as closely as the lane can).
    pub fn is_replay(&self) -> bool {
        matches!(self.kind, Kind::Replay { .. })
    }

    pub fn next_due_ns(&self) -> u64 {
        self.next_due_ns
    }

    /// Takes the next I/O off the schedule; returns when it was due.
    #[inline]
    pub fn take(&mut self) -> u64 {
        let due = self.next_due_ns;
        self.index += 1;
        self.next_due_ns = self.draw();
        self.note_measured();
        due
    }

    /// The due time of the I/O after the last drawn.
    #[inline]
    fn draw(&mut self) -> u64 {
        match &mut self.kind {
            Kind::Uniform { group_iops, due_ns, rest, step_ns, step_rest, .. } => {
                *due_ns += *step_ns;
                *rest += *step_rest;
                if *rest >= *group_iops {
                    *rest -= *group_iops;
                    *due_ns += 1;
                }
                *due_ns
            }
            Kind::Poisson { rng, mean_gap_ns, due_ns } => {
                // 1 - u is in (0, 1]: the logarithm is finite.
                *due_ns += -(1.0 - rng.f64()).ln() * *mean_gap_ns;
                *due_ns as u64
            }
            Kind::Replay { ios, lane, step } => {
                let at = (*lane as u64 + self.index * *step as u64) as usize;
                ios.get(at).map_or(u64::MAX, |io| io.due_ns)
            }
        }
    }

    #[inline]
    fn note_measured(&mut self) {
        if self.first_measured.is_none() && self.next_due_ns >= self.measure_start_ns {
            self.first_measured = Some(self.index);
        }
    }

    /// How many of the lane's I/Os are due in `start..end` (the measured window), whether the
    /// lane issued them or not. Exact for a uniform schedule. A Poisson schedule is drawn on to
    /// `end` where the lane did not get that far, and beyond `MAX_DRAWN` more arrivals the rest
    /// is counted at the mean rate. Meant for the end of the run: it advances the schedule.
    pub fn due_between(&mut self, start: u64, end: u64) -> u64 {
        if end <= start {
            return 0;
        }
        if let Kind::Uniform { group_iops, threads, lane, .. } = self.kind {
            let first =
                |t: u64| uniform_first_at(t, u128::from(group_iops), u128::from(threads), u128::from(lane));
            return first(end) - first(start);
        }
        if let Kind::Replay { ios, lane, step } = &self.kind {
            let due = |io: &ReplayIo| io.due_ns >= start && io.due_ns < end;
            return ios.iter().skip(*lane).step_by(*step).filter(|io| due(io)).count() as u64;
        }
        debug_assert_eq!(start, self.measure_start_ns, "the window opens where the schedule was told");
        let mut drawn = 0;
        while self.next_due_ns < end {
            if drawn == MAX_DRAWN {
                let Kind::Poisson { mean_gap_ns, .. } = self.kind else { break };
                let expected =
                    |from: u64, to: u64| (to.saturating_sub(from) as f64 / mean_gap_ns).round() as u64;
                if self.first_measured.is_none() {
                    self.first_measured = Some(self.index + expected(self.next_due_ns, start));
                }
                self.index += expected(self.next_due_ns, end);
                break;
            }
            self.take();
            drawn += 1;
        }
        self.index - self.first_measured.unwrap_or(self.index)
    }
}

/// The smallest n whose due time floor((n T + lane) 10^9 / rate) is at or after `t`: floor(x) >= t exactly when x >= t,
/// so n T + lane >= t rate / 10^9, n >= (t rate - lane 10^9) / (T 10^9).
fn uniform_first_at(t: u64, group_iops: u128, threads: u128, lane: u128) -> u64 {
    let need = u128::from(t) * group_iops;
    let have = lane * NS_PER_SEC;
    if need <= have {
        return 0;
    }
    (need - have).div_ceil(threads * NS_PER_SEC) as u64
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
