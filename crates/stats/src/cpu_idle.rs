//! How the cores idled over a job's window, from cpuidle's per-state counters
//! (/sys/devices/system/cpu/cpuN/cpuidle/stateK/{usage,time}): how many times a core left its
//! polling loop for a state it must be woken from (a halt, a C-state), and for how long. A
//! completion that finds its core there waits for it to wake (on a VM that halts, a VM exit),
//! so at a shallow queue depth the cores' idle, not the device, can set the pace. The
//! counters are read by the runner; the figures are here.

use serde::{Deserialize, Serialize};

/// The state every cpuidle driver lists first: a core spinning in the kernel, woken at once.
pub const POLL_STATE: &str = "POLL";

/// One core's counter of one idle state, as read at an edge of the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateCounter {
    pub cpu: u32,
    pub name: String,
    /// The exit latency the driver declares, µs.
    pub exit_latency_us: u64,
    /// Times the state was entered.
    pub usage: u64,
    /// Time spent in it, µs.
    pub time_us: u64,
}

/// The window's idle, over every core.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdleActivity {
    /// Entries into states a core must be woken from (all but polling), every core together.
    pub wakeups: u64,
    /// The share of the cores' time spent in those states.
    pub halted_pct: f64,
    /// The one of them entered most often ("haltpoll idle", "C6").
    pub deepest: String,
    /// Its declared exit latency, µs (a VM's halt declares a few; its VM exit costs more).
    pub deepest_exit_latency_us: u64,
}

impl IdleActivity {
    /// The growth of the counters from `start` to `end` over `window_s` on `cores` cores;
    /// `None` without counters (no cpuidle) or for an empty window.
    pub fn between(start: &[StateCounter], end: &[StateCounter], window_s: f64, cores: u32) -> Option<Self> {
        if start.is_empty() || window_s <= 0.0 || cores == 0 {
            return None;
        }
        let mut wakeups = 0;
        let mut halted_us = 0;
        let mut by_state: Vec<(&str, u64, u64)> = Vec::new();
        for after in end.iter().filter(|c| c.name != POLL_STATE) {
            let Some(before) = start.iter().find(|c| c.cpu == after.cpu && c.name == after.name) else {
                continue;
            };
            let entered = after.usage.saturating_sub(before.usage);
            wakeups += entered;
            halted_us += after.time_us.saturating_sub(before.time_us);
            match by_state.iter_mut().find(|(name, _, _)| *name == after.name) {
                Some(state) => state.2 += entered,
                None => by_state.push((&after.name, after.exit_latency_us, entered)),
            }
        }
        let (deepest, latency, _) = by_state.iter().max_by_key(|(_, _, n)| *n).copied().unwrap_or(("", 0, 0));
        Some(IdleActivity {
            wakeups,
            halted_pct: (halted_us as f64 / 1e6 / (window_s * f64::from(cores)) * 100.0).min(100.0),
            deepest: deepest.to_string(),
            deepest_exit_latency_us: latency,
        })
    }

    /// Wake-ups per completed I/O.
    pub fn per_io(&self, ios: u64) -> f64 {
        if ios == 0 {
            0.0
        } else {
            self.wakeups as f64 / ios as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(cpu: u32, name: &str, usage: u64, time_us: u64) -> StateCounter {
        StateCounter {
            cpu,
            name: name.into(),
            exit_latency_us: if name == POLL_STATE { 0 } else { 1 },
            usage,
            time_us,
        }
    }

    #[test]
    fn counts_the_entries_and_time_of_every_state_but_polling() {
        let start = [
            counter(0, "POLL", 100, 1_000),
            counter(0, "haltpoll idle", 10, 50_000),
            counter(1, "POLL", 100, 1_000),
            counter(1, "haltpoll idle", 20, 60_000),
        ];
        let end = [
            counter(0, "POLL", 900, 9_000),
            counter(0, "haltpoll idle", 40_010, 550_000),
            counter(1, "POLL", 100, 1_000),
            counter(1, "haltpoll idle", 20_020, 360_000),
        ];
        let idle = IdleActivity::between(&start, &end, 2.0, 2).expect("counters");
        assert_eq!(idle.wakeups, 60_000);
        assert!((idle.halted_pct - 20.0).abs() < 1e-9, "{idle:?}"); // 0.8 s of 4 core-seconds
        assert_eq!(idle.deepest, "haltpoll idle");
        assert!((idle.per_io(200_000) - 0.3).abs() < 1e-9);
    }

    #[test]
    fn no_counters_is_no_figure() {
        assert_eq!(IdleActivity::between(&[], &[], 2.0, 2), None);
    }
}
