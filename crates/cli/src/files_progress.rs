//! `iolab files`' live line on a terminal: the running phase, its operations done of those
//! planned and its rate so far, read from the threads' published counts five times a second
//! (or, for `iolab fleet files`, summed over the hosts as each says how far it is).
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
            let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr_with_hz(5));
            let style = ProgressStyle::with_template("{prefix:>16} [{bar:20}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
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
        let Some(bar) = &self.bar else { return };
        let share = seen.done as f64 / seen.planned.max(1) as f64;
        let rate = seen.done as f64 / seen.elapsed.as_secs_f64().max(1e-9);
        bar.set_prefix(seen.phase.name());
        bar.set_position((1000.0 * share.min(1.0)) as u64);
        bar.set_message(format!(
            "{} of {}  {}/s",
            thousands(seen.done as f64),
            thousands(seen.planned as f64),
            thousands(rate)
        ));
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
                    if let Some(seen) = progress.snapshot() {
                        self.show(&seen);
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
