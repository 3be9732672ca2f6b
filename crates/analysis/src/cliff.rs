//! Cliffs in a write-throughput log: where a fast tier (an SLC cache, a DRAM buffer, a
//! write-back cache) filled and throughput fell to the slower tier's speed and stayed there.
//! The bytes written when the drop began are the fast tier's size.
//!
//! The log is cut into levels, each the median of its samples so a noisy sample or a short GC
//! pause cannot move it, and every level must last `min_hold_samples`: a dip shorter than that
//! is a transient, not a cliff. The rule is written down in docs/characterization.md ("Cache
//! cliff"); this file is its only implementation.
//!
//! What `iolab cliff` reports is also read back from the store (the HTML report draws it):
//! every field has a default, so a report written by an older or newer iolab still reads.

use iolab_stats::central::median;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThroughputSample {
    /// Cumulative bytes written at the end of this sample.
    pub bytes_done: u64,
    /// Throughput during this sample, 10^6 bytes per second.
    pub mb_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CliffRule {
    /// A cliff is a fall of more than this share of the level before it, in percent.
    pub drop_pct: f64,
    /// And the lower level lasts at least this many samples; shorter levels are transients.
    pub min_hold_samples: usize,
}

impl Default for CliffRule {
    fn default() -> Self {
        CliffRule { drop_pct: 30.0, min_hold_samples: 5 }
    }
}

impl CliffRule {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.drop_pct > 0.0 && self.drop_pct < 100.0) {
            return Err(format!(
                "cliff drop is {}%; give a percentage above 0 and below 100 (the default is 30%)",
                self.drop_pct
            ));
        }
        if self.min_hold_samples == 0 {
            return Err(
                "cliff hold is 0 samples; give at least 1 (the default is 5, and 3 or more keeps a single odd sample from counting)".into(),
            );
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cliff {
    /// Bytes written at the end of the last fast sample: the fast tier's size.
    pub at_bytes: u64,
    /// Index of the first slow sample in the caller's slice.
    pub sample: usize,
    /// Median throughput of the level before and of the level after.
    pub before_mb_s: f64,
    pub after_mb_s: f64,
    /// (before - after) in percent of before.
    pub drop_pct: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CliffReport {
    /// In the order they happened.
    pub cliffs: Vec<Cliff>,
    /// False when the log is too short to judge (fewer than 2 x `min_hold_samples` samples).
    pub judged: bool,
    /// Why the log was not judged, or a gradual decline that no cliff explains.
    pub note: Option<String>,
}

/// The summary of `iolab cliff --json`: the cliffs found, and the log they were found in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CliffSummary {
    #[serde(flatten)]
    pub found: CliffReport,
    /// Bytes written at the end of each interval, and the throughput during it.
    pub samples: Vec<ThroughputSample>,
}

/// Finds the cliffs in `samples` (oldest first, one per interval of equal length).
///
/// Assumes the caller dropped a partial last interval; if not, one odd sample cannot move a
/// median of 3 or more, so with `min_hold_samples` >= 3 it still makes no cliff. Throughput
/// should be finite and not negative; other values do not panic, NaN sorting above every number.
/// Expects a rule that passed `validate`; a hold of 0 is taken as 1.
pub fn find_cliffs(samples: &[ThroughputSample], rule: &CliffRule) -> CliffReport {
    let hold = rule.min_hold_samples.max(1);
    let keep = 1.0 - rule.drop_pct / 100.0;
    let mb_s: Vec<f64> = samples.iter().map(|s| s.mb_s).collect();
    if mb_s.len() < 2 * hold {
        let note = format!(
            "{} samples are too few to judge: a cliff needs {hold} samples before it and {hold} after ({} in all)",
            mb_s.len(),
            2 * hold
        );
        return CliffReport { cliffs: Vec::new(), judged: false, note: Some(note) };
    }
    let mut changes = candidate_changes(&mb_s, hold, keep);
    simplify(&mut changes, &mb_s, hold, keep);
    let cliffs: Vec<Cliff> = (0..changes.len())
        .filter(|&j| changes[j].direction == Direction::Drop)
        .map(|j| {
            let (before, after) = levels_around(&changes, j, &mb_s);
            let at = changes[j].at;
            Cliff {
                at_bytes: samples[at - 1].bytes_done,
                sample: at,
                before_mb_s: before,
                after_mb_s: after,
                drop_pct: (before - after) / before * 100.0,
            }
        })
        .collect();
    let note = if cliffs.is_empty() { gradual_decline(&mb_s, hold, keep, rule) } else { None };
    CliffReport { cliffs, judged: true, note }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Direction {
    Drop,
    Rise,
}

/// A change of level: `at` is the index of the first sample of the new level.
#[derive(Debug, Clone, Copy)]
struct Change {
    at: usize,
    direction: Direction,
}

/// Boundary i (before sample i) compares the median of the `hold` samples before it with the
/// median of the `hold` samples from it. Around a real change several neighbouring boundaries
/// see it; each run of boundaries seeing the same direction gives one change, placed where it
/// best splits the samples around the run.
fn candidate_changes(mb_s: &[f64], hold: usize, keep: f64) -> Vec<Change> {
    let first_boundary = hold;
    let steps: Vec<Option<Direction>> = (first_boundary..=mb_s.len() - hold)
        .map(|i| step(level(&mb_s[i - hold..i]), level(&mb_s[i..i + hold]), keep))
        .collect();
    let mut changes = Vec::new();
    let mut run_start = first_boundary;
    for run in steps.chunk_by(|a, b| a == b) {
        if let Some(direction) = run[0] {
            let at = split_point(mb_s, run_start, run_start + run.len() - 1, hold);
            changes.push(Change { at, direction });
        }
        run_start += run.len();
    }
    changes
}

/// How the level moved from `before` to `after`, if by more than the rule's share.
fn step(before: f64, after: f64, keep: f64) -> Option<Direction> {
    if after < before * keep {
        Some(Direction::Drop)
    } else if before < after * keep {
        Some(Direction::Rise)
    } else {
        None
    }
}

/// The boundary in `first..=last` that best splits the samples from `first - hold` to
/// `last + hold` into the level before the run and the level after it: the least sum of absolute
/// deviations, the earliest on a tie.
fn split_point(mb_s: &[f64], first: usize, last: usize, hold: usize) -> usize {
    let before = level(&mb_s[first - hold..first]);
    let after = level(&mb_s[last..last + hold]);
    let mut cost: f64 = mb_s[first - hold..first].iter().map(|x| (x - before).abs()).sum::<f64>()
        + mb_s[first..last + hold].iter().map(|x| (x - after).abs()).sum::<f64>();
    let (mut best, mut best_cost) = (first, cost);
    for (k, x) in (first..last).zip(&mb_s[first..last]) {
        // Moving the boundary past sample k moves that sample from the after level to the before.
        cost += (x - before).abs() - (x - after).abs();
        if cost < best_cost {
            (best, best_cost) = (k + 1, cost);
        }
    }
    best
}

/// Removes changes until every level lasts `hold` samples and every remaining change moves the
/// median of the whole level before it to that of the whole level after it by more than the
/// rule's share. Scans from the start and rescans after each removal, so the result does not
/// depend on anything but the samples.
fn simplify(changes: &mut Vec<Change>, mb_s: &[f64], hold: usize, keep: f64) {
    'rescan: loop {
        for j in 0..changes.len() {
            let level_end = changes.get(j + 1).map_or(mb_s.len(), |next| next.at);
            if level_end - changes[j].at < hold {
                // The first and last levels are `hold` long by construction, so j + 1 exists.
                if changes[j].direction == changes[j + 1].direction {
                    // A staircase step too short to be a level: one change that began at the first.
                    changes.remove(j + 1);
                } else {
                    // A dip or a spike: a transient, not a change of level.
                    changes.drain(j..=j + 1);
                }
                continue 'rescan;
            }
            let (before, after) = levels_around(changes, j, mb_s);
            if step(before, after, keep) != Some(changes[j].direction) {
                changes.remove(j);
                continue 'rescan;
            }
        }
        return;
    }
}

/// Medians of the levels on either side of change `j`.
fn levels_around(changes: &[Change], j: usize, mb_s: &[f64]) -> (f64, f64) {
    let start = if j == 0 { 0 } else { changes[j - 1].at };
    let end = changes.get(j + 1).map_or(mb_s.len(), |next| next.at);
    let at = changes[j].at;
    (level(&mb_s[start..at]), level(&mb_s[at..end]))
}

/// A note when the log ends more than the rule's share below where it began without a cliff:
/// a slow decline (e.g. a drive heating up or a filling tier) is worth saying, but not a cliff.
fn gradual_decline(mb_s: &[f64], hold: usize, keep: f64, rule: &CliffRule) -> Option<String> {
    let start = level(&mb_s[..hold]);
    let end = level(&mb_s[mb_s.len() - hold..]);
    (step(start, end, keep) == Some(Direction::Drop)).then(|| {
        format!(
            "throughput declined gradually from {start:.0} to {end:.0} MB/s ({:.0}% lower) with no sudden drop (more than {}% between the medians of {hold} samples on either side): no cliff",
            (start - end) / start * 100.0,
            rule.drop_pct
        )
    })
}

/// The level of a run of samples: their median (`iolab_stats::central`, the mean of the two
/// middle ones for an even count). Every run passed here holds at least one sample; 0 for none.
fn level(samples: &[f64]) -> f64 {
    median(samples).unwrap_or(0.0)
}
