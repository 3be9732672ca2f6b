//! The live progress line on stderr (indicatif): phase, time, IOPS and latency. Shown only on a
//! terminal and without --quiet; notes go to stderr either way unless --quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_report::{latency, thousands};
use iolab_runner::{Observer, Phase, ProgressUpdate};

pub struct ProgressLine {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr_with_hz(5));
            let style = ProgressStyle::with_template("{prefix} [{bar:24}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        ProgressLine { bar, quiet }
    }
}

impl Observer for ProgressLine {
    fn progress(&mut self, update: &ProgressUpdate<'_>) {
        let Some(bar) = &self.bar else { return };
        let phase = match update.phase {
            Phase::Prepare => "prepare",
            Phase::Ramp => "ramp",
            Phase::Measure => "measure",
        };
        let total = update.total.as_secs_f64().max(1e-9);
        let elapsed = update.elapsed.as_secs_f64();
        bar.set_prefix(format!("{} {phase}", update.job));
        bar.set_position((1000.0 * elapsed / total) as u64);
        let rate = if update.iops > 0.0 {
            format!(
                " | {} IOPS | mean {} p99 {}",
                thousands(update.iops),
                latency(update.mean_ns),
                latency(update.p99_ns as f64)
            )
        } else {
            String::new()
        };
        bar.set_message(format!(
            "{:.0}s / {:.0}s, {:.0}s left{rate}",
            elapsed,
            total,
            (total - elapsed).max(0.0)
        ));
        bar.enable_steady_tick(Duration::from_millis(200));
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
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            bar.reset();
        }
    }
}
