//! The whole machine over a measured window: who used the CPU (iolab's thread classes, kernel
//! threads by what they serve, other processes by command name), how each core spent its time,
//! and which interrupts fired. The verdict reads it to name the thread that was the wall; iolab
//! alone cannot see a loop driver's worker or a neighbour's copy.
//!
//! `MachineAccounting` is the arithmetic over samples of every thread (no /proc in here, so
//! it is tested on made-up samples); the runner reads /proc and feeds it. As for iolab's own
//! threads (`threads.rs`), a thread that exits counts up to the last sample that saw it, a tid
//! reused after an exit is a new thread, and a thread born in the window counts from zero.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::cpu::CpuBreakdown;
use crate::kernel_threads::{KernelRole, KernelThread, Serves};

/// Owners each interval of `MachineReport::series` names.
pub const SLICE_OWNERS: usize = 3;
/// Process ids an owner lists (a command run many times has many).
const LISTED_PIDS: usize = 8;

/// Who used the machine's CPU during a job's measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineReport {
    pub cores: u32,
    pub window_s: f64,
    /// Every owner that used measurable CPU, most first.
    pub owners: Vec<CpuOwner>,
    /// How each core spent the window (/proc/stat).
    pub cpus: Vec<CpuBreakdown>,
    /// Interrupt sources that fired in the window, most first (/proc/interrupts).
    pub interrupts: Vec<InterruptActivity>,
    /// Per sampling interval: how busy the machine was and its biggest owners outside iolab.
    pub series: Vec<MachineSlice>,
    /// Dirty page cache and its writeback over the window (/proc/meminfo, /proc/vmstat).
    #[serde(default)]
    pub page_cache: Option<PageCacheActivity>,
    /// The limits the machine's configuration put on iolab (affinity, its cgroup's CPU quota).
    #[serde(default)]
    pub limits: crate::limits::ConfiguredLimits,
    /// The kernel's pressure stall information over the window, machine-wide and for iolab's
    /// cgroup (v2).
    #[serde(default)]
    pub pressure: crate::pressure::PressureReport,
    /// How the cores idled: wake-ups from halting or sleeping states (cpuidle).
    #[serde(default)]
    pub cpu_idle: Option<crate::cpu_idle::IdleActivity>,
    /// Threads on the machine at the last sample.
    pub threads_sampled: u32,
    /// CPU the sampling itself took in the window (reading /proc for every thread).
    pub sampler_cpu_s: f64,
}

impl MachineReport {
    /// Core-seconds the machine had in the window.
    pub fn capacity_s(&self) -> f64 {
        f64::from(self.cores) * self.window_s
    }

    pub fn owner(&self, name: &str) -> Option<&CpuOwner> {
        self.owners.iter().find(|o| o.name == name)
    }
}

/// The kernel's writeback of dirty page cache over the window: the work of whoever dirtied the
/// pages, done by the kernel on their behalf, often after they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PageCacheActivity {
    /// Page cache dirty or under writeback (what the kernel's dirty throttle counts) when the
    /// window opened and when it closed.
    pub dirty_start_bytes: u64,
    pub dirty_end_bytes: u64,
    /// Bytes the kernel wrote back in the window (vmstat's nr_written, every device together).
    pub written_back_bytes: u64,
    /// The dirty limits at the window's end (vmstat's nr_dirty_threshold and
    /// nr_dirty_background_threshold, from vm.dirty_ratio / dirty_bytes and their background
    /// twins); 0 where the kernel does not say.
    #[serde(default)]
    pub dirty_threshold_bytes: u64,
    #[serde(default)]
    pub dirty_background_threshold_bytes: u64,
    /// Over the window's samples: the most dirty or under writeback, and the share of samples
    /// that stood past `throttling_from_bytes` (none where no sample was taken).
    #[serde(default)]
    pub dirty_peak_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub past_throttle_pct: Option<f64>,
}

impl PageCacheActivity {
    /// Dirty bytes from which the kernel throttles writers (balance_dirty_pages' "freerun"
    /// ceiling: halfway between the background and the hard limit); `None` without limits.
    pub fn throttling_from_bytes(&self) -> Option<u64> {
        (self.dirty_threshold_bytes > 0)
            .then(|| (self.dirty_threshold_bytes + self.dirty_background_threshold_bytes) / 2)
    }

    /// Takes the window's samples of the dirty and under-writeback bytes: their peak, and the
    /// share of them past the point the kernel throttles writers from.
    pub fn dirty_samples(&mut self, samples: &[u64]) {
        self.dirty_peak_bytes = samples.iter().copied().max().unwrap_or(self.dirty_end_bytes);
        self.past_throttle_pct = self
            .throttling_from_bytes()
            .filter(|_| !samples.is_empty())
            .map(|from| 100.0 * samples.iter().filter(|&&s| s >= from).count() as f64 / samples.len() as f64);
    }

    /// Whether the dirty throttle held writers for most of the window: half or more of the
    /// samples past its point, or, without samples, the window's end past it.
    pub fn throttled(&self) -> bool {
        let Some(from) = self.throttling_from_bytes() else { return false };
        self.past_throttle_pct.map_or(self.dirty_end_bytes >= from, |pct| pct >= 50.0)
    }
}

/// Whose CPU it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerKind {
    /// iolab's own threads, by class.
    Iolab,
    /// Kernel threads, grouped by what they serve.
    Kernel,
    /// Another process, by command name.
    Process,
}

/// One owner of CPU over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuOwner {
    /// "iolab workers", "loop0 workers", "ksoftirqd", "jbd2 (vda1)", "fio".
    pub name: String,
    pub kind: OwnerKind,
    /// For kernel threads: what they do.
    #[serde(default)]
    pub role: Option<KernelRole>,
    /// The device (or "cpuN") the threads serve, when their name says.
    #[serde(default)]
    pub serves: Option<String>,
    pub threads: u32,
    /// CPU time in the window, in core-seconds.
    pub cpu_s: f64,
    /// Its share of the machine: cpu_s over cores x window, 0..100.
    pub machine_pct: f64,
    /// The busiest of its threads, and that thread's CPU as a share of one core over the window.
    pub busiest_thread: String,
    pub busiest_thread_pct: f64,
    /// Processes: their ids (at most 8), and the storage bytes they read and wrote in the
    /// window (/proc/<pid>/io; `None` where it could not be read).
    #[serde(default)]
    pub pids: Vec<u32>,
    #[serde(default)]
    pub read_bytes: Option<u64>,
    #[serde(default)]
    pub write_bytes: Option<u64>,
    /// Processes with I/O in the window: the block devices their open files were on at its end
    /// (a writer's files open for writing, a reader's any; block devices opened themselves; the
    /// disks under a partition, dm or md device too), from /proc/<pid>/fd. `None` where not
    /// read; empty where none is on a block device (pipes, tmpfs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<String>>,
}

impl CpuOwner {
    /// Storage bytes it moved, where known.
    pub fn io_bytes(&self) -> u64 {
        self.read_bytes.unwrap_or(0) + self.write_bytes.unwrap_or(0)
    }
}

/// One interrupt source over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptActivity {
    /// The line's number or name in /proc/interrupts ("45", "LOC", "NMI").
    pub irq: String,
    /// Its chip, hardware number and handler ("PCI-MSIX-0000:00:04.0 1-edge nvme0q1").
    pub name: String,
    pub count: u64,
    pub per_cpu: Vec<u64>,
}

/// One sampling interval of the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineSlice {
    /// Start, in seconds after the window opened, and length.
    pub t_s: f64,
    pub duration_s: f64,
    /// Mean busy share of the cores, 0..100.
    pub busy_pct: f64,
    /// Its biggest owners outside iolab, most first.
    pub top: Vec<SliceOwner>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceOwner {
    pub name: String,
    /// CPU over the interval as a share of one core (200 = two cores' worth).
    pub core_pct: f64,
}

/// One thread of the machine at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineThread {
    pub pid: u32,
    pub tid: u32,
    pub starttime: u64,
    /// The thread's name, and for a user thread its process's (the thread group leader's).
    pub comm: String,
    pub process: String,
    pub kthread: bool,
    /// CPU so far, user and system.
    pub cpu_ns: u64,
}

/// A process's storage I/O so far (/proc/<pid>/io): its own, and its reaped children's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessIoSample {
    pub pid: u32,
    pub starttime: u64,
    /// Its parent, which takes in its lifetime's I/O when it reaps it.
    pub ppid: u32,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct OwnerKey {
    kind: OwnerKind,
    name: String,
}

#[derive(Debug)]
struct Owner {
    role: Option<KernelRole>,
    serves: Option<Serves>,
}

fn owner_of(thread: &MachineThread) -> (OwnerKey, Owner) {
    if thread.kthread {
        let kernel = KernelThread::of(&thread.comm);
        let key = OwnerKey { kind: OwnerKind::Kernel, name: kernel.group };
        (key, Owner { role: Some(kernel.role), serves: kernel.serves })
    } else {
        let key = OwnerKey { kind: OwnerKind::Process, name: thread.process.clone() };
        (key, Owner { role: None, serves: None })
    }
}

#[derive(Debug)]
struct Live {
    /// CPU at the window's start (zero if born in it), at the previous sample, and now.
    base_ns: u64,
    previous_ns: u64,
    last: MachineThread,
    round: u64,
}

#[derive(Debug, Default)]
struct OwnerTotal {
    role: Option<KernelRole>,
    serves: Option<Serves>,
    threads: u32,
    cpu_ns: u64,
    busiest_ns: u64,
    busiest: String,
    pids: BTreeSet<u32>,
}

#[derive(Debug)]
struct LiveIo {
    base: (u64, u64),
    last: (u64, u64),
    round: u64,
    ppid: u32,
    /// What children that ended in the window had done in their lives when last seen: the
    /// parent's counters take it in when it reaps them, and it is theirs, not the parent's
    /// (their part in the window is counted as theirs).
    reaped: (u64, u64),
}

impl LiveIo {
    fn new(sample: &ProcessIoSample, base: (u64, u64), round: u64) -> Self {
        let last = (sample.read_bytes, sample.write_bytes);
        LiveIo { base, last, round, ppid: sample.ppid, reaped: (0, 0) }
    }

    /// Bytes read and written in the window, without the lives of the children it reaped: a
    /// shell that reaped a long-lived dd would otherwise show the dd's every byte since it
    /// started. Each figure loses the children's only when it grew by at least as much (the
    /// parent may reap them after the window ends).
    fn in_window(&self) -> (u64, u64) {
        let grown = |last: u64, base: u64, reaped: u64| {
            let grown = last.saturating_sub(base);
            if grown >= reaped {
                grown - reaped
            } else {
                grown
            }
        };
        (grown(self.last.0, self.base.0, self.reaped.0), grown(self.last.1, self.base.1, self.reaped.1))
    }
}

/// CPU per owner over a window, from samples of every thread.
#[derive(Debug, Default)]
pub struct MachineAccounting {
    live: HashMap<u32, Live>,
    owners: HashMap<OwnerKey, OwnerTotal>,
    /// Storage bytes per (pid, starttime), and the process owner they belong to.
    io: HashMap<(u32, u64), LiveIo>,
    io_owner: HashMap<(u32, u64), String>,
    io_retired: HashMap<String, (u64, u64)>,
    /// The processes seen in the window, by their parents.
    children: BTreeMap<u32, BTreeSet<u32>>,
    round: u64,
}

impl MachineAccounting {
    /// Starts the window: what every thread used so far is its baseline.
    pub fn new(threads: &[MachineThread], io: &[ProcessIoSample]) -> Self {
        let mut accounting = MachineAccounting::default();
        for thread in threads {
            let live =
                Live { base_ns: thread.cpu_ns, previous_ns: thread.cpu_ns, last: thread.clone(), round: 0 };
            accounting.live.insert(thread.tid, live);
        }
        for sample in io {
            let bytes = (sample.read_bytes, sample.write_bytes);
            accounting.io.insert((sample.pid, sample.starttime), LiveIo::new(sample, bytes, 0));
            accounting.children.entry(sample.ppid).or_default().insert(sample.pid);
        }
        accounting.name_processes(threads);
        accounting
    }

    /// Takes a listing of every thread (and process I/O) now. Returns each owner's CPU since
    /// the previous listing, most first, in ns.
    pub fn observe(&mut self, threads: &[MachineThread], io: &[ProcessIoSample]) -> Vec<(String, u64)> {
        self.round += 1;
        let mut slice: HashMap<OwnerKey, u64> = HashMap::new();
        for thread in threads {
            let since = match self.live.get_mut(&thread.tid) {
                Some(live) if live.last.starttime == thread.starttime => {
                    let since = thread.cpu_ns.saturating_sub(live.previous_ns);
                    live.previous_ns = thread.cpu_ns;
                    live.last = thread.clone();
                    live.round = self.round;
                    since
                }
                _ => {
                    let born = Live {
                        base_ns: 0,
                        previous_ns: thread.cpu_ns,
                        last: thread.clone(),
                        round: self.round,
                    };
                    if let Some(exited) = self.live.insert(thread.tid, born) {
                        retire(&mut self.owners, &exited);
                    }
                    thread.cpu_ns
                }
            };
            if since > 0 {
                *slice.entry(owner_of(thread).0).or_default() += since;
            }
        }
        let (round, owners) = (self.round, &mut self.owners);
        self.live.retain(|_, live| {
            let alive = live.round == round;
            if !alive {
                retire(owners, live);
            }
            alive
        });
        self.observe_io(io);
        self.name_processes(threads);
        let mut slice: Vec<(String, u64)> = slice.into_iter().map(|(key, ns)| (key.name, ns)).collect();
        slice.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        slice
    }

    fn observe_io(&mut self, io: &[ProcessIoSample]) {
        for sample in io {
            self.children.entry(sample.ppid).or_default().insert(sample.pid);
            let bytes = (sample.read_bytes, sample.write_bytes);
            let key = (sample.pid, sample.starttime);
            match self.io.get_mut(&key) {
                Some(live) => {
                    live.last = bytes;
                    live.round = self.round;
                    live.ppid = sample.ppid;
                }
                None => {
                    self.io.insert(key, LiveIo::new(sample, (0, 0), self.round));
                }
            }
        }
        let round = self.round;
        let gone: Vec<(u32, u64)> =
            self.io.iter().filter(|(_, l)| l.round != round).map(|(k, _)| *k).collect();
        // Each ended child's life so far goes to its parent's reaped, before any is retired.
        for key in &gone {
            let Some(child) = self.io.get(key) else { continue };
            let (ppid, life) = (child.ppid, child.last);
            if let Some(parent) = self.io.iter_mut().find_map(|((pid, _), l)| (*pid == ppid).then_some(l)) {
                parent.reaped.0 += life.0;
                parent.reaped.1 += life.1;
            }
        }
        for key in gone {
            if let Some(live) = self.io.remove(&key) {
                self.retire_io(key, &live);
            }
        }
    }

    fn retire_io(&mut self, key: (u32, u64), live: &LiveIo) {
        let Some(name) = self.io_owner.remove(&key) else { return };
        let (read, written) = live.in_window();
        if read + written > 0 {
            // A process that used no measurable CPU but moved data (a shell whose short-lived
            // children did the I/O: a process's io counts its reaped children's) is an owner too.
            let owner =
                self.owners.entry(OwnerKey { kind: OwnerKind::Process, name: name.clone() }).or_default();
            owner.pids.insert(key.0);
            if owner.busiest.is_empty() {
                owner.busiest = name.clone();
            }
        }
        let total = self.io_retired.entry(name).or_default();
        total.0 += read;
        total.1 += written;
    }

    /// The processes seen in the window, by their parents: a parent's I/O counters take in its
    /// children's lives when it reaps them, so its bytes may be theirs, written wherever their
    /// files were.
    pub fn children(&self) -> BTreeMap<u32, BTreeSet<u32>> {
        self.children.clone()
    }

    /// Remembers which command each process is, for its I/O.
    fn name_processes(&mut self, threads: &[MachineThread]) {
        for thread in threads.iter().filter(|t| !t.kthread && t.pid == t.tid) {
            self.io_owner.insert((thread.pid, thread.starttime), thread.process.clone());
        }
    }

    /// Ends the window: every owner with CPU in it, most first. `resolve` turns a device
    /// number ("253:0") into its kernel name; iolab's own classes are the caller's to add.
    pub fn finish(
        mut self,
        cores: u32,
        window_s: f64,
        resolve: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<CpuOwner> {
        for live in self.live.values() {
            retire(&mut self.owners, live);
        }
        let open: Vec<((u32, u64), LiveIo)> = self.io.drain().collect();
        for (key, live) in open {
            self.retire_io(key, &live);
        }
        let capacity_ns = f64::from(cores) * window_s * 1e9;
        let window_ns = window_s * 1e9;
        let mut owners: Vec<CpuOwner> = self
            .owners
            .into_iter()
            .map(|(key, total)| {
                let io = (key.kind == OwnerKind::Process)
                    .then(|| self.io_retired.get(&key.name).copied())
                    .flatten();
                (key, total, io)
            })
            .filter(|(_, total, io)| total.cpu_ns > 0 || io.is_some_and(|(r, w)| r + w > 0))
            .map(|(key, total, io)| CpuOwner {
                serves: total.serves.as_ref().map(|s| serves_name(s, resolve)),
                role: total.role,
                kind: key.kind,
                threads: total.threads,
                cpu_s: total.cpu_ns as f64 / 1e9,
                machine_pct: share(total.cpu_ns as f64, capacity_ns),
                busiest_thread: total.busiest,
                busiest_thread_pct: share(total.busiest_ns as f64, window_ns).min(100.0),
                pids: total.pids.into_iter().take(LISTED_PIDS).collect(),
                read_bytes: io.map(|(read, _)| read),
                write_bytes: io.map(|(_, write)| write),
                devices: None,
                name: key.name,
            })
            .collect();
        sort_owners(&mut owners);
        owners
    }
}

/// Most CPU first; equal CPU by name, so reports are stable.
pub fn sort_owners(owners: &mut [CpuOwner]) {
    owners.sort_by(|a, b| b.cpu_s.total_cmp(&a.cpu_s).then_with(|| a.name.cmp(&b.name)));
}

fn serves_name(serves: &Serves, resolve: &dyn Fn(&str) -> Option<String>) -> String {
    match serves {
        Serves::Device(name) => name.clone(),
        Serves::DevNum(devnum) => resolve(devnum).unwrap_or_else(|| devnum.clone()),
        Serves::Cpu(cpu) => format!("cpu{cpu}"),
    }
}

fn retire(owners: &mut HashMap<OwnerKey, OwnerTotal>, live: &Live) {
    let used = live.last.cpu_ns.saturating_sub(live.base_ns);
    if used == 0 {
        return;
    }
    let (key, owner) = owner_of(&live.last);
    let total = owners.entry(key).or_default();
    total.role = owner.role;
    total.serves = total.serves.take().or(owner.serves);
    total.threads += 1;
    total.cpu_ns += used;
    if used > total.busiest_ns {
        total.busiest_ns = used;
        total.busiest = live.last.comm.clone();
    }
    if !live.last.kthread {
        total.pids.insert(live.last.pid);
    }
}

fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
