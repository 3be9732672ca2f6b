//! One fio job's reads and writes as iolab's `OpSummary`: counts and rates as fio gives them,
//! latency from its completion latency (clat). With json+ the latency histogram is rebuilt
//! from fio's bins, so percentiles (all of iolab's) come from it and the job can be merged
//! later; with plain json only fio's own percentiles exist and are taken as they are.

use hdrhistogram::Histogram;
use iolab_spec::STANDARD_SLO;
use iolab_stats::result::{LatencySummary, OpSummary, Percentile, Within};
use iolab_stats::{Moments, OpStats, PERCENTILES};
use serde_json::Value;

use crate::error::{Ctx, FioImportError};

/// Significant digits of the rebuilt histogram: iolab's own precision.
const SIGNIFICANT_DIGITS: u8 = 3;

/// fio's exact figures for one latency: its N, mean, stddev, min and max.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FioMoments {
    pub n: u64,
    pub mean: f64,
    pub stdev: f64,
    pub min: u64,
    pub max: u64,
}

impl FioMoments {
    /// Reads and writes together: mean weighted by count, the pooled sample stdev.
    fn pooled(a: FioMoments, b: FioMoments) -> FioMoments {
        let n = a.n.saturating_add(b.n);
        let (na, nb, nn) = (a.n as f64, b.n as f64, n as f64);
        let mean = (a.mean * na + b.mean * nb) / nn;
        let sum_sq = |m: FioMoments, k: f64| m.stdev * m.stdev * (k - 1.0).max(0.0) + k * m.mean * m.mean;
        let variance = if n > 1 {
            ((sum_sq(a, na) + sum_sq(b, nb) - nn * mean * mean) / (nn - 1.0)).max(0.0)
        } else {
            0.0
        };
        FioMoments { n, mean, stdev: variance.sqrt(), min: a.min.min(b.min), max: a.max.max(b.max) }
    }
}

/// Which of fio's latencies a job's figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// clat_ns: from submission to completion.
    Clat,
    /// lat_ns: from the I/O's creation, submission included; fio moves its percentiles there
    /// when a job sets lat_percentiles=1, and only those come with a distribution.
    Lat,
}

/// One direction (read or write) of a job.
#[derive(Debug, Clone)]
pub(crate) struct Side {
    pub summary: OpSummary,
    /// The latencies rebuilt from json+ bins; `None` with plain json or without I/Os.
    pub stats: Option<OpStats>,
    pub moments: FioMoments,
    pub runtime_ms: u64,
    /// The bins count other than N I/Os (they should not), by little: kept, with a note.
    pub bins_mismatch: Option<(u64, u64)>,
    /// The bins count far other than N I/Os (or beyond 2^64): left out, fio's list is used.
    pub bins_left_out: Option<(Option<u64>, u64)>,
}

/// Which latency of direction `ddir` carries the distribution: clat, unless only lat does.
pub(crate) fn source(job: &Value, ddir: &str) -> Source {
    let has_distribution = |name: &str| {
        job.pointer(&format!("/{ddir}/{name}"))
            .is_some_and(|s| s.get("percentile").is_some() || s.get("bins").is_some())
    };
    if !has_distribution("clat_ns") && has_distribution("lat_ns") {
        Source::Lat
    } else {
        Source::Clat
    }
}

/// Reads `ddir` ("read" or "write") of `job`. `within` is the job's share of I/Os within 1 and
/// 2 ms from fio's latency buckets, given only when this direction holds all the job's I/Os
/// (the buckets count every direction together).
pub(crate) fn side(
    ctx: &Ctx,
    job: &Value,
    ddir: &str,
    within: Option<&[Within]>,
) -> Result<Side, FioImportError> {
    let at = |key: &str| format!("/{ddir}/{key}");
    let ios = ctx.u64(job, &at("total_ios"))?;
    let bytes = ctx.u64(job, &at("io_bytes"))?;
    let iops = ctx.f64(job, &at("iops"))?;
    let bw_bytes = ctx.f64(job, &at("bw_bytes"))?;
    let runtime_ms = ctx.u64(job, &at("runtime"))?;
    let source = source(job, ddir);
    let section_name = if source == Source::Clat { "clat_ns" } else { "lat_ns" };
    let section = ctx.get(job, &at(section_name))?;
    let mut bins_left_out = None;
    let name = |key: &str| format!("/{ddir}/{section_name}/{key}");
    let moments = moments(ctx, section, &name)?;
    let mut bins_mismatch = None;
    let stats = match section.get("bins").and_then(Value::as_object) {
        Some(bins) if ios > 0 && moments.n > 0 => {
            match from_bins(ctx, &name("bins"), bins, moments, bytes)? {
                Binned::Kept(stats) => {
                    if stats.ios() != moments.n {
                        bins_mismatch = Some((stats.ios(), moments.n));
                    }
                    Some(stats)
                }
                Binned::LeftOut(total) => {
                    bins_left_out = Some((total, moments.n));
                    None
                }
            }
        }
        _ => None,
    };
    let latency = if ios == 0 || moments.n == 0 {
        None
    } else if let Some(stats) = &stats {
        with_fio_moments(stats.latency_summary(&STANDARD_SLO), moments)
    } else {
        Some(LatencySummary {
            min_ns: moments.min,
            mean_ns: moments.mean,
            stdev_ns: moments.stdev,
            max_ns: moments.max,
            percentiles: listed_percentiles(section.get("percentile"), moments),
            within: within.map(<[Within]>::to_vec).unwrap_or_default(),
            tail: None,
        })
    };
    let summary =
        OpSummary { ios, bytes, iops, mb_s: bw_bytes / 1e6, mib_s: bw_bytes / (1u64 << 20) as f64, latency };
    Ok(Side { summary, stats, moments, runtime_ms, bins_mismatch, bins_left_out })
}

/// fio's N, mean, stddev, min and max of one latency, checked as fio always writes them:
/// whole counts, finite non-negative figures, min <= mean <= max.
fn moments(ctx: &Ctx, section: &Value, name: &dyn Fn(&str) -> String) -> Result<FioMoments, FioImportError> {
    let moments = FioMoments {
        n: ctx.u64(section, "/N").map_err(|_| ctx.error(&name("N"), "is missing or not a count"))?,
        mean: ctx
            .f64(section, "/mean")
            .map_err(|_| ctx.error(&name("mean"), "is missing, negative or not a number"))?,
        stdev: ctx
            .f64(section, "/stddev")
            .map_err(|_| ctx.error(&name("stddev"), "is missing, negative or not a number"))?,
        min: ctx
            .u64(section, "/min")
            .map_err(|_| ctx.error(&name("min"), "is missing or not a whole number of ns"))?,
        max: ctx
            .u64(section, "/max")
            .map_err(|_| ctx.error(&name("max"), "is missing or not a whole number of ns"))?,
    };
    if moments.n == 0 {
        return Ok(moments);
    }
    if moments.min > moments.max {
        return Err(
            ctx.inconsistent(&name("min"), format!("({} ns) is above max ({} ns)", moments.min, moments.max))
        );
    }
    // fio prints the mean to 6 decimals: half a ns of slack either side.
    if moments.mean + 0.5 < moments.min as f64 || moments.mean - 0.5 > moments.max as f64 {
        return Err(ctx.inconsistent(
            &name("mean"),
            format!("({} ns) is outside min..max ({}..{} ns)", moments.mean, moments.min, moments.max),
        ));
    }
    Ok(moments)
}

/// Reads and writes together. Throughput adds up; latency merges the rebuilt histograms when
/// both sides have them, else keeps only what the summaries give exactly (extremes, mean,
/// stdev) and the bucket shares, with no percentiles: those of a mix cannot be had from the
/// percentiles of its parts.
pub(crate) fn total(read: &Side, write: &Side, within: Option<&[Within]>) -> OpSummary {
    match (read.summary.ios, write.summary.ios) {
        (_, 0) => return read.summary.clone(),
        (0, _) => return write.summary.clone(),
        _ => {}
    }
    let (r, w) = (&read.summary, &write.summary);
    let moments = FioMoments::pooled(read.moments, write.moments);
    let latency = match (&read.stats, &write.stats) {
        (Some(a), Some(b)) => {
            let mut merged = a.clone();
            merged.merge(b);
            with_fio_moments(merged.latency_summary(&STANDARD_SLO), moments)
        }
        _ => (moments.n > 0).then(|| LatencySummary {
            min_ns: moments.min,
            mean_ns: moments.mean,
            stdev_ns: moments.stdev,
            max_ns: moments.max,
            percentiles: Vec::new(),
            within: within.map(<[Within]>::to_vec).unwrap_or_default(),
            tail: None,
        }),
    };
    OpSummary {
        // Each side is checked to be under 2^63, so their sums fit.
        ios: r.ios.saturating_add(w.ios),
        bytes: r.bytes.saturating_add(w.bytes),
        iops: r.iops + w.iops,
        mb_s: r.mb_s + w.mb_s,
        mib_s: r.mib_s + w.mib_s,
        latency,
    }
}

/// fio's own mean and stdev replace the ones recomputed from the rebuilt sums, which carry the
/// rounding of fio's printed mean; min and max are fio's already.
fn with_fio_moments(latency: Option<LatencySummary>, moments: FioMoments) -> Option<LatencySummary> {
    latency.map(|l| LatencySummary { mean_ns: moments.mean, stdev_ns: moments.stdev, ..l })
}

/// What became of a direction's json+ bins.
enum Binned {
    Kept(OpStats),
    /// Their total (`None`: beyond 2^64) is far from N: no histogram.
    LeftOut(Option<u64>),
}

/// How far the bins' total may be from N and still be kept (with a note): fio's bins and N
/// are counted apart and may differ by a few I/Os completing at the end.
const BINS_SLACK: f64 = 0.01;

/// The histogram of fio's json+ bins (value in ns -> count), with moments rebuilt from fio's
/// N, mean and stddev: sum = mean x N, sum of squares = stdev² x (N - 1) + N x mean² (fio's
/// stddev is the sample one). fio prints the mean to 6 decimals, so the sums are whole
/// nanoseconds within N x 5e-7 ns of the true ones. Bins that count far other than N I/Os
/// (an edited file: fio's own add up) are left out rather than rebuilt into a histogram
/// that contradicts the figures beside it.
fn from_bins(
    ctx: &Ctx,
    field: &str,
    bins: &serde_json::Map<String, Value>,
    moments: FioMoments,
    bytes: u64,
) -> Result<Binned, FioImportError> {
    let mut parsed = Vec::with_capacity(bins.len());
    let mut total: Option<u64> = Some(0);
    for (value, count) in bins {
        let value: u64 =
            value.parse().map_err(|_| ctx.error(field, "has a bin that is not a latency in ns"))?;
        let count = crate::error::count(count)
            .map_err(|_| ctx.error(field, "has a bin count that is not a whole number under 2^63"))?;
        total = total.and_then(|t| t.checked_add(count));
        parsed.push((value, count));
    }
    let n = moments.n as f64;
    let near = total.is_some_and(|t| (t as f64 - n).abs() <= n * BINS_SLACK + 1.0);
    if !near {
        return Ok(Binned::LeftOut(total));
    }
    let mut histogram = Histogram::<u64>::new(SIGNIFICANT_DIGITS)
        .expect("3 significant digits is a valid histogram precision");
    for (value, count) in parsed {
        // Auto-resizing: only a value beyond any range fails, and then it saturates.
        if histogram.record_n(value.max(1), count).is_err() {
            histogram.saturating_record_n(value.max(1), count);
        }
    }
    let sum_ns = (moments.mean * n).round().max(0.0) as u128;
    let sum_sq_ns = (moments.stdev * moments.stdev * (n - 1.0).max(0.0) + n * moments.mean * moments.mean)
        .round()
        .max(0.0) as u128;
    let ios = histogram.len();
    Ok(Binned::Kept(OpStats::from_parts(
        histogram,
        Moments { ios, bytes, sum_ns, sum_sq_ns, min_ns: moments.min, max_ns: moments.max },
    )))
}

/// iolab's percentiles that fio listed ("99.000000": ns), clamped to fio's exact extremes (fio
/// reports a bucket's middle, which can lie past the largest latency). The ones fio did not
/// list are left out rather than guessed.
fn listed_percentiles(list: Option<&Value>, moments: FioMoments) -> Vec<Percentile> {
    let Some(list) = list.and_then(Value::as_object) else { return Vec::new() };
    let listed: Vec<(f64, u64)> =
        list.iter().filter_map(|(p, ns)| Some((p.trim().parse::<f64>().ok()?, ns.as_u64()?))).collect();
    PERCENTILES
        .iter()
        .filter_map(|&p| {
            let (_, ns) = listed.iter().find(|(q, _)| (q - p).abs() < 1e-6)?;
            Some(Percentile { p, ns: (*ns).clamp(moments.min, moments.max) })
        })
        .collect()
}

/// Shares of I/Os within 1 and 2 ms from fio's latency buckets (latency_ns/us/ms: clat of
/// every direction, trims included). fio files an I/O of n ns under latency_ms only from 1 ms
/// on (n >= 1,000,000), its first bucket ("2") up to 2 ms, so the share under 1 ms is 100 less
/// every ms bucket, and under 2 ms 100 less all but the first. fio raises a bucket that holds
/// under 0.01% to 0.01%, so each share may read low by up to 0.01 point per such bucket.
pub(crate) fn bucket_within(job: &Value) -> Option<Vec<Within>> {
    let ms = job.get("latency_ms")?.as_object()?;
    let mut above_1ms = 0.0;
    let mut above_2ms = 0.0;
    for (bucket, pct) in ms {
        let pct = pct.as_f64()?;
        above_1ms += pct;
        if bucket != "2" {
            above_2ms += pct;
        }
    }
    let share = |above: f64| (100.0 - above).clamp(0.0, 100.0);
    let thresholds = [STANDARD_SLO[0].0, STANDARD_SLO[1].0];
    debug_assert_eq!(thresholds, [1_000_000, 2_000_000], "the buckets give 1 and 2 ms only");
    Some(vec![
        Within { threshold_ns: thresholds[0], pct: share(above_1ms) },
        Within { threshold_ns: thresholds[1], pct: share(above_2ms) },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_moments_are_those_of_the_union() {
        let values_a = [100.0, 200.0, 300.0];
        let values_b = [1000.0, 3000.0];
        let stats = |v: &[f64]| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (mean, var.sqrt())
        };
        let make = |v: &[f64]| {
            let (mean, stdev) = stats(v);
            FioMoments { n: v.len() as u64, mean, stdev, min: v[0] as u64, max: v[v.len() - 1] as u64 }
        };
        let pooled = FioMoments::pooled(make(&values_a), make(&values_b));
        let all: Vec<f64> = values_a.iter().chain(&values_b).copied().collect();
        let (mean, stdev) = stats(&all);
        assert!((pooled.mean - mean).abs() < 1e-9 && (pooled.stdev - stdev).abs() < 1e-9);
        assert_eq!((pooled.n, pooled.min, pooled.max), (5, 100, 3000));
    }

    #[test]
    fn buckets_give_shares_within_one_and_two_ms() {
        let job = serde_json::json!({"latency_ms": {"2": 1.5, "4": 0.25, "10": 0.25, ">=2000": 0.0}});
        let within = bucket_within(&job).expect("has buckets");
        assert_eq!(within[0], Within { threshold_ns: 1_000_000, pct: 98.0 });
        assert_eq!(within[1], Within { threshold_ns: 2_000_000, pct: 99.5 });
        assert!(bucket_within(&serde_json::json!({})).is_none());
    }

    #[test]
    fn only_listed_percentiles_are_kept() {
        let list =
            serde_json::json!({"50.000000": 100, "99.000000": 900, "99.990000": 5000, "95.000000": 700});
        let moments = FioMoments { n: 10, mean: 0.0, stdev: 0.0, min: 50, max: 4000 };
        let kept = listed_percentiles(Some(&list), moments);
        assert_eq!(
            kept,
            [
                Percentile { p: 50.0, ns: 100 },
                Percentile { p: 99.0, ns: 900 },
                Percentile { p: 99.99, ns: 4000 }
            ]
        );
    }
}
