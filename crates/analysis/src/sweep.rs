//! What a sweep found: one row per point, each load curve's sweet spot (the knee, see
//! docs/characterization.md), and whether the curve shows the device saturated: latency rising
//! with the load while IOPS stays flat.
//!
//! The summary is also read back from the store (the HTML report draws it): every field has a
//! default, so a report written by an older or newer iolab still reads, with what it has.

use iolab_spec::sweep::LoadAxis;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{Bottleneck, JobResult, OpSummary, TailShare};
use serde::{Deserialize, Serialize};

use crate::knee::{sweet_spot, LoadPoint, SweetSpot};
use crate::rounds::SteadyRounds;
use crate::steady::SteadyState;

/// Past the knee, IOPS growing less than this while latency grows is "flat".
pub const FLAT_IOPS_PCT: f64 = 10.0;
/// ... and latency growing by more than this factor is "rising".
pub const RISING_LATENCY: f64 = 1.5;

/// One point of a sweep as it ran.
pub struct PointOutcome<'a> {
    pub name: &'a str,
    pub curve: usize,
    pub curve_name: &'a str,
    /// The repeat with the median IOPS.
    pub figures: PointFigures,
    /// IOPS of every repeat that completed (one without --repeat).
    pub repeat_iops: Vec<f64>,
}

/// What a sweep row needs of a point's result: from a job just run, or from a point kept in
/// the results database (a resumed sweep).
#[derive(Debug, Clone, PartialEq)]
pub struct PointFigures {
    pub access: String,
    pub qd: u32,
    pub workers: u32,
    /// The I/Os the point kept outstanding: QD x workers, summed over its groups.
    pub outstanding: u32,
    pub total: OpSummary,
    pub cpu_us_per_io: f64,
    pub bottleneck: Bottleneck,
    /// Attempts measured before this one and dropped: another load or a stolen CPU disturbed them.
    pub retried: u32,
}

impl PointFigures {
    /// The figures of a job. A job of several groups (a job file's blender) shows the largest
    /// QD and worker count of its groups (what a sweep of it sets: `iolab_studies::groups`), its
    /// outstanding I/Os are all of theirs, and its access is each distinct one, joined by " + ".
    pub fn of(job: &JobResult) -> PointFigures {
        let mut access: Vec<&str> = Vec::new();
        for group in &job.groups {
            if !access.contains(&group.access.as_str()) {
                access.push(&group.access);
            }
        }
        PointFigures {
            access: access.join(" + "),
            qd: job.groups.iter().map(|g| g.qd).max().unwrap_or(0),
            workers: job.groups.iter().map(|g| g.workers).max().unwrap_or(0),
            outstanding: job.groups.iter().map(|g| g.qd * g.workers).sum(),
            total: job.total.clone(),
            cpu_us_per_io: job.cpu.us_per_io,
            bottleneck: job.verdict.cause,
            retried: job.disturbed_attempts.len() as u32,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SweepRow {
    pub name: String,
    pub curve: usize,
    pub access: String,
    pub qd: u32,
    pub workers: u32,
    /// QD x workers: the I/Os the point kept outstanding.
    pub outstanding: u32,
    pub iops: f64,
    pub mb_s: f64,
    pub mean_ns: f64,
    /// The I/Os beyond a high percentile that own the mean, when it lies above p99.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<TailShare>,
    pub p99_ns: u64,
    pub p9999_ns: u64,
    pub cpu_us_per_io: f64,
    /// The point's own bottleneck verdict (its summary and evidence are in the run report).
    pub bottleneck: Bottleneck,
    /// Its verdict says another load shared the target or the hypervisor stole the CPU: its
    /// figures are not the target's alone, so it takes no part in choosing the sweet spot.
    pub disturbed: bool,
    /// Attempts at the point measured before the one shown and dropped, each disturbed
    /// (`--retries`).
    pub retried: u32,
    /// How many times the point was measured (--repeat), and the lowest and highest IOPS of
    /// those passes: the row shows the median one.
    pub repeats: u32,
    pub iops_low: f64,
    pub iops_high: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CurveSummary {
    /// What the curve's points share ("bs 16KiB, read 70%"); empty for a single curve.
    pub name: String,
    /// Indices into `SweepSummary::rows`, in the order run.
    pub rows: Vec<usize>,
    /// Index into `SweepSummary::rows` of the sweet spot, with why.
    pub sweet_spot: Option<SweetSpotRow>,
    /// Past the sweet spot: "IOPS +2% while mean latency x3.9 from 32 to 128 outstanding".
    pub saturation: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SweetSpotRow {
    pub row: usize,
    pub knee_found: bool,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SweepSummary {
    pub load_axis: LoadAxis,
    /// With --until-steady: each point's rounds and whether they settled, in point order
    /// (the point's row is its last round).
    pub steady: Vec<SteadyRounds>,
    pub rows: Vec<SweepRow>,
    pub curves: Vec<CurveSummary>,
    pub verdict: Vec<String>,
}

impl Default for SweepSummary {
    /// What a report lacking the fields reads as: a load curve (drawn as one), with nothing in it.
    fn default() -> Self {
        SweepSummary {
            load_axis: LoadAxis::Qd,
            steady: Vec::new(),
            rows: Vec::new(),
            curves: Vec::new(),
            verdict: Vec::new(),
        }
    }
}

/// Adds each point's steady-state rounds (in point order) and says which points never settled.
pub fn with_steady_rounds(mut summary: SweepSummary, rounds: Vec<SteadyRounds>) -> SweepSummary {
    for (row, point) in summary.rows.iter().zip(&rounds) {
        if !matches!(point.state, SteadyState::Reached { .. }) {
            summary.verdict.push(format!("{}: {}; its row is its last round", row.name, point.sentence()));
        }
    }
    let settled = rounds.iter().filter(|r| matches!(r.state, SteadyState::Reached { .. })).count();
    summary.verdict.push(format!("{settled} of {} points reached steady state", rounds.len()));
    summary.steady = rounds;
    summary
}

pub fn summarize(load_axis: LoadAxis, points: &[PointOutcome<'_>]) -> SweepSummary {
    let rows: Vec<SweepRow> = points.iter().map(row).collect();
    let curve_count = points.iter().map(|p| p.curve + 1).max().unwrap_or(0);
    let curves: Vec<CurveSummary> = (0..curve_count)
        .map(|curve| {
            let members: Vec<usize> = (0..points.len()).filter(|&i| points[i].curve == curve).collect();
            let name = members.first().map_or(String::new(), |&i| points[i].curve_name.to_string());
            curve_summary(load_axis, name, members, &rows)
        })
        .collect();
    let verdict = verdict(load_axis, &rows, &curves);
    SweepSummary { load_axis, steady: Vec::new(), rows, curves, verdict }
}

fn row(point: &PointOutcome<'_>) -> SweepRow {
    let figures = &point.figures;
    SweepRow {
        name: point.name.to_string(),
        curve: point.curve,
        access: figures.access.clone(),
        qd: figures.qd,
        workers: figures.workers,
        outstanding: figures.outstanding,
        iops: figures.total.iops,
        mb_s: figures.total.mb_s,
        mean_ns: figures.total.latency.as_ref().map_or(0.0, |l| l.mean_ns),
        tail: figures.total.latency.as_ref().and_then(|l| l.tail),
        p99_ns: percentile(&figures.total, 99.0),
        p9999_ns: percentile(&figures.total, 99.99),
        cpu_us_per_io: figures.cpu_us_per_io,
        bottleneck: figures.bottleneck,
        disturbed: figures.bottleneck.disturbs_the_measure(),
        retried: figures.retried,
        repeats: point.repeat_iops.len() as u32,
        iops_low: point.repeat_iops.iter().copied().fold(figures.total.iops, f64::min),
        iops_high: point.repeat_iops.iter().copied().fold(figures.total.iops, f64::max),
    }
}

fn percentile(op: &OpSummary, p: f64) -> u64 {
    op.latency
        .as_ref()
        .and_then(|l| l.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9))
        .map_or(0, |x| x.ns)
}

fn curve_summary(load_axis: LoadAxis, name: String, members: Vec<usize>, rows: &[SweepRow]) -> CurveSummary {
    if load_axis == LoadAxis::None {
        return CurveSummary { name, rows: members, sweet_spot: None, saturation: None };
    }
    // Disturbed points are kept and shown, but the knee is found among the others only.
    let undisturbed: Vec<usize> = members.iter().copied().filter(|&i| !rows[i].disturbed).collect();
    let load: Vec<LoadPoint> = undisturbed
        .iter()
        .map(|&i| LoadPoint {
            outstanding: f64::from(rows[i].outstanding),
            iops: rows[i].iops,
            mean_latency_ns: rows[i].mean_ns,
        })
        .collect();
    let spot = sweet_spot(&load).map(|SweetSpot { index, knee_found, reason }| SweetSpotRow {
        row: undisturbed[index],
        knee_found,
        reason,
    });
    let saturation =
        spot.as_ref().filter(|s| s.knee_found).and_then(|s| saturation(&rows[s.row], &members, rows));
    CurveSummary { name, rows: members, sweet_spot: spot, saturation }
}

/// From the sweet spot to the heaviest point of the curve: flat IOPS and rising latency mean
/// the extra I/Os only queued. The claim must hold for the whole workload: a heavier point of
/// any curve of the same access (more workers, say) with more IOPS than the sweet spot's
/// (beyond `FLAT_IOPS_PCT`) means the target was not saturated there, and that is said instead.
fn saturation(spot: &SweepRow, members: &[usize], rows: &[SweepRow]) -> Option<String> {
    let beyond = rows
        .iter()
        .filter(|r| {
            r.access == spot.access && r.outstanding > spot.outstanding && r.iops > 0.0 && !r.disturbed
        })
        .max_by(|a, b| a.iops.total_cmp(&b.iops));
    if let Some(best) =
        beyond.filter(|b| spot.iops > 0.0 && b.iops > spot.iops * (1.0 + FLAT_IOPS_PCT / 100.0))
    {
        return Some(format!(
            "not saturated at the sweet spot: past it the workload still gained, {} IOPS at QD {} x {} worker(s) ({:+.0}% over the sweet spot's {}) at {:.1}x its mean latency, so more outstanding I/Os bought IOPS at a steep latency cost",
            thousands(best.iops),
            best.qd,
            best.workers,
            100.0 * (best.iops / spot.iops - 1.0),
            thousands(spot.iops),
            if spot.mean_ns > 0.0 { best.mean_ns / spot.mean_ns } else { 0.0 }
        ));
    }
    let heaviest = members
        .iter()
        .map(|&i| &rows[i])
        .filter(|r| r.iops > 0.0 && !r.disturbed)
        .max_by_key(|r| r.outstanding)?;
    if heaviest.outstanding <= spot.outstanding || spot.iops <= 0.0 || spot.mean_ns <= 0.0 {
        return None;
    }
    let iops_gain_pct = 100.0 * (heaviest.iops / spot.iops - 1.0);
    let latency_growth = heaviest.mean_ns / spot.mean_ns;
    let agrees = match heaviest.bottleneck {
        Bottleneck::Device => "; the device counters agree (the heaviest point's verdict: device)".to_string(),
        // One point cannot see what the curve shows: more outstanding I/Os did not help.
        Bottleneck::Concurrency => "; the heaviest point's own verdict (concurrency: raise the load) is overruled by the curve, which raised it".to_string(),
        other => format!("; the heaviest point's own verdict: {}", other.name()),
    };
    (iops_gain_pct < FLAT_IOPS_PCT && latency_growth > RISING_LATENCY).then(|| {
        format!(
            "from {} to {} outstanding I/Os, IOPS changed {:+.0}% while mean latency grew {:.1}x: the extra I/Os only queued; the device (or the path to it) is saturated at about {} IOPS{agrees}",
            spot.outstanding,
            heaviest.outstanding,
            iops_gain_pct,
            latency_growth,
            thousands(spot.iops)
        )
    })
}

/// How certain a sweet spot is: from a single pass, or, with --repeat, whether the points
/// beside it on its curve have IOPS within the spread of its repeats (then it is a tie).
fn certainty(spot: &SweepRow, members: &[usize], rows: &[SweepRow]) -> String {
    if spot.repeats <= 1 {
        return "from a single pass (--repeat 3 shows how certain it is)".into();
    }
    let mut curve: Vec<&SweepRow> =
        members.iter().map(|&i| &rows[i]).filter(|r| r.iops > 0.0 && !r.disturbed).collect();
    curve.sort_by_key(|r| r.outstanding);
    let at = curve.iter().position(|r| std::ptr::eq(*r, spot));
    let neighbours = at.map_or_else(Vec::new, |at| {
        [at.checked_sub(1), Some(at + 1)]
            .into_iter()
            .flatten()
            .filter_map(|i| curve.get(i).copied())
            .collect()
    });
    let spread = format!(
        "{}-{} IOPS over its {} passes",
        thousands(spot.iops_low),
        thousands(spot.iops_high),
        spot.repeats
    );
    let ties: Vec<String> = neighbours
        .iter()
        .filter(|n| n.iops_high >= spot.iops_low && n.iops_low <= spot.iops_high)
        .map(|n| format!("QD {} x {}", n.qd, n.workers))
        .collect();
    if ties.is_empty() {
        format!("certain: the points beside it lie outside its repeats' spread ({spread})")
    } else {
        format!("uncertain: {} within its repeats' spread ({spread}), a tie", ties.join(" and "))
    }
}

fn verdict(load_axis: LoadAxis, rows: &[SweepRow], curves: &[CurveSummary]) -> Vec<String> {
    let mut words = Vec::new();
    if load_axis == LoadAxis::None {
        words.push(
            "neither --qd nor --workers was swept, so the points are not a load curve and have no sweet spot"
                .into(),
        );
    }
    for curve in curves {
        let label = if curve.name.is_empty() { String::new() } else { format!("{}: ", curve.name) };
        let left_out: Vec<&str> =
            curve.rows.iter().map(|&i| &rows[i]).filter(|r| r.disturbed).map(|r| r.name.as_str()).collect();
        if !left_out.is_empty() && load_axis != LoadAxis::None {
            words.push(format!(
                "{label}{} of {} points left out of the sweet spot, their verdicts another load or a stolen CPU (their figures are not the target's alone; measure them again on a quiet machine): {}",
                left_out.len(),
                curve.rows.len(),
                left_out.join(", ")
            ));
        }
        let swept = load_axis != LoadAxis::None;
        if swept && curve.sweet_spot.is_none() && !left_out.is_empty() && left_out.len() == curve.rows.len() {
            words.push(format!("{label}no sweet spot: every point was disturbed"));
        }
        if let Some(spot) = &curve.sweet_spot {
            let r = &rows[spot.row];
            let what = if spot.knee_found { "sweet spot" } else { "best point (no knee in range)" };
            words.push(format!(
                "{label}{what} at {} (QD {} x {} worker(s)): {} IOPS, mean {}, p99 {}, limited there by {}; {}; {}",
                r.name,
                r.qd,
                r.workers,
                thousands(r.iops),
                latency(r.mean_ns),
                latency(r.p99_ns as f64),
                r.bottleneck.name(),
                spot.reason,
                certainty(r, &curve.rows, rows)
            ));
        }
        if let Some(saturated) = &curve.saturation {
            words.push(format!("{label}{saturated}"));
        }
    }
    words
}
