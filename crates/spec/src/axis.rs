//! Values that a sweep varies: `--qd 1,2,4`, `--qd 1..512` (doubling), `--read-pct 0..100/10`
//! (steps). `iolab run` takes one value of each; `iolab sweep` runs every combination.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer};
use thiserror::Error;

use crate::units::{Bytes, UnitError};

/// One value, or the list a sweep runs through, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis<T>(pub Vec<T>);

impl<T: Copy> Axis<T> {
    pub fn one(value: T) -> Self {
        Axis(vec![value])
    }

    /// The value when there is exactly one.
    pub fn single(&self) -> Option<T> {
        match self.0.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// A list of values that cannot be read, or that would run another sweep than the one meant.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AxisError {
    #[error("'{0}' is not a whole number")]
    NotWhole(String),
    #[error(transparent)]
    Size(#[from] UnitError),
    #[error("no value given; write one (32) or a list (1,4,16 or 1..64)")]
    Empty,
    #[error("'{0}' has an empty value (two commas in a row, or one at an end); write e.g. 1,4,16")]
    EmptyValue(String),
    #[error("'{0}' has more than {MAX_AXIS_POINTS} values")]
    TooMany(String),
    #[error("'{text}' gives {value} twice; give each value once")]
    Twice { text: String, value: String },
    #[error("bad range '{item}': {fault}; write e.g. 1..512 (doubling) or 0..100/10")]
    BadRange { item: String, fault: RangeFault },
}

/// What is wrong with one range (`A..B`, `A..B/S`) of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RangeFault {
    #[error("the step after '/' is missing")]
    NoStep,
    #[error("it has no start")]
    NoStart,
    #[error("it has no end")]
    NoEnd,
    #[error("it runs downwards")]
    Downwards,
    #[error("the step must be above 0")]
    ZeroStep,
    #[error("doubling needs a start above 0")]
    DoublingFromZero,
    #[error("more than {MAX_AXIS_POINTS} values")]
    TooMany,
}

/// A value a range can be walked over: `A..B` doubles from A up to B, `A..B/S` adds S.
pub trait Steppable: Copy + PartialOrd + fmt::Display {
    fn parse(text: &str) -> Result<Self, AxisError>;
    fn doubled(self) -> Option<Self>;
    fn plus(self, step: Self) -> Option<Self>;
    fn is_zero(self) -> bool;
}

impl Steppable for u32 {
    fn parse(text: &str) -> Result<Self, AxisError> {
        text.parse().map_err(|_| AxisError::NotWhole(text.to_string()))
    }
    fn doubled(self) -> Option<Self> {
        self.checked_mul(2)
    }
    fn plus(self, step: Self) -> Option<Self> {
        self.checked_add(step)
    }
    fn is_zero(self) -> bool {
        self == 0
    }
}

impl Steppable for Bytes {
    fn parse(text: &str) -> Result<Self, AxisError> {
        Ok(text.parse()?)
    }
    fn doubled(self) -> Option<Self> {
        self.0.checked_mul(2).map(Bytes)
    }
    fn plus(self, step: Self) -> Option<Self> {
        self.0.checked_add(step.0).map(Bytes)
    }
    fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// The most points one axis may hold: a typo such as `1..1000000/1` must not plan forever.
const MAX_AXIS_POINTS: usize = 1000;

impl<T: Steppable> FromStr for Axis<T> {
    type Err = AxisError;

    /// Values are separated by commas, with spaces around them allowed (`1, 4, 16`). An empty
    /// value (`1,,2`, `1,2,`), a range without an end (`1..`, `..4`) and a value given twice
    /// are errors: each is a typo that would otherwise run another sweep than the one meant.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.trim().is_empty() {
            return Err(AxisError::Empty);
        }
        let mut values: Vec<T> = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(AxisError::EmptyValue(text.to_string()));
            }
            match item.split_once("..") {
                Some((first, rest)) => values.extend(range::<T>(item, first, rest)?),
                None => values.push(parse_value::<T>(item)?),
            }
            if values.len() > MAX_AXIS_POINTS {
                return Err(AxisError::TooMany(text.to_string()));
            }
        }
        if let Some(twice) = values.iter().enumerate().find_map(|(i, v)| values[..i].contains(v).then_some(v))
        {
            return Err(AxisError::Twice { text: text.to_string(), value: twice.to_string() });
        }
        Ok(Axis(values))
    }
}

fn parse_value<T: Steppable>(text: &str) -> Result<T, AxisError> {
    T::parse(text.trim())
}

/// `first..last` (doubling) or `first..last/step`.
fn range<T: Steppable>(item: &str, first: &str, rest: &str) -> Result<Vec<T>, AxisError> {
    let bad = |fault: RangeFault| AxisError::BadRange { item: item.to_string(), fault };
    let (last, step) = match rest.split_once('/') {
        Some((_, step)) if step.trim().is_empty() => return Err(bad(RangeFault::NoStep)),
        Some((last, step)) => (last, Some(parse_value::<T>(step)?)),
        None => (rest, None),
    };
    if first.trim().is_empty() {
        return Err(bad(RangeFault::NoStart));
    }
    if last.trim().is_empty() {
        return Err(bad(RangeFault::NoEnd));
    }
    let (first, last) = (parse_value::<T>(first)?, parse_value::<T>(last)?);
    if first > last {
        return Err(bad(RangeFault::Downwards));
    }
    let next = |v: T| match step {
        Some(step) if step.is_zero() => None,
        Some(step) => v.plus(step),
        None => v.doubled(),
    };
    if next(first).is_none_or(|n| n <= first) {
        // `4..4` is one value; only a range that would go further needs a way to get there.
        if first == last {
            return Ok(vec![first]);
        }
        return Err(bad(if step.is_some() { RangeFault::ZeroStep } else { RangeFault::DoublingFromZero }));
    }
    let mut values = vec![first];
    while let Some(v) = next(*values.last().unwrap_or(&first)).filter(|v| *v <= last) {
        values.push(v);
        if values.len() > MAX_AXIS_POINTS {
            return Err(bad(RangeFault::TooMany));
        }
    }
    Ok(values)
}

impl<T: fmt::Display> fmt::Display for Axis<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// Job files write `qd = 32`, `qd = "1..64"`, `qd = [1, 4, 16]` or `bs = ["4k", "64k"]`.
impl<'de, T: Steppable> Deserialize<'de> for Axis<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Item {
            Number(u64),
            Text(String),
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(Item),
            Many(Vec<Item>),
        }
        let text = |item: Item| match item {
            Item::Number(n) => n.to_string(),
            Item::Text(t) => t,
        };
        let joined = match Raw::deserialize(d)? {
            Raw::One(item) => text(item),
            Raw::Many(items) if items.is_empty() => {
                return Err(serde::de::Error::custom(
                    "[] is an empty list; give at least one value, or leave the key out for the default",
                ))
            }
            Raw::Many(items) => items.into_iter().map(text).collect::<Vec<_>>().join(","),
        };
        joined.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qd(text: &str) -> Result<Vec<u32>, AxisError> {
        text.parse::<Axis<u32>>().map(|a| a.0)
    }

    #[test]
    fn lists_ranges_and_steps() {
        assert_eq!(qd("32"), Ok(vec![32]));
        assert_eq!(qd("1,2,4"), Ok(vec![1, 2, 4]));
        assert_eq!(qd("1..16"), Ok(vec![1, 2, 4, 8, 16]));
        assert_eq!(qd("1..20"), Ok(vec![1, 2, 4, 8, 16]));
        assert_eq!(qd("0..100/25"), Ok(vec![0, 25, 50, 75, 100]));
        assert_eq!(qd("1..4,32"), Ok(vec![1, 2, 4, 32]));
        assert_eq!(qd(" 1 , 4 "), Ok(vec![1, 4]));
        assert_eq!(qd("4..4"), Ok(vec![4]));
        assert_eq!(qd("0..0"), Ok(vec![0]));
        let bs: Axis<Bytes> = "4k..16k".parse().expect("bs range");
        assert_eq!(bs.0, vec![Bytes(4096), Bytes(8192), Bytes(16384)]);
    }

    #[test]
    fn bad_axes_say_why() {
        for (text, expected) in [
            ("0..8", "doubling needs a start above 0"),
            ("8..1", "runs downwards"),
            ("0..10/0", "step must be above 0"),
            ("1..100000000/1", "more than 1000"),
            ("", "no value"),
            ("1,x", "x"),
            ("1..4/", "step after '/' is missing"),
        ] {
            let error = qd(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn qd_list_with_empty_value_is_refused() {
        for (text, expected) in [
            ("1,,2", "'1,,2' has an empty value"),
            ("1,2,", "has an empty value"),
            (",1", "has an empty value"),
            ("1..", "bad range '1..': it has no end"),
            ("..4", "bad range '..4': it has no start"),
            ("1,2,1", "gives 1 twice"),
            ("1..4,4", "gives 4 twice"),
            ("  ", "no value"),
        ] {
            let error = qd(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn job_files_take_numbers_strings_and_arrays() {
        #[derive(Deserialize)]
        struct T {
            qd: Axis<u32>,
            bs: Axis<Bytes>,
        }
        let t: T = toml::from_str("qd = [1, 4]\nbs = \"4k\"").expect("toml");
        assert_eq!((t.qd.0, t.bs.0), (vec![1, 4], vec![Bytes(4096)]));
        let t: T = toml::from_str("qd = \"1..4\"\nbs = [\"4k\", 8192]").expect("toml");
        assert_eq!((t.qd.0, t.bs.0), (vec![1, 2, 4], vec![Bytes(4096), Bytes(8192)]));
        let empty = toml::from_str::<T>("qd = []\nbs = 4096").map(|_| ()).expect_err("empty list");
        assert!(empty.message().contains("empty list"), "{empty}");
    }
}
