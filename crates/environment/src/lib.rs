//! The environment fingerprint of a run: what the machine and the targets were when it ran, so
//! that a result read a year later says what it measured. The host (kernel, CPU, memory, cpufreq
//! governors, boot parameters, how the CPUs idle), each target's block device (model, firmware, capacity, block
//! sizes, scheduler, queue, write cache, loop backing) and, for NVMe, the drive's SMART / Health
//! log, read before and after a run so the report shows what the run did to the drive.
//!
//! Capture never fails: a fact that cannot be read is `None`, because a missing model number
//! must not stop a benchmark. [`warnings`] turns the facts into plain sentences about settings
//! that distort results, each saying how to fix it.
//!
//! Everything is read-only: sysfs and /proc are read, block devices are never opened for
//! writing, and the NVMe ioctl opens the node read-only.

mod cpu_idle;
mod format;
mod health_sample;
mod host;
mod nvme_ioctl;
mod smart;
mod target;
mod warnings;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use cpu_idle::{CpuIdle, IdleState, SLOW_WAKE_US};
pub use health_sample::{sample_of_smart, HealthSource};
pub use host::HostFacts;
pub use nvme_ioctl::{read_smart_log, HealthSkip};
pub use smart::{HealthDelta, ShortLog, SmartLog, DATA_UNIT_BYTES, SMART_LOG_BYTES};
pub use target::{DeviceFacts, LoopFacts, TargetFacts, TargetKind};
pub use warnings::{warnings, TargetUse};

/// The machine and the targets of one run, as of one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub host: HostFacts,
    /// One entry per target path, in the order given.
    pub targets: Vec<TargetFacts>,
}

/// What a run did to the NVMe drive behind one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetHealthDelta {
    /// The target path.
    pub path: PathBuf,
    /// The device's kernel name ("nvme0n1").
    pub device: String,
    pub delta: HealthDelta,
}

impl Environment {
    /// Captures the host and each of `targets` (files, block devices, or paths iolab is about
    /// to create). Never fails; reads the NVMe health log of NVMe targets (root only).
    pub fn capture(targets: &[PathBuf]) -> Self {
        Environment {
            host: HostFacts::capture(),
            targets: targets.iter().map(|t| TargetFacts::capture(t)).collect(),
        }
    }

    /// The facts of the target at `path`, as it was given to [`Environment::capture`].
    pub fn target(&self, path: &Path) -> Option<&TargetFacts> {
        self.targets.iter().find(|t| t.path == path)
    }

    /// Short human lines for `iolab results show`: the host, each target, its NVMe health.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![self.host.describe()];
        for target in &self.targets {
            lines.push(target.describe());
            if let Some(health) = &target.nvme_health {
                lines.push(health.describe());
            }
            if let Some(reason) = &target.nvme_health_skipped {
                lines.push(format!("NVMe health not read: {reason}"));
            }
        }
        lines
    }

    /// The health deltas from `self` (before a run) to `after`, for each target whose drive
    /// gave a health log both times. Targets are matched by path.
    pub fn health_deltas(&self, after: &Environment) -> Vec<TargetHealthDelta> {
        self.targets
            .iter()
            .filter_map(|before| {
                let later = after.target(&before.path)?;
                let delta = HealthDelta::between(before.nvme_health.as_ref()?, later.nvme_health.as_ref()?);
                let device = before.device.as_ref().map_or_else(String::new, |d| d.name.clone());
                Some(TargetHealthDelta { path: before.path.clone(), device, delta })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
