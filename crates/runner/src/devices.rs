//! The block devices behind a job's targets: found once before the lanes start, their counters
//! read by the collector when the measured window opens and closes, and turned into
//! `DeviceActivity`. The lanes never touch sysfs.

use iolab_engine::target::{self, Backing, BlockDevice, DeviceStat};
use iolab_stats::result::{DeviceActivity, QueueInfo};

use crate::prepare::PreparedTarget;

/// The distinct devices behind a job's targets, and which target each one serves.
pub struct JobDevices {
    devices: Vec<(BlockDevice, QueueInfo)>,
    /// Per group, per target: what serves it.
    behind: Vec<Vec<Behind>>,
}

/// What serves one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behind {
    /// An index into the job's devices.
    Device(usize),
    Memory,
    Unknown,
}

/// The devices' counters at one moment of the job's clock; `None` where sysfs could not be read.
pub struct DeviceSnapshot {
    at_ns: u64,
    stats: Vec<Option<DeviceStat>>,
}

impl JobDevices {
    /// Resolves every target of the job (per group, in order) to its device.
    pub fn find(targets: &[Vec<PreparedTarget>]) -> Self {
        let mut devices: Vec<(BlockDevice, QueueInfo)> = Vec::new();
        let behind = targets
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|t| match target::backing(&t.path) {
                        Backing::Device(device) => {
                            let index = match devices.iter().position(|(d, _)| d.number == device.number) {
                                Some(index) => index,
                                None => {
                                    let queue = device.queue();
                                    devices.push((device, queue));
                                    devices.len() - 1
                                }
                            };
                            Behind::Device(index)
                        }
                        Backing::Memory => Behind::Memory,
                        Backing::Unknown => Behind::Unknown,
                    })
                    .collect()
            })
            .collect();
        JobDevices { devices, behind }
    }

    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// What serves target `t` of group `g`.
    pub fn behind(&self, g: usize, t: usize) -> Behind {
        self.behind.get(g).and_then(|group| group.get(t)).copied().unwrap_or(Behind::Unknown)
    }

    /// The kernel's name of device `index`.
    pub fn name(&self, index: usize) -> Option<&str> {
        self.devices.get(index).map(|(device, _)| device.name.as_str())
    }

    /// Reads every device's counters now (`now_ns` on the job's clock).
    pub fn snapshot(&self, now_ns: u64) -> DeviceSnapshot {
        DeviceSnapshot { at_ns: now_ns, stats: self.devices.iter().map(|(d, _)| d.stat().ok()).collect() }
    }

    /// Each device's activity between two snapshots; a device whose counters could not be read
    /// at either end is left out.
    pub fn activity(&self, start: &DeviceSnapshot, end: &DeviceSnapshot) -> Vec<DeviceActivity> {
        let window_s = end.at_ns.saturating_sub(start.at_ns) as f64 / 1e9;
        self.devices
            .iter()
            .zip(start.stats.iter().zip(&end.stats))
            .filter_map(|((device, queue), pair)| match pair {
                (Some(before), Some(after)) => Some(activity(&device.name, queue, before, after, window_s)),
                _ => None,
            })
            .collect()
    }
}

/// What a device did between two readings of its counters `window_s` apart.
pub fn activity(
    name: &str,
    queue: &QueueInfo,
    before: &DeviceStat,
    after: &DeviceStat,
    window_s: f64,
) -> DeviceActivity {
    let count = |a: u64, b: u64| b.saturating_sub(a);
    let ms = |a: u64, b: u64| DeviceStat::ms_delta(a, b) as f64;
    let reads = count(before.reads, after.reads);
    let writes = count(before.writes, after.writes);
    let window_ms = window_s * 1e3;
    let per_window = |value: f64| if window_ms > 0.0 { value / window_ms } else { 0.0 };
    let await_us = |ios: u64, spent_ms: f64| (ios > 0).then(|| spent_ms * 1e3 / ios as f64);
    DeviceActivity {
        device: name.to_string(),
        reads,
        writes,
        read_bytes: count(before.read_sectors, after.read_sectors) * 512,
        write_bytes: count(before.write_sectors, after.write_sectors) * 512,
        iops: if window_s > 0.0 { (reads + writes) as f64 / window_s } else { 0.0 },
        // io_ticks advance in jiffies, so a busy device can read a hair over the window.
        util_pct: (per_window(ms(before.io_ticks_ms, after.io_ticks_ms)) * 100.0).min(100.0),
        avg_queue: per_window(ms(before.time_in_queue_ms, after.time_in_queue_ms)),
        read_await_us: await_us(reads, ms(before.read_ms, after.read_ms)),
        write_await_us: await_us(writes, ms(before.write_ms, after.write_ms)),
        queue: queue.clone(),
    }
}

#[cfg(test)]
#[path = "devices_tests.rs"]
mod tests;
