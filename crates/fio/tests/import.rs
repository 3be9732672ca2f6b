//! Imports real fio 3.33 outputs (tests/fixtures, made by generate.sh) and checks every figure
//! against the file itself: the expected values are read from fio's JSON, never typed in.

use iolab_fio::{import, FioImportError, Imported};
use iolab_stats::result::{LatencySummary, OpSummary};
use iolab_stats::PERCENTILES;
use serde_json::Value;

fn fixture(name: &str) -> (String, Value) {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    // The test finds the JSON on its own: the first line that opens with '{'.
    let start = text.lines().take_while(|l| !l.starts_with('{')).map(|l| l.len() + 1).sum::<usize>();
    let doc = serde_json::from_str(&text[start..]).expect("fixture is JSON after fio's notes");
    (text, doc)
}

fn imported(name: &str) -> (Imported, Value) {
    let (text, doc) = fixture(name);
    (import(&text, name).expect("imports"), doc)
}

fn latency(op: &OpSummary) -> &LatencySummary {
    op.latency.as_ref().expect("has latency")
}

fn p(latency: &LatencySummary, p: f64) -> Option<u64> {
    latency.percentiles.iter().find(|x| x.p == p).map(|x| x.ns)
}

/// fio's listed percentiles ("99.000000" -> ns) of one direction.
fn fio_percentiles(side: &Value) -> Vec<(f64, u64)> {
    side["clat_ns"]["percentile"]
        .as_object()
        .expect("fio lists percentiles")
        .iter()
        .map(|(k, v)| (k.parse().expect("a number"), v.as_u64().expect("ns")))
        .collect()
}

/// Counts, rates and clat moments are fio's, exactly.
fn assert_side_matches(op: &OpSummary, side: &Value) {
    assert_eq!(op.ios, side["total_ios"].as_u64().expect("in fio's JSON"));
    assert_eq!(op.bytes, side["io_bytes"].as_u64().expect("in fio's JSON"));
    assert_eq!(op.iops, side["iops"].as_f64().expect("in fio's JSON"));
    assert_eq!(op.mb_s, side["bw_bytes"].as_f64().expect("in fio's JSON") / 1e6);
    assert_eq!(op.mib_s, side["bw_bytes"].as_f64().expect("in fio's JSON") / 1048576.0);
    let clat = &side["clat_ns"];
    let l = latency(op);
    assert_eq!(
        (l.min_ns, l.max_ns),
        (clat["min"].as_u64().expect("in fio's JSON"), clat["max"].as_u64().expect("in fio's JSON"))
    );
    assert_eq!(
        (l.mean_ns, l.stdev_ns),
        (clat["mean"].as_f64().expect("in fio's JSON"), clat["stddev"].as_f64().expect("in fio's JSON"))
    );
}

/// Largest relative gap between the percentiles rebuilt from json+ bins and fio's own list,
/// clamped to fio's exact min and max as the import clamps them (fio reports a bucket's middle,
/// which can lie past the largest latency).
fn worst_percentile_gap(histograms: &iolab_stats::OpStats, side: &Value) -> f64 {
    let (min, max) = (
        side["clat_ns"]["min"].as_u64().expect("in fio's JSON"),
        side["clat_ns"]["max"].as_u64().expect("in fio's JSON"),
    );
    let gap = fio_percentiles(side)
        .iter()
        .map(|&(q, fio)| {
            let fio = fio.clamp(min, max) as f64;
            (histograms.percentile_ns(q) as f64 - fio).abs() / fio
        })
        .fold(0.0, f64::max);
    eprintln!("largest gap to fio's percentiles: {:.4}%", gap * 100.0);
    gap
}

#[test]
fn json_plus_matches_fio_and_rebuilds_the_histogram() {
    let (run, doc) = imported("uring_randread.jsonplus.json");
    let job = &doc["jobs"][0];
    assert_eq!(run.run.kind, "fio");
    assert_eq!(run.points.len(), 1);
    let point = &run.points[0];
    assert_eq!((point.name.as_str(), point.source.as_str()), ("randread", "fio"));
    let s = &point.summary;
    assert_side_matches(&s.read, &job["read"]);
    assert_eq!(s.total, s.read, "a read-only job's total is its reads");
    assert_eq!(s.write.ios, 0);
    assert!(s.write.latency.is_none());
    assert_eq!((s.engine.as_str(), s.access.as_str(), s.qd, s.workers), ("uring", "4KiB random read", 8, 1));
    assert_eq!(s.targets, [job["job options"]["filename"].as_str().expect("in fio's JSON")]);
    assert_eq!(s.measured_s, job["read"]["runtime"].as_f64().expect("in fio's JSON") / 1000.0);
    let cpu = (job["usr_cpu"].as_f64().expect("in fio's JSON")
        + job["sys_cpu"].as_f64().expect("in fio's JSON"))
        / 100.0
        * job["job_runtime"].as_f64().expect("in fio's JSON")
        * 1000.0
        / s.read.ios as f64;
    assert_eq!(s.cpu_us_per_io, Some(cpu));
    assert_eq!(s.stop_reason, "runtime");
    assert!(point.series.is_empty() && point.verdict.is_none());
    assert_eq!(&point.result, job, "the job's object is kept unchanged");

    let l = latency(&s.read);
    assert_eq!(l.percentiles.len(), PERCENTILES.len(), "json+ gives every percentile");
    assert_eq!(l.within.len(), 2);
    let decoded = point.histograms.as_ref().expect("json+ has bins").decode().expect("decodes");
    let n = job["read"]["clat_ns"]["N"].as_u64().expect("in fio's JSON");
    assert_eq!(decoded.read.ios(), n);
    // The rebuilt sum carries only the rounding of fio's printed mean.
    assert!((decoded.read.mean_ns() - l.mean_ns).abs() <= 0.5 / n as f64 + 1e-6);
    for percentile in &l.percentiles {
        assert_eq!(percentile.ns, decoded.read.percentile_ns(percentile.p));
    }
    // fio's percentiles come from the same bins, so only the histogram's 0.1% separates them.
    let gap = worst_percentile_gap(&decoded.read, &job["read"]);
    assert!(gap <= 0.001, "rebuilt percentiles {:.4}% from fio's", gap * 100.0);
}

#[test]
fn json_and_json_plus_of_one_run_agree() {
    let (plain, doc) = imported("uring_randread.json");
    let (plus, _) = imported("uring_randread.jsonplus.json");
    let (a, b) = (&plain.points[0].summary, &plus.points[0].summary);
    assert_side_matches(&a.read, &doc["jobs"][0]["read"]);
    let (la, lb) = (latency(&a.read), latency(&b.read));
    assert_eq!((a.read.ios, a.read.bytes, a.read.iops), (b.read.ios, b.read.bytes, b.read.iops));
    assert_eq!(
        (la.min_ns, la.max_ns, la.mean_ns, la.stdev_ns),
        (lb.min_ns, lb.max_ns, lb.mean_ns, lb.stdev_ns)
    );
    assert!(plain.points[0].histograms.is_none());
    // Plain json: fio's list, which stops at p99.99.
    let listed: Vec<f64> = la.percentiles.iter().map(|x| x.p).collect();
    assert_eq!(listed, [50.0, 90.0, 99.0, 99.9, 99.99]);
    for q in listed {
        let (x, y) = (p(la, q).expect("listed") as f64, p(lb, q).expect("listed") as f64);
        assert!((x - y).abs() / x <= 0.01, "p{q}: json {x} json+ {y}");
    }
    // Within 1 and 2 ms: fio's buckets against the bins, to the buckets' 0.01% rounding.
    for (x, y) in la.within.iter().zip(&lb.within) {
        assert_eq!(x.threshold_ns, y.threshold_ns);
        assert!((x.pct - y.pct).abs() <= 0.15, "within {}: {} vs {}", x.threshold_ns, x.pct, y.pct);
    }
    assert_eq!(la.within.len(), 2);
    assert!(plain.notes.iter().any(|n| n.contains("p99.9999")), "{:?}", plain.notes);
    assert!(plain.notes.iter().any(|n| n.contains("clat_ns")));
}

#[test]
fn a_grouped_mix_merges_reads_and_writes_exactly() {
    let (run, doc) = imported("randrw_group.jsonplus.json");
    let job = &doc["jobs"][0];
    assert_eq!(run.points.len(), 1, "group_reporting: one entry for numjobs=2");
    let s = &run.points[0].summary;
    assert_eq!((s.workers, s.qd, s.engine.as_str()), (2, 1, "psync"));
    assert_eq!(s.access, "4KiB random 70% read");
    assert_side_matches(&s.read, &job["read"]);
    assert_side_matches(&s.write, &job["write"]);
    assert_eq!(s.total.ios, s.read.ios + s.write.ios);
    assert_eq!(s.total.bytes, s.read.bytes + s.write.bytes);
    assert_eq!(s.total.iops, s.read.iops + s.write.iops);
    // job_runtime adds up the two jobs; each direction's runtime is the longest one.
    assert_eq!(job["job_runtime"].as_u64(), Some(2000));
    assert_eq!(s.measured_s, job["read"]["runtime"].as_f64().expect("in fio's JSON") / 1000.0);

    let decoded = run.points[0].histograms.as_ref().expect("bins").decode().expect("decodes");
    let all = decoded.combined();
    let total = latency(&s.total);
    assert_eq!(all.ios(), s.total.ios);
    for percentile in &total.percentiles {
        assert_eq!(percentile.ns, all.percentile_ns(percentile.p), "total percentiles from the merged bins");
    }
    let (r, w) = (latency(&s.read), latency(&s.write));
    assert_eq!(total.min_ns, r.min_ns.min(w.min_ns));
    assert_eq!(total.max_ns, r.max_ns.max(w.max_ns));
    let mean = (r.mean_ns * s.read.ios as f64 + w.mean_ns * s.write.ios as f64) / s.total.ios as f64;
    assert!((total.mean_ns - mean).abs() < 1e-6);
    for (side, name) in [(&decoded.read, "read"), (&decoded.write, "write")] {
        let gap = worst_percentile_gap(side, &job[name]);
        assert!(gap <= 0.001, "{name}: rebuilt percentiles {:.4}% from fio's", gap * 100.0);
    }
    assert!(run.notes.iter().any(|n| n.contains("group_reporting")), "{:?}", run.notes);
}

/// Without bins a mix has no total percentiles (they cannot come from the parts'), but its
/// extremes, pooled mean and stdev, and fio's bucket shares.
#[test]
fn a_mix_without_bins_keeps_only_exact_totals() {
    let (_, mut doc) = fixture("randrw_group.jsonplus.json");
    for side in ["read", "write"] {
        doc["jobs"][0][side]["clat_ns"].as_object_mut().expect("in fio's JSON").remove("bins");
    }
    let run = import(&doc.to_string(), "stripped.json").expect("imports");
    let s = &run.points[0].summary;
    assert!(run.points[0].histograms.is_none());
    let (r, w, t) = (latency(&s.read), latency(&s.write), latency(&s.total));
    assert!(t.percentiles.is_empty());
    assert!(r.within.is_empty() && w.within.is_empty(), "the buckets mix reads and writes");
    assert_eq!(t.within.len(), 2);
    let (plus, _) = imported("randrw_group.jsonplus.json");
    let plus_total = latency(&plus.points[0].summary.total);
    assert_eq!((t.min_ns, t.max_ns), (plus_total.min_ns, plus_total.max_ns));
    assert!((t.mean_ns - plus_total.mean_ns).abs() < 1e-6 && (t.stdev_ns - plus_total.stdev_ns).abs() < 1e-6);
    for (x, y) in t.within.iter().zip(&plus_total.within) {
        assert!((x.pct - y.pct).abs() <= 0.15, "within {}: {} vs {}", x.threshold_ns, x.pct, y.pct);
    }
}

#[test]
fn several_jobs_after_fios_notes() {
    let (text, doc) = fixture("three_jobs.json");
    assert!(text.starts_with("note:"), "fio printed notes before its JSON");
    let run = import(&text, "three_jobs.json").expect("imports");
    let names: Vec<&str> = run.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["reader", "writer.0", "writer.1"]);
    let seqs: Vec<u32> = run.points.iter().map(|p| p.seq).collect();
    assert_eq!(seqs, [0, 1, 2]);
    let reader = &run.points[0].summary;
    assert_eq!((reader.engine.as_str(), reader.qd, reader.access.as_str()), ("aio", 4, "4KiB random read"));
    for (point, job) in run.points.iter().zip(doc["jobs"].as_array().expect("in fio's JSON")) {
        assert_side_matches(
            &point.summary.total,
            &job[if point.name == "reader" { "read" } else { "write" }],
        );
    }
    let writer = &run.points[1].summary;
    assert_eq!((writer.engine.as_str(), writer.qd, writer.workers), ("psync", 1, 1));
    assert_eq!(writer.access, "64KiB sequential write");
    assert!(run.notes.iter().any(|n| n.contains("iodepth=4 has no effect")), "{:?}", run.notes);
    assert_eq!(run.run.command.iter().filter(|a| *a == "--name=writer").count(), 1);
    assert!(run.run.label.starts_with(doc["fio version"].as_str().expect("in fio's JSON")));
    assert_eq!(run.run.plan["jobs"].as_array().map(Vec::len), Some(3));
    let timestamp = doc["timestamp"].as_i64().expect("in fio's JSON");
    assert!(run.points.iter().all(|p| p.completed_at_unix_s == timestamp));
    assert!(run.run.started_at_unix_s < timestamp);
    assert_eq!(run.run.environment["disk_util"], doc["disk_util"]);
}

#[test]
fn trims_are_left_out_with_a_note() {
    let (run, doc) = imported("trimwrite.json");
    let s = &run.points[0].summary;
    assert!(doc["jobs"][0]["trim"]["total_ios"].as_u64().expect("in fio's JSON") > 0);
    assert_eq!(s.total, s.write);
    assert_eq!(s.access, "4KiB sequential write and trim");
    assert!(latency(&s.write).within.is_empty(), "fio's buckets count the trims too");
    assert!(run.notes.iter().any(|n| n.contains("trims are not imported")), "{:?}", run.notes);
}

#[test]
fn a_failed_job_says_so() {
    let (run, doc) = imported("error.json");
    let code = doc["jobs"][0]["error"].as_i64().expect("in fio's JSON");
    assert_ne!(code, 0);
    assert_eq!(run.points[0].summary.stop_reason, "io_error");
    assert!(
        run.notes.iter().any(|n| n.contains(&format!("error {code} (Invalid argument)"))),
        "{:?}",
        run.notes
    );
}

#[test]
fn client_server_results_carry_the_host() {
    let (run, doc) = imported("client.json");
    let client = &doc["client_stats"][0];
    assert_eq!(run.run.host, client["hostname"].as_str().expect("in fio's JSON"));
    assert_eq!(run.points.len(), 1);
    let s = &run.points[0].summary;
    assert_eq!((s.engine.as_str(), s.qd), ("uring", 4));
    assert_side_matches(&s.read, &client["read"]);
}

#[test]
fn the_import_goes_into_the_store() {
    let (run, _) = imported("randrw_group.jsonplus.json");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = iolab_store::Store::open(&dir.path().join("results.db")).expect("opens");
    let id = store.begin_run(&run.run).expect("begins");
    for point in &run.points {
        store.add_point(id, point).expect("adds");
    }
    let stored = store.run(id).expect("reads back");
    assert_eq!(stored.info.kind, "fio");
    assert_eq!(stored.points, run.points);
}

fn error(text: &str) -> String {
    let err: FioImportError = import(text, "result.json").expect_err("refused");
    err.to_string()
}

#[test]
fn what_is_not_fio_json_is_refused_clearly() {
    assert!(error("fio: no such file\n").contains("result.json holds no JSON object"));
    assert!(
        error("{\"jobs\": []}").contains("result.json is not fio's JSON output: it has no \"fio version\"")
    );
    assert!(error("{\"fio version\": \"fio-3.33\", \"timestamp\": 1}").contains("no \"jobs\""));
    assert!(
        error("{\"fio version\": \"fio-3.33\", \"timestamp\": 1, \"jobs\": []}").contains("holds no jobs")
    );
    let (text, mut doc) = fixture("uring_randread.json");
    assert!(error(&text[..text.len() / 2]).contains("does not parse"));
    doc["jobs"][0]["read"].as_object_mut().expect("in fio's JSON").remove("total_ios");
    let message = error(&doc.to_string());
    assert!(message.contains("job 'randread': \"read.total_ios\" is missing"), "{message}");
    doc["jobs"][0]["read"]["total_ios"] = Value::from("many");
    assert!(error(&doc.to_string()).contains("\"read.total_ios\" is not a whole number"));
}
