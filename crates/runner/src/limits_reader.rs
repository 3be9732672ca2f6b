//! Reads the limits the machine's configuration puts on this process, at the start and the end
//! of a job's window: its affinity mask, the tightest CPU quota on the path from the root
//! cgroup to its own (v1 `cpu` controller or v2), with that cgroup's throttling counters, and
//! the I/O throttles on the same path (v1 `blkio`, or v2 `io.max`) with what each throttling
//! cgroup did on its device over the window, and the tightest memory limit there with its
//! cgroup's refaults and limit hits over the window. The
//! parsing and the figures are `iolab_stats::limits`; what cannot be read is said, never fatal.

use std::path::{Path, PathBuf};

use iolab_stats::limits::{
    cgroup_mount, cgroup_path, parse_blkio_served, parse_blkio_throttle, parse_cfs_quota, parse_cpu_list,
    parse_cpu_max, parse_io_max, parse_io_stat, parse_memory_limit, Affinity, ConfiguredLimits, CpuQuota,
    CpuStat, Cpuset, IoThrottle, MemoryCounters, MemoryLimit, Served,
};
use iolab_stats::proc_text::meminfo_bytes;
use thiserror::Error;

use crate::kernel_file::read_parsed;

/// A limit that could not be read: said among the limits' unread notes, never fatal.
#[derive(Debug, Error)]
enum UnreadLimit {
    #[error("the affinity mask (sched_getaffinity): {0}")]
    Affinity(#[source] nix::Error),
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
}

/// The quota found at the window's start: where it is, and its counters then.
pub struct LimitsStart {
    quota: Option<QuotaDir>,
    start: Option<CpuStat>,
    /// The I/O counters of each throttling cgroup at the start.
    served: ServedAt,
    /// The tightest memory limit, with its counters at the start.
    memory: Option<(MemoryCgroup, MemoryCounters)>,
    unread: Vec<String>,
}

struct QuotaDir {
    cgroup: String,
    dir: PathBuf,
    quota_us: u64,
    period_us: u64,
}

impl LimitsStart {
    pub fn read() -> LimitsStart {
        let mut unread = Vec::new();
        let quota = match tightest_quota() {
            Ok(quota) => quota,
            Err(why) => {
                unread.push(why.to_string());
                None
            }
        };
        let start = quota.as_ref().and_then(|q| read_cpu_stat(q, &mut unread));
        // Read again at the end (and said unread then, if it cannot be): here only the
        // counters of the cgroups that throttle.
        let served = io_throttles().map(|t| served_now(&t)).unwrap_or_default();
        let memory = match tightest_memory() {
            Ok(memory) => memory.map(|m| {
                let counters = m.counters();
                (m, counters)
            }),
            Err(why) => {
                unread.push(why.to_string());
                None
            }
        };
        LimitsStart { quota, start, served, memory, unread }
    }

    /// The limits over the window now ending.
    pub fn finish(self) -> ConfiguredLimits {
        let LimitsStart { quota, start, served, memory, mut unread } = self;
        let cpu_quota = quota.map(|q| {
            let grown =
                start.zip(read_cpu_stat(&q, &mut unread)).map(|(s, e)| e.since(&s)).unwrap_or_default();
            CpuQuota {
                cgroup: q.cgroup,
                quota_us: q.quota_us,
                period_us: q.period_us,
                periods: grown.periods,
                throttled_periods: grown.throttled_periods,
                throttled_s: grown.throttled_ns as f64 / 1e9,
            }
        });
        let affinity = affinity().map_err(|why| unread.push(why.to_string())).ok();
        let io_throttles = match io_throttles() {
            Ok(throttles) => {
                let end = served_now(&throttles);
                with_served(throttles, &served, &end)
            }
            Err(why) => {
                unread.push(why.to_string());
                Vec::new()
            }
        };
        let memory = memory.map(|(cgroup, start)| cgroup.over_window(&start));
        ConfiguredLimits { affinity, cpu_quota, io_throttles, memory, unread }
    }
}

fn read_cpu_stat(quota: &QuotaDir, unread: &mut Vec<String>) -> Option<CpuStat> {
    read_parsed(&quota.dir.join("cpu.stat"), "throttling counters", CpuStat::parse, unread)
}

/// The CPUs this process may run on, and the machine's online ones.
fn affinity() -> Result<Affinity, UnreadLimit> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).map_err(UnreadLimit::Affinity)?;
    let allowed = (0..nix::sched::CpuSet::count() as u32)
        .filter(|&cpu| set.is_set(cpu as usize).unwrap_or(false))
        .collect();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| parse_cpu_list(&text))
        .map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            |cpus| cpus.len() as u32,
        );
    let cpuset = cpuset().ok().flatten().filter(|c| (c.cpus.len() as u32) < online);
    Ok(Affinity { allowed, online, cpuset })
}

/// This process's cpuset cgroup and its effective CPUs (v1 `cpuset.effective_cpus`, v2
/// `cpuset.cpus.effective`); none where no cpuset controller holds it.
fn cpuset() -> Result<Option<Cpuset>, UnreadLimit> {
    let Some((mount, cgroup, v2)) = hierarchy("cpuset")? else { return Ok(None) };
    let file = if v2 { "cpuset.cpus.effective" } else { "cpuset.effective_cpus" };
    let dir = levels(&mount, &cgroup).pop().map(|(dir, _)| dir).unwrap_or_else(|| PathBuf::from(&mount));
    let Ok(text) = std::fs::read_to_string(dir.join(file)) else { return Ok(None) };
    Ok(parse_cpu_list(&text).map(|cpus| Cpuset { cgroup, cpus }))
}

/// The hierarchy of `controller` (v1), else v2's, and this process's cgroup in it: (mount,
/// cgroup, v2).
fn hierarchy(controller: &str) -> Result<Option<(String, String, bool)>, UnreadLimit> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| UnreadLimit::File { path: path.to_path_buf(), source })
    };
    let cgroups = read(Path::new("/proc/self/cgroup"))?;
    let mountinfo = read(Path::new("/proc/self/mountinfo"))?;
    Ok(match (cgroup_mount(&mountinfo, Some(controller)), cgroup_path(&cgroups, Some(controller))) {
        (Some(mount), Some(cgroup)) => Some((mount, cgroup, false)),
        _ => cgroup_mount(&mountinfo, None).zip(cgroup_path(&cgroups, None)).map(|(m, c)| (m, c, true)),
    })
}

/// Each directory from the hierarchy's root down to the cgroup, with the cgroup's name there.
fn levels(mount: &str, cgroup: &str) -> Vec<(PathBuf, String)> {
    let mut levels = vec![(PathBuf::from(mount), "/".to_string())];
    let (mut dir, mut path) = (PathBuf::from(mount), String::new());
    for component in cgroup.split('/').filter(|c| !c.is_empty()) {
        dir.push(component);
        path.push('/');
        path.push_str(component);
        levels.push((dir.clone(), path.clone()));
    }
    levels
}

/// A throttle with where its cgroup is (its directory, and whether it is v2).
struct Throttling {
    throttle: IoThrottle,
    dir: PathBuf,
    v2: bool,
}

/// The served counters of each throttling cgroup now, by directory.
type ServedAt = Vec<(PathBuf, Vec<(String, Served)>)>;

fn served_now(throttles: &[Throttling]) -> ServedAt {
    let mut at: ServedAt = Vec::new();
    for t in throttles {
        if !at.iter().any(|(dir, _)| *dir == t.dir) {
            at.push((t.dir.clone(), read_served(&t.dir, t.v2)));
        }
    }
    at
}

/// The counters of the cgroup at `dir` and those below it (v1's `_recursive` files where the
/// kernel has them; its own otherwise); empty where they cannot be read.
fn read_served(dir: &Path, v2: bool) -> Vec<(String, Served)> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    if v2 {
        return read("io.stat").map(|t| parse_io_stat(&t)).unwrap_or_default();
    }
    let pick = |name: &str| read(&format!("{name}_recursive")).or_else(|| read(name));
    match (pick("blkio.throttle.io_serviced"), pick("blkio.throttle.io_service_bytes")) {
        (Some(ios), Some(bytes)) => parse_blkio_served(&ios, &bytes),
        _ => Vec::new(),
    }
}

/// What each throttle's cgroup did of its kind on its device between two readings.
fn with_served(throttles: Vec<Throttling>, start: &ServedAt, end: &ServedAt) -> Vec<IoThrottle> {
    let find = |at: &ServedAt, t: &Throttling| {
        at.iter()
            .find(|(dir, _)| *dir == t.dir)
            .and_then(|(_, devices)| devices.iter().find(|(d, _)| *d == t.throttle.devnum))
            .map(|(_, served)| served.of(&t.throttle.op, &t.throttle.unit))
    };
    throttles
        .into_iter()
        .map(|t| {
            let served = find(start, &t).zip(find(end, &t)).map(|(s, e)| e.saturating_sub(s));
            IoThrottle { served, ..t.throttle }
        })
        .collect()
}

/// The I/O throttles from the root to this process's cgroup, the tightest per device and kind.
fn io_throttles() -> Result<Vec<Throttling>, UnreadLimit> {
    let Some((mount, cgroup, v2)) = hierarchy("blkio")? else { return Ok(Vec::new()) };
    let mut tightest: Vec<Throttling> = Vec::new();
    for (dir, name) in levels(&mount, &cgroup) {
        let lines = if v2 {
            std::fs::read_to_string(dir.join("io.max")).map(|t| parse_io_max(&t)).unwrap_or_default()
        } else {
            [("read", "iops"), ("write", "iops"), ("read", "bps"), ("write", "bps")]
                .iter()
                .flat_map(|&(op, unit)| {
                    let file = dir.join(format!("blkio.throttle.{op}_{unit}_device"));
                    std::fs::read_to_string(file)
                        .map(|t| parse_blkio_throttle(&t, op, unit))
                        .unwrap_or_default()
                })
                .collect()
        };
        for (devnum, op, unit, limit, source) in lines {
            let same = |t: &&mut Throttling| {
                t.throttle.devnum == devnum && t.throttle.op == op && t.throttle.unit == unit
            };
            match tightest.iter_mut().find(same) {
                Some(known) if known.throttle.limit <= limit => {}
                Some(known) => {
                    known.throttle =
                        IoThrottle { cgroup: name.clone(), limit, source, ..known.throttle.clone() };
                    known.dir = dir.clone();
                }
                None => tightest.push(Throttling {
                    throttle: IoThrottle {
                        cgroup: name.clone(),
                        device: device_of(&devnum),
                        devnum,
                        op: op.to_string(),
                        unit: unit.to_string(),
                        limit,
                        source,
                        served: None,
                    },
                    dir: dir.clone(),
                    v2,
                }),
            }
        }
    }
    Ok(tightest)
}

/// The memory cgroup whose limit is the tightest on the path, and where it is.
struct MemoryCgroup {
    limit: MemoryLimit,
    dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    /// Its refault and limit counters now (absent where the kernel does not write them).
    fn counters(&self) -> MemoryCounters {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).ok();
        let hits = read(if self.v2 { "memory.events" } else { "memory.failcnt" });
        MemoryCounters::parse(&read("memory.stat").unwrap_or_default(), hits.as_deref(), self.v2)
    }

    /// The limit with what its counters grew by since `start`.
    fn over_window(self, start: &MemoryCounters) -> MemoryLimit {
        let end = self.counters();
        let page =
            nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok().flatten().unwrap_or(4096) as u64;
        MemoryLimit {
            refault_bytes: start
                .refault_pages
                .zip(end.refault_pages)
                .map(|(s, e)| e.saturating_sub(s) * page),
            limit_hits: start.limit_hits.zip(end.limit_hits).map(|(s, e)| e.saturating_sub(s)),
            machine_bytes: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|text| meminfo_bytes(&text, "MemTotal")),
            ..self.limit
        }
    }
}

/// The tightest memory limits from the root to this process's cgroup: v1's
/// `memory.limit_in_bytes`, or v2's `memory.max` and `memory.high`.
fn tightest_memory() -> Result<Option<MemoryCgroup>, UnreadLimit> {
    let Some((mount, cgroup, v2)) = hierarchy("memory")? else { return Ok(None) };
    let read = |dir: &Path, file: &str| {
        std::fs::read_to_string(dir.join(file)).ok().and_then(|text| parse_memory_limit(&text))
    };
    let mut tightest: Option<MemoryCgroup> = None;
    for (dir, name) in levels(&mount, &cgroup) {
        let (max_bytes, high_bytes) = if v2 {
            (read(&dir, "memory.max"), read(&dir, "memory.high"))
        } else {
            (read(&dir, "memory.limit_in_bytes"), None)
        };
        let limit = MemoryLimit { cgroup: name, max_bytes, high_bytes, ..MemoryLimit::default() };
        let Some(bytes) = limit.tightest_bytes() else { continue };
        if tightest.as_ref().and_then(|t| t.limit.tightest_bytes()).is_none_or(|known| bytes < known) {
            tightest = Some(MemoryCgroup { limit, dir, v2 });
        }
    }
    Ok(tightest)
}

/// The kernel's name of block device `devnum` ("7:3" -> "loop3"), from /sys/dev/block.
fn device_of(devnum: &str) -> Option<String> {
    let target = std::fs::read_link(format!("/sys/dev/block/{devnum}")).ok()?;
    target.file_name()?.to_str().map(str::to_string)
}

/// The quota with the fewest cores on the path from the hierarchy's root to this process's
/// cgroup (a parent's quota holds its children too): v1's `cpu` controller, else v2.
fn tightest_quota() -> Result<Option<QuotaDir>, UnreadLimit> {
    let Some((mount, cgroup, v2)) = hierarchy("cpu")? else { return Ok(None) };
    let mut best: Option<QuotaDir> = None;
    for (dir, name) in levels(&mount, &cgroup) {
        let quota = if v2 {
            std::fs::read_to_string(dir.join("cpu.max")).ok().and_then(|t| parse_cpu_max(&t))
        } else {
            let quota = std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).ok();
            let period = std::fs::read_to_string(dir.join("cpu.cfs_period_us")).ok();
            quota.zip(period).and_then(|(q, p)| parse_cfs_quota(&q, &p))
        };
        if let Some((quota_us, period_us)) = quota.filter(|&(_, p)| p > 0) {
            let cores = quota_us as f64 / period_us as f64;
            if best.as_ref().is_none_or(|b| cores < b.quota_us as f64 / b.period_us as f64) {
                best = Some(QuotaDir { cgroup: name, dir, quota_us, period_us });
            }
        }
    }
    Ok(best)
}
