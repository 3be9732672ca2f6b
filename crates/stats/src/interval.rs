//! One interval's worth of reads and writes, as a worker hands it to the collector.

use iolab_spec::Nanos;

use crate::op_stats::OpStats;
use crate::summary::SeriesPoint;

#[derive(Clone, Debug, Default)]
pub struct IntervalStats {
    /// Service time of reads: from the hand-over to the kernel to the completion.
    pub read: OpStats,
    pub write: OpStats,
    /// Open loop only: response time of reads and writes together, from each I/O's scheduled
    /// time to its completion (the wait for a free slot included). One histogram, not one per
    /// operation: the schedule does not tell reads from writes, and what it answers (did the
    /// I/Os keep to the rate, and what did a late start cost) concerns them all. `None` in
    /// closed loop, which has no schedule and pays for no histogram.
    pub response: Option<OpStats>,
    /// A replay at its recorded times (`iolab replay`) only, over the whole window (never per
    /// interval): how far behind its due time each request started. Kept as a histogram so a
    /// fleet's replays merge their lags exactly.
    pub lag: Option<OpStats>,
    /// Slot time outside the latency figures: from the reap of one I/O to the hand-over of the
    /// next on the same slot (the lane recording completions and preparing requests; in open
    /// loop also the wait for the next due time), summed over the hand-overs in the interval,
    /// and how many there were. Latency plus this gap is a slot's whole cycle (Little's law).
    pub gap_ns: u64,
    pub gaps: u64,
    /// The window's edges in the in-flight time (Little's law): of the I/Os that completed in
    /// the window, the part of their latency before it began; of those still in flight when it
    /// ended, the part inside it. Latency alone counts the first and misses the second, which
    /// a short window with long latencies shows (21.7 of 32 slots found).
    pub before_window_ns: u64,
    pub outstanding_ns: u64,
    /// Waits for completions a lane began in the window with a slot free and I/O due: the
    /// engine refused the request (its queue was full), so that slot stayed idle through the
    /// wait. In closed loop every freed slot goes back before the lane waits, so each slot's
    /// gap is the work of the batch it was reaped in; this counts the times it was not.
    pub waits_with_free_slots: u64,
}

impl IntervalStats {
    pub fn merge(&mut self, other: &IntervalStats) {
        self.read.merge(&other.read);
        self.write.merge(&other.write);
        if let Some(response) = &other.response {
            self.response.get_or_insert_with(OpStats::default).merge(response);
        }
        if let Some(lag) = &other.lag {
            self.lag.get_or_insert_with(OpStats::default).merge(lag);
        }
        self.gap_ns += other.gap_ns;
        self.gaps += other.gaps;
        self.before_window_ns += other.before_window_ns;
        self.outstanding_ns += other.outstanding_ns;
        self.waits_with_free_slots += other.waits_with_free_slots;
    }

    pub fn ios(&self) -> u64 {
        self.read.ios() + self.write.ios()
    }

    /// Reads and writes together.
    pub fn combined(&self) -> OpStats {
        let mut all = self.read.clone();
        all.merge(&self.write);
        all
    }

    /// The series point of this interval, which started `start` after the measurement did.
    pub fn point(&self, start: Nanos, duration: Nanos) -> SeriesPoint {
        let seconds = duration.as_secs_f64();
        let all = self.combined();
        let rate = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
        SeriesPoint {
            t_s: start.as_secs_f64(),
            duration_s: seconds,
            iops: rate(all.ios()),
            read_iops: rate(self.read.ios()),
            write_iops: rate(self.write.ios()),
            mb_s: rate(all.bytes()) / 1e6,
            mean_ns: all.mean_ns(),
            p99_ns: all.percentile_ns(99.0),
        }
    }
}
