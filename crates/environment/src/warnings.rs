//! Settings that distort results, found in an [`Environment`] and how a run uses its targets.
//! Each warning is one sentence: what is wrong, what it does to the numbers, how to fix it.

use std::path::PathBuf;

use crate::format::cpu_list;
use crate::target::{DeviceFacts, TargetFacts, TargetKind};
use crate::Environment;

/// How a run uses one target: what decides whether a setting matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetUse {
    /// The target path, as given to [`Environment::capture`].
    pub path: PathBuf,
    /// The run opens it with O_DIRECT.
    pub direct: bool,
    /// The run writes to it.
    pub writes: bool,
}

/// The warnings for a run that uses `uses` in `env`, each once, host first.
pub fn warnings(env: &Environment, uses: &[TargetUse]) -> Vec<String> {
    let mut out = Vec::new();
    for (governor, cpus) in env.host.slow_governors() {
        out.push(format!(
            "CPUs {} run the {governor} cpufreq governor, which lowers clocks between I/Os and inflates \
             latency and CPU per I/O; set performance with \
             `echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`.",
            cpu_list(cpus)
        ));
    }
    for usage in uses {
        if let Some(target) = env.target(&usage.path) {
            target_warnings(target, usage, &mut out);
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|warning| seen.insert(warning.clone()));
    out
}

fn target_warnings(target: &TargetFacts, usage: &TargetUse, out: &mut Vec<String>) {
    let path = target.path.display();
    if target.in_memory {
        let fs = target.filesystem.as_deref().unwrap_or("a memory filesystem");
        out.push(format!(
            "{path} is on {fs}, so no device is measured and the results are memory speed; put the \
             target on the device you mean to test."
        ));
        return;
    }
    if !usage.direct {
        let served = match (&target.device, target.kind) {
            (Some(device), TargetKind::BlockDevice) => format!("/dev/{}", device.name),
            (Some(device), _) => format!("the file on /dev/{}", device.name),
            (None, _) => "the file".to_string(),
        };
        out.push(format!(
            "{path} is used with buffered I/O, so the page cache serves reads and absorbs writes and the \
             results describe memory more than {served}; drop --buffered (iolab uses O_DIRECT by default)."
        ));
    }
    if let Some(device) = &target.device {
        device_warnings(device, usage, out);
    }
    if let Some(health) = &target.nvme_health {
        let warnings = health.critical_warnings();
        if !warnings.is_empty() {
            out.push(format!(
                "{path}: the NVMe drive reports a critical warning ({}), so it may throttle or fail \
                 I/O and its results are not representative; check it with `nvme smart-log`.",
                warnings.join(", ")
            ));
        }
    }
}

fn device_warnings(device: &DeviceFacts, usage: &TargetUse, out: &mut Vec<String>) {
    let node = format!("/dev/{}", device.name);
    let disk = device.disk_name();
    if let Some(scheduler) = device.queue.scheduler.as_deref().filter(|s| *s != "none") {
        if device.queue.rotational == Some(false) {
            out.push(format!(
                "{node} is non-rotational but uses the {scheduler} I/O scheduler, which adds CPU time \
                 and locking to every request and caps IOPS; set none with \
                 `echo none | sudo tee /sys/block/{disk}/queue/scheduler`."
            ));
        }
    }
    // Only hardware has a cache to speak of: zram and friends say "write through" truthfully.
    if usage.writes && device.driver.is_some() && device.write_cache.as_deref() == Some("write through") {
        out.push(format!(
            "{node} reports its write cache as write through, so every write waits for the media and \
             write results are not comparable with the same drive in write back mode; check the drive's \
             cache (`hdparm -W {node}` or `nvme get-feature -f 6`) and /sys/block/{disk}/queue/write_cache."
        ));
    }
    if let Some(looped) = &device.loop_device {
        if looped.direct_io != Some(true) {
            let file =
                looped.backing_file.as_ref().map_or("its backing file".into(), |f| f.display().to_string());
            out.push(format!(
                "{node} is a loop device without direct I/O, so its I/O goes through the page cache of \
                 {file} and the results describe memory more than storage; re-create it with \
                 `losetup --direct-io=on`."
            ));
        }
    }
}
