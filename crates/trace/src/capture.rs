//! `iolab capture DEV`: every request the block layer issues to DEV and completes, for a set
//! time, from the kernel's block tracepoints. iolab makes a tracing instance of its own
//! (tracefs `instances/iolab-PID`, so nothing another tracer set up is touched), turns on
//! block_rq_issue, block_rq_requeue and block_rq_complete for a request-based device, or
//! block_bio_queue and block_bio_complete for a bio-based one (zram, md, dm), filtered to the
//! device in the kernel, with the monotonic clock in nanoseconds, and a thread per CPU reads
//! its binary ring buffer (`trace_pipe_raw`) as it fills.
//!
//! (blktrace's own interface, an ioctl and relay files under debugfs, is refused by some
//! kernels, this VM's among them: opening the relay files gives EPERM even to root.)
//!
//! The capture checks itself: it counts the completions it saw beside the completions the
//! device's own counters (/sys/block/DEV/stat) moved by over the same time, counts the events
//! the kernel could not keep, and measures iolab's own CPU time per request.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use iolab_stats::cpu::ProcessCpu;
use iolab_stats::format::utc;
use thiserror::Error;

use crate::events::{self, EventKind};
use crate::ring_buffer::{read_pages, EventFormat};
use crate::{CaptureCost, Trace, TraceHeader, TraceSource};

/// Where tracefs is mounted, in the order tried.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// Ring buffer per CPU: 64 MiB holds about a million events (half a million requests).
const BUFFER_KB_PER_CPU: u32 = 65_536;
/// How long a reader sleeps when its buffer had nothing.
const IDLE_READ: Duration = Duration::from_millis(5);
const INSTANCE_PREFIX: &str = "iolab-";

#[derive(Debug, Error)]
pub enum CaptureError {
    #[error("capture reads the kernel's block tracepoints, which needs root; run it with sudo")]
    NotRoot,
    #[error("{0} is not a block device; capture traces a device's requests (a file's I/O is its filesystem's device's)")]
    NotABlockDevice(PathBuf),
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("tracefs is not mounted (neither /sys/kernel/tracing nor /sys/kernel/debug/tracing); mount it with `mount -t tracefs nodev /sys/kernel/tracing`")]
    NoTracefs,
    #[error("this kernel has no block tracepoint {0} (events/block in tracefs)")]
    NoTracepoint(String),
    #[error("cannot set up the capture's tracing instance ({path}): {source}")]
    Tracefs { path: PathBuf, source: io::Error },
}

/// A capture's result: the trace, and how it ended.
pub struct Captured {
    pub trace: Trace,
    /// The capture was cut short by a stop signal.
    pub interrupted: bool,
}

/// Captures `device`'s requests for `duration`, or until `interrupt` is set; `recording` is
/// called once the kernel records (after the instance is set up, which takes a while on a busy
/// machine), so a caller can start what it wants recorded.
pub fn capture(
    device: &Path,
    duration: Duration,
    interrupt: &AtomicBool,
    recording: &mut dyn FnMut(),
) -> Result<Captured, CaptureError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(CaptureError::NotRoot);
    }
    let open_error = |source| CaptureError::Open { path: device.to_path_buf(), source };
    let meta = fs::metadata(device).map_err(open_error)?;
    if !meta.file_type().is_block_device() {
        return Err(CaptureError::NotABlockDevice(device.to_path_buf()));
    }
    let (major, minor) = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let span = Span::of(&sys, major << 20 | minor);
    let tracefs = TRACEFS
        .iter()
        .map(Path::new)
        .find(|p| p.join("instances").is_dir())
        .ok_or(CaptureError::NoTracefs)?;
    remove_stale_instances(tracefs);
    let instance = Instance::create(tracefs)?;
    let events: &[(&str, EventKind)] = if span.disk_sys.join("mq").is_dir() {
        &[
            ("block_rq_issue", EventKind::Issue),
            ("block_rq_requeue", EventKind::Requeue),
            ("block_rq_complete", EventKind::Complete),
        ]
    } else {
        &[("block_bio_queue", EventKind::Queue), ("block_bio_complete", EventKind::Complete)]
    };
    let mut formats = Vec::new();
    for (name, kind) in events {
        let dir = instance.path.join("events/block").join(name);
        let text = fs::read_to_string(dir.join("format"))
            .map_err(|_| CaptureError::NoTracepoint(name.to_string()))?;
        formats.push(
            EventFormat::parse(&text, *kind).ok_or_else(|| CaptureError::NoTracepoint(name.to_string()))?,
        );
        instance.write(&format!("events/block/{name}/filter"), &span.filter())?;
        instance.write(&format!("events/block/{name}/enable"), "1")?;
    }
    let cpus = online_cpus(&instance.path);
    let mut readers = Readers { done: Arc::new(AtomicBool::new(false)), threads: Vec::new() };
    for cpu in &cpus {
        let path = instance.path.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let raw = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|source| CaptureError::Tracefs { path, source })?;
        let done = readers.done.clone();
        readers.threads.push(std::thread::spawn(move || drain(raw, &done)));
    }
    let cpu_before = own_cpu_ns();
    let started_at = SystemTime::now();
    let device_before = completed(&sys);
    instance.write("tracing_on", "1")?;
    let start = Instant::now();
    recording();
    let mut interrupted = false;
    while start.elapsed() < duration {
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        std::thread::sleep(duration.saturating_sub(start.elapsed()).min(Duration::from_millis(50)));
    }
    instance.write("tracing_on", "0")?;
    let device_after = completed(&sys);
    let elapsed = start.elapsed();
    let buffers =
        readers.finish().map_err(|source| CaptureError::Tracefs { path: instance.path.clone(), source })?;
    let page_size =
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok().flatten().unwrap_or(4096) as usize;
    let mut processes = BTreeMap::new();
    let (mut all, mut lost_pages) = (Vec::new(), 0);
    for pages in buffers {
        let read = read_pages(&pages, page_size, &formats, &mut processes);
        lost_pages += read.pages_after_loss;
        all.extend(read.events);
    }
    let dropped = cpus.iter().map(|cpu| lost_events(&instance.path, *cpu)).sum::<u64>().max(lost_pages);
    drop(instance);
    events::sort(&mut all);
    let paired = events::pair(&all);
    let cpu_ns = own_cpu_ns().saturating_sub(cpu_before);
    let (requests, completions) = paired.map_or((Vec::new(), 0), |p| (p.requests, p.completions));
    let started_s = started_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let header = TraceHeader {
        source: TraceSource::Capture,
        streams: vec![device_name(device, &sys)],
        device_bytes: sysfs_u64(&sys.join("size")).map(|sectors| sectors * 512),
        timed: true,
        duration_ns: elapsed.as_nanos() as u64,
        processes,
        captured_at: Some(format!("{} UTC", utc(started_s))),
        capture_cost: Some(CaptureCost {
            cpu_ns_per_request: cpu_ns as f64 / requests.len().max(1) as f64,
            dropped_events: dropped,
            device_completed: device_before.zip(device_after).map(|(b, a)| a.saturating_sub(b)),
            captured_completed: completions,
        }),
    };
    let mut requests = requests;
    // One device, one stream; a partition's offsets from its own start.
    for r in &mut requests {
        r.stream = 0;
        r.offset -= span.start_sector * 512;
    }
    Ok(Captured { trace: Trace { header, requests }, interrupted })
}

/// The threads reading each CPU's ring buffer: told to finish and joined when dropped, so a
/// capture that fails part-way leaves no reader holding the instance's files open (its
/// removal would fail, EBUSY).
struct Readers {
    done: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<io::Result<Vec<u8>>>>,
}

impl Readers {
    /// What each CPU's buffer held, once they are drained.
    fn finish(mut self) -> io::Result<Vec<Vec<u8>>> {
        self.done.store(true, Ordering::Relaxed);
        std::mem::take(&mut self.threads)
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err(io::Error::other("a ring-buffer reader panicked"))))
            .collect()
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The capture's tracing instance: removed (with everything it enabled) when dropped.
struct Instance {
    path: PathBuf,
}

impl Instance {
    fn create(tracefs: &Path) -> Result<Instance, CaptureError> {
        let path = tracefs.join("instances").join(format!("{INSTANCE_PREFIX}{}", std::process::id()));
        fs::create_dir(&path).map_err(|source| CaptureError::Tracefs { path: path.clone(), source })?;
        let instance = Instance { path };
        instance.write("tracing_on", "0")?;
        instance.write("trace_clock", "mono")?;
        instance.write("buffer_size_kb", &BUFFER_KB_PER_CPU.to_string())?;
        // A full buffer drops new events (counted) rather than overwriting unread ones.
        instance.write("options/overwrite", "0")?;
        Ok(instance)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), CaptureError> {
        let path = self.path.join(file);
        fs::write(&path, value).map_err(|source| CaptureError::Tracefs { path, source })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::write(self.path.join("tracing_on"), "0");
        let _ = fs::remove_dir(&self.path);
    }
}

/// Instances a killed capture left behind (its pid gone).
fn remove_stale_instances(tracefs: &Path) {
    let Ok(entries) = fs::read_dir(tracefs.join("instances")) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(INSTANCE_PREFIX).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

fn online_cpus(instance: &Path) -> Vec<u32> {
    let mut cpus: Vec<u32> = fs::read_dir(instance.join("per_cpu"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    cpus.sort_unstable();
    cpus
}

/// Reads a CPU's ring buffer a page at a time until `done` is set and it is empty.
fn drain(mut raw: File, done: &AtomicBool) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut page = vec![0u8; 1 << 16];
    loop {
        let finishing = done.load(Ordering::Relaxed);
        match raw.read(&mut page) {
            Ok(0) => {}
            Ok(n) => {
                out.extend_from_slice(&page[..n]);
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if finishing {
            return Ok(out);
        }
        std::thread::sleep(IDLE_READ);
    }
}

/// Events a CPU's buffer could not keep: its stats' overrun and dropped events.
fn lost_events(instance: &Path, cpu: u32) -> u64 {
    let Ok(stats) = fs::read_to_string(instance.join(format!("per_cpu/cpu{cpu}/stats"))) else { return 0 };
    stats
        .lines()
        .filter(|l| l.starts_with("overrun:") || l.starts_with("dropped events:"))
        .filter_map(|l| l.rsplit(':').next()?.trim().parse::<u64>().ok())
        .sum()
}

/// Which events are the device's: the block layer reports a partition's requests on its disk,
/// at the disk's sectors, so a partition is its disk's sectors from its start for its size.
struct Span {
    /// The whole disk's sysfs directory (the device's own when it is not a partition).
    disk_sys: PathBuf,
    disk_dev: u32,
    start_sector: u64,
    /// `None`: the whole disk.
    sectors: Option<u64>,
}

impl Span {
    fn of(sys: &Path, dev: u32) -> Span {
        if !sys.join("partition").exists() {
            return Span { disk_sys: sys.to_path_buf(), disk_dev: dev, start_sector: 0, sectors: None };
        }
        let disk_sys = fs::canonicalize(sys.join("..")).unwrap_or_else(|_| sys.join(".."));
        let disk_dev = fs::read_to_string(disk_sys.join("dev"))
            .ok()
            .and_then(|d| {
                let (major, minor) = d.trim().split_once(':')?;
                Some(major.parse::<u32>().ok()? << 20 | minor.parse::<u32>().ok()?)
            })
            .unwrap_or(dev);
        Span {
            disk_sys,
            disk_dev,
            start_sector: sysfs_u64(&sys.join("start")).unwrap_or(0),
            sectors: sysfs_u64(&sys.join("size")),
        }
    }

    /// The tracepoints' filter: the disk, and for a partition its sectors.
    fn filter(&self) -> String {
        match self.sectors {
            None => format!("dev == {}", self.disk_dev),
            Some(sectors) => format!(
                "dev == {} && sector >= {} && sector < {}",
                self.disk_dev,
                self.start_sector,
                self.start_sector + sectors
            ),
        }
    }
}

fn device_name(device: &Path, sys: &Path) -> String {
    fs::canonicalize(sys)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| device.display().to_string())
}

fn sysfs_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Requests completed, from the device's stat: reads, writes, discards and flushes.
fn completed(sys: &Path) -> Option<u64> {
    let stat = fs::read_to_string(sys.join("stat")).ok()?;
    let fields: Vec<u64> = stat.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    Some(at(0) + at(4) + at(11) + at(15))
}

fn own_cpu_ns() -> u64 {
    ProcessCpu::now().map_or(0, |c| c.user_ns + c.system_ns)
}
