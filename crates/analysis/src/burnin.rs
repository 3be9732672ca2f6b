//! What a burn-in shows over its hours or weeks: the performance of each segment and its trend
//! (did IOPS sag or p99 climb as the drive filled and aged?), the drive's health trend from the
//! samples taken every few minutes (temperature range, new media errors, endurance used, data
//! the drive counted as written), and the whole burn-in's figures from the exact merge of every
//! segment's histograms, so its percentiles are those of every I/O, never averages.

use iolab_stats::health::HealthSample;
use iolab_stats::result::OpSummary;
use iolab_stats::IntervalStats;
use iolab_store::PointFigures;
use serde::{Deserialize, Serialize};

use crate::rated::RatedLine;

/// One segment of the burn-in, as kept in the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// 1 for the first segment of the burn-in, counted across resumes.
    pub index: u32,
    pub completed_at_unix_s: i64,
    pub measured_s: f64,
    pub iops: f64,
    pub mb_s: f64,
    pub mean_ns: Option<f64>,
    pub p99_ns: Option<u64>,
    /// I/O errors and (with verify) data errors in the segment.
    pub data_errors: u64,
}

impl Segment {
    /// Segment `index` as its point keeps it: the one reading of a stored segment, for a
    /// resumed burn-in and for the HTML report of one killed before its report was written.
    pub fn of_point(index: u32, point: &PointFigures) -> Segment {
        let total = &point.summary.total;
        Segment {
            index,
            completed_at_unix_s: point.completed_at_unix_s,
            measured_s: point.summary.measured_s,
            iops: total.iops,
            mb_s: total.mb_s,
            mean_ns: total.latency.as_ref().map(|l| l.mean_ns),
            p99_ns: total.percentile(99.0),
            data_errors: point.errors,
        }
    }
}

/// How IOPS and p99 moved over the segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfTrend {
    pub first_iops: f64,
    pub last_iops: f64,
    /// Last segment against the first, in percent.
    pub change_pct: f64,
    pub min_iops: f64,
    pub max_iops: f64,
    /// The least-squares slope of IOPS against time, in percent of the mean IOPS per day;
    /// `None` with fewer than three segments or over less than an hour.
    pub slope_pct_per_day: Option<f64>,
    pub first_p99_ns: Option<u64>,
    pub last_p99_ns: Option<u64>,
    pub max_p99_ns: Option<u64>,
}

/// How the drive's health moved over the samples: first and last, and the extremes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthTrend {
    pub samples: usize,
    pub source: String,
    pub device: String,
    pub first_unix_s: i64,
    pub last_unix_s: i64,
    pub min_temperature_celsius: Option<i32>,
    pub max_temperature_celsius: Option<i32>,
    pub last_temperature_celsius: Option<i32>,
    /// Media errors the drive added over the samples.
    pub new_media_errors: Option<u64>,
    pub percentage_used_first: Option<u8>,
    pub percentage_used_last: Option<u8>,
    /// What the drive counted as written between the first and the last sample.
    pub data_written_bytes: Option<u64>,
    pub new_io_errors: Option<u64>,
    /// Every critical warning bit seen in any sample.
    pub critical_warning_seen: u8,
    /// Plain sentences of what deserves a look (new media errors, a critical warning).
    pub warnings: Vec<String>,
}

/// The whole burn-in: every segment's I/Os together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Whole {
    pub measured_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    pub total: OpSummary,
}

/// Why the burn-in ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Ending {
    /// Every planned segment ran.
    Completed,
    /// Stopped at the first segment with a data error (without --keep-going).
    DataErrors { segment: u32, errors: u64 },
    /// Ctrl-C or SIGTERM: `iolab burnin --resume ID` continues it.
    Interrupted,
    /// A segment ended the run otherwise (a stuck device, an engine error).
    Failed { reason: String },
}

/// A burn-in's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurninSummary {
    /// The run in the store (what --resume takes), when kept.
    pub run: Option<i64>,
    /// What ran ("randwrite 4KiB, QD 32 x 1 worker(s)") and where ("/dev/nvme0n1").
    pub workload: String,
    pub target: String,
    pub planned_segments: u32,
    pub segment_s: f64,
    pub health_every_s: f64,
    pub keep_going: bool,
    pub segments: Vec<Segment>,
    /// Segments this invocation ran (the rest were kept by earlier ones).
    pub resumed_from: u32,
    pub whole: Option<Whole>,
    pub perf: Option<PerfTrend>,
    pub health: Option<HealthTrend>,
    pub health_samples: Vec<HealthSample>,
    /// Why there are no health samples (no NVMe, no root).
    pub health_skipped: Option<String>,
    pub data_errors: u64,
    pub ending: Ending,
    #[serde(default)]
    pub rated_model: Option<String>,
    #[serde(default)]
    pub rated: Vec<RatedLine>,
}

/// The whole burn-in's figures from the merge of every segment's histograms over `measured_s`.
pub fn whole(merged: &IntervalStats, measured_s: f64, slo: &[iolab_spec::Nanos]) -> Whole {
    let mut total = merged.read.clone();
    total.merge(&merged.write);
    Whole {
        measured_s,
        read: merged.read.summary(measured_s, slo),
        write: merged.write.summary(measured_s, slo),
        total: total.summary(measured_s, slo),
    }
}

/// The trend of the segments' IOPS and p99; `None` without segments.
pub fn perf_trend(segments: &[Segment]) -> Option<PerfTrend> {
    let (first, last) = (segments.first()?, segments.last()?);
    let iops: Vec<f64> = segments.iter().map(|s| s.iops).collect();
    let mean = iops.iter().sum::<f64>() / iops.len() as f64;
    let hours: Vec<f64> = segments
        .iter()
        .map(|s| (s.completed_at_unix_s - first.completed_at_unix_s) as f64 / 3600.0)
        .collect();
    // A slope over less than an hour extrapolated to a day is noise, not a trend.
    let span_hours = hours.last().copied().unwrap_or(0.0);
    let slope_pct_per_day = slope(&hours, &iops)
        .filter(|_| segments.len() >= 3 && mean > 0.0 && span_hours >= 1.0)
        .map(|per_hour| per_hour * 24.0 / mean * 100.0);
    Some(PerfTrend {
        first_iops: first.iops,
        last_iops: last.iops,
        change_pct: if first.iops > 0.0 { (last.iops - first.iops) / first.iops * 100.0 } else { 0.0 },
        min_iops: iops.iter().copied().fold(f64::INFINITY, f64::min),
        max_iops: iops.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        slope_pct_per_day,
        first_p99_ns: first.p99_ns,
        last_p99_ns: last.p99_ns,
        max_p99_ns: segments.iter().filter_map(|s| s.p99_ns).max(),
    })
}

/// The least-squares slope of `y` against `x`; `None` when every `x` is the same.
fn slope(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxx: f64 = x.iter().map(|x| (x - mx).powi(2)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The trend of the health samples (in the order taken); `None` without samples.
pub fn health_trend(samples: &[HealthSample]) -> Option<HealthTrend> {
    let (first, last) = (samples.first()?, samples.last()?);
    let temperatures = samples.iter().filter_map(|s| s.temperature_celsius);
    // A counter's growth from its first to its last reading; a drop (a different drive) is 0.
    let grew = |get: fn(&HealthSample) -> Option<u64>| {
        let values: Vec<u64> = samples.iter().filter_map(get).collect();
        Some(values.last()?.saturating_sub(*values.first()?))
    };
    let new_media_errors = grew(|s| s.media_errors);
    let critical_warning_seen = samples.iter().filter_map(|s| s.critical_warning).fold(0, |a, b| a | b);
    let mut warnings = Vec::new();
    if let Some(n) = new_media_errors.filter(|n| *n > 0) {
        warnings.push(format!(
            "the drive added {n} media and data integrity error{} during the burn-in: it lost data it \
             could not recover; check its error log (nvme error-log) and do not trust it with data",
            if n == 1 { "" } else { "s" }
        ));
    }
    if critical_warning_seen != 0 {
        warnings.push(format!(
            "the drive raised critical warning {critical_warning_seen:#04x} (spare, temperature, reliability \
             or read-only): see its SMART log"
        ));
    }
    let new_io_errors = grew(|s| s.io_errors);
    if let Some(n) = new_io_errors.filter(|n| *n > 0) {
        warnings.push(format!("the kernel counted {n} new failed commands to the drive (ioerr_cnt)"));
    }
    Some(HealthTrend {
        samples: samples.len(),
        source: last.source.clone(),
        device: last.device.clone(),
        first_unix_s: first.taken_at_unix_s,
        last_unix_s: last.taken_at_unix_s,
        min_temperature_celsius: temperatures.clone().min(),
        max_temperature_celsius: temperatures.max(),
        last_temperature_celsius: last.temperature_celsius,
        new_media_errors,
        percentage_used_first: samples.iter().find_map(|s| s.percentage_used),
        percentage_used_last: samples.iter().rev().find_map(|s| s.percentage_used),
        data_written_bytes: grew(|s| s.data_written_bytes),
        new_io_errors,
        critical_warning_seen,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(index: u32, at: i64, iops: f64, p99: u64) -> Segment {
        Segment {
            index,
            completed_at_unix_s: at,
            measured_s: 600.0,
            iops,
            mb_s: iops * 4096.0 / 1e6,
            mean_ns: None,
            p99_ns: Some(p99),
            data_errors: 0,
        }
    }

    #[test]
    fn a_sagging_drive_has_a_negative_slope_per_day() {
        // IOPS falls 1,000 an hour from 100,000: over a day, 24,000 of a mean near 98,500.
        let segments: Vec<Segment> = (0..4)
            .map(|h| {
                segment(h + 1, 3600 * i64::from(h), 100_000.0 - 1000.0 * f64::from(h), 100 + u64::from(h))
            })
            .collect();
        let trend = perf_trend(&segments).expect("segments");
        assert_eq!((trend.first_iops, trend.last_iops), (100_000.0, 97_000.0));
        assert!((trend.change_pct + 3.0).abs() < 1e-9, "{}", trend.change_pct);
        let slope = trend.slope_pct_per_day.expect("four segments over three hours");
        assert!((slope + 24_000.0 / 98_500.0 * 100.0).abs() < 1e-6, "{slope}");
        assert_eq!((trend.min_iops, trend.max_iops), (97_000.0, 100_000.0));
        assert_eq!(
            (trend.first_p99_ns, trend.last_p99_ns, trend.max_p99_ns),
            (Some(100), Some(103), Some(103))
        );
    }

    #[test]
    fn two_segments_or_minutes_have_no_slope_and_none_have_no_trend() {
        let trend = perf_trend(&[segment(1, 0, 10.0, 1), segment(2, 7200, 20.0, 1)]).expect("segments");
        assert_eq!((trend.slope_pct_per_day, trend.change_pct), (None, 100.0));
        // Three segments within a few minutes: a per-day figure would be noise.
        let minutes: Vec<Segment> =
            (0..3).map(|i| segment(i + 1, 60 * i64::from(i), 10.0 + f64::from(i), 1)).collect();
        assert_eq!(perf_trend(&minutes).expect("segments").slope_pct_per_day, None);
        assert_eq!(perf_trend(&[]), None);
    }

    fn sample(at: i64, celsius: i32, media_errors: u64, used: u8, written: u64) -> HealthSample {
        HealthSample {
            taken_at_unix_s: at,
            source: "nvme".into(),
            device: "nvme0n1".into(),
            temperature_celsius: Some(celsius),
            media_errors: Some(media_errors),
            percentage_used: Some(used),
            available_spare_pct: Some(100),
            data_written_bytes: Some(written),
            data_read_bytes: Some(0),
            critical_warning: Some(0),
            io_errors: None,
        }
    }

    #[test]
    fn the_health_trend_has_the_range_and_what_grew() {
        let samples =
            [sample(0, 38, 2, 3, 1_000), sample(300, 52, 2, 3, 5_000), sample(600, 47, 3, 4, 9_000)];
        let trend = health_trend(&samples).expect("samples");
        assert_eq!(
            (trend.min_temperature_celsius, trend.max_temperature_celsius, trend.last_temperature_celsius),
            (Some(38), Some(52), Some(47))
        );
        assert_eq!((trend.new_media_errors, trend.data_written_bytes), (Some(1), Some(8_000)));
        assert_eq!((trend.percentage_used_first, trend.percentage_used_last), (Some(3), Some(4)));
        assert_eq!(trend.warnings.len(), 1);
        assert!(trend.warnings[0].starts_with("the drive added 1 media and data integrity error during"));
        assert_eq!(health_trend(&[]), None);
    }

    #[test]
    fn a_healthy_drive_has_no_warning_and_a_reset_counter_no_wrap() {
        let trend =
            health_trend(&[sample(0, 40, 5, 1, 9_000), sample(60, 41, 5, 1, 1_000)]).expect("samples");
        assert_eq!((trend.new_media_errors, trend.data_written_bytes), (Some(0), Some(0)));
        assert!(trend.warnings.is_empty(), "{:?}", trend.warnings);
    }

    #[test]
    fn the_whole_is_the_merge_of_every_segment() {
        let mut one = IntervalStats::default();
        let mut two = IntervalStats::default();
        for ns in 1..=99u64 {
            one.read.record(ns * 1000, 4096);
        }
        two.read.record(1_000_000, 4096);
        let mut merged = IntervalStats::default();
        merged.merge(&one);
        merged.merge(&two);
        let whole = whole(&merged, 10.0, &[]);
        assert_eq!((whole.total.ios, whole.total.iops), (100, 10.0));
        // The slow I/O of segment two is the maximum of the whole, as no average could say.
        let latency = whole.total.latency.expect("I/Os");
        assert!(latency.max_ns >= 999_000, "{}", latency.max_ns);
        assert_eq!(whole.write.ios, 0);
    }
}
