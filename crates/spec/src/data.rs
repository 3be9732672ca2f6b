//! What a group writes (issue 15): `--dedupe-pct`, `--dedupe-set`, `--compress-pct` and
//! `--buffer-pattern`, resolved into a `DataSpec`. The default is unique, incompressible data:
//! every 4 KiB block stamped and different from every other (engine's `stamp`). The engine's
//! `content` turns a `DataSpec` into bytes; nothing here touches a buffer.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

use crate::error::{invalid, SpecError};
use crate::units::Bytes;

/// The dedupe set when `--dedupe-pct` is given without `--dedupe-set`: 256 blocks of 4 KiB. Small
/// next to any target, so the share of distinct blocks a device finds is close to 100 - P.
pub const DEFAULT_DEDUPE_SET: Bytes = Bytes(1 << 20);

/// The largest dedupe set: its blocks are made on demand, so it costs no memory; the cap only
/// keeps the block numbers in a u32.
pub const MAX_DEDUPE_SET: Bytes = Bytes(1 << 44);

/// The content of a group's writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataSpec {
    /// Share of written 4 KiB blocks that repeat a block of the dedupe set, 0..100.
    pub dedupe_pct: u32,
    /// How many distinct blocks the repeats are drawn from, in bytes (a multiple of 4 KiB).
    #[serde(rename = "dedupe_set_bytes")]
    pub dedupe_set: Bytes,
    /// Share of each 4 KiB block that compresses away (zeros), 0..100.
    pub compress_pct: u32,
    pub pattern: BufferPattern,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            dedupe_pct: 0,
            dedupe_set: DEFAULT_DEDUPE_SET,
            compress_pct: 0,
            pattern: BufferPattern::Random,
        }
    }
}

impl DataSpec {
    /// The default: unique, incompressible blocks.
    pub fn is_default(&self) -> bool {
        *self == DataSpec::default()
    }

    /// Blocks of the dedupe set.
    pub fn dedupe_set_blocks(&self) -> u64 {
        (self.dedupe_set.0 / 4096).max(1)
    }

    /// One line for the report: what the data was.
    pub fn describe(&self) -> String {
        match &self.pattern {
            BufferPattern::Zero => "all-zero blocks, no stamp".into(),
            BufferPattern::Hex(bytes) => format!("the pattern 0x{} repeated, no stamp", hex(bytes)),
            BufferPattern::Random => {
                let mut parts = vec!["stamped blocks".to_string()];
                if self.compress_pct > 0 {
                    parts.push(format!("{}% of each block zeros (compress-pct)", self.compress_pct));
                } else {
                    parts.push("random".into());
                }
                if self.dedupe_pct > 0 {
                    parts.push(format!(
                        "{}% repeat blocks of a {} dedupe set (dedupe-pct)",
                        self.dedupe_pct, self.dedupe_set
                    ));
                } else {
                    parts.push("all unique".into());
                }
                parts.join(", ")
            }
        }
    }
}

/// `--buffer-pattern`: `random` (the default: stamped blocks shaped by `--dedupe-pct` and
/// `--compress-pct`), `zero` (every byte 0) or a hex string (`0xdeadbeef`, repeated).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BufferPattern {
    #[default]
    Random,
    Zero,
    Hex(Vec<u8>),
}

impl fmt::Display for BufferPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BufferPattern::Random => f.write_str("random"),
            BufferPattern::Zero => f.write_str("zero"),
            BufferPattern::Hex(bytes) => write!(f, "0x{}", hex(bytes)),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A `--buffer-pattern` that is none of the three forms.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("'{0}' is not a buffer pattern; use random, zero or hex bytes such as 0xdeadbeef")]
pub struct PatternError(String);

impl FromStr for BufferPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.trim().to_ascii_lowercase();
        match lower.as_str() {
            "random" => return Ok(BufferPattern::Random),
            "zero" | "zeros" => return Ok(BufferPattern::Zero),
            _ => {}
        }
        let bad = || PatternError(text.to_string());
        let digits = lower.strip_prefix("0x").unwrap_or(&lower);
        if digits.is_empty() || digits.len() % 2 != 0 || digits.len() > 8192 {
            return Err(bad());
        }
        let bytes = (0..digits.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&digits[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| bad())?;
        Ok(BufferPattern::Hex(bytes))
    }
}

impl<'de> Deserialize<'de> for BufferPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for BufferPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// The group's data from its option layer: percentages in range, a set of whole blocks, and a
/// fixed pattern alone (it is the whole block, so nothing is left to shape).
pub(crate) fn resolve_data(
    dedupe_pct: Option<u32>,
    dedupe_set: Option<Bytes>,
    compress_pct: Option<u32>,
    pattern: Option<&BufferPattern>,
) -> Result<DataSpec, SpecError> {
    for (flag, value) in [("dedupe-pct", dedupe_pct), ("compress-pct", compress_pct)] {
        if let Some(v) = value.filter(|&v| v > 100) {
            return Err(invalid(format!("--{flag} must be between 0 and 100 (got {v})")));
        }
    }
    let pattern = pattern.cloned().unwrap_or_default();
    if pattern != BufferPattern::Random
        && (dedupe_pct.is_some_and(|p| p > 0) || compress_pct.is_some_and(|p| p > 0))
    {
        return Err(invalid(format!(
            "--buffer-pattern {pattern} fills every byte of every block, so --dedupe-pct and --compress-pct have nothing to shape; drop one"
        )));
    }
    if let Some(set) = dedupe_set {
        if set.0 < 4096 || set.0 % 4096 != 0 || set > MAX_DEDUPE_SET {
            return Err(invalid(format!(
                "--dedupe-set {set} must be a whole number of 4 KiB blocks between 4k and {MAX_DEDUPE_SET} (e.g. --dedupe-set 64m)"
            )));
        }
        if dedupe_pct.unwrap_or(0) == 0 {
            return Err(invalid(
                "--dedupe-set sizes the blocks that --dedupe-pct repeats; add --dedupe-pct P",
            ));
        }
    }
    Ok(DataSpec {
        dedupe_pct: dedupe_pct.unwrap_or(0),
        dedupe_set: dedupe_set.unwrap_or(DEFAULT_DEDUPE_SET),
        compress_pct: compress_pct.unwrap_or(0),
        pattern,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_print_back() {
        assert_eq!("zero".parse(), Ok(BufferPattern::Zero));
        assert_eq!("Random".parse(), Ok(BufferPattern::Random));
        assert_eq!("0xDEADbeef".parse(), Ok(BufferPattern::Hex(vec![0xde, 0xad, 0xbe, 0xef])));
        assert_eq!("a5".parse(), Ok(BufferPattern::Hex(vec![0xa5])));
        assert_eq!(BufferPattern::Hex(vec![0xde, 0xad]).to_string(), "0xdead");
        for bad in ["0x", "0xabc", "xyz", ""] {
            assert!(bad.parse::<BufferPattern>().is_err(), "{bad}");
        }
    }

    #[test]
    fn data_options_are_checked() {
        assert_eq!(resolve_data(None, None, None, None), Ok(DataSpec::default()));
        let set = resolve_data(Some(50), Some(Bytes(8 << 20)), Some(30), None).expect("valid");
        assert_eq!((set.dedupe_pct, set.dedupe_set_blocks(), set.compress_pct), (50, 2048, 30));
        assert!(resolve_data(Some(101), None, None, None).is_err());
        assert!(resolve_data(None, None, Some(101), None).is_err());
        assert!(resolve_data(Some(10), Some(Bytes(5000)), None, None).is_err());
        assert!(resolve_data(None, Some(Bytes(1 << 20)), None, None).is_err(), "a set without repeats");
        assert!(resolve_data(Some(10), None, None, Some(&BufferPattern::Zero)).is_err());
        assert!(resolve_data(Some(0), None, Some(0), Some(&BufferPattern::Zero)).is_ok());
    }
}
