//! The kernel's pressure stall information (PSI) over a job's window: the share of the window in
//! which some runnable task (`some`), or every non-idle task (`full`), stalled for want of CPU,
//! I/O or memory, machine-wide (/proc/pressure) and for iolab's own cgroup (cgroup v2
//! `cpu.pressure`, `io.pressure`, `memory.pressure`). Read from the cumulative `total=`
//! microseconds at the window's start and end, so the figure is the window's, not a decaying
//! average. The texts are parsed here; reading them is the runner's.

use serde::{Deserialize, Serialize};

/// The resources the kernel reports pressure for.
pub const RESOURCES: [&str; 3] = ["cpu", "io", "memory"];

/// PSI over the window, and what could not be read (a kernel without PSI says so here).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PressureReport {
    pub stalls: Vec<Stall>,
    /// "/proc/pressure/io: No such file or directory".
    pub unread: Vec<String>,
}

impl PressureReport {
    /// The stall of `resource` in `scope` ("machine", or the cgroup).
    pub fn stall(&self, resource: &str, machine: bool) -> Option<&Stall> {
        self.stalls.iter().find(|s| s.resource == resource && (s.cgroup.is_none() == machine))
    }
}

/// One resource's stall over the window, in one scope.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stall {
    /// "cpu", "io" or "memory".
    pub resource: String,
    /// iolab's cgroup ("/ci/job-7"); `None`: the whole machine.
    pub cgroup: Option<String>,
    /// Share of the window in which at least one task stalled on the resource.
    pub some_pct: f64,
    /// Share in which every non-idle task stalled at once; `None` where the kernel gives no
    /// `full` line (machine-wide CPU before 5.13).
    pub full_pct: Option<f64>,
}

/// The cumulative stall times of one pressure file, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StallTotals {
    pub some_us: u64,
    pub full_us: Option<u64>,
}

impl StallTotals {
    /// Parses "some avg10=0.00 avg60=0.00 avg300=0.00 total=123\nfull ... total=45"; `None`
    /// when it has no `some` total.
    pub fn parse(text: &str) -> Option<StallTotals> {
        let total = |kind: &str| {
            text.lines()
                .find(|line| line.split_whitespace().next() == Some(kind))
                .and_then(|line| line.split_whitespace().find_map(|field| field.strip_prefix("total=")))
                .and_then(|value| value.parse::<u64>().ok())
        };
        Some(StallTotals { some_us: total("some")?, full_us: total("full") })
    }

    /// The stall between `start` and this reading, over a window of `window_s`.
    pub fn since(&self, start: &StallTotals, window_s: f64) -> (f64, Option<f64>) {
        let pct = |now: u64, then: u64| {
            if window_s > 0.0 {
                (now.saturating_sub(then) as f64 / 1e6 / window_s * 100.0).min(100.0)
            } else {
                0.0
            }
        };
        let full = self.full_us.zip(start.full_us).map(|(now, then)| pct(now, then));
        (pct(self.some_us, start.some_us), full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pressure_file_gives_its_totals_and_a_window_its_share() {
        let start = StallTotals::parse(
            "some avg10=44.55 avg60=34.66 avg300=65.74 total=20035736886\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        )
        .expect("parses");
        assert_eq!(start, StallTotals { some_us: 20_035_736_886, full_us: Some(0) });
        let end = StallTotals { some_us: 20_035_736_886 + 1_500_000, full_us: Some(250_000) };
        let (some, full) = end.since(&start, 5.0);
        assert!((some - 30.0).abs() < 1e-9 && full.is_some_and(|f| (f - 5.0).abs() < 1e-9));
    }

    #[test]
    fn a_file_without_full_or_without_totals_is_read_as_far_as_it_goes() {
        let cpu = StallTotals::parse("some avg10=1.00 avg60=0.50 avg300=0.10 total=42").expect("parses");
        assert_eq!(cpu.full_us, None);
        assert_eq!(cpu.since(&StallTotals { some_us: 40, full_us: None }, 0.0), (0.0, None));
        assert_eq!(StallTotals::parse(""), None);
        assert_eq!(StallTotals::parse("some avg10=1.00"), None);
        assert_eq!(StallTotals::parse("full avg10=0.00 total=5"), None);
    }

    #[test]
    fn a_counter_that_went_back_is_no_stall_and_no_share_passes_the_window() {
        let start = StallTotals { some_us: 1_000, full_us: Some(1_000) };
        let end = StallTotals { some_us: 10, full_us: Some(99_000_000) };
        assert_eq!(end.since(&start, 1.0), (0.0, Some(100.0)));
    }
}
