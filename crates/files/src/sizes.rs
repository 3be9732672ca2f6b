//! File sizes: fixed, a weighted list, or a lognormal given by its median and its p99. A
//! file's size is a pure function of the seed and the file's place in the tree, so any phase
//! knows it again without a list of sizes (memory stays constant in the number of files).

use std::str::FromStr;

use iolab_spec::Bytes;
use serde::{Deserialize, Serialize};

/// The z of the standard normal's 99th percentile.
const Z_P99: f64 = 2.326_347_874;
/// A lognormal draw is capped at this many times its p99: a tail, not a runaway.
const TAIL_CAP: f64 = 64.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeSpec {
    Fixed(u64),
    /// (size, weight) pairs.
    Weighted(Vec<(u64, u32)>),
    Lognormal {
        median: u64,
        p99: u64,
    },
    /// A gamma law of this mean and shape (Filebench's `cvar-gamma`, whose `gamma` is the
    /// shape: 1.5 in its personalities); scale = mean / shape.
    Gamma {
        mean: u64,
        shape: f64,
    },
}

impl SizeSpec {
    /// The size of the file the hash `h` stands for; `align` rounds it up (O_DIRECT).
    pub fn size(&self, h: u64, align: u64) -> u64 {
        let size = match self {
            SizeSpec::Fixed(size) => *size,
            SizeSpec::Weighted(list) => {
                let total: u64 = list.iter().map(|&(_, w)| u64::from(w)).sum();
                let mut pick = h % total.max(1);
                let mut chosen = list.last().map_or(0, |&(s, _)| s);
                for &(size, weight) in list {
                    if pick < u64::from(weight) {
                        chosen = size;
                        break;
                    }
                    pick -= u64::from(weight);
                }
                chosen
            }
            SizeSpec::Lognormal { median, p99 } => {
                // Box-Muller from the hash's two halves, each mapped into (0, 1].
                let u1 = ((h >> 32) as f64 + 1.0) / 4_294_967_296.0;
                let u2 = ((h & 0xffff_ffff) as f64) / 4_294_967_296.0;
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let sigma = (*p99 as f64 / (*median).max(1) as f64).ln() / Z_P99;
                let drawn = *median as f64 * (sigma * z).exp();
                drawn.min(*p99 as f64 * TAIL_CAP).round() as u64
            }
            SizeSpec::Gamma { mean, shape } => {
                let drawn = gamma(h, *shape) * (*mean as f64 / shape);
                drawn.min(*mean as f64 * TAIL_CAP) as u64
            }
        };
        if align > 1 {
            size.div_ceil(align) * align
        } else {
            size
        }
    }

    /// A size the spec can give that is not a multiple of `align` (lognormal sizes are rounded).
    pub fn unaligned(&self, align: u64) -> Option<u64> {
        match self {
            SizeSpec::Fixed(size) => (size % align != 0).then_some(*size),
            SizeSpec::Weighted(list) => list.iter().map(|&(s, _)| s).find(|s| s % align != 0),
            SizeSpec::Lognormal { .. } | SizeSpec::Gamma { .. } => None,
        }
    }

    /// The largest size a file can have (the data buffer's size is capped separately).
    pub fn max(&self) -> u64 {
        match self {
            SizeSpec::Fixed(size) => *size,
            SizeSpec::Weighted(list) => list.iter().map(|&(s, _)| s).max().unwrap_or(0),
            SizeSpec::Lognormal { p99, .. } => (*p99 as f64 * TAIL_CAP) as u64,
            SizeSpec::Gamma { mean, .. } => (*mean as f64 * TAIL_CAP) as u64,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            SizeSpec::Fixed(size) => Bytes(*size).to_string(),
            SizeSpec::Weighted(list) => {
                list.iter().map(|&(s, w)| format!("{}:{w}", Bytes(s))).collect::<Vec<_>>().join(",")
            }
            SizeSpec::Lognormal { median, p99 } => {
                format!("lognormal median {} p99 {}", Bytes(*median), Bytes(*p99))
            }
            SizeSpec::Gamma { mean, shape } => format!("gamma mean {} shape {shape}", Bytes(*mean)),
        }
    }
}

impl FromStr for SizeSpec {
    type Err = String;

    /// "4k"; "4k:50,64k:30,1m:20"; "lognormal:16k:1m" (median, then p99); "gamma:128k:1.5"
    /// (mean, then shape).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let size = |s: &str| s.trim().parse::<Bytes>().map(|b| b.0).map_err(|e| e.to_string());
        if let Some(rest) = text.strip_prefix("gamma:") {
            let (mean, shape) = rest
                .split_once(':')
                .ok_or_else(|| format!("'{text}': write gamma:MEAN:SHAPE, e.g. gamma:128k:1.5"))?;
            let mean = size(mean)?;
            let shape: f64 =
                shape.trim().parse().map_err(|_| format!("'{text}': the shape must be a number"))?;
            if mean == 0 || !(shape > 0.0 && shape <= 1000.0) {
                return Err(format!(
                    "'{text}': the mean must be above 0 and the shape above 0 (at most 1000)"
                ));
            }
            return Ok(SizeSpec::Gamma { mean, shape });
        }
        if let Some(rest) = text.strip_prefix("lognormal:") {
            let (median, p99) = rest
                .split_once(':')
                .ok_or_else(|| format!("'{text}': write lognormal:MEDIAN:P99, e.g. lognormal:16k:1m"))?;
            let (median, p99) = (size(median)?, size(p99)?);
            if median == 0 || p99 < median {
                return Err(format!("'{text}': the median must be above 0 and the p99 at least the median"));
            }
            return Ok(SizeSpec::Lognormal { median, p99 });
        }
        if !text.contains(',') && !text.contains(':') {
            return size(text).map(SizeSpec::Fixed);
        }
        let mut list = Vec::new();
        for entry in text.split(',') {
            let (s, w) = entry.split_once(':').unwrap_or((entry, "1"));
            let weight: u32 =
                w.trim().parse().map_err(|_| format!("'{w}' in '{text}' is not a whole-number weight"))?;
            list.push((size(s)?, weight));
        }
        if list.iter().all(|&(_, w)| w == 0) {
            return Err(format!("'{text}': every weight is 0"));
        }
        Ok(SizeSpec::Weighted(list))
    }
}

/// A draw of the gamma law of `shape` and scale 1 from the hash `h`: Marsaglia and Tsang's
/// method, its uniforms and normals a stream of hashes of `h` (a shape below 1 drawn at
/// shape + 1 and scaled by U^(1/shape)).
fn gamma(h: u64, shape: f64) -> f64 {
    let mut k = 0u64;
    let mut uniform = || {
        k += 1;
        ((file_hash(h, 0, k) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let boost = if shape < 1.0 { uniform().powf(1.0 / shape) } else { 1.0 };
    let a = if shape < 1.0 { shape + 1.0 } else { shape };
    let d = a - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    // Each try is accepted with probability above 0.95; a stream that rejects 64 times running
    // gives the mean rather than loop on.
    for _ in 0..64 {
        let (u1, u2) = (uniform(), uniform());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let v = (1.0 + c * z).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = uniform();
        if u.ln() < 0.5 * z * z + d - d * v + d * v.ln() {
            return d * v * boost;
        }
    }
    shape
}

/// SplitMix64: a file's hash from the seed and its place, the same in every phase.
pub fn file_hash(seed: u64, tree: u32, index: u64) -> u64 {
    let mut z = seed ^ (u64::from(tree) << 44) ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!("4k".parse::<SizeSpec>(), Ok(SizeSpec::Fixed(4096)));
        assert_eq!("4k:3,1m:1".parse::<SizeSpec>(), Ok(SizeSpec::Weighted(vec![(4096, 3), (1 << 20, 1)])));
        assert_eq!(
            "lognormal:16k:1m".parse::<SizeSpec>(),
            Ok(SizeSpec::Lognormal { median: 16384, p99: 1 << 20 })
        );
        assert!("lognormal:1m:16k".parse::<SizeSpec>().is_err());
        assert!("4k:x".parse::<SizeSpec>().is_err());
    }

    #[test]
    fn weights_are_kept_and_sizes_repeat() {
        let spec: SizeSpec = "4k:3,1m:1".parse().expect("valid");
        let small = (0..40_000).filter(|&i| spec.size(file_hash(9, 0, i), 1) == 4096).count();
        assert!((29_000..31_000).contains(&small), "{small}");
        assert_eq!(spec.size(file_hash(9, 1, 77), 1), spec.size(file_hash(9, 1, 77), 1));
    }

    #[test]
    fn lognormal_has_its_median_and_tail() {
        let spec = SizeSpec::Lognormal { median: 16384, p99: 1 << 20 };
        let mut sizes: Vec<u64> = (0..100_000).map(|i| spec.size(file_hash(3, 0, i), 1)).collect();
        sizes.sort_unstable();
        let median = sizes[50_000] as f64;
        let p99 = sizes[99_000] as f64;
        assert!((median / 16384.0 - 1.0).abs() < 0.05, "median {median}");
        assert!((p99 / f64::from(1 << 20) - 1.0).abs() < 0.1, "p99 {p99}");
        assert!(spec.size(file_hash(3, 0, 5), 4096) % 4096 == 0);
    }

    #[test]
    fn gamma_has_its_mean_and_spread() {
        for (shape, mean) in [(1.5f64, 131_072u64), (0.5, 16_384), (4.0, 1 << 20)] {
            let spec: SizeSpec = format!("gamma:{mean}:{shape}").parse().expect("valid");
            let n = 200_000;
            let sizes: Vec<f64> = (0..n).map(|i| spec.size(file_hash(5, 0, i), 1) as f64).collect();
            let m = sizes.iter().sum::<f64>() / n as f64;
            let var = sizes.iter().map(|s| (s - m).powi(2)).sum::<f64>() / n as f64;
            // A gamma law's coefficient of variation is 1/sqrt(shape).
            let cv = var.sqrt() / m;
            assert!((m / mean as f64 - 1.0).abs() < 0.02, "shape {shape}: mean {m}");
            assert!((cv * shape.sqrt() - 1.0).abs() < 0.05, "shape {shape}: cv {cv}");
        }
        assert!("gamma:0:1.5".parse::<SizeSpec>().is_err());
        assert!("gamma:16k".parse::<SizeSpec>().is_err());
    }
}
