//! Unit newtypes (`Bytes`, `Nanos`) and their human-friendly parsing.
//!
//! Sizes use binary multiples, as fio and Iometer users expect: `4k` = `4KiB` = 4096 bytes.
//! Durations accept `ns`, `us`, `ms`, `s`, `m`, `h`; a bare number is seconds.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// A count of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A span of time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const PER_SEC: u64 = 1_000_000_000;

    pub const fn from_secs(secs: u64) -> Self {
        Nanos(secs * Self::PER_SEC)
    }

    pub const fn from_millis(ms: u64) -> Self {
        Nanos(ms * 1_000_000)
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / Self::PER_SEC as f64
    }

    pub fn as_duration(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
}

/// A size or a duration that cannot be read; each message shows how to write one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    #[error("'{0}' is not a size; write e.g. 4096, 4k, 128KiB, 1g (k = 1024 bytes)")]
    NotASize(String),
    #[error("'{0}' is not a duration; write e.g. 10s, 500ms, 100us, 2m")]
    NotADuration(String),
    #[error("'{0}' is longer than any run can be")]
    TooLong(String),
}

/// Splits "12.5KiB" into (12.5, "kib"): the number and its lower-cased suffix.
fn split_number(text: &str) -> Option<(f64, String)> {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let number: f64 = text[..end].parse().ok()?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    Some((number, text[end..].trim().to_ascii_lowercase()))
}

fn whole(value: f64) -> Option<u64> {
    let rounded = value.round();
    // Sizes and offsets are added together later: keep them far from u64's end.
    if (value - rounded).abs() > 1e-6 || rounded >= (1u64 << 62) as f64 {
        return None;
    }
    Some(rounded as u64)
}

/// The binary multiplier of a size suffix: "", "b", "k", "kb", "kib", "m", ... "p".
fn size_multiplier(suffix: &str) -> Option<u64> {
    let stem = suffix.trim_end_matches('b').trim_end_matches('i');
    let power = match stem {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return None,
    };
    Some(1u64 << (10 * power))
}

impl FromStr for Bytes {
    type Err = UnitError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || UnitError::NotASize(text.to_string());
        let (number, suffix) = split_number(text).ok_or_else(bad)?;
        let multiplier = size_multiplier(&suffix).ok_or_else(bad)?;
        whole(number * multiplier as f64).map(Bytes).ok_or_else(bad)
    }
}

impl FromStr for Nanos {
    type Err = UnitError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || UnitError::NotADuration(text.to_string());
        let (number, suffix) = split_number(text).ok_or_else(bad)?;
        let ns_per_unit: f64 = match suffix.as_str() {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "" | "s" | "sec" => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        let ns = (number * ns_per_unit).round();
        // Durations are added to clock readings: a century is plenty.
        if ns >= 100.0 * 365.0 * 86_400e9 {
            return Err(UnitError::TooLong(text.to_string()));
        }
        Ok(Nanos(ns as u64))
    }
}

const BINARY_UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

impl fmt::Display for Bytes {
    /// Exact when the size is a whole number of a binary unit ("4KiB"), else two decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut unit = 0;
        while unit + 1 < BINARY_UNITS.len() && self.0 >= 1u64 << (10 * (unit + 1)) {
            unit += 1;
        }
        let scale = 1u64 << (10 * unit);
        if self.0 % scale == 0 {
            write!(f, "{}{}", self.0 / scale, BINARY_UNITS[unit])
        } else {
            write!(f, "{:.2}{}", self.0 as f64 / scale as f64, BINARY_UNITS[unit])
        }
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        let (value, unit) = if ns >= 3_600_000_000_000 && ns % 3_600_000_000_000 == 0 {
            (ns / 3_600_000_000_000, "h")
        } else if ns >= 60_000_000_000 && ns % 60_000_000_000 == 0 {
            (ns / 60_000_000_000, "m")
        } else if ns >= 1_000_000_000 && ns % 1_000_000_000 == 0 {
            (ns / 1_000_000_000, "s")
        } else if ns >= 1_000_000 && ns % 1_000_000 == 0 {
            (ns / 1_000_000, "ms")
        } else if ns >= 1_000 && ns % 1_000 == 0 {
            (ns / 1_000, "us")
        } else {
            (ns, "ns")
        };
        write!(f, "{value}{unit}")
    }
}

/// Accepts a number or a string with a unit, in job files.
struct UnitVisitor<T>(std::marker::PhantomData<T>);

impl<T> Visitor<'_> for UnitVisitor<T>
where
    T: FromStr<Err = UnitError>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or a string with a unit")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
}

macro_rules! unit_serde {
    ($ty:ty) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(UnitVisitor(std::marker::PhantomData))
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(self.0)
            }
        }
    };
}

unit_serde!(Bytes);
unit_serde!(Nanos);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary() {
        assert_eq!("4096".parse(), Ok(Bytes(4096)));
        assert_eq!("4k".parse(), Ok(Bytes(4096)));
        assert_eq!("4K".parse(), Ok(Bytes(4096)));
        assert_eq!("4KiB".parse(), Ok(Bytes(4096)));
        assert_eq!("128kb".parse(), Ok(Bytes(128 * 1024)));
        assert_eq!("1g".parse(), Ok(Bytes(1 << 30)));
        assert_eq!("1.5m".parse(), Ok(Bytes(3 << 19)));
        assert_eq!("512B".parse(), Ok(Bytes(512)));
    }

    #[test]
    fn bad_sizes_say_how_to_write_one() {
        for text in ["", "k", "4x", "-4k", "1.3", "4 kilobytes"] {
            let err = text.parse::<Bytes>().unwrap_err().to_string();
            assert!(err.contains("write e.g."), "{text}: {err}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!("10".parse(), Ok(Nanos::from_secs(10)));
        assert_eq!("10s".parse(), Ok(Nanos::from_secs(10)));
        assert_eq!("500ms".parse(), Ok(Nanos::from_millis(500)));
        assert_eq!("100us".parse(), Ok(Nanos(100_000)));
        assert_eq!("250ns".parse(), Ok(Nanos(250)));
        assert_eq!("2m".parse(), Ok(Nanos::from_secs(120)));
        assert_eq!("1.5s".parse(), Ok(Nanos::from_millis(1500)));
        assert!("10 parsecs".parse::<Nanos>().is_err());
    }

    #[test]
    fn display_round_trips() {
        for text in ["4KiB", "1GiB", "3MiB", "100B"] {
            let b: Bytes = text.parse().unwrap();
            assert_eq!(b.to_string(), text);
        }
        assert_eq!(Bytes(1536).to_string(), "1.50KiB");
        assert_eq!(Nanos::from_millis(1500).to_string(), "1500ms");
        assert_eq!(Nanos(100_000).to_string(), "100us");
    }
}
