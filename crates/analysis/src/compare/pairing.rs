//! Which point of a side stands beside which point of the baseline: only like with like.
//!
//! Two points are compared when they ran the same workload (the access: block sizes, mix,
//! randomness, distribution, working set) at the same load (queue depth, workers and any rate
//! asked). Where a side holds several points of one workload and load (a ladder's rungs, a cache
//! study's working sets, named repeats), those pair by name only. The one exception is the case
//! the user asked for by naming one point on each side (`compare 12:qd32 13:qd16`): one point
//! each of the same workload pairs at different loads, with a warning. Every point that pairs
//! with nothing is listed with the reason, never compared.

use super::{distinct, Group, MatchedBy};
use iolab_stats::format::thousands;
use iolab_store::Point;

/// The load a point was run at: what the engine kept in flight, and a rate if one was asked.
/// A fleet's point pairs with a local one of the same per-host load (the cache study compares
/// a local run with a fleet's by share of each host's region).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub qd: u32,
    pub workers: u32,
    pub rate_iops: Option<u64>,
}

impl Load {
    /// The load as each host applied it: a fleet point's summary counts the workers of every
    /// host, its spec (the first host's job) those of one.
    pub(super) fn of(point: &Point) -> Load {
        let groups = point.spec.get("groups").and_then(|g| g.as_array());
        let per_host = groups.map(|g| g.iter().filter_map(|g| g.get("workers")?.as_u64()).sum::<u64>());
        let workers = per_host.filter(|&w| w > 0).map_or(point.summary.workers, |w| w as u32);
        Load { qd: point.summary.qd, workers, rate_iops: asked_rate(&point.spec) }
    }

    /// "QD 32 x 1", "QD 8 x 2 at 2,000 IOPS asked".
    pub(super) fn words(&self) -> String {
        let rate =
            self.rate_iops.map_or_else(String::new, |r| format!(" at {} IOPS asked", thousands(r as f64)));
        format!("QD {} x {}{rate}", self.qd, self.workers)
    }
}

/// The whole job's asked rate: iolab's groups' `rate.iops` summed, or fio's `rate_iops` (per
/// direction, "500,100", summed); `None` for a closed loop.
fn asked_rate(spec: &serde_json::Value) -> Option<u64> {
    if let Some(groups) = spec.get("groups").and_then(|g| g.as_array()) {
        let rates: Vec<u64> =
            groups.iter().filter_map(|g| g.pointer("/rate/iops").and_then(|r| r.as_u64())).collect();
        return (!rates.is_empty()).then(|| rates.iter().sum());
    }
    let fio = spec.get("rate_iops")?;
    let text = fio.as_str().map(str::to_string).unwrap_or_else(|| fio.to_string());
    let sum: u64 = text.split(',').filter_map(|part| part.trim().parse::<u64>().ok()).sum();
    (sum > 0).then_some(sum)
}

/// What a group ran, for pairing.
fn shape<'a>(group: &Group<'a>) -> (&'a str, Load) {
    let first = group.points[0];
    (first.summary.access.as_str(), Load::of(first))
}

/// How a side's groups pair with the baseline's.
pub(super) struct Pairing {
    pub by: MatchedBy,
    /// For each baseline group, the index of the side's group beside it.
    pub pairs: Vec<Option<usize>>,
    /// Why each baseline group pairs with nothing on the side; `None` where it pairs.
    pub base_unpaired: Vec<Option<String>>,
    /// Why each of the side's groups pairs with nothing; `None` where it pairs.
    pub side_unpaired: Vec<Option<String>>,
}

/// Pairs `other`'s groups (labelled `label`) with the baseline's (`base_label`).
pub(super) fn pair(base: &[Group], base_label: &str, other: &[Group], label: &str) -> Pairing {
    let base_shapes: Vec<_> = base.iter().map(shape).collect();
    let other_shapes: Vec<_> = other.iter().map(shape).collect();
    let count =
        |shapes: &[(&str, Load)], wanted: &(&str, Load)| shapes.iter().filter(|s| *s == wanted).count();
    let mut pairs: Vec<Option<usize>> = vec![None; base.len()];
    let mut used = vec![false; other.len()];
    for (i, b) in base.iter().enumerate() {
        let wanted = &base_shapes[i];
        let unique = count(&base_shapes, wanted) == 1 && count(&other_shapes, wanted) == 1;
        let found = (0..other.len())
            .find(|&j| !used[j] && other_shapes[j] == *wanted && (unique || other[j].name == b.name));
        if let Some(j) = found {
            pairs[i] = Some(j);
            used[j] = true;
        }
    }
    let mut by = MatchedBy::Workload;
    if base.len() == 1 && other.len() == 1 && pairs[0].is_none() && base_shapes[0].0 == other_shapes[0].0 {
        pairs[0] = Some(0);
        used[0] = true;
        by = MatchedBy::Single;
    }
    let single_of_another_workload = base.len() == 1 && other.len() == 1 && pairs[0].is_none();
    let why = |shape: &(&str, Load), name: &str, holder: &[(&str, Load)], holder_label: &str| {
        if single_of_another_workload {
            return format!(
                "not the same workload: '{}' vs '{}'; not compared",
                base_shapes[0].0, other_shapes[0].0
            );
        }
        let (access, load) = shape;
        let loads: Vec<String> = holder.iter().filter(|(a, _)| a == access).map(|(_, l)| l.words()).collect();
        match loads.len() {
            0 => format!("{holder_label} ran no '{access}'"),
            _ if loads.iter().any(|l| *l == load.words()) => format!(
                "{holder_label} has no point named '{name}' of '{access}' at {}, and its points there have other names",
                load.words()
            ),
            _ => format!(
                "{holder_label} ran '{access}' only at {}, not at {}",
                distinct(loads.into_iter()).join(", "),
                load.words()
            ),
        }
    };
    let base_unpaired = (0..base.len())
        .map(|i| pairs[i].is_none().then(|| why(&base_shapes[i], base[i].name, &other_shapes, label)))
        .collect();
    let side_unpaired = (0..other.len())
        .map(|j| (!used[j]).then(|| why(&other_shapes[j], other[j].name, &base_shapes, base_label)))
        .collect();
    Pairing { by, pairs, base_unpaired, side_unpaired }
}
