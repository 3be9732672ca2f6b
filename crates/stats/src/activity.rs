//! What the machine did beside a job's I/O: the process's CPU, and each block device's
//! activity over the window with its request queue's limits and settings.

use serde::{Deserialize, Serialize};

use crate::threads::ThreadClassCpu;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct CpuReport {
    /// User time of the whole iolab process (every thread, io_uring kernel workers included).
    pub user_s: f64,
    pub system_s: f64,
    /// Microseconds of process CPU per completed I/O.
    pub us_per_io: f64,
    /// Busy share of each core of the machine during the measured phase, 0..100.
    pub machine_busy_pct: Vec<f64>,
    /// The process's CPU by thread class: submitting workers, the SQPOLL thread, io-wq
    /// workers (requests io_uring punted to kernel threads), other (collector, main).
    pub threads: Vec<ThreadClassCpu>,
    /// Process CPU seconds no thread sample accounts for: threads that exited between samples.
    pub unattributed_s: f64,
    /// Where the submitting threads were over the window, sampled (absent where not sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane_waits: Option<crate::lane_waits::LaneWaits>,
    /// The same of io_uring's io-wq workers, which serve what io_uring punts (absent where
    /// none ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_wq_waits: Option<crate::lane_waits::LaneWaits>,
}

/// A block device's request queue: its limits and settings, as sysfs shows them; what sysfs does
/// not have is `None`. The engine reads it (`BlockDevice::queue`); the environment's
/// `DeviceFacts` and a job's `DeviceActivity` hold it flattened: its fields sit beside the
/// device's own in the JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueInfo {
    /// `queue/nr_requests`: the requests the block layer holds per hardware queue (in the
    /// scheduler and the driver together). Bio-based devices (zram, device-mapper) have none.
    pub nr_requests: Option<u32>,
    /// The commands the device (or its driver) takes at once, per hardware queue:
    /// `device/queue_depth` for SCSI (SATA, SAS), else blk-mq's `mq/0/nr_tags`.
    pub hw_queue_depth: Option<u32>,
    /// The hardware queues (`mq/*`): NVMe has one per CPU or so, most others one.
    pub hw_queues: Option<u32>,
    /// The active I/O scheduler ("none", "mq-deadline", "bfq", "kyber"); `None` for bio-based
    /// devices (zram, device-mapper), which have no choice.
    pub scheduler: Option<String>,
    /// `queue/rotational` (virtual disks often claim 1 whatever backs them).
    pub rotational: Option<bool>,
    /// `queue/max_sectors_kb`: the most one request moves, in KiB; a larger I/O is split.
    pub max_sectors_kb: Option<u32>,
    /// `queue/max_segments`: the most memory segments one request takes (a user buffer's pages
    /// need not be contiguous, so a segment may be one page); a larger I/O is split.
    pub max_segments: Option<u32>,
    /// `queue/max_segment_size`: the most bytes one segment holds.
    pub max_segment_size: Option<u32>,
}

/// What one block device did over the measured window, from its sysfs `stat` counters, and its
/// request queue. The counters are the device's own: they include I/O of other processes (and
/// the filesystem's metadata and writeback) on the same device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceActivity {
    /// The kernel's name: "vda", "nvme0n1p2", "dm-0", "loop0".
    pub device: String,
    /// Requests the device completed (after merging), and the bytes they moved.
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// (reads + writes) per second of the window.
    pub iops: f64,
    /// Share of the window with at least one request in the device (io_ticks), 0..100. A device
    /// that serves requests in parallel (SSD, NVMe) can be 100% busy and still take more.
    pub util_pct: f64,
    /// Mean requests in the device over the window (time_in_queue growth / window).
    pub avg_queue: f64,
    /// Mean time from issue to completion of a read, in the device; `None` without reads.
    pub read_await_us: Option<f64>,
    pub write_await_us: Option<f64>,
    /// The device's request queue; its fields sit beside the counters in the JSON.
    #[serde(flatten)]
    pub queue: QueueInfo,
}
