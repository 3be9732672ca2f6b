//! The live progress line on stderr (indicatif): phase, time, IOPS and latency. Shown only on a
//! terminal and without --quiet; notes go to stderr either way unless --quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_report::{latency, thousands};
use iolab_runner::{Observer, Phase, ProgressUpdate};

/// "42s", "3m05s", "1h02m".
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

pub struct ProgressLine {
    enabled: bool,
    quiet: bool,
    /// One bar per job, made when the job first reports.
    bar: Option<ProgressBar>,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> Self {
        ProgressLine { enabled: !quiet && std::io::stderr().is_terminal(), quiet, bar: None }
    }

    fn bar(&mut self) -> &ProgressBar {
        self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr_with_hz(5));
            let style = ProgressStyle::with_template("{prefix:>16} [{bar:20}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        })
    }
}

impl Observer for ProgressLine {
    fn progress(&mut self, update: &ProgressUpdate<'_>) {
        if !self.enabled {
            return;
        }
        let phase = match update.phase {
            Phase::Ramp => "ramp",
            Phase::Measure => "measure",
        };
        let total = update.total.as_secs_f64().max(1e-9);
        let elapsed = update.elapsed.as_secs_f64();
        let rate = if update.iops > 0.0 {
            format!(
                "  {} IOPS  mean {}  p99 {}",
                thousands(update.iops),
                latency(update.mean_ns),
                latency(update.p99_ns as f64)
            )
        } else {
            String::new()
        };
        let (done, clock) = match update.limit_done {
            // An I/O-limited job ends when the I/O is done: show that share and when it will be.
            Some(done) if update.phase == Phase::Measure => {
                let eta = if done > 0.0 {
                    format!(", ETA {}", duration(elapsed * (1.0 - done) / done))
                } else {
                    String::new()
                };
                (done, format!("{:.0}% done in {}{eta}", 100.0 * done, duration(elapsed)))
            }
            _ => (elapsed / total, format!("{elapsed:.0}/{total:.0}s")),
        };
        let bar = self.bar();
        bar.set_prefix(format!("{} {phase}", update.job));
        bar.set_position((1000.0 * done) as u64);
        bar.set_message(format!("{clock}{rate}"));
    }

    fn note(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(format!("iolab: {message}")),
            None => eprintln!("iolab: {message}"),
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
