//! `iolab fleet cache`: each host's own tiers (every host has its own page cache, its own
//! controller DRAM), judged per host by the same rule as `iolab cache` (crate::cache), beside
//! the fleet's merged curve (each working-set point's histograms merged exactly, IOPS summed);
//! and the fleet in a sentence per tier: where every host's tier ends, and which host is the
//! outlier.
//!
//! What `iolab fleet cache` reports is read back from the store: every field has a default.

use iolab_spec::Bytes;
use iolab_stats::central::median;
use iolab_stats::format::latency;
use serde::{Deserialize, Serialize};

use crate::cache::{CacheSummary, CacheTiers, Tier};

/// A host's tier is an outlier when its capacity is this far from the hosts' median (as a
/// share of it): two copies of one machine land within the rule's own 10-15%.
pub const OUTLIER_SHARE: f64 = 0.25;

/// Fewer hosts with a tier have no outlier: two are each as far from their median, so either
/// both would be named or neither, and their spread is said instead.
const LEAST_FOR_OUTLIER: usize = 3;

/// The fleet's report: `merged` is the fleet's curve (working sets and region summed over the
/// hosts; its tiers are not judged: a sum of caches on separate hosts is no tier anyone has),
/// `fleet` each host's own study.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FleetCacheSummary {
    #[serde(flatten)]
    pub merged: CacheSummary,
    pub fleet: FleetCache,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FleetCache {
    /// How the working sets were refined: "union" (every host measures every host's
    /// refinement points, each as the same share of its own region).
    pub refinement: String,
    pub hosts: Vec<HostCache>,
    /// The fleet in a sentence per tier (`fleet_sentences`).
    pub sentences: Vec<String>,
}

/// One host's study: its own curve (from its own exact histograms), tiers, promotion, pollution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostCache {
    /// As the user named it: "10.0.0.2:7878".
    pub host: String,
    /// Why it dropped out (its working sets until then are kept).
    pub failure: Option<String>,
    pub summary: CacheSummary,
}

/// One sentence per tier index found on any host: "tier 1: every host's capacity is 110-118
/// MiB (hits 2.0-2.3 µs, misses 180-210 µs)", or with the hosts more than `OUTLIER_SHARE` from
/// the hosts' median capacity named as outliers, and the hosts that found no such tier named.
/// Nothing when no host found a tier.
pub fn fleet_sentences(hosts: &[(&str, &CacheTiers)]) -> Vec<String> {
    let deepest = hosts.iter().map(|(_, t)| t.tiers.len()).max().unwrap_or(0);
    if deepest == 0 {
        return vec![format!(
            "no host found a tier: {}",
            if hosts.len() == 1 { "its curve is flat" } else { "every host's curve is flat" }
        )];
    }
    (0..deepest).map(|k| tier_sentence(k, hosts)).collect()
}

fn tier_sentence(k: usize, hosts: &[(&str, &CacheTiers)]) -> String {
    let with: Vec<(&str, &Tier)> =
        hosts.iter().filter_map(|(h, t)| t.tiers.get(k).map(|tier| (*h, tier))).collect();
    let without: Vec<&str> = hosts.iter().filter(|(_, t)| t.tiers.len() <= k).map(|(h, _)| *h).collect();
    let sizes: Vec<f64> = with.iter().map(|(_, t)| t.size_bytes as f64).collect();
    let middle = median(&sizes).unwrap_or(0.0);
    let is_outlier = |t: &Tier| {
        with.len() >= LEAST_FOR_OUTLIER
            && middle > 0.0
            && (t.size_bytes as f64 - middle).abs() > OUTLIER_SHARE * middle
    };
    let (outliers, usual): (Vec<_>, Vec<_>) = with.iter().partition(|(_, t)| is_outlier(t));
    let span = |tiers: &[&(&str, &Tier)], pick: fn(&Tier) -> f64, show: fn(f64) -> String| {
        let (lo, hi) =
            tiers.iter().map(|(_, t)| pick(t)).fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if show(lo) == show(hi) {
            show(lo)
        } else {
            format!("{}-{}", show(lo), show(hi))
        }
    };
    let size = |v: f64| Bytes(v as u64).to_string();
    let usual_refs: &[&(&str, &Tier)] = &usual;
    let mut sentence = format!("tier {}: ", k + 1);
    if !usual_refs.is_empty() {
        let whose = if outliers.is_empty() && without.is_empty() && hosts.len() > 1 {
            "every host's capacity is".to_string()
        } else if usual_refs.len() == 1 {
            format!("host {}'s capacity is", usual_refs[0].0)
        } else {
            format!("hosts {}: capacity", usual_refs.iter().map(|(h, _)| *h).collect::<Vec<_>>().join(", "))
        };
        sentence.push_str(&format!(
            "{whose} {} (hits {}, misses {})",
            span(usual_refs, |t| t.size_bytes as f64, size),
            span(usual_refs, |t| t.hit_ns, latency),
            span(usual_refs, |t| t.miss_ns, latency),
        ));
        // Two hosts have no outlier (`LEAST_FOR_OUTLIER`): a wide spread is said.
        let (lo, hi) = usual_refs
            .iter()
            .map(|(_, t)| t.size_bytes as f64)
            .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if lo > 0.0 && hi > lo * (1.0 + OUTLIER_SHARE) {
            sentence.push_str(&format!(", {:.2}x apart", hi / lo));
        }
    }
    for (host, tier) in &outliers {
        if !sentence.ends_with(": ") {
            sentence.push_str("; ");
        }
        sentence.push_str(&format!(
            "host {host}'s at {} is the outlier (median {}; hits {}, misses {})",
            Bytes(tier.size_bytes),
            Bytes(middle as u64),
            latency(tier.hit_ns),
            latency(tier.miss_ns)
        ));
    }
    if !without.is_empty() {
        if !sentence.ends_with(": ") {
            sentence.push(';');
        }
        sentence.push_str(&format!(" {} found no tier {}", host_list(&without), k + 1));
    }
    sentence
}

fn host_list(hosts: &[&str]) -> String {
    match hosts {
        [one] => format!("host {one}"),
        many => format!("hosts {}", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiers(sizes_mib: &[(u64, f64, f64)]) -> CacheTiers {
        CacheTiers {
            judged: true,
            note: None,
            tiers: sizes_mib
                .iter()
                .map(|&(mib, hit_ns, miss_ns)| Tier {
                    size_bytes: mib << 20,
                    hit_ns,
                    miss_ns,
                    ..Tier::default()
                })
                .collect(),
        }
    }

    #[test]
    fn alike_hosts_share_one_range() {
        let a = tiers(&[(110, 2_000.0, 180_000.0)]);
        let b = tiers(&[(118, 2_300.0, 210_000.0)]);
        let said = fleet_sentences(&[("a", &a), ("b", &b)]);
        assert_eq!(
            said,
            vec!["tier 1: every host's capacity is 110MiB-118MiB (hits 2.00us-2.30us, misses 180us-210us)"
                .to_string()],
            "{said:?}"
        );
    }

    #[test]
    fn the_outlier_is_named_with_its_size() {
        let a = tiers(&[(110, 2_000.0, 180_000.0)]);
        let b = tiers(&[(60, 2_000.0, 180_000.0)]);
        let c = tiers(&[(118, 2_000.0, 180_000.0)]);
        let said = fleet_sentences(&[("a", &a), ("b", &b), ("c", &c)]);
        assert_eq!(said.len(), 1);
        assert!(said[0].starts_with("tier 1: hosts a, c: capacity 110MiB-118MiB"), "{}", said[0]);
        assert!(said[0].contains("host b's at 60MiB is the outlier (median 110MiB"), "{}", said[0]);
    }

    #[test]
    fn two_hosts_far_apart_are_said_to_be() {
        let a = tiers(&[(88, 1_800.0, 120_000.0)]);
        let b = tiers(&[(146, 2_000.0, 155_000.0)]);
        let said = fleet_sentences(&[("a", &a), ("b", &b)]);
        assert!(said[0].starts_with("tier 1: every host's capacity is 88MiB-146MiB"), "{}", said[0]);
        assert!(said[0].ends_with(", 1.66x apart"), "{}", said[0]);
        // Each more than OUTLIER_SHARE from their median: still no outlier, the spread said.
        let (a, b) = (tiers(&[(89, 1_800.0, 120_000.0)]), tiers(&[(150, 2_000.0, 155_000.0)]));
        let said = fleet_sentences(&[("a", &a), ("b", &b)]);
        assert!(said[0].starts_with("tier 1: every host's capacity is 89MiB-150MiB"), "{}", said[0]);
        assert!(said[0].ends_with(", 1.69x apart") && !said[0].contains("outlier"), "{}", said[0]);
    }

    #[test]
    fn hosts_without_a_tier_are_named_per_tier() {
        let a = tiers(&[(100, 1_000.0, 20_000.0), (1000, 20_000.0, 500_000.0)]);
        let b = tiers(&[(100, 1_000.0, 20_000.0)]);
        let said = fleet_sentences(&[("a", &a), ("b", &b)]);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("tier 1: every host's capacity is 100MiB"), "{}", said[0]);
        assert!(said[1].starts_with("tier 2: host a's capacity is 1000MiB"), "{}", said[1]);
        assert!(said[1].ends_with("; host b found no tier 2"), "{}", said[1]);
    }

    #[test]
    fn no_tier_anywhere_is_said() {
        let flat = CacheTiers::default();
        assert_eq!(
            fleet_sentences(&[("a", &flat), ("b", &flat)]),
            vec!["no host found a tier: every host's curve is flat"]
        );
    }

    #[test]
    fn the_report_reads_back_as_a_plain_cache_report() {
        let summary = FleetCacheSummary {
            merged: CacheSummary { region_bytes: 3 << 20, ..CacheSummary::default() },
            fleet: FleetCache {
                refinement: "union".into(),
                hosts: vec![HostCache::default()],
                sentences: vec![],
            },
        };
        let json = serde_json::to_value(&summary).unwrap();
        let plain: CacheSummary = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(plain.region_bytes, 3 << 20);
        let back: FleetCacheSummary = serde_json::from_value(json).unwrap();
        assert_eq!(back, summary);
    }
}
