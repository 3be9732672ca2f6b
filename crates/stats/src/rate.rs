//! Open loop: whether a rate-limited group kept to its schedule, and by how much it fell short.
//!
//! "Sustained" is one rule, here, so that every report and every verdict means the same by it:
//! the completions inside the measured window reach 99% of the I/Os scheduled inside it, and no
//! I/O started more than 100 ms behind its scheduled time. The first catches a rate the target
//! cannot carry (the backlog grows); the second a schedule kept on average but not throughout
//! (a stall the lane caught up on afterwards). 1% and 100 ms leave room for the edges of the
//! window (I/Os still in flight at its end) and for a busy machine waking a thread late, and
//! for nothing more.

use iolab_spec::RateSpec;

use crate::result::{LatencySummary, RateReport};

/// The share of the scheduled I/Os that must complete in the window, in percent.
pub const SUSTAINED_MIN_COMPLETED_PCT: u64 = 99;

/// The most an I/O may start behind its scheduled time in a sustained run.
pub const SUSTAINED_MAX_LAG_NS: u64 = 100_000_000;

impl RateReport {
    /// The report of a group run at `rate`: `scheduled_ios` were due inside the measured window
    /// of `measured_s`, `completed_ios` completed inside it, and no I/O started more than
    /// `max_lag_ns` late. `response` is the response-time summary (from the scheduled times).
    pub fn new(
        rate: &RateSpec,
        scheduled_ios: u64,
        completed_ios: u64,
        measured_s: f64,
        max_lag_ns: u64,
        response: Option<LatencySummary>,
    ) -> Self {
        let short = scheduled_ios.saturating_sub(completed_ios);
        let shortfall_pct = if scheduled_ios > 0 { 100.0 * short as f64 / scheduled_ios as f64 } else { 0.0 };
        let enough = u128::from(completed_ios) * 100
            >= u128::from(scheduled_ios) * u128::from(SUSTAINED_MIN_COMPLETED_PCT);
        RateReport {
            target_iops: rate.iops as f64,
            arrival: rate.arrival,
            scheduled_ios,
            completed_ios,
            achieved_iops: if measured_s > 0.0 { completed_ios as f64 / measured_s } else { 0.0 },
            shortfall_pct,
            sustained: enough && max_lag_ns <= SUSTAINED_MAX_LAG_NS,
            max_lag_ns,
            response,
        }
    }
}

#[cfg(test)]
mod tests {
    use iolab_spec::Arrival;

    use super::*;

    const RATE: RateSpec = RateSpec { iops: 2000, arrival: Arrival::Uniform };

    #[test]
    fn kept_schedule_is_sustained() {
        let report = RateReport::new(&RATE, 2000, 1999, 1.0, 80_000, None);
        assert!(report.sustained);
        assert_eq!((report.target_iops, report.achieved_iops), (2000.0, 1999.0));
        assert!((report.shortfall_pct - 0.05).abs() < 1e-9);
        let caught_up = RateReport::new(&RATE, 2000, 2010, 1.0, 0, None);
        assert_eq!(caught_up.shortfall_pct, 0.0, "more than scheduled is no shortfall");
        assert!(caught_up.sustained);
    }

    #[test]
    fn the_limits_are_99_percent_and_100_ms() {
        assert!(RateReport::new(&RATE, 1000, 990, 1.0, SUSTAINED_MAX_LAG_NS, None).sustained);
        assert!(!RateReport::new(&RATE, 1000, 989, 1.0, 0, None).sustained, "1.1% short");
        assert!(!RateReport::new(&RATE, 1000, 1000, 1.0, SUSTAINED_MAX_LAG_NS + 1, None).sustained);
    }

    #[test]
    fn a_rate_out_of_reach_says_by_how_much() {
        let report = RateReport::new(&RATE, 10_000_000, 6_200_000, 1.0, 850_000_000, None);
        assert!(!report.sustained);
        assert!((report.shortfall_pct - 38.0).abs() < 1e-9);
        assert_eq!(report.achieved_iops, 6_200_000.0);
    }

    #[test]
    fn nothing_scheduled_is_nothing_short() {
        let report = RateReport::new(&RATE, 0, 0, 0.0, 0, None);
        assert_eq!((report.shortfall_pct, report.achieved_iops), (0.0, 0.0));
        assert!(report.sustained);
    }
}
