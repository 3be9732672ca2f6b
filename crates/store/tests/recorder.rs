//! One run kept from its start to its end (`Recorder`): what is kept as it is measured, what an
//! abandoned run leaves, what a resumed one keeps, and an import that is whole or nothing.

use iolab_stats::OpStats;
use iolab_store::{NewRun, Point, PointSummary, Recorder, RunStatus, Store};
use serde_json::json;

fn new_run() -> NewRun {
    NewRun::starting_now("sweep", "sweep test".into(), json!([]), json!({}))
}

fn point(seq: u32, name: &str) -> Point {
    let none = OpStats::default().summary(1.0, &[]);
    Point {
        seq,
        name: name.to_string(),
        source: "iolab".into(),
        completed_at_unix_s: 1,
        spec: json!({}),
        summary: PointSummary {
            engine: "null".into(),
            access: "randread 4KiB".into(),
            qd: 1,
            workers: 1,
            targets: Vec::new(),
            measured_s: 1.0,
            read: none.clone(),
            write: none.clone(),
            total: none,
            cpu_us_per_io: None,
            stop_reason: "io_limit".into(),
        },
        series: Vec::new(),
        verdict: None,
        histograms: None,
        result: json!({}),
    }
}

fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("db.sqlite")).expect("opens")
}

#[test]
fn points_are_numbered_as_handed_in_and_a_finished_run_says_what_it_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut recorder = Recorder::begin(store(&dir), &new_run()).expect("begun");
    let run = recorder.run();
    assert_eq!(recorder.keep("'a'", |seq| point(seq, "a")).expect("kept"), 0);
    assert_eq!(recorder.keep("'b'", |seq| point(seq, "b")).expect("kept"), 1);
    // An attempt measured again is taken back; the next point takes its place.
    recorder.forget_last().expect("forgotten");
    assert_eq!(recorder.keep("'c'", |seq| point(seq, "c")).expect("kept"), 1);
    let finished = recorder.finish(RunStatus::Complete, Some(json!({"report": 1})), None);
    assert!(finished.complete(), "{finished:?}");
    assert_eq!((finished.run, finished.points), (run, 2));

    let stored = store(&dir).run(run).expect("stored");
    assert_eq!(stored.info.status, RunStatus::Complete);
    let names: Vec<String> = store(&dir).points(run).expect("points").into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["a", "c"]);
}

#[test]
fn a_point_that_cannot_be_written_is_lost_and_named_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut recorder = Recorder::begin(store(&dir), &new_run()).expect("begun");
    recorder.keep("'a'", |seq| point(seq, "a")).expect("kept");
    // A second point at sequence 0 cannot be written (the run already holds one).
    assert!(recorder.keep("'dup'", |_| point(0, "dup")).is_err());
    assert_eq!(recorder.keep("'b'", |seq| point(seq, "b")).expect("kept"), 2);
    let finished = recorder.finish(RunStatus::Complete, None, None);
    assert!(!finished.complete());
    assert_eq!(finished.lost, ["'dup'"]);
    assert_eq!(finished.points, 3);
}

#[test]
fn an_abandoned_run_is_forgotten_when_it_measured_nothing_and_failed_when_it_did() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = Recorder::begin(store(&dir), &new_run()).expect("begun");
    let empty_run = empty.run();
    empty.abandon().expect("abandoned");
    assert!(store(&dir).run(empty_run).is_err(), "a run that measured nothing is gone");

    let mut measured = Recorder::begin(store(&dir), &new_run()).expect("begun");
    measured.keep("'a'", |seq| point(seq, "a")).expect("kept");
    let run = measured.run();
    // Dropped without finishing (an error between points): the same policy, silently.
    drop(measured);
    assert_eq!(store(&dir).run(run).expect("kept").info.status, RunStatus::Failed);
}

#[test]
fn a_resumed_run_keeps_its_first_points_and_stays_resumable_when_abandoned() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut first = Recorder::begin(store(&dir), &new_run()).expect("begun");
    let run = first.run();
    for name in ["a", "b", "c"] {
        first.keep(name, |seq| point(seq, name)).expect("kept");
    }
    drop(first.finish(RunStatus::Interrupted, None, None));

    // The third point was cut short: measured again.
    let mut again = Recorder::resume(store(&dir), run, 2).expect("resumed");
    assert_eq!(store(&dir).run(run).expect("stored").info.status, RunStatus::Running);
    assert_eq!(store(&dir).points(run).expect("points").len(), 2);
    assert_eq!(again.keep("'c'", |seq| point(seq, "c")).expect("kept"), 2);
    drop(again);
    assert_eq!(store(&dir).run(run).expect("kept").info.status, RunStatus::Interrupted);

    // Abandoned before its first new point, a resumed run is still not forgotten.
    let untouched = Recorder::resume(store(&dir), run, 3).expect("resumed");
    untouched.abandon().expect("abandoned");
    assert_eq!(store(&dir).run(run).expect("kept").info.status, RunStatus::Interrupted);
}

#[test]
fn samples_go_through_a_connection_of_their_own() {
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = Recorder::begin(store(&dir), &new_run()).expect("begun");
    let mut sampler = recorder.sampler().expect("second connection");
    std::thread::scope(|scope| {
        scope.spawn(|| sampler.add("health", 5, &json!({"t": 5})).expect("kept"));
    });
    assert_eq!(store(&dir).samples(recorder.run(), "health").expect("read"), [json!({"t": 5})]);
}

#[test]
fn an_import_is_kept_whole_or_not_at_all() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = store(&dir);
    let end = iolab_store::RunEnd {
        status: RunStatus::Complete,
        finished_at_unix_s: 2,
        report: None,
        environment_after: None,
    };
    let run = Recorder::import(&mut db, &new_run(), &[point(0, "a"), point(1, "b")], &end).expect("imported");
    assert_eq!(db.points(run).expect("points").len(), 2);

    // Its second point cannot be written: nothing of it stays.
    let before = db.runs().expect("runs").len();
    assert!(Recorder::import(&mut db, &new_run(), &[point(0, "a"), point(0, "again")], &end).is_err());
    assert_eq!(db.runs().expect("runs").len(), before);
}
