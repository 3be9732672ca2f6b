//! What the cache study measures and finds, as it is kept and read back: each working set's
//! point (its latency distribution as shares below a ladder of latencies), the rule it is
//! judged by, the tiers with the capacities their hit shares make, promotion and pollution.
//! The rules that find them are cache.rs and cache_capacity.rs. Every field has a default, so
//! a report written by an older or newer iolab still reads.

use serde::{Deserialize, Serialize};

/// Points past a tier whose share of hits in the tiers found is above this (working sets less
/// than twice the tier) are not used to judge the next level: dividing by the small share of
/// misses would magnify their noise, and a real cache under pressure hits less than C/W there
/// (an LRU thrashes), which would read as a tier of its own. For the same reason a capacity is
/// judged on working sets where at most this share of the reads hit.
pub const MAX_HIT_SHARE: f64 = 0.5;

/// One working set measured: random reads over it after it was read once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CachePoint {
    pub working_set_bytes: u64,
    /// Mean read latency (service time), ns.
    pub mean_ns: f64,
    /// Mean of the fastest 99% of the reads, ns: what the rule judges. A few misses raise it at
    /// once, while the rare stalls of a busy machine (fewer than 1% of reads) do not.
    pub trimmed_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub iops: f64,
    /// Measured to refine a tier's size (bisection), not one of the sizes asked for.
    pub refined: bool,
    /// Measured after a larger working set: a cache may still hold blocks of that one (the
    /// kernel's active list keeps those that were hit) and serve this one less than it can, so
    /// a capacity is judged on such a working set only when no other is in range.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub after_larger: bool,
    /// The latency distribution: the share of reads at or below each step of a ladder of
    /// latencies (cache_capacity.rs); what the share of hits beyond a tier is read from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<LatencyShare>,
}

impl CachePoint {
    /// The latency the rule judges: the trimmed mean, or the mean where there is none.
    pub fn level_ns(&self) -> f64 {
        if self.trimmed_ns > 0.0 {
            self.trimmed_ns
        } else {
            self.mean_ns
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheRule {
    /// A working set is beyond a tier when its latency (of a miss of the tiers found before)
    /// is more than this share above the tier's level, in percent.
    pub rise_pct: f64,
    /// Refine each tier's bracket until the smallest working set beyond it is within this share
    /// of the largest inside it, in percent.
    pub precision_pct: f64,
    /// And by more than this, ns: smaller rises are the jitter of iolab's own path (a page-cache
    /// hit costs 1-2 µs), never a tier of storage.
    pub min_rise_ns: f64,
}

impl Default for CacheRule {
    fn default() -> Self {
        CacheRule { rise_pct: 50.0, precision_pct: 10.0, min_rise_ns: 1_000.0 }
    }
}

impl CacheRule {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.rise_pct > 0.0 && self.rise_pct.is_finite()) {
            return Err(format!(
                "cache rise is {}%; give a percentage above 0 (the default is 50%: a tier ends where latency rises by more than half)",
                self.rise_pct
            ));
        }
        if !(self.precision_pct >= 1.0 && self.precision_pct <= 100.0) {
            return Err(format!(
                "cache precision is {}%; give a percentage from 1 to 100 (the default is 10%)",
                self.precision_pct
            ));
        }
        if !(self.min_rise_ns >= 0.0 && self.min_rise_ns.is_finite()) {
            return Err(format!("cache minimum rise is {} ns; give 0 or more", self.min_rise_ns));
        }
        Ok(())
    }

    /// The highest latency still on a level of `level` ns.
    pub fn ceiling(&self, level: f64) -> f64 {
        (level * (1.0 + self.rise_pct / 100.0)).max(level + self.min_rise_ns)
    }
}

/// A cache or fast tier: where the latency of its hits gave way to that of its misses, and how
/// much it holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tier {
    /// The tier's capacity: the median of hit share x working set over the working sets beyond
    /// it that judge it (`hit_shares`); `fits_bytes` when none keeps a latency distribution.
    pub size_bytes: u64,
    /// The largest working set measured inside the tier, every read a hit: misses begin above.
    pub fits_bytes: u64,
    /// The smallest working set measured beyond it: misses begin below this.
    pub upper_bytes: u64,
    /// `upper_bytes` is within the rule's precision of `fits_bytes`.
    pub resolved: bool,
    /// The latency of a read this tier serves, ns: the level of the points inside it (for the
    /// first tier, the median of their trimmed means).
    pub hit_ns: f64,
    /// The latency of a read it misses, ns: the level after it (the next tier's, or the
    /// backing store's), judged on the misses alone.
    pub miss_ns: f64,
    /// Reads at or below this latency are the tier's hits (or an earlier tier's), ns: the
    /// geometric middle of `hit_ns` and the miss level first judged.
    pub threshold_ns: f64,
    /// Each working set beyond the tier that keeps a latency distribution: its share of hits.
    pub hit_shares: Vec<HitShare>,
    /// Measured at `fits_bytes`: the figures inside the tier.
    pub inside: CachePoint,
    /// Measured where the level after it was first judged: the figures beyond the tier.
    pub beyond: CachePoint,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheTiers {
    /// Smallest first.
    pub tiers: Vec<Tier>,
    /// False with fewer than 2 working sets measured.
    pub judged: bool,
    /// Why nothing was judged, or why no tier was found.
    pub note: Option<String>,
}

/// A hot set read from cold: its mean latency interval by interval, until it is as fast as the
/// first tier's hits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Promotion {
    pub hot_set_bytes: u64,
    /// Where it starts in the region: a part the study had not read lately.
    pub offset_bytes: u64,
    /// Fast enough: the first tier's hit latency times (1 + rise).
    pub target_ns: f64,
    pub samples: Vec<LatencySample>,
    /// Seconds from the first read until every later interval was fast; `None`: not in time.
    pub fast_after_s: Option<f64>,
    /// The first interval was already fast: the set was cached before, nothing was promoted.
    pub fast_from_start: bool,
}

/// Mean latency during one interval of a job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencySample {
    /// Seconds from the start of the measurement to the end of the interval.
    pub t_s: f64,
    pub mean_ns: f64,
}

/// A hot set measured, then the rest of the region read once sequentially (a backup, a scan),
/// then the hot set measured again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pollution {
    pub hot_set_bytes: u64,
    pub scan_bytes: u64,
    pub before: CachePoint,
    pub after: CachePoint,
    /// The hot set's latency rose by more than the rule's share after the scan.
    pub polluted: bool,
}

/// The summary of `iolab cache --json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheSummary {
    #[serde(flatten)]
    pub found: CacheTiers,
    pub rule: CacheRule,
    /// The region the working sets are shares of.
    pub region_bytes: u64,
    /// Every working set measured, smallest first.
    pub points: Vec<CachePoint>,
    pub promotion: Option<Promotion>,
    pub pollution: Option<Pollution>,
    /// Why promotion or pollution was not measured.
    pub notes: Vec<String>,
}

/// The share of a working set's reads that took at most `ns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencyShare {
    pub ns: u64,
    pub share: f64,
}

/// One working set beyond a tier: the share of its reads at hit latency, and the capacity that
/// share makes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HitShare {
    pub working_set_bytes: u64,
    /// The share of its reads at or below the tier's threshold: served by the tier (or one
    /// before it).
    pub share: f64,
    /// share x working set.
    pub capacity_bytes: u64,
    /// The tier's capacity is the median of the working sets used.
    pub used: bool,
}
