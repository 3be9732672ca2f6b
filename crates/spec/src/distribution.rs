//! Skewed access: which blocks random I/Os favour (`--distribution`), and the region they stay
//! in (`--working-set`, drifting with `--working-set-moves`). The exact definitions are in
//! docs/distributions.md; the samplers live in the runner.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use crate::units::Bytes;

/// A `--distribution` or `--working-set-moves` that cannot be read or cannot run; each message
/// gives an example to write instead.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DistributionError {
    #[error(
        "zipf:{0}: the exponent must be above 0 and at most {MAX_ZIPF_THETA} (e.g. zipf:1.2; zipf:0 is uniform)"
    )]
    ZipfExponent(f64),
    #[error(
        "pareto:{0}: H must be above 0 and below 0.5 (pareto:0.2 sends 80% of the I/Os to the hottest 20% of the blocks)"
    )]
    ParetoShare(f64),
    #[error(
        "normal:{0}: the standard deviation must be above 0 and at most 1000 (% of the region, e.g. normal:10)"
    )]
    NormalStddev(f64),
    #[error("zoned: needs at least one zone, e.g. zoned:80/20,20/80")]
    NoZone,
    #[error("zoned: the zone {0} covers 0% of the region; every zone needs a size")]
    EmptyZone(Zone),
    #[error(
        "zoned:{listed}: the I/O shares add up to {io}% and the sizes to {size}%; both must add up to 100 (e.g. zoned:80/20,20/80)",
        listed = list(zones)
    )]
    ZoneSums { zones: Vec<Zone>, io: u32, size: u32 },
    #[error("'{text}': {name} needs {what} after the colon, e.g. {}", example(name))]
    NoNumber { text: String, name: String, what: &'static str },
    #[error(
        "'{0}' is not a distribution; use uniform, zipf:THETA, pareto:H, normal:STDDEV_PCT or zoned:IO_PCT/SIZE_PCT,..."
    )]
    NotADistribution(String),
    #[error(
        "'{0}': each zone is IO_PCT/SIZE_PCT in whole percents (\"80/20\": 80% of the I/Os go to 20% of the region), e.g. zoned:80/20,20/80"
    )]
    NotAZone(String),
    #[error(
        "'{0}' is not a move; write DISTANCE/IOS, e.g. 64m/100000 (the working set moves 64 MiB on after every 100000 I/Os of the group)"
    )]
    NotAMove(String),
    #[error("'{0}': the distance and the I/O count must both be above 0")]
    StandingMove(String),
}

/// How the random offsets of a group spread over its blocks. Sequential I/O is not affected.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Distribution {
    /// Every block equally likely (the default).
    #[default]
    Uniform,
    /// Block of rank k (1 = hottest) with probability proportional to k^-theta; ranks are
    /// scattered over the region by a fixed bijection.
    Zipf { theta: f64 },
    /// The hottest `h` of the blocks take `1 - h` of the I/Os (pareto:0.2 is the 80/20 rule);
    /// ranks scattered as for zipf.
    Pareto { h: f64 },
    /// A bell centred on the middle of the region, standard deviation `stddev_pct` % of the
    /// region, cut at its ends; not scattered.
    Normal { stddev_pct: f64 },
    /// Contiguous zones from the start of the region, in the order given: zone i takes
    /// `io_pct` % of the I/Os, uniformly over its `size_pct` % of the region.
    Zoned(Vec<Zone>),
}

/// One zone of `Distribution::Zoned`: `io_pct` % of the I/Os go to `size_pct` % of the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub io_pct: u32,
    pub size_pct: u32,
}

/// The highest zipf exponent: beyond it nearly every I/O goes to one block.
pub const MAX_ZIPF_THETA: f64 = 10.0;

impl Distribution {
    pub fn is_uniform(&self) -> bool {
        *self == Distribution::Uniform
    }

    /// The value's own checks, those that need nothing else of the job.
    fn check(self) -> Result<Self, DistributionError> {
        match &self {
            Distribution::Uniform => {}
            Distribution::Zipf { theta } => {
                if !(*theta > 0.0 && *theta <= MAX_ZIPF_THETA) {
                    return Err(DistributionError::ZipfExponent(*theta));
                }
            }
            Distribution::Pareto { h } => {
                if !(*h > 0.0 && *h < 0.5) {
                    return Err(DistributionError::ParetoShare(*h));
                }
            }
            Distribution::Normal { stddev_pct } => {
                if !(*stddev_pct > 0.0 && *stddev_pct <= 1000.0) {
                    return Err(DistributionError::NormalStddev(*stddev_pct));
                }
            }
            Distribution::Zoned(zones) => {
                if zones.is_empty() {
                    return Err(DistributionError::NoZone);
                }
                if let Some(zone) = zones.iter().find(|z| z.size_pct == 0) {
                    return Err(DistributionError::EmptyZone(*zone));
                }
                let io: u32 = zones.iter().map(|z| z.io_pct).sum();
                let size: u32 = zones.iter().map(|z| z.size_pct).sum();
                if io != 100 || size != 100 {
                    return Err(DistributionError::ZoneSums { zones: zones.clone(), io, size });
                }
            }
        }
        Ok(self)
    }
}

fn list(zones: &[Zone]) -> String {
    zones.iter().map(Zone::to_string).collect::<Vec<_>>().join(",")
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.io_pct, self.size_pct)
    }
}

/// The text `FromStr` reads back: `uniform`, `zipf:1.2`, `zoned:80/20,20/80`. Floats print in
/// Rust's shortest exact form, so the text round-trips (the fleet's wire form relies on it).
impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Uniform => write!(f, "uniform"),
            Distribution::Zipf { theta } => write!(f, "zipf:{theta}"),
            Distribution::Pareto { h } => write!(f, "pareto:{h}"),
            Distribution::Normal { stddev_pct } => write!(f, "normal:{stddev_pct}"),
            Distribution::Zoned(zones) => write!(f, "zoned:{}", list(zones)),
        }
    }
}

impl FromStr for Distribution {
    type Err = DistributionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (name, value) = text.split_once(':').unwrap_or((text, ""));
        let number = |what: &'static str| -> Result<f64, DistributionError> {
            value.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                DistributionError::NoNumber { text: text.to_string(), name: name.to_string(), what }
            })
        };
        let distribution = match name.trim().to_ascii_lowercase().as_str() {
            "uniform" | "random" if value.is_empty() => Distribution::Uniform,
            "zipf" => Distribution::Zipf { theta: number("an exponent")? },
            "pareto" => Distribution::Pareto { h: number("a share H")? },
            "normal" => Distribution::Normal { stddev_pct: number("a standard deviation in %")? },
            "zoned" => Distribution::Zoned(zones(text, value)?),
            _ => return Err(DistributionError::NotADistribution(text.to_string())),
        };
        distribution.check()
    }
}

fn example(name: &str) -> &'static str {
    match name {
        "zipf" => "zipf:1.2",
        "pareto" => "pareto:0.2",
        "normal" => "normal:10",
        _ => "zoned:80/20,20/80",
    }
}

fn zones(text: &str, value: &str) -> Result<Vec<Zone>, DistributionError> {
    value
        .split(',')
        .map(|zone| {
            let pct = |part: Option<&str>| part.and_then(|p| p.trim().parse::<u32>().ok());
            let mut parts = zone.split('/');
            match (pct(parts.next()), pct(parts.next()), parts.next()) {
                (Some(io_pct), Some(size_pct), None) => Ok(Zone { io_pct, size_pct }),
                _ => Err(DistributionError::NotAZone(text.to_string())),
            }
        })
        .collect()
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for Distribution {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `--working-set-moves DISTANCE/IOS`: the working set moves `distance` further into the region
/// after every `every_ios` I/Os of the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkingSetMoves {
    pub distance: Bytes,
    pub every_ios: u64,
}

impl fmt::Display for WorkingSetMoves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.distance.0, self.every_ios)
    }
}

impl FromStr for WorkingSetMoves {
    type Err = DistributionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || DistributionError::NotAMove(text.to_string());
        let (distance, ios) = text.split_once('/').ok_or_else(bad)?;
        let distance: Bytes = distance.trim().parse().map_err(|_| bad())?;
        let ios = ios.trim();
        let every_ios: u64 = ios.strip_suffix("ios").unwrap_or(ios).trim().parse().map_err(|_| bad())?;
        if distance.0 == 0 || every_ios == 0 {
            return Err(DistributionError::StandingMove(text.to_string()));
        }
        Ok(WorkingSetMoves { distance, every_ios })
    }
}

impl<'de> Deserialize<'de> for WorkingSetMoves {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for WorkingSetMoves {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The region a group's I/Os stay in: `size` bytes, from the start of the target's region, or
/// moving on (`moves`) and wrapping back to the start once it would pass the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkingSet {
    #[serde(rename = "size_bytes")]
    pub size: Bytes,
    pub moves: Option<WorkingSetMoves>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_round_trips_through_its_text() {
        for text in
            ["uniform", "zipf:1.2", "zipf:0.99", "pareto:0.2", "normal:12.5", "zoned:80/20,15/30,5/50"]
        {
            let parsed: Distribution = text.parse().expect(text);
            assert_eq!(parsed.to_string(), text);
            assert_eq!(parsed.to_string().parse::<Distribution>().expect(text), parsed);
        }
        let moves: WorkingSetMoves = "64m/100000".parse().expect("moves");
        assert_eq!(moves, WorkingSetMoves { distance: Bytes(64 << 20), every_ios: 100_000 });
        assert_eq!(moves.to_string().parse::<WorkingSetMoves>().expect("again"), moves);
        assert_eq!("1g/5ios".parse::<WorkingSetMoves>().expect("ios").every_ios, 5);
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let err = |text: &str| text.parse::<Distribution>().expect_err(text).to_string();
        assert!(err("zoned:80/20,10/80").contains("add up to 90%"), "{}", err("zoned:80/20,10/80"));
        assert!(err("zoned:100/0").contains("covers 0%"));
        assert!(err("zoned:80-20").contains("IO_PCT/SIZE_PCT"));
        assert!(err("zipf:0").contains("above 0"));
        assert!(err("zipf").contains("zipf:1.2"));
        assert!(err("pareto:0.7").contains("below 0.5"));
        assert!(err("normal:-1").contains("above 0"));
        assert!(err("gauss:3").contains("not a distribution"));
        assert!(err("uniform:3").contains("not a distribution"));
        assert!("0/10".parse::<WorkingSetMoves>().is_err());
        assert!("64m".parse::<WorkingSetMoves>().expect_err("no count").to_string().contains("DISTANCE/IOS"));
    }
}
