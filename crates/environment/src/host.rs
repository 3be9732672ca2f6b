//! Facts about the machine: kernel, CPUs, memory, cpufreq governors and the boot parameters
//! that change I/O results. Read from /proc and /sys; what cannot be read is `None`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cpu_idle::CpuIdle;
use crate::format::{binary_bytes, cpu_list};

/// The machine a run ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// The host name (`/proc/sys/kernel/hostname`).
    pub hostname: Option<String>,
    /// The kernel release, as `uname -r` prints it ("6.1.0-18-amd64").
    pub kernel_release: Option<String>,
    /// The CPU's "model name" from /proc/cpuinfo ("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz").
    pub cpu_model: Option<String>,
    /// Logical CPUs the kernel runs (hardware threads), whatever this process's affinity.
    pub logical_cpus: Option<u32>,
    /// MemTotal of /proc/meminfo, in bytes.
    pub memory_bytes: Option<u64>,
    /// The cpufreq governor of each CPU, collapsed: {"performance": [0, 1, 2, 3]}. `None` when
    /// the kernel has no cpufreq (most virtual machines), so the host sets the clocks.
    pub cpu_governors: Option<BTreeMap<String, Vec<u32>>>,
    /// The kernel command-line parameters that change I/O or CPU behaviour (mitigations,
    /// isolcpus, C-state limits, NVMe queue options, IOMMU), as given.
    pub boot_parameters: Vec<String>,
    /// How the CPUs idle between I/Os (`None` without cpuidle, or in a record from before it
    /// was kept).
    #[serde(default)]
    pub cpu_idle: Option<CpuIdle>,
}

/// Command-line keys worth keeping: they change latency or CPU cost per I/O.
const BOOT_KEYS: &[&str] = &[
    "mitigations",
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "idle",
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "intel_pstate",
    "amd_pstate",
    "cpufreq.default_governor",
    "nvme.poll_queues",
    "nvme.write_queues",
    "nvme.io_queue_depth",
    "nvme_core.default_ps_max_latency_us",
    "nvme_core.io_timeout",
    "pcie_aspm",
    "iommu",
    "intel_iommu",
    "amd_iommu",
    "transparent_hugepage",
    "elevator",
];

impl HostFacts {
    /// Reads the facts of this machine. Never fails: what cannot be read is `None`.
    pub fn capture() -> Self {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let cpuinfo = read("/proc/cpuinfo");
        HostFacts {
            hostname: read("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()),
            kernel_release: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
            cpu_model: cpuinfo.as_deref().and_then(cpu_model),
            logical_cpus: read("/sys/devices/system/cpu/online")
                .and_then(|list| parse_cpu_list(&list))
                .map(|cpus| cpus.len() as u32)
                .or_else(|| cpuinfo.as_deref().map(processor_count).filter(|&n| n > 0))
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get() as u32)),
            memory_bytes: read("/proc/meminfo").as_deref().and_then(mem_total_bytes),
            cpu_governors: governors(Path::new("/sys/devices/system/cpu")),
            boot_parameters: read("/proc/cmdline").map(|line| boot_parameters(&line)).unwrap_or_default(),
            cpu_idle: CpuIdle::capture(),
        }
    }

    /// CPUs whose governor is not `performance`, by governor: what [`crate::warnings`] names.
    pub fn slow_governors(&self) -> Vec<(&str, &[u32])> {
        self.cpu_governors
            .iter()
            .flatten()
            .filter(|(governor, _)| governor.as_str() != "performance")
            .map(|(governor, cpus)| (governor.as_str(), cpus.as_slice()))
            .collect()
    }

    /// One line: "host lab1 · kernel 6.1.0 · Intel Xeon ... x2 · 24.0 GiB · governor performance".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(name) = &self.hostname {
            parts.push(format!("host {name}"));
        }
        parts.push(format!("kernel {}", self.kernel_release.as_deref().unwrap_or("unknown")));
        let cpus = self.logical_cpus.map(|n| format!(" x{n}")).unwrap_or_default();
        parts.push(format!("{}{cpus}", self.cpu_model.as_deref().unwrap_or("unknown CPU")));
        if let Some(bytes) = self.memory_bytes {
            parts.push(binary_bytes(bytes));
        }
        match &self.cpu_governors {
            Some(governors) if governors.len() == 1 => {
                parts.extend(governors.keys().map(|g| format!("governor {g}")));
            }
            Some(governors) => parts.push(format!(
                "governors {}",
                governors
                    .iter()
                    .map(|(g, cpus)| format!("{g} (CPUs {})", cpu_list(cpus)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            None => {}
        }
        if self.cpu_idle.as_ref().and_then(CpuIdle::slow_wake).is_some() {
            parts.push("cores slow to wake from idle".into());
        }
        parts.join(" · ")
    }
}

/// The first "model name" of /proc/cpuinfo (x86); other architectures name the CPU elsewhere
/// ("Hardware", "cpu model", "uarch") and fall back to those.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "cpu model", "Hardware", "uarch", "cpu"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            (name.trim() == *key && !value.trim().is_empty()).then(|| value.trim().to_string())
        })
    })
}

fn processor_count(cpuinfo: &str) -> u32 {
    cpuinfo.lines().filter(|line| line.split(':').next().is_some_and(|k| k.trim() == "processor")).count()
        as u32
}

/// MemTotal in bytes ("MemTotal:       24684084 kB").
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(value * 1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// A kernel CPU list ("0-3,8,10-11") as CPU numbers.
fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// The governor of every `cpuN/cpufreq/scaling_governor` under `cpu_dir`, collapsed by
/// governor; `None` when no CPU has cpufreq.
fn governors(cpu_dir: &Path) -> Option<BTreeMap<String, Vec<u32>>> {
    let mut by_governor: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for entry in std::fs::read_dir(cpu_dir).ok()?.flatten() {
        let name = entry.file_name();
        let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(governor) = std::fs::read_to_string(entry.path().join("cpufreq/scaling_governor")) {
            by_governor.entry(governor.trim().to_string()).or_default().push(cpu);
        }
    }
    by_governor.values_mut().for_each(|cpus| cpus.sort_unstable());
    (!by_governor.is_empty()).then_some(by_governor)
}

/// The parameters of a kernel command line whose key is in [`BOOT_KEYS`]; what follows "--"
/// belongs to init, not the kernel.
fn boot_parameters(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .take_while(|word| *word != "--")
        .filter(|word| BOOT_KEYS.contains(&word.split_once('=').map_or(*word, |(key, _)| key)))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_model_count_and_memory() {
        let cpuinfo =
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n\n\
                       processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(processor_count(cpuinfo), 2);
        assert_eq!(
            cpu_model("processor : 0\nBogoMIPS : 50.00\nHardware : BCM2835\n").as_deref(),
            Some("BCM2835")
        );
        assert_eq!(mem_total_bytes("MemTotal:       24684084 kB\nMemFree: 1 kB\n"), Some(24_684_084 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list(""), None);
    }

    #[test]
    fn governors_are_collapsed_by_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (cpu, governor) in [(0, "performance"), (1, "powersave"), (2, "performance"), (10, "powersave")] {
            let freq = dir.path().join(format!("cpu{cpu}/cpufreq"));
            std::fs::create_dir_all(&freq).expect("dir");
            std::fs::write(freq.join("scaling_governor"), format!("{governor}\n")).expect("governor");
        }
        // Not CPUs, or CPUs without cpufreq.
        std::fs::create_dir_all(dir.path().join("cpufreq")).expect("dir");
        std::fs::create_dir_all(dir.path().join("cpu3")).expect("dir");
        let governors = governors(dir.path()).expect("some cpufreq");
        assert_eq!(
            governors,
            BTreeMap::from([("performance".to_string(), vec![0, 2]), ("powersave".to_string(), vec![1, 10])])
        );
        let empty = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(empty.path().join("cpu0")).expect("dir");
        assert_eq!(super::governors(empty.path()), None);
    }

    #[test]
    fn keeps_only_the_boot_parameters_that_matter() {
        let cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/vda mitigations=off quiet intel_idle.max_cstate=1 \
                       nvme.poll_queues=4 isolcpus=2-3 -- mitigations=init-arg\n";
        assert_eq!(
            boot_parameters(cmdline),
            ["mitigations=off", "intel_idle.max_cstate=1", "nvme.poll_queues=4", "isolcpus=2-3"]
        );
    }

    #[test]
    fn this_machine_has_a_kernel_cpus_and_memory() {
        let host = HostFacts::capture();
        assert!(host.kernel_release.as_deref().is_some_and(|k| !k.is_empty()), "{host:?}");
        assert!(host.logical_cpus.is_some_and(|n| n >= 1), "{host:?}");
        assert!(host.memory_bytes.is_some_and(|b| b > 64 << 20), "{host:?}");
        assert!(host.describe().contains(host.kernel_release.as_deref().unwrap_or("?")));
    }

    #[test]
    fn describes_the_host_in_one_line() {
        let host = HostFacts {
            hostname: Some("lab1".into()),
            kernel_release: Some("6.1.0".into()),
            cpu_model: Some("Intel(R) Xeon(R) Processor".into()),
            logical_cpus: Some(2),
            memory_bytes: Some(24 << 30),
            cpu_governors: Some(BTreeMap::from([
                ("performance".to_string(), vec![0]),
                ("powersave".to_string(), vec![1]),
            ])),
            boot_parameters: vec![],
            cpu_idle: None,
        };
        assert_eq!(
            host.describe(),
            "host lab1 · kernel 6.1.0 · Intel(R) Xeon(R) Processor x2 · 24.0 GiB · \
             governors performance (CPUs 0), powersave (CPUs 1)"
        );
        let plain = HostFacts { hostname: None, cpu_governors: None, ..host };
        assert_eq!(plain.describe(), "kernel 6.1.0 · Intel(R) Xeon(R) Processor x2 · 24.0 GiB");
        assert_eq!(plain.slow_governors(), Vec::<(&str, &[u32])>::new());
    }
}
