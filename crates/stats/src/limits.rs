//! The limits the machine's configuration puts on a job, as read over its window: the CPUs the
//! process may run on (its affinity mask) and the CPU quota of its cgroup or of a parent
//! (cgroup v1 `cpu.cfs_quota_us`, v2 `cpu.max`) with how often it throttled the job. These are
//! limits no device sets: a verdict that does not read them blames the device or asks for more
//! load (issue 30). The texts the kernel writes are parsed here; reading them is the runner's.

use serde::{Deserialize, Serialize};

/// What the configuration allowed the job, and what could not be read (said, never fatal).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfiguredLimits {
    pub affinity: Option<Affinity>,
    /// The tightest CPU quota on the path from the root to iolab's cgroup, if any.
    pub cpu_quota: Option<CpuQuota>,
    /// The I/O throttles on the path from the root to iolab's cgroup, the tightest per device
    /// and kind (v1 `blkio.throttle.*_device`, v2 `io.max`).
    pub io_throttles: Vec<IoThrottle>,
    /// The tightest memory limit on the same path (v1 `memory.limit_in_bytes`, v2 `memory.max`
    /// and `memory.high`): the page cache a buffered job can use lives under it.
    pub memory: Option<MemoryLimit>,
    /// Limits that could not be read: "cpu.stat of /sys/fs/cgroup/cpu/job: Permission denied".
    pub unread: Vec<String>,
}

/// The CPUs the process may run on (`sched_getaffinity`), against the machine's online ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Affinity {
    pub allowed: Vec<u32>,
    pub online: u32,
    /// The cpuset cgroup that narrows the CPUs too, where one does: the mask then comes from
    /// the cgroup's configuration, not only from taskset or the program that started iolab.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<Cpuset>,
}

/// A cpuset cgroup's CPUs: v1 `cpuset.effective_cpus`, v2 `cpuset.cpus.effective`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpuset {
    pub cgroup: String,
    pub cpus: Vec<u32>,
}

impl Affinity {
    /// The mask leaves out some of the machine's CPUs.
    pub fn narrowed(&self) -> bool {
        (self.allowed.len() as u32) < self.online
    }

    /// "its affinity mask" or "the cpuset of cgroup /x (CPU 0)": where the narrowing comes from.
    pub fn source_words(&self) -> String {
        match &self.cpuset {
            Some(cpuset) => {
                let cpus: Vec<String> = cpuset.cpus.iter().map(u32::to_string).collect();
                format!(
                    "its affinity mask, set by the cpuset of cgroup {} (CPU {})",
                    cpuset.cgroup,
                    cpus.join(",")
                )
            }
            None => "its affinity mask".into(),
        }
    }
}

/// A cgroup's memory limit: the hard one (`memory.max`, v1 `memory.limit_in_bytes`) and the
/// point where reclaim throttles it (`memory.high`, v2 only), the tightest of each on the path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryLimit {
    /// The cgroup that sets the tighter of the two.
    pub cgroup: String,
    pub max_bytes: Option<u64>,
    pub high_bytes: Option<u64>,
    /// Over the window, in that cgroup and those below it: the bytes of file pages read again
    /// after the cgroup's reclaim had evicted them (workingset refaults), which a cache not held
    /// to the limit would have kept. `None` where the kernel does not count them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refault_bytes: Option<u64>,
    /// Over the window, the times the cgroup's usage reached its limit (v1 `memory.failcnt`, v2
    /// `memory.events` max and high).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_hits: Option<u64>,
    /// The machine's memory (/proc/meminfo `MemTotal`): a region larger than it misses in a
    /// page cache with no limit too, so the limit's refaults are not all the limit's doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_bytes: Option<u64>,
}

impl MemoryLimit {
    /// The lower of the two limits.
    pub fn tightest_bytes(&self) -> Option<u64> {
        match (self.max_bytes, self.high_bytes) {
            (Some(max), Some(high)) => Some(max.min(high)),
            (max, high) => max.or(high),
        }
    }
}

/// A memory limit file's value: bytes, or `None` for no limit ("max" in v2; v1 writes a number
/// near 2^63, rounded to its page size, for none).
pub fn parse_memory_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    text.parse::<u64>().ok().filter(|&bytes| bytes < NO_MEMORY_LIMIT_BYTES)
}

/// A memory cgroup's counters at one instant: file pages refaulted, and times the limit was hit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryCounters {
    pub refault_pages: Option<u64>,
    pub limit_hits: Option<u64>,
}

impl MemoryCounters {
    /// The counters from a cgroup's `memory.stat` and, for v1, `memory.failcnt`, for v2
    /// `memory.events`. v1's hierarchical figures are the `total_` lines; v2's are every line.
    /// Kernels before 5.9 write `workingset_refault` alone (file pages then); some v1 kernels
    /// write no refault line at all, and the figure is then unread.
    pub fn parse(stat: &str, hits: Option<&str>, v2: bool) -> MemoryCounters {
        let value = |name: &str| {
            stat.lines().find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == name).then(|| value.trim().parse::<u64>().ok()).flatten()
            })
        };
        let prefix = if v2 { "" } else { "total_" };
        let refault_pages = value(&format!("{prefix}workingset_refault_file"))
            .or_else(|| value(&format!("{prefix}workingset_refault")));
        let limit_hits = hits.and_then(|text| {
            if v2 {
                let event =
                    |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok());
                let (high, max) = (event("high "), event("max "));
                high.or(max).map(|_| high.unwrap_or(0) + max.unwrap_or(0))
            } else {
                text.trim().parse().ok()
            }
        });
        MemoryCounters { refault_pages, limit_hits }
    }
}

/// At or above this (2^62 bytes, 4 EiB), v1's limit means none: it writes 9223372036854771712.
const NO_MEMORY_LIMIT_BYTES: u64 = 1 << 62;

/// A cgroup's CPU quota and its throttling over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuQuota {
    /// The cgroup, as /proc/self/cgroup names it ("/ci/job-7"); "/" is the root.
    pub cgroup: String,
    pub quota_us: u64,
    pub period_us: u64,
    /// Enforcement periods in the window, and those in which the cgroup ran out of quota.
    pub periods: u64,
    pub throttled_periods: u64,
    /// Time the cgroup's threads were held back for want of quota in the window.
    pub throttled_s: f64,
}

impl CpuQuota {
    /// The quota in cores: 50000 us per 100000 us is half a core.
    pub fn cores(&self) -> f64 {
        if self.period_us == 0 {
            0.0
        } else {
            self.quota_us as f64 / self.period_us as f64
        }
    }

    /// The share of the window's enforcement periods in which the quota ran out, 0..100.
    pub fn throttled_pct(&self) -> f64 {
        if self.periods == 0 {
            0.0
        } else {
            100.0 * self.throttled_periods as f64 / self.periods as f64
        }
    }
}

/// A cgroup's cap on one device's reads or writes, in I/Os or bytes per second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoThrottle {
    pub cgroup: String,
    /// The device as its major:minor ("7:3"), and its kernel name where it resolved ("loop3").
    pub devnum: String,
    pub device: Option<String>,
    /// "read" or "write".
    pub op: String,
    /// "iops" or "bps".
    pub unit: String,
    pub limit: u64,
    /// Where it was set: "blkio.throttle.read_iops_device", "io.max riops".
    pub source: String,
    /// What the throttling cgroup and those below it did of this kind (I/Os or bytes) on the
    /// device over the window (v2 `io.stat`; v1 `blkio.throttle.io_serviced_recursive` and
    /// `io_service_bytes_recursive`): the cap is on these, not on the device's other users.
    /// `None` where the counters could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<u64>,
}

/// A cgroup's I/O on one device so far, as its counters say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl Served {
    /// The counter a throttle of `op` ("read", "write") in `unit` ("iops", "bps") caps.
    pub fn of(&self, op: &str, unit: &str) -> u64 {
        match (op, unit) {
            ("read", "iops") => self.read_ios,
            ("write", "iops") => self.write_ios,
            ("read", _) => self.read_bytes,
            _ => self.write_bytes,
        }
    }
}

/// Each device's counters of a v2 `io.stat` ("7:3 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0
/// dios=0").
pub fn parse_io_stat(text: &str) -> Vec<(String, Served)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let devnum = words.next()?;
            let mut served = Served::default();
            for (key, value) in words.filter_map(|w| w.split_once('=')) {
                let Ok(value) = value.parse() else { continue };
                match key {
                    "rbytes" => served.read_bytes = value,
                    "wbytes" => served.write_bytes = value,
                    "rios" => served.read_ios = value,
                    "wios" => served.write_ios = value,
                    _ => {}
                }
            }
            Some((devnum.to_string(), served))
        })
        .collect()
}

/// Each device's counters of v1's `blkio.throttle.io_serviced` (`ios`) and
/// `io_service_bytes` (`bytes`): "7:3 Read 12", "7:3 Write 0", ..., and a last "Total 12".
pub fn parse_blkio_served(ios: &str, bytes: &str) -> Vec<(String, Served)> {
    let mut devices: Vec<(String, Served)> = Vec::new();
    for (text, in_bytes) in [(ios, false), (bytes, true)] {
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(devnum), Some(op), Some(value)) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else { continue };
            let at = match devices.iter().position(|(d, _)| d == devnum) {
                Some(at) => at,
                None => {
                    devices.push((devnum.to_string(), Served::default()));
                    devices.len() - 1
                }
            };
            let served = &mut devices[at].1;
            match (op, in_bytes) {
                ("Read", false) => served.read_ios = value,
                ("Write", false) => served.write_ios = value,
                ("Read", true) => served.read_bytes = value,
                ("Write", true) => served.write_bytes = value,
                _ => {}
            }
        }
    }
    devices
}

/// One throttle line: (devnum, op, unit, limit, source).
pub type ThrottleLine = (String, &'static str, &'static str, u64, String);

/// The lines of a v1 `blkio.throttle.{read,write}_{iops,bps}_device` file ("7:3 2000").
pub fn parse_blkio_throttle(text: &str, op: &'static str, unit: &'static str) -> Vec<ThrottleLine> {
    let source = format!("blkio.throttle.{op}_{unit}_device");
    text.lines()
        .filter_map(|line| {
            let (devnum, limit) = line.split_once(' ')?;
            let limit = limit.trim().parse().ok()?;
            Some((devnum.to_string(), op, unit, limit, source.clone()))
        })
        .collect()
}

/// The caps of a v2 `io.max` ("7:3 rbps=max wbps=max riops=2000 wiops=max"); `max` is none.
pub fn parse_io_max(text: &str) -> Vec<ThrottleLine> {
    let mut caps = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(devnum) = words.next() else { continue };
        for word in words {
            let Some((key, value)) = word.split_once('=') else { continue };
            let (op, unit) = match key {
                "rbps" => ("read", "bps"),
                "wbps" => ("write", "bps"),
                "riops" => ("read", "iops"),
                "wiops" => ("write", "iops"),
                _ => continue,
            };
            if let Ok(limit) = value.parse() {
                caps.push((devnum.to_string(), op, unit, limit, format!("io.max {key}")));
            }
        }
    }
    caps
}

/// Throttling counters of a cgroup's `cpu.stat`: periods, throttled periods, throttled time (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub periods: u64,
    pub throttled_periods: u64,
    pub throttled_ns: u64,
}

impl CpuStat {
    /// Parses `cpu.stat`: v1 says `nr_periods`, `nr_throttled`, `throttled_time` (ns); v2 the
    /// same counts and `throttled_usec`. `None` without the counts.
    pub fn parse(text: &str) -> Option<CpuStat> {
        let value = |key: &str| {
            text.lines().find_map(|line| {
                let (name, value) = line.split_once(' ')?;
                (name == key).then(|| value.trim().parse::<u64>().ok()).flatten()
            })
        };
        let throttled_ns = value("throttled_time").or_else(|| value("throttled_usec").map(|us| us * 1000))?;
        Some(CpuStat {
            periods: value("nr_periods")?,
            throttled_periods: value("nr_throttled")?,
            throttled_ns,
        })
    }

    /// The counters' growth from `start` to `self`.
    pub fn since(&self, start: &CpuStat) -> CpuStat {
        CpuStat {
            periods: self.periods.saturating_sub(start.periods),
            throttled_periods: self.throttled_periods.saturating_sub(start.throttled_periods),
            throttled_ns: self.throttled_ns.saturating_sub(start.throttled_ns),
        }
    }
}

/// A quota as (quota_us, period_us), `None` for no quota: v2's `cpu.max` ("max 100000",
/// "50000 100000"), or v1's `cpu.cfs_quota_us` (-1: none) with `cpu.cfs_period_us`.
pub fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut words = text.split_whitespace();
    let quota = words.next()?;
    let period = words.next()?.parse().ok()?;
    (quota != "max").then(|| quota.parse().ok()).flatten().map(|q| (q, period))
}

pub fn parse_cfs_quota(quota: &str, period: &str) -> Option<(u64, u64)> {
    let quota: i64 = quota.trim().parse().ok()?;
    let period: u64 = period.trim().parse().ok()?;
    (quota > 0).then_some((quota as u64, period))
}

/// The cgroup of a controller in /proc/self/cgroup ("4:cpu,cpuacct:/ci/job"): v1's line that
/// lists `controller`, or with `None`, v2's "0::/path".
pub fn cgroup_path(proc_self_cgroup: &str, controller: Option<&str>) -> Option<String> {
    proc_self_cgroup.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let matches = match controller {
            Some(wanted) => controllers.split(',').any(|c| c == wanted),
            None => controllers.is_empty(),
        };
        matches.then(|| path.to_string())
    })
}

/// Where a cgroup hierarchy is mounted, from /proc/self/mountinfo: v1's mount whose super
/// options list `controller`, or with `None`, the cgroup2 mount.
pub fn cgroup_mount(mountinfo: &str, controller: Option<&str>) -> Option<String> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount_point = left.split_whitespace().nth(4)?;
        let mut right = right.split_whitespace();
        let (fstype, _source, options) = (right.next()?, right.next()?, right.next().unwrap_or(""));
        let matches = match controller {
            Some(wanted) => fstype == "cgroup" && options.split(',').any(|o| o == wanted),
            None => fstype == "cgroup2",
        };
        matches.then(|| unescape_octal(mount_point))
    })
}

/// mountinfo writes a space as `\040` (and tab, newline, backslash likewise).
fn unescape_octal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4).and_then(|d| u8::from_str_radix(d, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A CPU list as the kernel writes it ("0-3,6,8-9"); `None` if it is not one.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((from, to)) => cpus.extend(from.parse::<u32>().ok()?..=to.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
