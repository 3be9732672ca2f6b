//! The plan of `iolab cache`: the working sets it measures, as shares of the region (`5%`) or
//! sizes (`64m`), and how they become sizes once the region is known.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use thiserror::Error;

use crate::units::{Bytes, UnitError};

/// Working sets that cannot be read, or that do not fit the region they would be measured in.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum WorkingSetsError {
    #[error("'{0}' is not a share of the region; write one above 0% and at most 100%")]
    NotAShare(String),
    #[error(transparent)]
    NotASize(#[from] UnitError),
    #[error("a working set of 0 bytes reads nothing; give a size above 0")]
    ZeroBytes,
    #[error("'{0}' has an empty value; write e.g. 1%,10%,100% or 64m,256m")]
    EmptyValue(String),
    #[error("the region ({region}) is smaller than one working-set grain ({grain}); give a larger --size")]
    RegionBelowGrain { region: Bytes, grain: Bytes },
    #[error(
        "working set {set} is larger than the region ({region}); give sizes within it or a larger --size"
    )]
    LargerThanRegion { set: WorkingSet, region: Bytes },
}

/// One working set of `--sizes`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkingSet {
    /// A share of the region, in percent (0 < pct <= 100).
    Pct(f64),
    Size(Bytes),
}

/// The working sets of `--sizes`, in the order given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkingSets(pub Vec<WorkingSet>);

impl Default for WorkingSets {
    /// 1%, 2%, 5%, 10%, 20%, 50% and 100% of the region.
    fn default() -> Self {
        WorkingSets([1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0].into_iter().map(WorkingSet::Pct).collect())
    }
}

impl FromStr for WorkingSet {
    type Err = WorkingSetsError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        match text.strip_suffix('%') {
            Some(pct) => match pct.trim().parse::<f64>() {
                Ok(pct) if pct > 0.0 && pct <= 100.0 => Ok(WorkingSet::Pct(pct)),
                _ => Err(WorkingSetsError::NotAShare(text.to_string())),
            },
            None => match text.parse::<Bytes>()? {
                Bytes(0) => Err(WorkingSetsError::ZeroBytes),
                size => Ok(WorkingSet::Size(size)),
            },
        }
    }
}

impl FromStr for WorkingSets {
    type Err = WorkingSetsError;

    /// A comma-separated list: `1%,10%,100%`, `64m,128m,1g`, or both kinds mixed.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let sets = text
            .split(',')
            .map(|item| match item.trim() {
                "" => Err(WorkingSetsError::EmptyValue(text.to_string())),
                item => item.parse(),
            })
            .collect::<Result<Vec<WorkingSet>, WorkingSetsError>>()?;
        Ok(WorkingSets(sets))
    }
}

impl fmt::Display for WorkingSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkingSet::Pct(pct) => write!(f, "{pct}%"),
            WorkingSet::Size(size) => write!(f, "{size}"),
        }
    }
}

impl WorkingSets {
    /// Each working set in bytes over a region of `region` bytes: rounded down to a multiple of
    /// `grain` (at least one grain), smallest first, each once. A size larger than the region
    /// is refused: it would measure the region, not the size asked for.
    pub fn resolve(&self, region: u64, grain: u64) -> Result<Vec<u64>, WorkingSetsError> {
        let grain = grain.max(1);
        if region < grain {
            return Err(WorkingSetsError::RegionBelowGrain { region: Bytes(region), grain: Bytes(grain) });
        }
        let mut sizes = Vec::with_capacity(self.0.len());
        for set in &self.0 {
            let bytes = match *set {
                WorkingSet::Pct(pct) => (region as f64 * pct / 100.0) as u64,
                WorkingSet::Size(Bytes(size)) if size > region => {
                    return Err(WorkingSetsError::LargerThanRegion { set: *set, region: Bytes(region) })
                }
                WorkingSet::Size(Bytes(size)) => size,
            };
            sizes.push((bytes / grain * grain).max(grain));
        }
        sizes.sort_unstable();
        sizes.dedup();
        Ok(sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_sizes_parse_and_resolve() {
        let sets: WorkingSets = "100%, 64k,1%".parse().expect("parses");
        assert_eq!(sets.0, [WorkingSet::Pct(100.0), WorkingSet::Size(Bytes(64 << 10)), WorkingSet::Pct(1.0)]);
        let region = 100 << 20;
        // 64 KiB is less than one 128 KiB grain: one grain.
        assert_eq!(sets.resolve(region, 128 << 10), Ok(vec![128 << 10, 1 << 20, region]));
        // 1% of 100 MiB + 4 KiB is not a whole number of grains: rounded down.
        assert_eq!(sets.resolve(region + 4096, 128 << 10).expect("resolves")[1], 1 << 20);
        let default = WorkingSets::default().resolve(region, 4096).expect("resolves");
        assert_eq!(default.len(), 7);
        assert_eq!(default.last(), Some(&region));
    }

    #[test]
    fn bad_working_sets_are_refused() {
        for bad in ["0%", "101%", "x%", "0", "1%,,2%", "12q"] {
            assert!(bad.parse::<WorkingSets>().is_err(), "{bad}");
        }
        let too_big: WorkingSets = "2g".parse().expect("parses");
        assert!(too_big.resolve(1 << 30, 4096).unwrap_err().to_string().contains("larger than the region"));
        assert!(WorkingSets::default().resolve(4095, 4096).is_err());
    }
}
