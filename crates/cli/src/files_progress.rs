//! `iolab files`' live line on a terminal: the running phase, its operations done of those
//! planned, its rate so far and the time left at that rate, read from the threads' published
//! counts five times a second (or, for `iolab fleet files`, summed over the hosts as each says
//! how far it is); then, while the run removes its tree, a line that says so. The line is one
//! message set at once: a phase's name never stands beside the last phase's numbers.
//! Not drawn with --quiet or --json, nor when stderr is not a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_files::{PhaseProgress, PhaseSnapshot};
use iolab_report::thousands;

use crate::exit::say;

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(200);

pub struct FilesLine {
    bar: Option<ProgressBar>,
}

impl FilesLine {
    pub fn new(quiet: bool) -> FilesLine {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(5));
            bar.set_style(
                ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        FilesLine { bar }
    }

    /// A line of text on stderr, above the live line.
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| say!("{line}")),
            None => say!("{line}"),
        }
    }

    /// Draws the running phase as `seen` says.
    pub fn show(&self, seen: &PhaseSnapshot) {
        if let Some(bar) = &self.bar {
            bar.set_message(phase_line(seen));
        }
    }

    /// Draws that the run is removing its tree, for `elapsed` so far.
    fn removing(&self, elapsed: Duration) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{:>16}  removing the tree ({:.0} s)",
                "clean-up",
                elapsed.as_secs_f64()
            ));
        }
    }

    /// Clears the live line for good.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Runs `work`, drawing `progress` meanwhile.
    pub fn while_running<T>(&self, progress: &PhaseProgress, work: impl FnOnce() -> T) -> T {
        if self.bar.is_none() {
            return work();
        }
        let done = std::sync::atomic::AtomicBool::new(false);
        let out = std::thread::scope(|scope| {
            let drawer = scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    match (progress.removing(), progress.snapshot()) {
                        (Some(elapsed), _) => self.removing(elapsed),
                        (None, Some(seen)) => self.show(&seen),
                        (None, None) => {}
                    }
                    std::thread::park_timeout(TICK);
                }
            });
            let out = work();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            drawer.thread().unpark();
            out
        });
        self.finish();
        out
    }
}

/// "          create [=======>            ] 412,000 of 1,000,000  132,523/s  4 s left".
/// A mix, which ends by the clock: "             mix [===>                ] 12 of 60 s  41,250/s  48 s left".
fn phase_line(seen: &PhaseSnapshot) -> String {
    const WIDTH: usize = 20;
    let seconds = seen.elapsed.as_secs_f64().max(1e-9);
    let share = match seen.runtime {
        Some(runtime) => seconds / runtime.as_secs_f64().max(1e-9),
        None => seen.done as f64 / seen.planned.max(1) as f64,
    }
    .min(1.0);
    let filled = (share * WIDTH as f64) as usize;
    let bar: String = (0..WIDTH)
        .map(|i| match i.cmp(&filled) {
            std::cmp::Ordering::Less => '=',
            std::cmp::Ordering::Equal if filled < WIDTH => '>',
            _ => ' ',
        })
        .collect();
    let rate = seen.done as f64 / seconds;
    if let Some(runtime) = seen.runtime {
        let whole = runtime.as_secs_f64();
        return format!(
            "{:>16} [{bar}] {:.0} of {:.0} s  {}/s  {} left",
            seen.phase.name(),
            seconds.min(whole),
            whole,
            thousands(rate),
            eta((whole - seconds).max(0.0))
        );
    }
    let left = match seen.planned.saturating_sub(seen.done) {
        0 => String::new(),
        _ if seen.done == 0 || seconds < 1.0 => "  time left unknown yet".to_string(),
        remaining => format!("  {} left", eta(remaining as f64 / rate)),
    };
    format!(
        "{:>16} [{bar}] {} of {}  {}/s{left}",
        seen.phase.name(),
        thousands(seen.done as f64),
        thousands(seen.planned as f64),
        thousands(rate)
    )
}

/// "4 s", "3 min 20 s", "2 h 5 min".
fn eta(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_files::Phase;

    fn seen(phase: Phase, done: u64, planned: u64, secs: u64) -> PhaseSnapshot {
        PhaseSnapshot { phase, done, planned, runtime: None, elapsed: Duration::from_secs(secs) }
    }

    /// Issue 34: "rmdir [====>] 997,664 of 1,000,000" when rmdir had 22 directories: the
    /// phase's name was set apart from its numbers. One message carries both.
    #[test]
    fn the_line_holds_the_phase_its_own_counts_and_the_time_left() {
        let line = phase_line(&seen(Phase::Create, 250_000, 1_000_000, 2));
        assert_eq!(line, "          create [=====>              ] 250,000 of 1,000,000  125,000/s  6 s left");
        let line = phase_line(&seen(Phase::Rmdir, 22, 22, 1));
        assert!(line.ends_with("[====================] 22 of 22  22/s"), "{line}");
        assert!(phase_line(&seen(Phase::Stat, 0, 10, 0)).ends_with("time left unknown yet"));
        let mix =
            PhaseSnapshot { runtime: Some(Duration::from_secs(60)), ..seen(Phase::Mix, 480_000, 0, 12) };
        assert_eq!(
            phase_line(&mix),
            "             mix [====>               ] 12 of 60 s  40,000/s  48 s left"
        );
        assert_eq!(eta(200.0), "3 min 20 s");
        assert_eq!(eta(7500.0), "2 h 5 min");
    }
}
