//! Every generation of fio's JSON, from 2.x to today's (issue 18): the same fio 3.33 run
//! reshaped as fio 2.x and fio 3.1 wrote their output (fixtures/generate_old.py), imported
//! and checked against the 3.33 original's figures.

use iolab_fio::{import, Imported};
use iolab_stats::result::LatencySummary;
use serde_json::Value;

fn load(name: &str) -> (String, Value) {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let doc = serde_json::from_str(&text).expect("fixture is JSON");
    (text, doc)
}

fn imported(name: &str) -> Imported {
    let (text, _) = load(name);
    import(&text, name).expect("imports")
}

fn latency(run: &Imported) -> &LatencySummary {
    run.points[0].summary.read.latency.as_ref().expect("has latency")
}

fn p(l: &LatencySummary, q: f64) -> Option<u64> {
    l.percentiles.iter().find(|x| x.p == q).map(|x| x.ns)
}

/// The 3.33 original's read side.
fn original() -> Value {
    load("uring_randread.jsonplus.json").1["jobs"][0]["read"].clone()
}

fn has_note(run: &Imported, words: &str) -> bool {
    run.notes.iter().any(|n| n.contains(words))
}

#[test]
fn fio_2x_json_is_read_in_nanoseconds_and_bytes() {
    let run = imported("fio2_randread.json");
    let read = &run.points[0].summary.read;
    let o = original();
    assert_eq!(read.ios, o["total_ios"].as_u64().expect("count"));
    assert_eq!(read.bytes, o["io_bytes"].as_u64().expect("bytes"), "io_bytes in KiB x 1024");
    assert_eq!(read.iops, o["iops"].as_f64().expect("iops"));
    // Derived from io_bytes and runtime: fio's own bw_bytes is the same, rounded down.
    let bw = o["bw_bytes"].as_f64().expect("bw");
    assert!((read.mb_s * 1e6 - bw).abs() < 1.0, "{} vs {bw}", read.mb_s * 1e6);
    let l = latency(&run);
    let us = |ns: &Value| (ns.as_f64().expect("ns") / 1000.0).round() as u64 * 1000;
    assert_eq!(l.min_ns, us(&o["clat_ns"]["min"]));
    assert_eq!(l.max_ns, us(&o["clat_ns"]["max"]));
    assert!((l.mean_ns - o["clat_ns"]["mean"].as_f64().expect("mean")).abs() < 1.0);
    assert_eq!(p(l, 50.0), Some(us(&o["clat_ns"]["percentile"]["50.000000"])));
    assert_eq!(p(l, 99.99).map(|ns| ns <= l.max_ns), Some(true));
    assert!(run.points[0].histograms.is_none());
    assert!(has_note(&run, "microseconds"), "{:?}", run.notes);
    assert!(has_note(&run, "io_bytes is in KiB"), "{:?}", run.notes);
    assert!(has_note(&run, "bw_bytes (fio 3.x from about 3.5) is missing"), "{:?}", run.notes);
    assert!(has_note(&run, "job_runtime"), "{:?}", run.notes);
    assert!(run.points[0].summary.cpu_us_per_io.is_some());
    assert_eq!(
        run.points[0].result,
        load("fio2_randread.json").1["jobs"][0],
        "fio's object is kept as written"
    );
}

#[test]
fn fio_2x_json_plus_bins_in_microseconds_give_every_percentile() {
    let run = imported("fio2_randread.jsonplus.json");
    let l = latency(&run);
    assert_eq!(l.percentiles.len(), 7);
    let decoded = run.points[0].histograms.as_ref().expect("bins kept").decode().expect("decodes");
    assert_eq!(decoded.read.ios(), original()["total_ios"].as_u64().expect("count"));
    // fio 2.x counted in whole microseconds: the percentiles are those of 3.33 to the µs.
    for q in [50.0, 90.0, 99.0] {
        let fio = original()["clat_ns"]["percentile"][format!("{q:.6}")].as_f64().expect("listed");
        let got = p(l, q).expect("given") as f64;
        assert!((got - fio).abs() <= fio * 0.01 + 1000.0, "p{q}: {got} vs {fio}");
    }
}

/// Regression (issue 18): fio 3.1's output was refused ("read.bw_bytes is missing").
#[test]
fn fio_31_output_without_bw_bytes_is_imported_not_refused() {
    let run = imported("fio31_randread.json");
    let read = &run.points[0].summary.read;
    let o = original();
    assert_eq!(
        (read.ios, read.bytes),
        (o["total_ios"].as_u64().expect("n"), o["io_bytes"].as_u64().expect("b"))
    );
    assert!((read.mb_s * 1e6 - o["bw_bytes"].as_f64().expect("bw")).abs() < 1.0);
    let l = latency(&run);
    let clat = &o["clat_ns"];
    assert_eq!(
        (l.min_ns, l.max_ns),
        (clat["min"].as_u64().expect("min"), clat["max"].as_u64().expect("max"))
    );
    assert_eq!(l.mean_ns, clat["mean"].as_f64().expect("mean"));
    assert_eq!(p(l, 99.0), clat["percentile"]["99.000000"].as_u64());
    assert!(has_note(&run, "bw_bytes"), "{:?}", run.notes);
    assert!(has_note(&run, "N (fio 3.x from about 3.12) is missing"), "{:?}", run.notes);
    assert!(!has_note(&run, "microseconds"), "3.1 is in ns already: {:?}", run.notes);
}

#[test]
fn todays_output_needs_nothing_derived() {
    let run = imported("uring_randread.jsonplus.json");
    assert!(!run.notes.iter().any(|n| n.contains("missing") || n.contains("fio 2.x")), "{:?}", run.notes);
}

#[test]
fn output_without_a_timestamp_is_dated_to_the_import() {
    let (_, mut doc) = load("fio2_randread.json");
    doc.as_object_mut().expect("object").remove("timestamp");
    let run = import(&doc.to_string(), "old.json").expect("imports");
    assert!(run.points[0].completed_at_unix_s > 1_700_000_000);
    assert!(has_note(&run, "no timestamp"), "{:?}", run.notes);
}
