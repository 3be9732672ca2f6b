//! The part of a fleet point's stored result (`JobResult.fleet`, docs/results-schema.md) the
//! Hosts panel reads. Like the study mirrors, every field has a default, so a result written by
//! an older or newer iolab still renders what it has; and host names come from the network, so
//! everything here is text to escape, never markup.

use iolab_store::Point;
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Fleet {
    pub hosts: Vec<Host>,
    pub start_skew_ns: u64,
}

impl Fleet {
    /// The fleet breakdown of `point`, if it ran across a fleet (and the breakdown reads).
    pub fn of(point: &Point) -> Option<Fleet> {
        let fleet = point.result.get("fleet").filter(|f| f.is_object())?;
        serde_json::from_value(fleet.clone()).ok().filter(|f: &Fleet| !f.hosts.is_empty())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Host {
    pub host: String,
    pub hostname: String,
    /// "ok" or "failed".
    pub status: String,
    pub failure: Option<String>,
    pub start_offset_ns: u64,
    pub total: Total,
    pub series: Vec<Interval>,
    pub cpu: Cpu,
    pub verdict: Option<HostVerdict>,
    pub link_mb_s: Option<f64>,
}

impl Host {
    pub fn failed(&self) -> bool {
        self.status == "failed"
    }

    /// "2 h2 (node-b)": as the table numbers it and the charts name it.
    pub fn label(&self, index: usize) -> String {
        if self.hostname.is_empty() || self.hostname == self.host {
            format!("{} {}", index + 1, self.host)
        } else {
            format!("{} {} ({})", index + 1, self.host, self.hostname)
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Total {
    pub iops: f64,
    pub mb_s: f64,
    pub latency: Option<Latency>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Latency {
    pub mean_ns: f64,
    pub percentiles: Vec<Percentile>,
}

impl Latency {
    pub fn at(&self, p: f64) -> Option<f64> {
        self.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9).map(|x| x.ns)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Percentile {
    pub p: f64,
    pub ns: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Interval {
    pub t_s: f64,
    pub duration_s: f64,
    pub iops: f64,
    pub p99_ns: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Cpu {
    pub us_per_io: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HostVerdict {
    /// As serialized: "device", "submitting_cpu".
    pub cause: String,
    pub summary: String,
}
