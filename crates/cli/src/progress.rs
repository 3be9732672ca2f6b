//! The live progress line on stderr (indicatif): phase, time, IOPS and latency. Shown only on a
//! terminal and without --quiet; notes go to stderr either way unless --quiet.

use std::io::IsTerminal;
use std::time::Duration;

use crate::exit::say;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_report::{latency, thousands};
use iolab_runner::{Observer, Phase, ProgressUpdate};
use iolab_spec::printable::Shown;

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
    /// Draws the bars together on stderr.
    bars: MultiProgress,
    /// One bar per job, made when the job first reports.
    bar: Option<ProgressBar>,
    /// Over a whole suite: its bar and the planned time.
    overall: Option<Overall>,
}

/// Progress over many jobs, by their planned time (ramp + runtime each).
struct Overall {
    bar: ProgressBar,
    started: std::time::Instant,
    /// Planned time of the jobs not finished yet, the current one included.
    remaining_s: f64,
    /// The current job: its ramp, its planned length, and how far it is.
    ramp_s: f64,
    planned_s: f64,
    done_s: f64,
}

impl Overall {
    fn update(&mut self, update: &ProgressUpdate<'_>) {
        let (elapsed, total) = (update.elapsed.as_secs_f64(), update.total.as_secs_f64());
        match update.phase {
            Phase::Ramp => {
                self.ramp_s = total;
                self.done_s = elapsed;
            }
            Phase::Measure => {
                self.done_s = self.ramp_s + elapsed;
                // An I/O-limited job's length is what its pace says, not its time limit.
                let measure_s = match update.limit_done {
                    Some(done) if done > 0.0 => elapsed / done,
                    Some(_) => elapsed,
                    None => total,
                };
                self.planned_s = self.ramp_s + measure_s;
            }
        }
        let eta = (self.remaining_s - self.done_s).max(0.0);
        let spent = self.started.elapsed().as_secs_f64();
        self.bar.set_position((1000.0 * spent / (spent + eta).max(1e-9)) as u64);
        self.bar.set_message(format!("{} so far, ETA {}", duration(spent), duration(eta)));
    }

    fn job_ended(&mut self) {
        self.remaining_s = (self.remaining_s - self.planned_s.max(self.done_s)).max(0.0);
        (self.ramp_s, self.planned_s, self.done_s) = (0.0, 0.0, 0.0);
    }
}

impl ProgressLine {
    pub fn new(quiet: bool) -> Self {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            quiet,
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(5)),
            bar: None,
            overall: None,
        }
    }

    /// A line with a bar over everything planned (`planned_s` seconds of jobs) and its ETA,
    /// above the line of the current job.
    pub fn with_plan(quiet: bool, label: &str, planned_s: f64) -> Self {
        let mut line = ProgressLine::new(quiet);
        let bar = line.bars.add(ProgressBar::new(1000));
        let style = ProgressStyle::with_template("{prefix:>16} [{bar:20}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(Shown(label).to_string());
        if !line.enabled {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        line.overall = Some(Overall {
            bar,
            started: std::time::Instant::now(),
            remaining_s: planned_s,
            ramp_s: 0.0,
            planned_s: 0.0,
            done_s: 0.0,
        });
        line
    }

    fn bar(&mut self) -> &ProgressBar {
        let bars = &self.bars;
        self.bar.get_or_insert_with(|| {
            let bar = bars.add(ProgressBar::new(1000));
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
        let hosts: String = update
            .hosts
            .iter()
            .map(|h| match h.failed {
                true => format!("  {} FAILED", Shown(&h.host)),
                false => format!("  {} {}", Shown(&h.host), thousands(h.iops)),
            })
            .collect();
        let rate = format!("{rate}{hosts}");
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
            // Short jobs (suite steps in tests, sweeps with --runtime 500ms) need the tenths.
            _ if total < 10.0 => (elapsed / total, format!("{elapsed:.1}/{total:.1}s")),
            _ => (elapsed / total, format!("{elapsed:.0}/{total:.0}s")),
        };
        if let Some(overall) = &mut self.overall {
            overall.update(update);
        }
        let bar = self.bar();
        bar.set_prefix(format!("{} {phase}", Shown(update.job)));
        bar.set_position((1000.0 * done) as u64);
        bar.set_message(format!("{clock}{rate}"));
    }

    fn note(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        if self.enabled && (self.bar.is_some() || self.overall.is_some()) {
            let _ = self.bars.println(format!("iolab: {}", Shown(message)));
        } else {
            say!("iolab: {message}");
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            self.bars.remove(&bar);
        }
        if let Some(overall) = &mut self.overall {
            overall.job_ended();
        }
    }
}
