//! What a ramp found: the latency-vs-IOPS curve (open-loop levels as shares of the measured
//! maximum), where the limits were crossed, and the most IOPS the target sustains within them.
//!
//! The summary is also read back from the store (the HTML report draws it): every field has a
//! default, so a report written by an older or newer iolab still reads, with what it has.

use std::fmt;
use std::str::FromStr;

use iolab_spec::Nanos;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{JobResult, LatencySummary, RateReport};
use iolab_stats::threads::ThreadClass;
use iolab_stats::PERCENTILES;
use serde::{Deserialize, Deserializer, Serialize};

use crate::verdict::{GENERATOR_WAIT_PCT, LATE_START_NS};

/// A latency ceiling such as `p99=2ms` or `mean=500us`, on response time (from the scheduled
/// time, so queueing behind a late start counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencyLimit {
    /// The percentile, or `None` for the mean.
    pub percentile: Option<f64>,
    #[serde(rename = "limit_ns", deserialize_with = "nanoseconds")]
    pub limit: Nanos,
}

/// `limit_ns` as written: a count of nanoseconds (`Nanos` itself reads a bare number as
/// seconds, as job files write it).
fn nanoseconds<'de, D: Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
    u64::deserialize(d).map(Nanos)
}

impl LatencyLimit {
    /// The measured value this limit is about, in ns.
    pub fn measure(&self, latency: &LatencySummary) -> Option<f64> {
        match self.percentile {
            None => Some(latency.mean_ns),
            Some(p) => latency.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9).map(|x| x.ns as f64),
        }
    }
}

impl FromStr for LatencyLimit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| format!("bad latency limit '{text}': {why}; write e.g. p99=2ms or mean=500us");
        let (what, limit) = text.split_once('=').ok_or_else(|| bad("it needs WHAT=TIME"))?;
        let limit = limit.trim().parse::<Nanos>().map_err(|e| bad(&e.to_string()))?;
        if limit.0 == 0 {
            return Err(bad("the limit must be above 0"));
        }
        let what = what.trim().to_ascii_lowercase();
        let percentile = match what.as_str() {
            "mean" | "avg" => None,
            p => {
                let value: f64 = p
                    .strip_prefix('p')
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| bad("name p50, p99, p99.9 ... or mean"))?;
                if !PERCENTILES.iter().any(|r| (r - value).abs() < 1e-9) {
                    return Err(bad("the percentile must be one the report has: p50, p90, p99, p99.9, p99.99, p99.999, p99.9999"));
                }
                Some(value)
            }
        };
        Ok(LatencyLimit { percentile, limit })
    }
}

impl fmt::Display for LatencyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.percentile {
            None => write!(f, "mean={}", self.limit),
            Some(p) => write!(f, "p{p}={}", self.limit),
        }
    }
}

/// The limits a ramp stops at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RampLimits {
    pub latency: Option<LatencyLimit>,
    /// Mean busy share of the machine's cores, 0..100.
    pub max_cpu_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RampRow {
    /// Index of the curve the level belongs to (`RampSummary::curves`); 0 for a plain ramp.
    pub curve: usize,
    /// Share of the measured maximum asked for, 0..100.
    pub level_pct: u32,
    pub target_iops: f64,
    pub achieved_iops: f64,
    pub sustained: bool,
    /// The most an I/O of the level started behind its due time.
    pub max_lag_ns: u64,
    /// The level kept up: sustained, and no I/O started more than `LATE_START_NS` late.
    pub kept_up: bool,
    /// Why a level that completed its I/Os still did not keep up: "I/Os started up to 20.0ms
    /// late; the load generator fell behind (its thread waited 31% of the level for a CPU)".
    pub late: Option<String>,
    pub response_mean_ns: f64,
    pub response_p99_ns: u64,
    pub service_p99_ns: u64,
    /// Mean busy share of the machine's cores during the level.
    pub machine_cpu_pct: f64,
    /// iolab's own CPU, in % of one core.
    pub process_cpu_pct: f64,
    pub cpu_us_per_io: f64,
    /// The limit this level crossed, in words.
    pub crossed: Option<String>,
    /// Its verdict says another load or a stolen CPU shared what it measured: shown, but not
    /// the level the target sustains.
    pub disturbed: bool,
    /// Attempts at the level measured before the one shown and dropped, each disturbed.
    pub retried: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RampSummary {
    /// Closed-loop IOPS at the workload's QD: 100% of the ramp (of its first curve).
    pub max_iops: f64,
    pub limits: RampLimits,
    /// Every curve's levels, in the order run.
    pub rows: Vec<RampRow>,
    pub verdict: Vec<String>,
    /// One ramp per combination of the listed --bs, --read-pct and --random-pct values (one for a
    /// plain ramp): its name, its own maximum, and its rows.
    pub curves: Vec<RampCurve>,
}

/// One ramp of a ramp over lists: `iolab ramp vms.toml --read-pct 100,90` ramps each mix.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RampCurve {
    /// What the curve's levels share ("read 90%"); empty for a plain ramp.
    pub name: String,
    /// Closed-loop IOPS of this curve's workload: its 100%.
    pub max_iops: f64,
    /// Indices into `RampSummary::rows`.
    pub rows: Vec<usize>,
}

fn p99(latency: Option<&LatencySummary>) -> u64 {
    latency.and_then(|l| l.percentile(99.0)).unwrap_or(0)
}

/// One level's row, with the limit it crossed if any. A job of several groups (each on its own
/// share of the level's rate) is one row: the rates summed, its response time from the groups'
/// merged histograms, sustained only if every group was, its lag the largest.
pub fn row(level_pct: u32, job: &JobResult, limits: &RampLimits) -> RampRow {
    let rates: Vec<&RateReport> = job.groups.iter().filter_map(|g| g.rate.as_ref()).collect();
    let merged = match rates.as_slice() {
        [_, _, ..] => job.histograms.response.as_ref().and_then(|r| r.latency_summary(&job.spec.slo)),
        _ => None,
    };
    let response = match rates.as_slice() {
        [one] => one.response.as_ref(),
        _ => merged.as_ref(),
    }
    .or(job.total.latency.as_ref());
    let machine_cpu_pct = if job.cpu.machine_busy_pct.is_empty() {
        0.0
    } else {
        job.cpu.machine_busy_pct.iter().sum::<f64>() / job.cpu.machine_busy_pct.len() as f64
    };
    let process_cpu_pct =
        if job.measured_s > 0.0 { 100.0 * (job.cpu.user_s + job.cpu.system_s) / job.measured_s } else { 0.0 };
    let latency_crossed = limits.latency.and_then(|limit| {
        let value = response.and_then(|l| limit.measure(l))?;
        (value > limit.limit.0 as f64)
            .then(|| format!("response {} {} > {}", limit_name(&limit), latency(value), limit.limit))
    });
    let cpu_crossed = limits
        .max_cpu_pct
        .filter(|&max| machine_cpu_pct > max)
        .map(|max| format!("machine CPU {machine_cpu_pct:.0}% > {max:.0}%"));
    let sustained = rates.iter().all(|r| r.sustained);
    let max_lag_ns = rates.iter().map(|r| r.max_lag_ns).max().unwrap_or(0);
    let late = (max_lag_ns > LATE_START_NS).then(|| {
        let worker = job.cpu.threads.iter().find(|t| t.class == ThreadClass::Worker);
        let waited = worker.map_or(0.0, |w| w.busiest_demand_pct - w.busiest_thread_pct);
        if waited >= GENERATOR_WAIT_PCT {
            format!(
                "I/Os started up to {} late: the load generator fell behind (its thread waited {waited:.0}% of the level for a CPU), not the device",
                latency(max_lag_ns as f64)
            )
        } else {
            format!("I/Os started up to {} late", latency(max_lag_ns as f64))
        }
    });
    RampRow {
        curve: 0,
        level_pct,
        target_iops: rates.iter().map(|r| r.target_iops).sum(),
        achieved_iops: job.total.iops,
        sustained,
        max_lag_ns,
        kept_up: sustained && late.is_none(),
        late,
        response_mean_ns: response.map_or(0.0, |l| l.mean_ns),
        response_p99_ns: p99(response),
        service_p99_ns: p99(job.total.latency.as_ref()),
        machine_cpu_pct,
        process_cpu_pct,
        cpu_us_per_io: job.cpu.us_per_io,
        crossed: latency_crossed.or(cpu_crossed),
        disturbed: job.verdict.cause.disturbs_the_measure(),
        retried: job.disturbed_attempts.len() as u32,
    }
}

fn limit_name(limit: &LatencyLimit) -> String {
    limit.percentile.map_or("mean".to_string(), |p| format!("p{p}"))
}

/// One curve of a ramp as measured: its closed-loop maximum and a row per level that ran.
pub struct MeasuredCurve {
    /// "read 90%"; empty for a plain ramp.
    pub name: String,
    pub max_iops: f64,
    /// The verdict of a closed-loop run that another load or a stolen CPU still disturbed after
    /// its retries: every level's rate is a share of what it measured.
    pub max_disturbed: Option<String>,
    pub rows: Vec<RampRow>,
}

/// The summary of a ramp over lists: each curve judged alone, its verdict lines led by its
/// name when there are several.
pub fn summarize_curves(limits: RampLimits, curves: Vec<MeasuredCurve>) -> RampSummary {
    let several = curves.len() > 1;
    let mut summary = RampSummary {
        max_iops: curves.first().map_or(0.0, |c| c.max_iops),
        limits,
        ..RampSummary::default()
    };
    for (index, curve) in curves.into_iter().enumerate() {
        let MeasuredCurve { name, max_iops, max_disturbed, rows } = curve;
        let mut judged = summarize(max_iops, limits, rows);
        if let Some(why) = max_disturbed {
            judged.verdict.push(format!(
                "the closed-loop maximum was disturbed, so every level is a share of more than the target's alone: {why}"
            ));
        }
        let first = summary.rows.len();
        summary.rows.extend(judged.rows.into_iter().map(|row| RampRow { curve: index, ..row }));
        let lead = if several { format!("{name}: ") } else { String::new() };
        summary.verdict.extend(judged.verdict.into_iter().map(|line| format!("{lead}{line}")));
        summary.curves.push(RampCurve { name, max_iops, rows: (first..summary.rows.len()).collect() });
    }
    summary
}

pub fn summarize(max_iops: f64, limits: RampLimits, rows: Vec<RampRow>) -> RampSummary {
    let mut verdict = Vec::new();
    let within = |r: &&RampRow| r.kept_up && r.crossed.is_none() && !r.disturbed;
    match rows.iter().filter(within).max_by(|a, b| a.achieved_iops.total_cmp(&b.achieved_iops)) {
        Some(best) => verdict.push(format!(
            "the target sustains {} IOPS ({}% of the {} IOPS closed-loop maximum) with response p99 {}{}",
            thousands(best.achieved_iops),
            best.level_pct,
            thousands(max_iops),
            latency(best.response_p99_ns as f64),
            if limits.latency.is_some() || limits.max_cpu_pct.is_some() { " within the limits" } else { "" }
        )),
        None => verdict.push("no level kept up within the limits".into()),
    }
    if let Some(first) = rows.iter().find(|r| r.crossed.is_some()) {
        verdict.push(format!(
            "stopped at {}% ({} IOPS asked): {}",
            first.level_pct,
            thousands(first.target_iops),
            first.crossed.as_deref().unwrap_or_default()
        ));
    }
    if let Some(late) = rows.iter().find(|r| r.sustained && !r.kept_up) {
        verdict.push(format!(
            "at {}% ({} IOPS asked) the level did not keep up although its I/Os completed: {}",
            late.level_pct,
            thousands(late.target_iops),
            late.late.as_deref().unwrap_or_default()
        ));
    }
    if let Some(short) = rows.iter().find(|r| !r.sustained) {
        verdict.push(format!(
            "from {}% ({} IOPS asked) the schedule was not sustained: {} IOPS achieved; open-loop response time includes the backlog",
            short.level_pct,
            thousands(short.target_iops),
            thousands(short.achieved_iops)
        ));
    }
    if let (Some(low), Some(high)) = (rows.first(), rows.iter().rev().find(|r| r.sustained)) {
        if low.response_p99_ns > 0 && high.level_pct > low.level_pct {
            verdict.push(format!(
                "response p99 went from {} at {}% to {} at {}%",
                latency(low.response_p99_ns as f64),
                low.level_pct,
                latency(high.response_p99_ns as f64),
                high.level_pct
            ));
        }
    }
    let disturbed = rows.iter().filter(|r| r.disturbed).count();
    if disturbed > 0 {
        verdict.push(format!(
            "{disturbed} level{} left out: another load or a stolen CPU disturbed {} in every attempt",
            if disturbed == 1 { "" } else { "s" },
            if disturbed == 1 { "it" } else { "them" }
        ));
    }
    let curves = vec![RampCurve { name: String::new(), max_iops, rows: (0..rows.len()).collect() }];
    RampSummary { max_iops, limits, rows, verdict, curves }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_limits_parse_and_refuse() {
        let limit: LatencyLimit = "p99=2ms".parse().expect("p99");
        assert_eq!((limit.percentile, limit.limit), (Some(99.0), Nanos(2_000_000)));
        let mean: LatencyLimit = "mean=500us".parse().expect("mean");
        assert_eq!(mean.percentile, None);
        for bad in ["p98=1ms", "p99", "p99=0", "x=1ms", "p99=fast"] {
            assert!(bad.parse::<LatencyLimit>().is_err(), "{bad}");
        }
    }

    fn level(level_pct: u32, achieved_iops: f64, disturbed: bool) -> RampRow {
        RampRow {
            level_pct,
            target_iops: achieved_iops,
            achieved_iops,
            sustained: true,
            kept_up: true,
            response_p99_ns: 1_000_000,
            disturbed,
            retried: if disturbed { 2 } else { 0 },
            ..RampRow::default()
        }
    }

    /// Issue 30 item 5: a level another load shared is not what the target sustains.
    #[test]
    fn a_disturbed_level_is_shown_but_not_the_level_the_target_sustains() {
        let rows = vec![level(50, 5_000.0, false), level(90, 9_000.0, true)];
        let curve = MeasuredCurve { name: String::new(), max_iops: 10_000.0, max_disturbed: None, rows };
        let summary = summarize_curves(RampLimits::default(), vec![curve]);
        assert_eq!(summary.rows.len(), 2, "the disturbed level is kept");
        assert!(
            summary.verdict[0].starts_with("the target sustains 5,000 IOPS (50%"),
            "{:?}",
            summary.verdict
        );
        assert!(
            summary
                .verdict
                .iter()
                .any(|l| l == "1 level left out: another load or a stolen CPU disturbed it in every attempt"),
            "{:?}",
            summary.verdict
        );
    }

    #[test]
    fn a_disturbed_closed_loop_maximum_is_said() {
        let curve = MeasuredCurve {
            name: "read 90%".into(),
            max_iops: 10_000.0,
            max_disturbed: Some("Another load shared loop0".into()),
            rows: vec![level(50, 5_000.0, false)],
        };
        let other = MeasuredCurve { name: "read 10%".into(), max_disturbed: None, ..curve_of(8_000.0) };
        let summary = summarize_curves(RampLimits::default(), vec![curve, other]);
        let said: Vec<&String> =
            summary.verdict.iter().filter(|l| l.contains("maximum was disturbed")).collect();
        assert_eq!(said.len(), 1, "only the disturbed curve's: {:?}", summary.verdict);
        assert!(said[0].starts_with("read 90%: the closed-loop maximum was disturbed"), "{said:?}");
        assert!(said[0].ends_with(": Another load shared loop0"), "{said:?}");
    }

    fn curve_of(max_iops: f64) -> MeasuredCurve {
        MeasuredCurve {
            name: String::new(),
            max_iops,
            max_disturbed: None,
            rows: vec![level(50, max_iops / 2.0, false)],
        }
    }
}
