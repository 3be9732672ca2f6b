//! `iolab burnin`: one workload for hours or weeks, run as segments of `--segment` each, every
//! segment a job whose result (figures, series and its exact histograms) the store commits as
//! it ends. A burn-in of weeks stays small (a point per segment, its series at one point a
//! minute), its percentiles are exact merges of the segments' histograms, and a killed burn-in
//! loses at most the segment it was in: `--resume ID` goes on from the next one.
//!
//! It stops at the first segment with a data error unless told to keep going.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use iolab_analysis::burnin::{Ending, Segment};
use iolab_runner::{Lab, Observer, PreparedTarget, RunError};
use iolab_spec::{JobSpec, Nanos, Options};
use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::result::{JobResult, StopReason};
use iolab_stats::IntervalStats;
use iolab_store::PointFigures;

/// What a burn-in does besides its workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurninSettings {
    /// How many segments make the whole burn-in (its duration over the segment length).
    pub segments: u32,
    /// Go on past segments with data errors, counting them.
    pub keep_going: bool,
}

/// The burn-in's own timing under the user's options: each segment measured for `segment`,
/// no ramp (the I/O never pauses long, so the drive never rests), a series point a minute (a
/// week of ten-minute segments is ~1,000 points of ten series entries), I/O errors counted
/// rather than fatal with `keep_going`; and verify asked for, in `with_verify`.
pub fn segment_defaults(segment: Nanos, keep_going: bool) -> Options {
    let options = Options {
        runtime: Some(segment),
        ramp: Some(Nanos(0)),
        interval: Some(segment.min(SERIES_INTERVAL)),
        continue_on_error: keep_going.then_some(true),
        ..Options::default()
    };
    with_verify(options)
}

const SERIES_INTERVAL: Nanos = Nanos::from_secs(60);

/// Burn-in checks every block it reads (`--verify`): a user's `--verify=false` still wins, since
/// the user's options lie over these defaults.
fn with_verify(options: Options) -> Options {
    Options { verify: Some(true), ..options }
}

/// The data errors of one segment: its failed I/Os and the bad blocks `--verify` found, so a
/// block that reads back wrong stops the burn-in as a failed I/O does.
pub fn data_errors(result: &JobResult) -> u64 {
    result.errors.count + result.data_errors()
}

/// The point name of segment `index` (1-based) of `job`: "burnin segment 12".
pub fn segment_name(job: &JobSpec, index: u32) -> String {
    format!("{} segment {index}", job.name)
}

/// What the segments of one invocation did.
pub struct SegmentsRan {
    pub ending: Ending,
    /// The merge of their histograms (a segment cut short by Ctrl-C left out), taken as each
    /// ended: the lab lets go of each segment's own once the store has it.
    pub merged: IntervalStats,
}

/// Runs segments `done + 1 ..= settings.segments` of `job` on `targets`, each kept by the lab
/// as it ends; says why it stopped.
pub fn run_segments(
    lab: &mut Lab<'_>,
    job: &JobSpec,
    targets: &[Vec<PreparedTarget>],
    done: u32,
    settings: BurninSettings,
    observer: &mut dyn Observer,
) -> Result<SegmentsRan, RunError> {
    let mut merged = IntervalStats::default();
    let ending = segments(lab, job, targets, (done, settings), &mut merged, observer)?;
    Ok(SegmentsRan { ending, merged })
}

fn segments(
    lab: &mut Lab<'_>,
    job: &JobSpec,
    targets: &[Vec<PreparedTarget>],
    (done, settings): (u32, BurninSettings),
    merged: &mut IntervalStats,
    observer: &mut dyn Observer,
) -> Result<Ending, RunError> {
    for index in done + 1..=settings.segments {
        if lab.interrupted() {
            return Ok(Ending::Interrupted);
        }
        let named = JobSpec { name: segment_name(job, index), ..job.clone() };
        let result = lab.run_prepared(&named, targets, observer)?;
        if result.stop_reason == StopReason::Interrupted {
            return Ok(Ending::Interrupted);
        }
        merged.merge(&result.histograms);
        let (errors, stop) = (data_errors(result), result.stop_reason);
        let engine = result.errors.engine.clone();
        lab.release_histograms();
        if errors > 0 && !settings.keep_going {
            return Ok(Ending::DataErrors { segment: index, errors });
        }
        if stop.ends_the_run() {
            let stop = serde_json::to_value(stop).ok();
            let stop = stop.as_ref().and_then(|v| v.as_str()).unwrap_or("stopped").to_string();
            let reason = engine.map_or(stop.clone(), |e| format!("{stop}: {e}"));
            return Ok(Ending::Failed { reason });
        }
    }
    Ok(Ending::Completed)
}

/// Every segment measured, in order, with the merge of all their histograms: first those
/// earlier invocations kept (`of_points`, read once at `--resume`, then only their figures and
/// merge are held), then this one's (`with_results`). A segment cut short by Ctrl-C measured
/// less than the others: it is neither a segment of the trend nor in the merge. A point whose
/// stored histograms cannot be read is left out of the merge and named.
#[derive(Default)]
pub struct Measured {
    pub segments: Vec<Segment>,
    pub merged: IntervalStats,
    pub measured_s: f64,
    /// Segments whose histograms are not in the merge.
    pub unmerged: Vec<u32>,
}

impl Measured {
    /// The segments kept as `points`. Only segments whose histograms are merged add their
    /// time: the whole burn-in's rates are its merged I/Os over the time they took.
    pub fn of_points(points: &[PointFigures]) -> Measured {
        let mut all = Measured::default();
        for point in points.iter().filter(|p| p.summary.stop_reason != "interrupted") {
            let segment = Segment::of_point(all.segments.len() as u32 + 1, point);
            match point.histograms.as_ref().map(EncodedHistograms::decode) {
                Some(Ok(stats)) => {
                    all.merged.merge(&stats);
                    all.measured_s += segment.measured_s;
                }
                _ => all.unmerged.push(segment.index),
            }
            all.segments.push(segment);
        }
        all
    }

    /// These segments followed by this invocation's results `now`, whose histograms `ran` merged.
    pub fn with_results(mut self, now: &[JobResult], ran: &IntervalStats) -> Measured {
        self.merged.merge(ran);
        for result in now.iter().filter(|r| r.stop_reason != StopReason::Interrupted) {
            let index = self.segments.len() as u32 + 1;
            let ended_ns = result.window_start_unix_ns + (result.measured_s * 1e9) as u64;
            self.segments.push(Segment {
                index,
                completed_at_unix_s: (ended_ns / 1_000_000_000) as i64,
                measured_s: result.measured_s,
                iops: result.total.iops,
                mb_s: result.total.mb_s,
                mean_ns: result.total.latency.as_ref().map(|l| l.mean_ns),
                p99_ns: result.total.percentile(99.0),
                data_errors: data_errors(result),
            });
            self.measured_s += result.measured_s;
        }
        self
    }
}

/// Calls `tick` now and every `every` on its own thread, and once more when stopped: the
/// burn-in's health sampler, which reads the drive every few minutes whatever segment runs.
pub struct Periodic {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Periodic {
    pub fn start(every: Duration, mut tick: impl FnMut() + Send + 'static) -> std::io::Result<Periodic> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("iolab-health".into()).spawn(move || loop {
            tick();
            match stopped.recv_timeout(every) {
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                // Asked to stop (or the owner is gone): one last reading, the state at the end.
                _ => {
                    tick();
                    break;
                }
            }
        })?;
        Ok(Periodic { stop: Some(stop), thread: Some(thread) })
    }

    /// Stops the ticks after a last one, and waits for it.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Periodic {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn verify_is_asked_for_in_one_place_and_segments_time_themselves() {
        let options = segment_defaults(Nanos::from_secs(600), false);
        assert_eq!(options.verify, Some(true), "a burn-in checks what it reads");
        assert_eq!((options.runtime, options.ramp), (Some(Nanos::from_secs(600)), Some(Nanos(0))));
        assert_eq!((options.interval, options.continue_on_error), (Some(SERIES_INTERVAL), None));
        let short = segment_defaults(Nanos::from_secs(2), true);
        assert_eq!((short.interval, short.continue_on_error), (Some(Nanos::from_secs(2)), Some(true)));
    }

    fn kept_segment(seq: u32, histograms: Option<EncodedHistograms>) -> PointFigures {
        let mut stats = IntervalStats::default();
        stats.read.record(100_000, 4096);
        let summary = stats.read.summary(10.0, &[]);
        PointFigures {
            seq,
            name: format!("burnin segment {}", seq + 1),
            completed_at_unix_s: 1_000 + 10 * i64::from(seq),
            summary: iolab_store::PointSummary {
                engine: "null".into(),
                access: "randread 4KiB".into(),
                qd: 1,
                workers: 1,
                targets: Vec::new(),
                measured_s: 10.0,
                read: summary.clone(),
                write: summary.clone(),
                total: summary,
                cpu_us_per_io: None,
                stop_reason: "runtime".into(),
            },
            histograms: histograms.map(|_| EncodedHistograms::encode(&stats)),
            errors: u64::from(seq),
        }
    }

    #[test]
    fn a_segment_whose_histograms_cannot_be_read_adds_no_time_to_the_whole() {
        let readable = kept_segment(0, Some(EncodedHistograms::encode(&IntervalStats::default())));
        let lost = kept_segment(1, None);
        let all = Measured::of_points(&[readable, lost]);
        assert_eq!(all.segments.len(), 2, "both segments are in the trend");
        assert_eq!(all.unmerged, [2]);
        assert_eq!(all.measured_s, 10.0, "only the merged segment's time");
        assert_eq!(all.merged.read.ios(), 1);
        assert_eq!(all.segments[1].data_errors, 1);
    }

    #[test]
    fn the_sampler_ticks_at_once_and_once_more_when_stopped() {
        let ticks = Arc::new(Mutex::new(0));
        let counted = Arc::clone(&ticks);
        // A period no test waits out: only the first tick and the last one happen.
        let periodic =
            Periodic::start(Duration::from_secs(3600), move || *counted.lock().expect("lock") += 1)
                .expect("thread starts");
        periodic.stop();
        assert_eq!(*ticks.lock().expect("lock"), 2);
    }
}
