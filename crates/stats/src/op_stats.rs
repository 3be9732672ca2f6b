//! Statistics of one kind of operation (reads or writes) over some span: a latency histogram
//! plus the exact count, bytes, sum, sum of squares, minimum and maximum.

use hdrhistogram::Histogram;
use iolab_spec::Nanos;

use crate::summary::{LatencySummary, OpSummary, Percentile, TailShare, Within};

/// The percentiles every report gives.
pub const PERCENTILES: [f64; 7] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999];

/// Significant decimal digits kept by the histogram: values within 0.1%.
const SIGNIFICANT_DIGITS: u8 = 3;

/// The exact figures an `OpStats` keeps beside its histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Moments {
    pub ios: u64,
    pub bytes: u64,
    pub sum_ns: u128,
    pub sum_sq_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Debug)]
pub struct OpStats {
    histogram: Histogram<u64>,
    ios: u64,
    bytes: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            histogram: Histogram::new(SIGNIFICANT_DIGITS)
                .expect("3 significant digits is a valid histogram precision"),
            ios: 0,
            bytes: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }
}

impl OpStats {
    /// Records one completed I/O. The histogram grows to whatever range the values need.
    #[inline]
    pub fn record(&mut self, latency_ns: u64, bytes: u64) {
        // The histogram resizes itself to the value; only a value beyond any range saturates.
        if self.histogram.record(latency_ns.max(1)).is_err() {
            self.histogram.saturating_record(latency_ns);
        }
        // Saturating: a count or sum that cannot grow further stays at its largest value
        // rather than wrapping into a small, plausible-looking one.
        self.ios = self.ios.saturating_add(1);
        self.bytes = self.bytes.saturating_add(bytes);
        self.sum_ns = self.sum_ns.saturating_add(u128::from(latency_ns));
        self.sum_sq_ns = self.sum_sq_ns.saturating_add(u128::from(latency_ns) * u128::from(latency_ns));
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
    }

    /// Adds `other` exactly: the result is what one recorder of both streams would hold.
    pub fn merge(&mut self, other: &OpStats) {
        if other.ios == 0 {
            return;
        }
        self.histogram
            .add(&other.histogram)
            .expect("auto-resizing histograms of equal precision always merge");
        // Stored or imported parts can hold any count: saturate rather than overflow.
        self.ios = self.ios.saturating_add(other.ios);
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.sum_sq_ns = self.sum_sq_ns.saturating_add(other.sum_sq_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Statistics from their parts, as stored or imported: `histogram` holds the `ios`
    /// latencies (in ns); the sums are of the latencies and of their squares.
    pub fn from_parts(histogram: Histogram<u64>, moments: Moments) -> OpStats {
        let mut histogram = histogram;
        histogram.auto(true);
        OpStats {
            histogram,
            ios: moments.ios,
            bytes: moments.bytes,
            sum_ns: moments.sum_ns,
            sum_sq_ns: moments.sum_sq_ns,
            min_ns: if moments.ios == 0 { u64::MAX } else { moments.min_ns },
            max_ns: moments.max_ns,
        }
    }

    /// Everything but the histogram.
    pub fn moments(&self) -> Moments {
        Moments {
            ios: self.ios,
            bytes: self.bytes,
            sum_ns: self.sum_ns,
            sum_sq_ns: self.sum_sq_ns,
            min_ns: if self.ios == 0 { 0 } else { self.min_ns },
            max_ns: self.max_ns,
        }
    }

    pub fn ios(&self) -> u64 {
        self.ios
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    pub fn mean_ns(&self) -> f64 {
        if self.ios == 0 {
            return 0.0;
        }
        self.sum_ns as f64 / self.ios as f64
    }

    /// The latency at `percentile` (0..100), clamped to the exact extremes. Extremes that
    /// contradict each other (min above max, as only stored or imported parts can have) bound
    /// nothing: the histogram's value is given as it is rather than a panic in `clamp`.
    pub fn percentile_ns(&self, percentile: f64) -> u64 {
        if self.ios == 0 {
            return 0;
        }
        let value = self.histogram.value_at_percentile(percentile);
        if self.min_ns > self.max_ns {
            return value;
        }
        value.clamp(self.min_ns, self.max_ns)
    }

    /// Share (0..100) of I/Os that completed within `threshold`.
    pub fn within_pct(&self, threshold: Nanos) -> f64 {
        if self.ios == 0 {
            return 0.0;
        }
        if threshold.0 >= self.max_ns {
            return 100.0;
        }
        let within = self.histogram.count_between(0, threshold.0);
        100.0 * within.min(self.ios) as f64 / self.ios as f64
    }

    fn stdev_ns(&self) -> f64 {
        if self.ios < 2 {
            return 0.0;
        }
        let n = self.ios as f64;
        let mean = self.sum_ns as f64 / n;
        let variance = (self.sum_sq_ns as f64 / n - mean * mean).max(0.0);
        (variance * n / (n - 1.0)).sqrt()
    }

    pub fn latency_summary(&self, slo: &[Nanos]) -> Option<LatencySummary> {
        if self.ios == 0 {
            return None;
        }
        let percentiles: Vec<Percentile> =
            PERCENTILES.iter().map(|&p| Percentile { p, ns: self.percentile_ns(p) }).collect();
        Some(LatencySummary {
            min_ns: self.min_ns,
            mean_ns: self.mean_ns(),
            stdev_ns: self.stdev_ns(),
            max_ns: self.max_ns,
            tail: self.tail_share(&percentiles),
            percentiles,
            within: slo.iter().map(|&t| Within { threshold_ns: t.0, pct: self.within_pct(t) }).collect(),
        })
    }

    /// The I/Os beyond the highest percentile (p99 or above) that the mean exceeds, with their
    /// share of the I/Os and of the sum of latencies, from the histogram (each bucket at its
    /// middle: within 0.1%).
    fn tail_share(&self, percentiles: &[Percentile]) -> Option<TailShare> {
        let mean = self.mean_ns();
        let beneath = percentiles.iter().rfind(|x| x.p >= 99.0 && (x.ns as f64) < mean)?;
        let (mut ios, mut sum) = (0u64, 0f64);
        for bucket in self.histogram.iter_recorded() {
            if bucket.value_iterated_to() > beneath.ns {
                ios += bucket.count_at_value();
                let middle = self.histogram.median_equivalent(bucket.value_iterated_to());
                sum += bucket.count_at_value() as f64 * middle as f64;
            }
        }
        (ios > 0).then(|| TailShare {
            p: beneath.p,
            above_ns: beneath.ns,
            ios_pct: 100.0 * ios.min(self.ios) as f64 / self.ios as f64,
            mean_pct: (100.0 * sum / self.sum_ns as f64).min(100.0),
        })
    }

    /// Throughput and latency over `seconds`.
    pub fn summary(&self, seconds: f64, slo: &[Nanos]) -> OpSummary {
        let per_second = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
        OpSummary {
            ios: self.ios,
            bytes: self.bytes,
            iops: per_second(self.ios as f64),
            mb_s: per_second(self.bytes as f64) / 1e6,
            mib_s: per_second(self.bytes as f64) / (1u64 << 20) as f64,
            latency: self.latency_summary(slo),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 33
    }

    /// Merging per-worker recorders gives exactly what one recorder of every I/O gives.
    #[test]
    fn merge_equals_one_recorder_of_the_union() {
        let mut state = 7;
        let mut all = OpStats::default();
        let mut parts = vec![OpStats::default(), OpStats::default(), OpStats::default()];
        for i in 0..30_000u64 {
            let ns = 1_000 + lcg(&mut state) % 5_000_000;
            all.record(ns, 4096);
            parts[(i % 3) as usize].record(ns, 4096);
        }
        let mut merged = OpStats::default();
        for part in &parts {
            merged.merge(part);
        }
        assert_eq!(merged.ios(), all.ios());
        assert_eq!(merged.histogram(), all.histogram());
        for p in PERCENTILES {
            assert_eq!(merged.percentile_ns(p), all.percentile_ns(p));
        }
        assert_eq!(merged.latency_summary(&[]), all.latency_summary(&[]));
    }

    /// Percentiles are within the documented 0.1% of the exact order statistic.
    #[test]
    fn percentiles_are_within_a_tenth_of_a_percent() {
        let mut state = 11;
        let mut values: Vec<u64> = (0..200_000).map(|_| 500 + lcg(&mut state) % 20_000_000).collect();
        let mut stats = OpStats::default();
        for &v in &values {
            stats.record(v, 512);
        }
        values.sort_unstable();
        for p in [50.0, 90.0, 99.0, 99.9, 99.99] {
            let rank = ((p / 100.0) * values.len() as f64).ceil() as usize - 1;
            let exact = values[rank] as f64;
            let got = stats.percentile_ns(p) as f64;
            assert!((got - exact).abs() / exact <= 0.001, "p{p}: {got} vs {exact}");
        }
    }

    /// A mean far above the p99 is owned by the few I/Os beyond it, and said so; a mean below
    /// the p99 has no such tail.
    #[test]
    fn a_mean_above_a_high_percentile_is_owned_by_its_tail() {
        let mut stats = OpStats::default();
        for _ in 0..9_980 {
            stats.record(4_000, 4096);
        }
        for _ in 0..20 {
            stats.record(100_000_000, 4096);
        }
        let latency = stats.latency_summary(&[]).expect("has I/Os");
        assert!(latency.mean_ns > 100_000.0 && latency.percentile(99.0) < Some(5_000), "{latency:?}");
        let tail = latency.tail.expect("the tail owns the mean");
        assert_eq!(tail.p, 99.0, "the highest percentile below the mean: {latency:?}");
        assert!((tail.ios_pct - 0.2).abs() < 1e-9, "{tail:?}");
        // 20 x 100 ms against 9,980 x 4 us: 98.0% of the sum.
        assert!((tail.mean_pct - 98.04).abs() < 0.1, "{tail:?}");
        assert_eq!(tail.sentence(), "0.2% of I/Os took over 4.00us (p99) and make up 98% of the mean");

        let mut even = OpStats::default();
        for ns in 1..=10_000u64 {
            even.record(ns * 100, 4096);
        }
        assert_eq!(even.latency_summary(&[]).expect("has I/Os").tail, None);
    }

    #[test]
    fn exact_moments_and_shares() {
        let mut stats = OpStats::default();
        for ns in [100_000, 200_000, 300_000, 1_500_000] {
            stats.record(ns, 4096);
        }
        let summary = stats.summary(2.0, &[Nanos(1_000_000), Nanos(2_000_000)]);
        assert_eq!(summary.ios, 4);
        assert_eq!(summary.iops, 2.0);
        assert_eq!(summary.bytes, 16384);
        let latency = summary.latency.expect("has I/Os");
        assert_eq!((latency.min_ns, latency.max_ns), (100_000, 1_500_000));
        assert_eq!(latency.mean_ns, 525_000.0);
        let expected_sd = {
            let m: f64 = 525_000.0;
            let ss: f64 =
                [100_000.0f64, 200_000.0, 300_000.0, 1_500_000.0].iter().map(|v| (v - m).powi(2)).sum();
            (ss / 3.0).sqrt()
        };
        assert!((latency.stdev_ns - expected_sd).abs() < 1.0);
        assert_eq!(latency.within[0].pct, 75.0);
        assert_eq!(latency.within[1].pct, 100.0);
    }

    /// Regression (issue 19): parts with min above max made `percentile_ns` panic in `clamp`.
    #[test]
    fn percentile_with_min_above_max_is_not_a_panic() {
        let mut histogram = Histogram::<u64>::new(SIGNIFICANT_DIGITS).expect("valid precision");
        histogram.record_n(1_000, 10).expect("in range");
        let moments =
            Moments { ios: 10, bytes: 0, sum_ns: 10_000, sum_sq_ns: 10_000_000, min_ns: 900, max_ns: 100 };
        let stats = OpStats::from_parts(histogram, moments);
        let summary = stats.latency_summary(&[Nanos(1_000_000)]).expect("has I/Os");
        assert!(summary.percentiles.iter().all(|p| p.ns > 0));
    }

    /// Regression (issue 19): counts and sums near their limits overflowed in `merge`.
    #[test]
    fn merging_huge_counts_saturates_not_overflows() {
        let histogram = Histogram::<u64>::new(SIGNIFICANT_DIGITS).expect("valid precision");
        let huge = Moments {
            ios: u64::MAX,
            bytes: u64::MAX,
            sum_ns: u128::MAX,
            sum_sq_ns: u128::MAX,
            min_ns: 1,
            max_ns: 2,
        };
        let mut stats = OpStats::from_parts(histogram.clone(), huge);
        stats.merge(&OpStats::from_parts(histogram, huge));
        assert_eq!(stats.moments().ios, u64::MAX);
        assert_eq!(stats.moments().sum_sq_ns, u128::MAX);
        stats.record(5, 4096);
        assert_eq!(stats.bytes(), u64::MAX);
    }

    #[test]
    fn empty_has_no_latency() {
        let stats = OpStats::default();
        assert!(stats.summary(1.0, &[]).latency.is_none());
        assert_eq!(stats.percentile_ns(99.0), 0);
    }
}
