//! Reads cpuidle's per-state counters of every core at the edges of a job's window
//! (/sys/devices/system/cpu/cpuN/cpuidle/stateK/{name,latency,usage,time}); the figures are
//! `iolab_stats::cpu_idle`. A kernel without cpuidle has no counters and no figure.

use std::path::Path;

use iolab_stats::cpu_idle::StateCounter;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Every core's counters now.
pub fn read_counters() -> Vec<StateCounter> {
    counters_under(Path::new(CPU_DIR))
}

fn counters_under(cpu_dir: &Path) -> Vec<StateCounter> {
    let Ok(entries) = std::fs::read_dir(cpu_dir) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(states) = std::fs::read_dir(entry.path().join("cpuidle")) else { continue };
        for state in states.flatten() {
            let dir = state.path();
            let text =
                |file: &str| std::fs::read_to_string(dir.join(file)).ok().map(|s| s.trim().to_string());
            let number = |file: &str| text(file).and_then(|v| v.parse::<u64>().ok());
            if let (Some(name), Some(exit_latency_us), Some(usage), Some(time_us)) =
                (text("name"), number("latency"), number("usage"), number("time"))
            {
                out.push(StateCounter { cpu, name, exit_latency_us, usage, time_us });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_cores_states_and_skips_what_is_not_a_core() {
        let dir = tempfile::tempdir().expect("a temp dir");
        for (cpu, usage) in [(0, 7), (1, 9)] {
            for (index, name, latency) in [(0, "POLL", 0), (1, "C1", 2)] {
                let state = dir.path().join(format!("cpu{cpu}/cpuidle/state{index}"));
                std::fs::create_dir_all(&state).unwrap();
                for (file, value) in [
                    ("name", name.to_string()),
                    ("latency", latency.to_string()),
                    ("usage", usage.to_string()),
                    ("time", "100".into()),
                ] {
                    std::fs::write(state.join(file), format!("{value}\n")).unwrap();
                }
            }
        }
        std::fs::create_dir_all(dir.path().join("cpufreq")).unwrap();
        let mut counters = counters_under(dir.path());
        counters.sort_by_key(|c| (c.cpu, c.exit_latency_us));
        assert_eq!(counters.len(), 4);
        assert_eq!(
            counters[1],
            StateCounter { cpu: 0, name: "C1".into(), exit_latency_us: 2, usage: 7, time_us: 100 }
        );
        assert_eq!(counters[3].cpu, 1);
    }
}
