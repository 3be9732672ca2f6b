//! Option values that are more than a number: access patterns, engines, block-size mixes,
//! I/O limits and latency thresholds. Each parses from the same text in flags and job files.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

use crate::units::{Bytes, Nanos, UnitError};

/// An option value of this file that cannot be read; each message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValueError {
    #[error("'{0}' is not an access pattern; use read, write, randread, randwrite, randrw or rw")]
    NotAnAccessPattern(String),
    #[error("'{0}' is not an engine; use uring, aio, psync or null")]
    NotAnEngine(String),
    #[error("'{0}' is not an arrival process; use uniform or poisson")]
    NotAnArrival(String),
    #[error("bad block-size split '{text}': {fault}; write e.g. 4k/70,64k/30")]
    BsSplit { text: String, fault: SplitFault },
    #[error("'{0}' is not an I/O count; write e.g. 100000ios or 250kios")]
    NotAnIoCount(String),
    #[error("'{0}' is not an I/O limit; write a size (10g) or a count (100000ios)")]
    NotAnIoLimit(String),
    #[error("no threshold given; write e.g. 500us,1ms, or leave it out")]
    NoThreshold,
    #[error("'{0}' has an empty threshold (two commas in a row, or one at an end); write e.g. 500us,1ms")]
    EmptyThreshold(String),
    #[error(transparent)]
    Threshold(#[from] UnitError),
    #[error("[] is an empty list; give at least one threshold, or leave the key out")]
    NoThresholds,
    #[error("the threshold {0} is given twice; give each once")]
    ThresholdTwice(Nanos),
    #[error("'{0}' is not a ring setup; use auto, defer-taskrun, coop-taskrun or plain")]
    NotARingSetup(String),
    #[error("'{0}' is not a CPU list; write e.g. 0,1 or 0-3,8")]
    NotACpuList(String),
    #[error("'{0}' has an empty entry (two commas in a row, or one at an end); write e.g. 0,1 or 0-3,8")]
    EmptyCpuEntry(String),
    #[error("'{text}' lists CPU {cpu} twice; give each CPU once")]
    CpuTwice { text: String, cpu: u32 },
}

/// What is wrong with a block-size split (`--bs-split`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SplitFault {
    #[error("an entry is empty (two commas in a row, or one at an end)")]
    EmptyEntry,
    #[error("each entry needs SIZE/WEIGHT")]
    NoWeight,
    #[error(transparent)]
    Size(#[from] UnitError),
    #[error("a weight is a whole number")]
    WeightNotWhole,
    #[error("a weight is at most 1000000")]
    WeightTooLarge,
    #[error("{0} is listed twice; give each size once, with its whole weight")]
    SizeTwice(Bytes),
    #[error("no entry has a weight above 0")]
    NoWeightAboveZero,
}

/// fio-style shorthand for a read share and a random share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    RandRw,
    Rw,
}

impl Rw {
    /// (read %, random %) in the Iometer sense.
    pub fn shares(self) -> (u32, u32) {
        match self {
            Rw::Read => (100, 0),
            Rw::Write => (0, 0),
            Rw::RandRead => (100, 100),
            Rw::RandWrite => (0, 100),
            Rw::RandRw => (50, 100),
            Rw::Rw => (50, 0),
        }
    }
}

impl FromStr for Rw {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "randrw" => Rw::RandRw,
            "rw" | "readwrite" => Rw::Rw,
            _ => return Err(ValueError::NotAnAccessPattern(text.to_string())),
        })
    }
}

/// Which I/O interface issues the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// io_uring: one ring per worker, QD requests in flight.
    Uring,
    /// pread/pwrite: one thread per outstanding I/O.
    Psync,
    /// Linux native AIO (io_setup/io_submit/io_getevents): asynchronous only with O_DIRECT.
    Aio,
    /// No I/O at all: measures iolab's own per-I/O cost.
    Null,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Uring => "uring",
            EngineKind::Psync => "psync",
            EngineKind::Aio => "aio",
            EngineKind::Null => "null",
        }
    }

    /// How many I/Os one lane (thread) of this engine can hold in flight. A synchronous engine
    /// holds one, so a queue depth of N needs N lanes.
    pub fn qd_per_lane(self, qd: u32) -> u32 {
        match self {
            EngineKind::Psync => 1,
            EngineKind::Uring | EngineKind::Aio | EngineKind::Null => qd,
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "uring" | "io_uring" => EngineKind::Uring,
            "psync" => EngineKind::Psync,
            "aio" | "libaio" => EngineKind::Aio,
            "null" => EngineKind::Null,
            _ => return Err(ValueError::NotAnEngine(text.to_string())),
        })
    }
}

/// How the I/Os of a rate-limited group (`--rate-iops`) are spread in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced: the group's n-th I/O is due n / rate after the start.
    #[default]
    Uniform,
    /// A Poisson process: exponential gaps of mean 1 / rate, as independent clients arrive.
    Poisson,
}

impl Arrival {
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
        }
    }
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Arrival {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "uniform" => Arrival::Uniform,
            "poisson" => Arrival::Poisson,
            _ => return Err(ValueError::NotAnArrival(text.to_string())),
        })
    }
}

/// One block size of a mix and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BsWeight {
    pub bs: Bytes,
    pub weight: u32,
}

/// A block-size mix such as `4k/70,64k/30`. Weights are relative; they need not add to 100.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsSplit(pub Vec<BsWeight>);

impl FromStr for BsSplit {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |fault: SplitFault| ValueError::BsSplit { text: text.to_string(), fault };
        let mut parts: Vec<BsWeight> = Vec::new();
        let mut sizes = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(bad(SplitFault::EmptyEntry));
            }
            let (bs, weight) = item.split_once('/').ok_or_else(|| bad(SplitFault::NoWeight))?;
            let bs: Bytes = bs.parse().map_err(|e| bad(SplitFault::Size(e)))?;
            let weight: u32 =
                weight.trim().trim_end_matches('%').parse().map_err(|_| bad(SplitFault::WeightNotWhole))?;
            if weight > 1_000_000 {
                return Err(bad(SplitFault::WeightTooLarge));
            }
            if sizes.contains(&bs) {
                return Err(bad(SplitFault::SizeTwice(bs)));
            }
            sizes.push(bs);
            // A weight of 0 is accepted and leaves the size out: a mix can be varied by hand
            // without deleting entries.
            if weight > 0 {
                parts.push(BsWeight { bs, weight });
            }
        }
        if parts.is_empty() {
            return Err(bad(SplitFault::NoWeightAboveZero));
        }
        Ok(BsSplit(parts))
    }
}

/// Stop a job after this much I/O in the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IoLimit {
    Bytes(Bytes),
    Ios(u64),
}

impl FromStr for IoLimit {
    type Err = ValueError;

    /// `10g` is bytes; `250000ios` or `250kios` is a count of I/Os (k = 1000 for counts).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.trim().to_ascii_lowercase();
        if let Some(count) = lower.strip_suffix("ios").or_else(|| lower.strip_suffix("io")) {
            let count = count.trim();
            let (digits, scale) = match count.chars().last() {
                Some('k') => (&count[..count.len() - 1], 1e3),
                Some('m') => (&count[..count.len() - 1], 1e6),
                Some('g') => (&count[..count.len() - 1], 1e9),
                _ => (count, 1.0),
            };
            let bad = || ValueError::NotAnIoCount(text.to_string());
            // Whole counts are read exactly (an f64 would round counts above 2^53); a scaled one
            // may have decimals (`2.5kios`) but must come to a whole number.
            let n = match digits.parse::<u64>() {
                Ok(n) if scale == 1.0 => n,
                _ => {
                    let n: f64 = digits.parse().map_err(|_| bad())?;
                    let n = n * scale;
                    if !n.is_finite() || n < 0.0 || n.fract() != 0.0 || n >= 2f64.powi(63) {
                        return Err(bad());
                    }
                    n as u64
                }
            };
            return Ok(IoLimit::Ios(n));
        }
        text.parse::<Bytes>().map(IoLimit::Bytes).map_err(|_| ValueError::NotAnIoLimit(text.to_string()))
    }
}

/// Latency thresholds such as `500us,1ms`: the report gives the share of I/Os within each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NanosList(pub Vec<Nanos>);

impl FromStr for NanosList {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.trim().is_empty() {
            return Err(ValueError::NoThreshold);
        }
        let mut list: Vec<Nanos> = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(ValueError::EmptyThreshold(text.to_string()));
            }
            list.push(item.parse()?);
        }
        NanosList::checked(list)
    }
}

impl NanosList {
    /// Refuses an empty list and a threshold given twice.
    fn checked(list: Vec<Nanos>) -> Result<Self, ValueError> {
        if list.is_empty() {
            return Err(ValueError::NoThresholds);
        }
        if let Some(twice) = list.iter().enumerate().find_map(|(i, t)| list[..i].contains(t).then_some(t)) {
            return Err(ValueError::ThresholdTwice(*twice));
        }
        Ok(NanosList(list))
    }
}

/// How an io_uring is set up. `Auto` probes the kernel for the cheapest mode it accepts; the
/// others insist on one mode and fail clearly where the kernel refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RingSetup {
    /// Single issuer with deferred task work (6.1+), else cooperative task work (5.19+), else plain.
    #[default]
    Auto,
    /// IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN: completions run only when the
    /// worker asks for them.
    DeferTaskrun,
    /// IORING_SETUP_COOP_TASKRUN: no inter-processor interrupt to run completions.
    CoopTaskrun,
    /// No setup flags, as an older kernel or a default fio ring.
    Plain,
}

impl RingSetup {
    pub fn name(self) -> &'static str {
        match self {
            RingSetup::Auto => "auto",
            RingSetup::DeferTaskrun => "defer-taskrun",
            RingSetup::CoopTaskrun => "coop-taskrun",
            RingSetup::Plain => "plain",
        }
    }
}

impl FromStr for RingSetup {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text.to_ascii_lowercase().replace('_', "-").as_str() {
            "auto" => RingSetup::Auto,
            "defer-taskrun" | "defer" => RingSetup::DeferTaskrun,
            "coop-taskrun" | "coop" => RingSetup::CoopTaskrun,
            "plain" | "none" => RingSetup::Plain,
            _ => return Err(ValueError::NotARingSetup(text.to_string())),
        })
    }
}

/// CPUs to pin worker threads to, such as `0,1` or `0-3,8`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CpuList(pub Vec<u32>);

impl FromStr for CpuList {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ValueError::NotACpuList(text.to_string());
        let mut cpus: Vec<u32> = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(ValueError::EmptyCpuEntry(text.to_string()));
            }
            let (first, last) = match item.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
                None => (item.parse::<u32>(), item.parse::<u32>()),
            };
            let (first, last) = (first.map_err(|_| bad())?, last.map_err(|_| bad())?);
            if first > last || last >= 4096 {
                return Err(bad());
            }
            if let Some(twice) = (first..=last).find(|cpu| cpus.contains(cpu)) {
                return Err(ValueError::CpuTwice { text: text.to_string(), cpu: twice });
            }
            cpus.extend(first..=last);
        }
        if cpus.is_empty() {
            return Err(bad());
        }
        Ok(CpuList(cpus))
    }
}

/// One path or a list of paths: `target = "a"` or `target = ["a", "b"]` in job files.
pub(crate) fn one_or_many_paths<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<std::path::PathBuf>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        One(std::path::PathBuf),
        Many(Vec<std::path::PathBuf>),
    }
    let paths = match Raw::deserialize(d)? {
        Raw::One(path) => vec![path],
        Raw::Many(paths) if paths.is_empty() => return Err(serde::de::Error::custom(
            "target = [] names no target; give at least one target, or leave the key out for a scratch file",
        )),
        Raw::Many(paths) => paths,
    };
    if paths.iter().any(|p| p.as_os_str().is_empty()) {
        return Err(serde::de::Error::custom(
            "a target is \"\" (empty); give its path, or leave the key out for a scratch file",
        ));
    }
    Ok(Some(paths))
}

/// `[[job]]` and `[[group]]` entries: `job = []` would silently mean a file without jobs.
pub(crate) fn entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<crate::Options>, D::Error> {
    let entries = Vec::<crate::Options>::deserialize(d)?;
    if entries.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty list of jobs or groups; write [[job]] or [[job.group]] tables, or leave the key out",
        ));
    }
    Ok(entries)
}

/// A seed: any u64. TOML integers end at i64::MAX, so a larger seed is written as a string of
/// digits (`seed = "18446744073709551615"`); a fleet job carries every seed a run can have.
pub(crate) fn seed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(u64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Number(n) => Ok(Some(n)),
        Raw::Text(text) => text.trim().parse().map(Some).map_err(|_| {
            serde::de::Error::custom(format!(
                "'{text}' is not a seed; write a whole number from 0 to 18446744073709551615"
            ))
        }),
    }
}

/// Job files may write these values as strings (or, for lists, as arrays of strings).
macro_rules! deserialize_from_str {
    ($ty:ty) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

deserialize_from_str!(Rw);
deserialize_from_str!(EngineKind);
deserialize_from_str!(BsSplit);
deserialize_from_str!(RingSetup);
deserialize_from_str!(CpuList);
deserialize_from_str!(Arrival);

impl<'de> Deserialize<'de> for IoLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Bytes(u64),
        }
        match Raw::deserialize(d)? {
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
            Raw::Bytes(n) => Ok(IoLimit::Bytes(Bytes(n))),
        }
    }
}

impl<'de> Deserialize<'de> for NanosList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            List(Vec<Nanos>),
        }
        match Raw::deserialize(d)? {
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
            Raw::List(list) => NanosList::checked(list).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
#[path = "values_tests.rs"]
mod tests;
