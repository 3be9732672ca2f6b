//! A study's point measured again while another load disturbs it (`Lab::run_until_undisturbed`),
//! on the null engine, judged by a sink whose verdicts the test scripts.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;

use iolab_spec::{resolve, EngineKind, JobSpec, Nanos, Options};
use iolab_stats::result::{Bottleneck, JobResult, Verdict};

use crate::lab::OnFailedStart;
use crate::observer::{Observer, ProgressUpdate, ResultSink};
use crate::prepare::PreparedTarget;
use crate::Lab;

/// Answers the scripted causes in turn (then `Device`), and records what it was asked.
#[derive(Default)]
struct ScriptedSink {
    causes: VecDeque<Bottleneck>,
    kept: Vec<String>,
    forgotten: u32,
    amended: Vec<usize>,
}

impl ResultSink for ScriptedSink {
    fn keep_and_judge(&mut self, _job: &JobSpec, result: &JobResult) -> Verdict {
        self.kept.push(result.name.clone());
        let cause = self.causes.pop_front().unwrap_or(Bottleneck::Device);
        Verdict::of(cause, format!("scripted {}", cause.name()), Vec::new())
    }

    fn amend_and_judge(&mut self, index: usize, result: &JobResult) -> Verdict {
        self.amended.push(index);
        result.verdict.clone()
    }

    fn forget_last(&mut self) {
        self.kept.pop();
        self.forgotten += 1;
    }
}

#[derive(Default)]
struct Notes(Vec<String>);

impl Observer for Notes {
    fn progress(&mut self, _: &ProgressUpdate<'_>) {}
    fn note(&mut self, text: &str) {
        self.0.push(text.to_string());
    }
}

fn null_job(dir: &std::path::Path) -> iolab_spec::RunPlan {
    let flags = Options {
        engine: Some(EngineKind::Null),
        target: Some(vec![dir.join("t")]),
        size: Some(iolab_spec::Bytes(1 << 20)),
        runtime: Some(Nanos::from_millis(50)),
        ramp: Some(Nanos(0)),
        ..Options::default()
    };
    resolve(None, &flags).expect("a null job")
}

fn attempts(causes: &[Bottleneck], retries: u32) -> (ScriptedSink, Notes, Vec<JobResult>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = null_job(dir.path());
    let interrupt = AtomicBool::new(false);
    let mut sink = ScriptedSink { causes: causes.iter().copied().collect(), ..ScriptedSink::default() };
    let mut notes = Notes::default();
    let jobs = {
        let mut lab = Lab::open(&plan, OnFailedStart::Stop, &interrupt, &mut notes).expect("lab");
        lab.keep_results_in(&mut sink);
        let job = &plan.jobs[0];
        let targets: Vec<Vec<PreparedTarget>> = lab.prepare(job, &mut notes).expect("targets");
        lab.run_until_undisturbed(job, &targets, retries, &mut notes).expect("ran");
        lab.jobs().to_vec()
    };
    (sink, notes, jobs)
}

#[test]
fn a_disturbed_attempt_is_dropped_and_measured_again_until_one_is_not() {
    let (sink, notes, jobs) = attempts(&[Bottleneck::OtherLoad, Bottleneck::Steal], 2);
    assert_eq!((sink.kept.len(), sink.forgotten), (1, 2), "three attempts, the first two dropped");
    assert_eq!(jobs.len(), 1, "the lab holds the last attempt only");
    assert_eq!(jobs[0].verdict.cause, Bottleneck::Device);
    let dropped: Vec<Bottleneck> = jobs[0].disturbed_attempts.iter().map(|a| a.cause).collect();
    assert_eq!(dropped, [Bottleneck::OtherLoad, Bottleneck::Steal]);
    assert_eq!(jobs[0].disturbed_attempts[0].summary, "scripted another load");
    assert_eq!(sink.amended, [0], "the kept result is amended with the dropped attempts");
    let said: Vec<&String> = notes.0.iter().filter(|n| n.contains("measured again")).collect();
    assert_eq!(said.len(), 2, "{:?}", notes.0);
    assert!(said[0].contains("(1 of 2): scripted another load"), "{said:?}");
}

#[test]
fn a_point_still_disturbed_after_its_retries_is_kept_as_it_is() {
    let (sink, _, jobs) = attempts(&[Bottleneck::OtherLoad; 3], 2);
    assert_eq!((sink.kept.len(), sink.forgotten), (1, 2));
    assert_eq!(jobs[0].verdict.cause, Bottleneck::OtherLoad, "the last attempt, still disturbed");
    assert_eq!(jobs[0].disturbed_attempts.len(), 2);
}

#[test]
fn without_retries_or_disturbance_one_attempt_is_kept_untouched() {
    let (sink, notes, jobs) = attempts(&[Bottleneck::OtherLoad], 0);
    assert_eq!((sink.kept.len(), sink.forgotten, sink.amended.len()), (1, 0, 0));
    assert!(jobs[0].disturbed_attempts.is_empty());
    assert!(notes.0.iter().all(|n| !n.contains("measured again")), "{:?}", notes.0);
    let (sink, _, jobs) = attempts(&[Bottleneck::Device], 2);
    assert_eq!((sink.kept.len(), sink.forgotten, sink.amended.len()), (1, 0, 0));
    assert!(jobs[0].disturbed_attempts.is_empty());
}
