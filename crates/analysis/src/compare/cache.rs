//! Cache runs side by side. `iolab cache` names a working set by its size ("working set 64MiB"),
//! `iolab fleet cache` by its share of each host's region ("working set 5%", refined ones
//! "working set 3.41%"), so a local and a fleet run, or two local runs over regions of different
//! sizes, share no working set's name. Where the names differ, a side's working sets (and their
//! warm passes) are matched to the baseline's by their share of the region instead, and take the
//! baseline's names, so that `compare` matches them by name; a note says which were.

use std::collections::BTreeSet;

use iolab_spec::Bytes;
use iolab_store::Point;

use super::CompareInput;

/// Two working sets are the same share when they are within this share of each other...
const SAME_SHARE: f64 = 0.02;
/// ...or of this many bytes of each side's region apart: the study rounds every working set down
/// to whole warm blocks (128 KiB), which at 1% of a small region is more than 2%.
const ROUNDING_BYTES: f64 = 128.0 * 1024.0;
/// The cache study's names of a working set's jobs: its warm pass, its measurement.
const PHASES: [&str; 2] = ["warm ", "working set "];

/// A working set of one side: its name, phase and share of the region.
struct Share<'a> {
    name: &'a str,
    phase: usize,
    share: f64,
}

/// Renames each side's working sets whose names the baseline lacks to the baseline's working set
/// of the same phase and share (the nearest pairs first), when the side and the baseline are cache
/// runs: `regions[k]` is the region side k's working sets are shares of (a fleet's: the first
/// host's, whose job each stored point's spec is), `None` for a run of another kind. Answers a
/// note per side renamed.
pub fn match_cache_shares(runs: &mut [CompareInput], regions: &[Option<u64>]) -> Vec<String> {
    let Some((base, others)) = runs.split_first_mut() else { return Vec::new() };
    let Some(Some(base_region)) = regions.first().copied() else { return Vec::new() };
    let base_names: BTreeSet<&str> = base.points.iter().map(|p| p.name.as_str()).collect();
    let mut notes = Vec::new();
    for (other, region) in others.iter_mut().zip(&regions[1..]) {
        let Some(region) = *region else { continue };
        let other_names: BTreeSet<&str> = other.points.iter().map(|p| p.name.as_str()).collect();
        let theirs = shares(&other.points, region, |name| !base_names.contains(name));
        let ours = shares(&base.points, base_region, |name| !other_names.contains(name));
        let slack = ROUNDING_BYTES / base_region as f64 + ROUNDING_BYTES / region as f64;
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        for (i, a) in ours.iter().enumerate() {
            for (j, b) in theirs.iter().enumerate() {
                let apart = (a.share - b.share).abs();
                if a.phase == b.phase && apart <= (SAME_SHARE * a.share.max(b.share)).max(slack) {
                    pairs.push((apart, i, j));
                }
            }
        }
        pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (mut used_ours, mut used_theirs) = (vec![false; ours.len()], vec![false; theirs.len()]);
        let mut renamed: Vec<(String, String)> = Vec::new();
        for (_, i, j) in pairs {
            if used_ours[i] || used_theirs[j] {
                continue;
            }
            (used_ours[i], used_theirs[j]) = (true, true);
            renamed.push((theirs[j].name.to_string(), ours[i].name.to_string()));
        }
        if renamed.is_empty() {
            continue;
        }
        let said: Vec<String> = renamed
            .iter()
            .filter(|(from, _)| from.starts_with(PHASES[1]))
            .map(|(from, to)| format!("{} as {}", &from[PHASES[1].len()..], &to[PHASES[1].len()..]))
            .collect();
        notes.push(format!(
            "{}'s working sets matched to {}'s by their share of the region (regions {} and {}; the names differ): {}",
            other.label,
            base.label,
            Bytes(region),
            Bytes(base_region),
            said.join(", ")
        ));
        for point in &mut other.points {
            if let Some((_, to)) = renamed.iter().find(|(from, _)| *from == point.name) {
                point.name = to.clone();
            }
        }
    }
    notes
}

/// The distinct working sets of `points` (names `wanted` keeps) as shares of `region`.
fn shares<'a>(points: &'a [Point], region: u64, wanted: impl Fn(&str) -> bool) -> Vec<Share<'a>> {
    let mut out: Vec<Share> = Vec::new();
    for point in points {
        let name = point.name.as_str();
        // A working set's name goes on with its size or share ("warm 64MiB", "working set
        // 3.41%"), not "warm hot set".
        let Some(phase) = PHASES.iter().position(|p| {
            name.strip_prefix(p).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        }) else {
            continue;
        };
        let size = point.spec.pointer("/groups/0/target/size_bytes").and_then(|v| v.as_u64());
        let (Some(size), true) = (size, wanted(name) && region > 0) else { continue };
        if !out.iter().any(|s| s.name == name) {
            out.push(Share { name, phase, share: size as f64 / region as f64 });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use iolab_stats::OpStats;
    use iolab_store::PointSummary;
    use serde_json::json;

    use super::*;

    const MIB: u64 = 1 << 20;

    fn point(name: &str, size: u64) -> Point {
        let ops = OpStats::default().summary(1.0, &[]);
        Point {
            seq: 0,
            name: name.into(),
            source: "iolab".into(),
            completed_at_unix_s: 0,
            spec: json!({ "groups": [{ "target": { "size_bytes": size } }] }),
            summary: PointSummary {
                engine: "null".into(),
                access: "randread 4KiB".into(),
                qd: 1,
                workers: 1,
                targets: vec!["t".into()],
                measured_s: 1.0,
                read: ops.clone(),
                write: ops.clone(),
                total: ops,
                cpu_us_per_io: None,
                stop_reason: "runtime".into(),
            },
            series: Vec::new(),
            verdict: None,
            histograms: None,
            result: serde_json::Value::Null,
        }
    }

    /// A cache run's warm passes and working sets, each `(name, bytes)`.
    fn run(label: &str, sets: &[(&str, u64)]) -> CompareInput {
        let points = sets
            .iter()
            .flat_map(|&(name, size)| {
                [point(&format!("warm {name}"), size), point(&format!("working set {name}"), size)]
            })
            .collect();
        CompareInput { label: label.into(), points }
    }

    fn names(input: &CompareInput) -> Vec<&str> {
        input.points.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn a_fleets_shares_take_the_names_of_a_local_runs_sizes_of_the_same_share() {
        // Local: 8 MiB region; the fleet's first host: 4 MiB, so its 100% is the local 50% by size.
        let local = run("#1", &[("2MiB", 2 * MIB), ("4MiB", 4 * MIB), ("8MiB", 8 * MIB)]);
        let fleet = run("#2", &[("25%", MIB), ("37.5%", 3 * MIB / 2), ("100%", 4 * MIB)]);
        let mut runs = [local, fleet];
        let notes = match_cache_shares(&mut runs, &[Some(8 * MIB), Some(4 * MIB)]);
        assert_eq!(
            names(&runs[1]),
            [
                "warm 2MiB",
                "working set 2MiB",
                "warm 37.5%",
                "working set 37.5%",
                "warm 8MiB",
                "working set 8MiB"
            ]
        );
        assert_eq!(names(&runs[0])[2..4], ["warm 4MiB", "working set 4MiB"]);
        assert_eq!(
            notes,
            ["#2's working sets matched to #1's by their share of the region (regions 4MiB and 8MiB; the names differ): 25% as 2MiB, 100% as 8MiB"]
        );
    }

    #[test]
    fn shares_match_within_two_percent_the_nearest_first() {
        let region = 1 << 30;
        let share = |pct: f64| (region as f64 * pct / 100.0) as u64;
        let base = run("#1", &[("102.4MiB", share(10.0)), ("204.8MiB", share(20.0))]);
        // 10.1% is nearer 10% than 9.85% is; 21% is 5% from 20%.
        let other = run("#2", &[("9.85%", share(9.85)), ("10.1%", share(10.1)), ("21%", share(21.0))]);
        let mut runs = [base, other];
        match_cache_shares(&mut runs, &[Some(region), Some(region)]);
        let renamed: Vec<&str> =
            names(&runs[1]).into_iter().filter(|n| n.starts_with("working set")).collect();
        assert_eq!(renamed, ["working set 9.85%", "working set 102.4MiB", "working set 21%"]);
    }

    #[test]
    fn runs_that_share_names_or_are_not_cache_runs_are_left_as_they_are() {
        let a = run("#1", &[("2MiB", 2 * MIB), ("8MiB", 8 * MIB)]);
        let b = run("#2", &[("2MiB", 2 * MIB), ("8MiB", 8 * MIB)]);
        let c = run("#3", &[("25%", 2 * MIB)]);
        let mut runs = [a, b, c];
        let before: Vec<Vec<String>> =
            runs.iter().map(|r| r.points.iter().map(|p| p.name.clone()).collect()).collect();
        // #3 is not a cache run (no region), #2's names are #1's.
        let notes = match_cache_shares(&mut runs, &[Some(8 * MIB), Some(8 * MIB), None]);
        let after: Vec<Vec<String>> =
            runs.iter().map(|r| r.points.iter().map(|p| p.name.clone()).collect()).collect();
        assert_eq!(before, after);
        assert!(notes.is_empty(), "{notes:?}");
        // Nor is anything renamed against a baseline that is not a cache run.
        assert!(match_cache_shares(&mut runs[1..], &[None, Some(8 * MIB)]).is_empty());
    }
}
