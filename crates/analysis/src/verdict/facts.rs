//! What the verdict's rules read, gathered once from a job's results: each device as the job
//! loaded it, the targets no device served, iolab's CPU by thread class, and the whole machine
//! (CPU by owner, each core's time). Every rule is a function of these facts alone, and every
//! fact comes from the stored `JobResult`, so a stored run can be judged again by today's rules.

use iolab_stats::cpu::CpuBreakdown;
use iolab_stats::kernel_threads::KernelRole;
use iolab_stats::machine::{CpuOwner, MachineReport, OwnerKind};
use iolab_stats::result::{DeviceActivity, EngineFeature, JobResult};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};

use crate::cpu;

/// A device busy this share of the window or more is "busy all the time".
pub const BUSY_DEVICE_PCT: f64 = 90.0;
/// A device holding this share of the job's outstanding I/Os on average held all of them (the
/// rest is the moment between a completion and the next submission).
pub const HELD_SHARE: f64 = 0.8;
/// A queue averaging this share of its limit or more sat at the limit.
pub const FULL_QUEUE_SHARE: f64 = 0.9;
/// With io_uring punting requests to io-wq (which it does when the device's queue has no free
/// tag), a queue averaging this share of its limit sat at it: its occupancy dips while the
/// punted requests wait for tags in io-wq threads.
pub const PUNTED_FULL_QUEUE_SHARE: f64 = 0.75;
/// Buffered I/O whose devices saw less than this share of the job's bytes was served from the
/// page cache.
pub const CACHED_BYTES_SHARE: f64 = 0.1;
/// A device holding less than this share of the outstanding I/Os on average was kept waiting.
pub const STARVED_SHARE: f64 = 0.5;
/// A single kernel thread at this share of one core or more is at its limit: kernel threads
/// sleep between work items, so 90% is a thread that never caught up.
pub const KERNEL_THREAD_LIMIT_PCT: f64 = 90.0;
/// A submitting thread running or waiting to run this share of the window wanted a whole core.
pub const DEMAND_SATURATED_PCT: f64 = 95.0;
/// A device busy all the time while this share of the slots or more were outside it (in iolab,
/// or in the kernel around it) was kept short of requests.
pub const LANE_HELD_SHARE: f64 = 0.15;
/// A device queue above the job's outstanding I/Os by more than this factor, or requests above
/// the job's by more, means other I/O shared the device.
pub const FOREIGN_QUEUE_SLACK: f64 = 1.1;
pub const FOREIGN_IOS_SLACK: f64 = 1.2;
/// What one memory segment of a request holds at worst: a page (a user buffer's pages need not
/// be contiguous in memory, so the block layer may give each its own segment).
pub const PAGE_BYTES: u64 = 4096;
/// The least a read or write request moves: one sector. Requests counted as another load's
/// with fewer bytes than this each are not another load's (issue 30): they are the job's own,
/// split in a way the queue's limits did not foretell.
pub const SECTOR_BYTES: u64 = 512;

/// How the block layer splits one of the job's I/Os on a device: each part is a request in the
/// device's counters and its queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Requests per I/O, at most: the job's mean I/O size over the largest request.
    pub requests: f64,
    /// The job's mean I/O size on the device.
    pub io_bytes: u64,
    /// The largest request the queue takes, and which limit sets it.
    pub request_bytes: u64,
    pub limit: String,
}

/// One device as the job loaded it.
pub struct Load<'a> {
    pub activity: &'a DeviceActivity,
    /// Outstanding I/Os the job's groups kept on it: each group's QD x workers, shared evenly
    /// among its targets.
    pub asked: f64,
    /// Threads that issued I/O to it (a share of each group's, as above).
    pub threads: f64,
    /// The bytes the job read and wrote, and its I/Os, on its targets on this device.
    pub job_read_bytes: u64,
    pub job_write_bytes: u64,
    pub job_ios: u64,
    /// Some group on it used the page cache, or did not.
    pub buffered: bool,
    pub direct: bool,
}

impl Load<'_> {
    pub fn name(&self) -> &str {
        &self.activity.device
    }

    /// The share of the window the device was busy: io_ticks' figure, or, when the job's own
    /// requests fill its queue, at least their mean over the most the job kept outstanding (a
    /// device holding 30 requests on average when at most 32 were outstanding cannot have been
    /// idle more than 1/16 of the time). io_ticks advances in jiffies, sampled as requests start
    /// and end, and undercounts on some kernels, so the larger figure is the better one.
    pub fn busy_pct(&self) -> f64 {
        // Other I/O on the device (a queue above what the job kept outstanding) voids the bound.
        let asked = self.asked_requests();
        let own_queue = self.activity.avg_queue <= asked * FOREIGN_QUEUE_SLACK;
        let implied = if self.only_direct() && asked > 0.0 && own_queue {
            (self.activity.avg_queue / asked * 100.0).min(100.0)
        } else {
            0.0
        };
        self.activity.util_pct.max(implied)
    }

    pub fn busy(&self) -> bool {
        self.busy_pct() >= BUSY_DEVICE_PCT
    }

    pub fn only_direct(&self) -> bool {
        self.direct && !self.buffered
    }

    /// The device held what the job kept outstanding (for buffered loads readahead and
    /// writeback decide the queue, so any busy device counts).
    pub fn held(&self) -> bool {
        self.buffered || self.activity.avg_queue >= self.asked_requests() * HELD_SHARE
    }

    /// How the block layer splits the job's I/Os on this device, when one I/O is larger than
    /// the largest request the queue takes (`max_sectors_kb`, or `max_segments` pages); `None`
    /// when each I/O fits one request or the limits are unknown. A mix of sizes is judged by
    /// its mean, so a mix of small and very large I/Os may be split more than this says.
    pub fn split(&self) -> Option<Split> {
        let queue = &self.activity.queue;
        let by_sectors =
            queue.max_sectors_kb.map(|kb| (u64::from(kb) * 1024, format!("max_sectors_kb {kb}")));
        let by_segments = queue.max_segments.map(|segments| {
            let segment = queue.max_segment_size.map_or(PAGE_BYTES, |s| u64::from(s).min(PAGE_BYTES));
            (
                u64::from(segments) * segment,
                format!("max_segments {segments} of {} each", iolab_spec::Bytes(segment)),
            )
        });
        let (request_bytes, limit) = [by_sectors, by_segments]
            .into_iter()
            .flatten()
            .filter(|(b, _)| *b > 0)
            .min_by_key(|(b, _)| *b)?;
        let io_bytes = (self.job_read_bytes + self.job_write_bytes).checked_div(self.job_ios)?;
        let requests = io_bytes.div_ceil(request_bytes);
        (requests > 1).then_some(Split { requests: requests as f64, io_bytes, request_bytes, limit })
    }

    /// The most requests one of the job's I/Os became on the device (1 unless split).
    pub fn requests_per_io(&self) -> f64 {
        self.split().map_or(1.0, |s| s.requests)
    }

    /// The requests the job's I/Os became, at most.
    pub fn job_requests(&self) -> u64 {
        (self.job_ios as f64 * self.requests_per_io()).round() as u64
    }

    /// The requests the job kept outstanding on the device, at most: what its queue and its
    /// `avg_queue` count.
    pub fn asked_requests(&self) -> f64 {
        self.asked * self.requests_per_io()
    }

    /// Requests the device completed that were not the job's, and their share of all it
    /// completed: the job's I/Os counted as the requests the block layer made of them (its own
    /// requests may have been merged, so this is a floor).
    pub fn foreign_ios(&self) -> (u64, f64) {
        let device = self.activity.reads + self.activity.writes;
        let foreign = device.saturating_sub(self.job_requests());
        (foreign, if device > 0 { foreign as f64 / device as f64 } else { 0.0 })
    }

    /// Another load shared the device: a large share of its requests or of its bytes were not
    /// the job's, and those requests moved bytes (a request moves a sector at least; requests
    /// over the job's count with no bytes behind them are the job's own, split).
    pub fn shared_with(&self, share: f64) -> bool {
        let (foreign, requests_share) = self.foreign_ios();
        let by_requests = requests_share >= share && self.foreign_bytes() >= foreign * SECTOR_BYTES;
        by_requests || self.foreign_bytes_share() >= share
    }

    /// Bytes the device moved that the job did not.
    pub fn foreign_bytes(&self) -> u64 {
        let a = self.activity;
        a.read_bytes.saturating_sub(self.job_read_bytes) + a.write_bytes.saturating_sub(self.job_write_bytes)
    }

    /// The share of the device's bytes that were not the job's (a load of large requests
    /// shows here while its request count stays small).
    pub fn foreign_bytes_share(&self) -> f64 {
        let device = self.activity.read_bytes + self.activity.write_bytes;
        if device > 0 {
            self.foreign_bytes() as f64 / device as f64
        } else {
            0.0
        }
    }

    /// Bytes the device wrote that the job did not.
    pub fn foreign_write_bytes(&self) -> u64 {
        self.activity.write_bytes.saturating_sub(self.job_write_bytes)
    }

    /// The requests the device takes before the rest wait: the smaller of `nr_requests` and the
    /// hardware queue depth, per hardware queue the job's threads could reach (blk-mq maps each
    /// CPU to one hardware queue).
    pub fn queue_limit(&self) -> Option<(f64, String)> {
        let a = self.activity;
        let (limit, what) = match (a.queue.nr_requests, a.queue.hw_queue_depth) {
            (Some(nr), Some(hw)) if hw < nr => (hw, format!("the device takes {hw} commands at once")),
            (Some(nr), _) => (nr, format!("its queue holds {nr} requests (nr_requests)")),
            (None, Some(hw)) => (hw, format!("the device takes {hw} commands at once")),
            (None, None) => return None,
        };
        let queues = f64::from(a.queue.hw_queues.unwrap_or(1).max(1)).min(self.threads.ceil().max(1.0));
        let what = if queues > 1.0 { format!("{what} on each of {queues} hardware queues") } else { what };
        Some((f64::from(limit) * queues, what))
    }
}

/// The facts of one job.
pub struct Facts<'a> {
    pub job: &'a JobResult,
    pub loads: Vec<Load<'a>>,
    /// Targets in memory (tmpfs): no device sees their I/O.
    pub in_memory: Vec<&'a str>,
    /// Targets with no device sysfs lists, or none measured (FUSE, NFS, btrfs).
    pub unseen: Vec<&'a str>,
    /// iolab's worker threads poll for completions (IOPOLL): they are busy by design.
    pub iopoll: bool,
    /// iolab's worker threads watch the completion queue before they sleep
    /// (`--completion-watch`): busy by design too, for as long as each watch.
    pub completion_watch: bool,
    /// Every group ran io_uring, whose kernel threads are part of the process.
    pub uring: bool,
    /// Every group ran the null engine.
    pub null: bool,
    /// CPU figures exist: per thread, or per core.
    pub cpu_known: bool,
    /// The whole machine, when it was sampled.
    pub machine: Option<&'a MachineReport>,
}

impl<'a> Facts<'a> {
    /// The submitting threads spend time polling or watching for completions, so their being
    /// busy says nothing of their limit.
    pub fn lanes_poll(&self) -> bool {
        self.iopoll || self.completion_watch
    }

    /// Of the slots in flight (handed over, not yet reaped) on average, how many the devices
    /// held and how many were outside them: queued in the kernel above the device (an io-wq
    /// thread's queue), being submitted, or completed and not yet reaped. `None` where the
    /// devices' queues do not count the job's I/Os alone (buffered I/O, a target in memory, a
    /// device not seen) or hold more than was in flight.
    pub fn in_flight_split(&self) -> Option<(Vec<&str>, f64, f64)> {
        let slots = self.job.slots.filter(|s| s.ios > 0)?;
        let devices: Vec<&Load<'_>> = self.loads.iter().filter(|l| l.only_direct()).collect();
        let held: f64 = devices.iter().map(|l| l.activity.avg_queue).sum();
        let counted = !devices.is_empty() && self.unseen.is_empty() && self.in_memory.is_empty();
        (counted && held <= slots.in_flight * 1.05)
            .then(|| (devices.iter().map(|l| l.name()).collect(), held, (slots.in_flight - held).max(0.0)))
    }

    pub fn of(job: &'a JobResult) -> Self {
        let mut loads: Vec<Load<'a>> = job
            .devices
            .iter()
            .map(|activity| Load {
                activity,
                asked: 0.0,
                threads: 0.0,
                job_read_bytes: 0,
                job_write_bytes: 0,
                job_ios: 0,
                buffered: false,
                direct: false,
            })
            .collect();
        let (mut in_memory, mut unseen) = (Vec::new(), Vec::new());
        for group in &job.groups {
            let share = 1.0 / group.targets.len().max(1) as f64;
            for target in &group.targets {
                let load = target.device.as_ref().and_then(|d| loads.iter_mut().find(|l| l.name() == d));
                match load {
                    Some(load) => {
                        load.asked += f64::from(group.qd) * f64::from(group.workers) * share;
                        load.threads += f64::from(group.threads) * share;
                        load.job_read_bytes += target.read.bytes;
                        load.job_write_bytes += target.write.bytes;
                        load.job_ios += target.total.ios;
                        load.buffered |= !group.direct;
                        load.direct |= group.direct;
                    }
                    None if target.in_memory => in_memory.push(target.path.as_str()),
                    None => unseen.push(target.path.as_str()),
                }
            }
        }
        Facts {
            job,
            loads,
            in_memory,
            unseen,
            iopoll: job.groups.iter().any(|g| g.granted(EngineFeature::Iopoll)),
            completion_watch: job.groups.iter().any(|g| g.granted(EngineFeature::CompletionWatch)),
            uring: job.groups.iter().all(|g| g.engine == "uring"),
            null: !job.groups.is_empty() && job.groups.iter().all(|g| g.engine == "null"),
            cpu_known: !job.cpu.threads.is_empty() || !job.cpu.machine_busy_pct.is_empty(),
            machine: job.machine.as_ref(),
        }
    }

    /// iolab's CPU of one thread class, if it had any.
    pub fn class(&self, class: ThreadClass) -> Option<&'a ThreadClassCpu> {
        self.job.cpu.threads.iter().find(|t| t.class == class)
    }

    /// The machine's cores, each with how it spent the window.
    pub fn cores(&self) -> &'a [CpuBreakdown] {
        self.machine.map_or(&[], |m| m.cpus.as_slice())
    }

    /// The owners of CPU outside iolab, most first.
    pub fn outside_owners(&self) -> impl Iterator<Item = &'a CpuOwner> {
        self.machine.into_iter().flat_map(|m| m.owners.iter()).filter(|o| o.kind != OwnerKind::Iolab)
    }

    /// Kernel threads that serve one of the job's devices (the loop driver's workers for
    /// loop0, md0's RAID thread, dm-crypt for dm-0, a partition's journal), most CPU first.
    pub fn serving_owners(&self) -> Vec<(&'a CpuOwner, &Load<'a>)> {
        self.outside_owners()
            .filter(|o| matches!(o.role, Some(KernelRole::BlockWorker | KernelRole::RaidOrMapper)))
            .filter_map(|o| {
                let serves = o.serves.as_deref()?;
                let load = self.loads.iter().find(|l| same_disk(serves, l.name()))?;
                Some((o, load))
            })
            .collect()
    }

    /// The mean steal share of the cores, 0..100.
    pub fn steal_pct(&self) -> f64 {
        let cores = self.cores();
        if cores.is_empty() {
            0.0
        } else {
            cores.iter().map(|c| c.steal_pct).sum::<f64>() / cores.len() as f64
        }
    }

    /// Process CPU seconds, and the share io_uring's io-wq threads took of it.
    pub fn io_wq_share(&self) -> f64 {
        let process_s = cpu::process_s(self.job);
        let io_wq_s = cpu::class_s(self.job, ThreadClass::IoWq).0;
        if process_s > 0.0 {
            io_wq_s / process_s
        } else {
            0.0
        }
    }
}

/// Whether two kernel device names are one disk, or a disk and its partition: "vda" and
/// "vda1"; a disk whose name ends in a digit puts a 'p' before the partition's number
/// ("nvme0n1p2", "loop0p1"), so "loop1" and "loop12" are two disks.
pub fn same_disk(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short == long {
        return true;
    }
    let Some(rest) = long.strip_prefix(short) else { return false };
    let digits = if short.ends_with(|c: char| c.is_ascii_digit()) {
        match rest.strip_prefix('p') {
            Some(digits) => digits,
            None => return false,
        }
    } else {
        rest
    };
    !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::same_disk;

    #[test]
    fn disks_and_their_partitions() {
        assert!(same_disk("loop0", "loop0"));
        assert!(same_disk("vda", "vda1"));
        assert!(same_disk("nvme0n1p2", "nvme0n1"));
        assert!(same_disk("loop0", "loop0p1"));
        assert!(!same_disk("loop1", "loop12"));
        assert!(!same_disk("sda", "sdb1"));
        assert!(!same_disk("vda", "vdab"));
    }
}
