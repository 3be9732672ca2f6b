//! The sweet spot of a load curve: the most IOPS a target gives before more outstanding I/Os buy
//! mostly latency. The rule is written down in docs/characterization.md ("Sweet spot (knee)") so
//! reports can cite it; this file is its only implementation.
//!
//! By Little's law (outstanding = IOPS x mean latency) each step up in load is split between IOPS
//! growth and latency growth. Below saturation IOPS takes the whole step and latency stays flat;
//! past it latency takes the step and IOPS stays flat. The knee is the first step where latency
//! takes more than IOPS, with a tolerance so measurement noise on a flat stretch does not trip it.

use serde::Serialize;

/// One measured point of a curve ordered by load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadPoint {
    /// Outstanding I/Os: queue depth x workers.
    pub outstanding: f64,
    pub iops: f64,
    pub mean_latency_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweetSpot {
    /// Index of the sweet spot in the caller's slice.
    pub index: usize,
    /// False when latency never outgrew IOPS over the range measured: the sweet spot is then the
    /// best point measured, and the target may scale past the last one.
    pub knee_found: bool,
    /// The evidence in plain words, e.g. "from 8 to 16 outstanding I/Os, IOPS grew 1.02x while
    /// mean latency grew 1.96x; ...".
    pub reason: String,
}

/// A step is past the knee when latency grew more than this many percent faster than IOPS.
/// Wide enough for run-to-run noise of a few percent on each figure of a flat stretch.
pub const KNEE_TOLERANCE_PCT: f64 = 5.0;

/// The sweet spot of `points`, in any order. `None` when no point is usable (the slice is empty
/// or every point failed).
pub fn sweet_spot(points: &[LoadPoint]) -> Option<SweetSpot> {
    let curve = usable_curve(points);
    let skipped = points.iter().filter(|p| !usable(p)).count();
    let (first, last) = (*curve.first()?, *curve.last()?);
    let (index, knee_found, words) = if curve.len() == 1 {
        let p = first.1;
        let words = format!(
            "only one point was measured ({} outstanding I/Os, {:.0} IOPS): one point cannot show a knee",
            p.outstanding, p.iops
        );
        (first.0, false, words)
    } else {
        // Walk up the load keeping the best point: a heavier point takes its place when it has
        // more IOPS and its latency grew no faster than its IOPS since the best (within the
        // tolerance). A point whose latency grew faster is past the knee; later points may still
        // take over (a curve can stall and pick up again, as io-wq does on zram).
        let mut best = first;
        let mut past: Option<(LoadPoint, LoadPoint)> = None;
        for &point in &curve[1..] {
            if point.1.iops > best.1.iops && !past_knee(&best.1, &point.1) {
                best = point;
                past = None;
            } else if past.is_none() && past_knee(&best.1, &point.1) {
                past = Some((best.1, point.1));
            }
        }
        match past {
            Some((a, b)) => {
                let words = format!(
                    "from {} to {} outstanding I/Os, IOPS grew {:.2}x while mean latency grew {:.2}x, and no heavier point bought IOPS at a lower latency cost",
                    a.outstanding,
                    b.outstanding,
                    b.iops / a.iops,
                    b.mean_latency_ns / a.mean_latency_ns
                );
                (best.0, true, words)
            }
            None => {
                let words = format!(
                    "from {} to {} outstanding I/Os, mean latency never grew more than {KNEE_TOLERANCE_PCT}% faster than IOPS; the most IOPS ({:.0}) came at {}, and the target may scale past {}",
                    first.1.outstanding, last.1.outstanding, best.1.iops, best.1.outstanding, last.1.outstanding
                );
                (best.0, false, words)
            }
        }
    };
    let reason = match skipped {
        0 => words,
        1 => format!("{words}; 1 failed point (zero or missing IOPS or latency) was skipped"),
        n => format!("{words}; {n} failed points (zero or missing IOPS or latency) were skipped"),
    };
    Some(SweetSpot { index, knee_found, reason })
}

/// A failed point (IOPS or latency zero, negative or not a number) says nothing about the curve.
fn usable(p: &LoadPoint) -> bool {
    [p.outstanding, p.iops, p.mean_latency_ns].iter().all(|v| v.is_finite() && *v > 0.0)
}

/// The usable points with their index in the caller's slice, ordered by load. Of points at the
/// same load the first usable one is kept, so a retry after a failure counts.
fn usable_curve(points: &[LoadPoint]) -> Vec<(usize, LoadPoint)> {
    let mut curve: Vec<(usize, LoadPoint)> =
        points.iter().copied().enumerate().filter(|(_, p)| usable(p)).collect();
    // Stable, so among equal loads the caller's first stays first.
    curve.sort_by(|a, b| a.1.outstanding.total_cmp(&b.1.outstanding));
    curve.dedup_by(|later, kept| later.1.outstanding == kept.1.outstanding);
    curve
}

fn past_knee(a: &LoadPoint, b: &LoadPoint) -> bool {
    let iops_growth = b.iops / a.iops;
    let latency_growth = b.mean_latency_ns / a.mean_latency_ns;
    latency_growth > iops_growth * (1.0 + KNEE_TOLERANCE_PCT / 100.0)
}
