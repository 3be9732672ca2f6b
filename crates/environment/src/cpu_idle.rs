//! How the CPUs idle between I/Os: the cpuidle driver and its states, a guest's halt polling, and
//! the PM QoS latency limit in force. A CPU woken from a deep state (or, on a VM, from a halt,
//! which is a VM exit) completes the next I/O late, so at shallow queue depths these settings
//! decide the figures as much as the device: a loop device here gave 90k IOPS at QD 8 with the
//! CPUs halting and 220k with them kept polling.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A wake-up slower than this (µs, as the state declares its exit latency) is named.
pub const SLOW_WAKE_US: u64 = 50;

/// One idle state of CPU 0, as cpuidle lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleState {
    pub name: String,
    /// The exit latency the driver declares, µs.
    pub exit_latency_us: u64,
    /// `disable` is 1: the governor never picks it.
    pub disabled: bool,
}

/// The CPUs' idle policy, read from /sys and /dev/cpu_dma_latency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuIdle {
    /// cpuidle's driver ("intel_idle", "acpi_idle", "haltpoll"); `None` without cpuidle.
    pub driver: Option<String>,
    pub governor: Option<String>,
    /// A KVM guest's haltpoll: how long a CPU polls before it halts (0: it halts at once).
    pub guest_halt_poll_ns: Option<u64>,
    /// CPU 0's states, shallowest first.
    pub states: Vec<IdleState>,
    /// The PM QoS CPU latency limit in force, µs (root only): states slower to leave are not
    /// entered. 0 means every CPU polls; the kernel's default is 2,000,000,000 (no limit).
    pub latency_limit_us: Option<u64>,
}

impl CpuIdle {
    pub fn capture() -> Option<Self> {
        Self::read(Path::new("/sys/devices/system/cpu"), Path::new("/sys/module/haltpoll/parameters"))
            .map(|idle| CpuIdle { latency_limit_us: pm_qos_limit_us(), ..idle })
    }

    fn read(cpu_dir: &Path, haltpoll_dir: &Path) -> Option<Self> {
        let text = |path: &Path| std::fs::read_to_string(path).ok().map(|s| s.trim().to_string());
        let mut states: Vec<(u32, IdleState)> = std::fs::read_dir(cpu_dir.join("cpu0/cpuidle"))
            .ok()?
            .flatten()
            .filter_map(|entry| {
                let index = entry.file_name().to_str()?.strip_prefix("state")?.parse().ok()?;
                let dir = entry.path();
                Some((
                    index,
                    IdleState {
                        name: text(&dir.join("name"))?,
                        exit_latency_us: text(&dir.join("latency"))?.parse().ok()?,
                        disabled: text(&dir.join("disable")).is_some_and(|v| v == "1"),
                    },
                ))
            })
            .collect();
        states.sort_by_key(|(index, _)| *index);
        Some(CpuIdle {
            driver: text(&cpu_dir.join("cpuidle/current_driver")),
            governor: text(&cpu_dir.join("cpuidle/current_governor")),
            guest_halt_poll_ns: text(&haltpoll_dir.join("guest_halt_poll_ns")).and_then(|v| v.parse().ok()),
            states: states.into_iter().map(|(_, state)| state).collect(),
            latency_limit_us: None,
        })
    }

    /// Why a CPU woken for a completion may be late, or `None` when its idle is shallow: a
    /// guest that halts without polling first (each wake-up a VM exit, slower than the
    /// state's declared latency says), or a state slower than [`SLOW_WAKE_US`] that the
    /// latency limit allows.
    pub fn slow_wake(&self) -> Option<String> {
        let limit = self.latency_limit_us.unwrap_or(u64::MAX);
        if limit == 0 {
            return None;
        }
        let halting = self.states.iter().any(|s| !s.disabled && s.name != "POLL");
        if self.driver.as_deref() == Some("haltpoll") && self.guest_halt_poll_ns == Some(0) && halting {
            return Some(
                "this virtual machine's CPUs halt as soon as they idle (cpuidle haltpoll, guest_halt_poll_ns 0): \
                 each wake-up for a completion is a VM exit"
                    .into(),
            );
        }
        let slow = self
            .states
            .iter()
            .filter(|s| !s.disabled && s.exit_latency_us >= SLOW_WAKE_US && s.exit_latency_us <= limit)
            .max_by_key(|s| s.exit_latency_us)?;
        Some(format!(
            "the CPUs may idle in {} ({} us to wake, cpuidle {})",
            slow.name,
            slow.exit_latency_us,
            self.driver.as_deref().unwrap_or("driver unknown")
        ))
    }
}

/// The PM QoS CPU latency limit, µs: /dev/cpu_dma_latency reads as a native 32-bit integer.
fn pm_qos_limit_us() -> Option<u64> {
    let bytes = std::fs::read("/dev/cpu_dma_latency").ok()?;
    let value = i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?);
    u64::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dir: &Path, index: u32, name: &str, latency: u64) {
        let d = dir.join(format!("cpu0/cpuidle/state{index}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(d.join("latency"), format!("{latency}\n")).unwrap();
        std::fs::write(d.join("disable"), "0\n").unwrap();
    }

    fn machine(
        driver: &str,
        halt_poll: Option<&str>,
        states: &[(&str, u64)],
    ) -> (tempfile::TempDir, CpuIdle) {
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("cpu");
        for (i, (name, latency)) in states.iter().enumerate() {
            state(&cpu, i as u32, name, *latency);
        }
        std::fs::create_dir_all(cpu.join("cpuidle")).unwrap();
        std::fs::write(cpu.join("cpuidle/current_driver"), format!("{driver}\n")).unwrap();
        let haltpoll = dir.path().join("haltpoll");
        std::fs::create_dir_all(&haltpoll).unwrap();
        if let Some(ns) = halt_poll {
            std::fs::write(haltpoll.join("guest_halt_poll_ns"), format!("{ns}\n")).unwrap();
        }
        let idle = CpuIdle::read(&cpu, &haltpoll).unwrap();
        (dir, idle)
    }

    #[test]
    fn a_guest_that_halts_at_once_wakes_slowly_unless_the_limit_keeps_it_polling() {
        let (_dir, idle) = machine("haltpoll", Some("0"), &[("POLL", 0), ("haltpoll idle", 1)]);
        assert_eq!(idle.states.len(), 2);
        assert_eq!(idle.states[1].name, "haltpoll idle");
        assert!(idle.slow_wake().unwrap().contains("VM exit"));
        let held = CpuIdle { latency_limit_us: Some(0), ..idle.clone() };
        assert_eq!(held.slow_wake(), None);
        let polling_first = CpuIdle { guest_halt_poll_ns: Some(200_000), ..idle };
        assert_eq!(polling_first.slow_wake(), None);
    }

    #[test]
    fn a_deep_c_state_is_named_unless_the_limit_excludes_it() {
        let (_dir, idle) = machine("intel_idle", None, &[("POLL", 0), ("C1", 2), ("C6", 133)]);
        assert!(idle.slow_wake().unwrap().contains("C6 (133 us to wake"));
        let limited = CpuIdle { latency_limit_us: Some(10), ..idle.clone() };
        assert_eq!(limited.slow_wake(), None);
        let (_dir, shallow) = machine("intel_idle", None, &[("POLL", 0), ("C1", 2)]);
        assert_eq!(shallow.slow_wake(), None);
    }
}
