//! Stored runs built from real iolab (and fio) JSON output in tests/fixtures, as the store would
//! hold them. See tests/fixtures/README.md for how each file was made.
//!
//! The JSON carries no histograms (they are not part of the run schema), so each point gets one
//! synthesized from its own summary: latencies spread over the reported percentiles, min and max.

#![allow(dead_code)]

use std::path::Path;

use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::result::{LatencySummary, OpSummary, Percentile, SeriesPoint, Verdict};
use iolab_stats::{IntervalStats, OpStats};
use iolab_store::{Point, PointSummary, RunInfo, RunStatus, StoredRun};
use serde_json::{json, Value};

/// Points synthesized histograms hold at most: enough for a smooth chart, quick to record.
const HISTOGRAM_SAMPLES: u64 = 20_000;

pub fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Run `id` of `kind` from an iolab `--json` file: a study's `{schema, summary, run}` (kept
/// whole as the report, as the CLI stores it) or a plain run's report (no study report).
pub fn iolab_run(id: i64, kind: &str, file: &str) -> StoredRun {
    let doc = fixture(file);
    let (run, report) = match doc.get("run") {
        Some(run) => (run.clone(), Some(doc.clone())),
        None => (doc.clone(), None),
    };
    let jobs = run["jobs"].as_array().cloned().unwrap_or_default();
    let started = run["started_at_unix_s"].as_i64().unwrap_or(0);
    let points: Vec<Point> =
        jobs.iter().enumerate().map(|(seq, job)| point(seq as u32, job, started)).collect();
    let access = points.first().map_or(String::new(), |p| p.summary.access.clone());
    let host = &run["host"];
    StoredRun {
        info: RunInfo {
            id,
            kind: kind.to_string(),
            label: format!("{kind} {access} on a scratch file"),
            command: vec!["iolab".into(), kind.into(), "--json".into()],
            iolab_version: run["iolab_version"].as_str().unwrap_or("0.1.0").to_string(),
            host: host["hostname"].as_str().unwrap_or_default().to_string(),
            started_at_unix_s: started,
            finished_at_unix_s: Some(started + points.len() as i64),
            status: RunStatus::Complete,
            points: points.len(),
        },
        plan: Value::Array(jobs.iter().map(|j| j["spec"].clone()).collect()),
        environment: json!({
            "host": host.clone(),
            "kernel": host["kernel"].clone(),
            "cpus": host["cpus"].clone(),
            "governors": ["schedutil", "schedutil"],
            "warnings": [],
        }),
        environment_after: None,
        report,
        points,
    }
}

fn point(seq: u32, job: &Value, started: i64) -> Point {
    let group = &job["groups"][0];
    let op = |name: &str| -> OpSummary {
        serde_json::from_value(job[name].clone()).unwrap_or_else(|e| panic!("job {name}: {e}"))
    };
    let (read, write, total) = (op("read"), op("write"), op("total"));
    let stats = IntervalStats {
        read: synthesize(&read),
        write: synthesize(&write),
        response: None,
        ..Default::default()
    };
    Point {
        seq,
        name: job["name"].as_str().unwrap_or_default().to_string(),
        source: "iolab".into(),
        completed_at_unix_s: started + i64::from(seq),
        spec: job["spec"].clone(),
        summary: PointSummary {
            engine: group["engine"].as_str().unwrap_or_default().to_string(),
            access: group["access"].as_str().unwrap_or_default().to_string(),
            qd: group["qd"].as_u64().unwrap_or(0) as u32,
            workers: job["groups"]
                .as_array()
                .map_or(0, |g| g.iter().map(|g| g["workers"].as_u64().unwrap_or(0) as u32).sum()),
            targets: group["targets"]
                .as_array()
                .map(|t| t.iter().filter_map(|t| t["path"].as_str().map(String::from)).collect())
                .unwrap_or_default(),
            measured_s: job["measured_s"].as_f64().unwrap_or(0.0),
            cpu_us_per_io: (total.ios > 0).then(|| job["cpu"]["us_per_io"].as_f64()).flatten(),
            read,
            write,
            total,
            stop_reason: job["stop_reason"].as_str().unwrap_or_default().to_string(),
        },
        series: serde_json::from_value::<Vec<SeriesPoint>>(job["series"].clone()).expect("series"),
        verdict: serde_json::from_value::<Verdict>(job["verdict"].clone()).ok(),
        histograms: Some(EncodedHistograms::encode(&stats)),
        result: job.clone(),
    }
}

/// Latencies whose distribution matches `op`'s summary: the i-th of n at quantile (i + 0.5) / n,
/// interpolated geometrically between the reported percentiles (with min at 0% and max at
/// 100%), as latencies spread: evenly on a log scale more than on a linear one.
fn synthesize(op: &OpSummary) -> OpStats {
    let mut stats = OpStats::default();
    let Some(latency) = &op.latency else { return stats };
    let mut knots: Vec<(f64, f64)> = vec![(0.0, latency.min_ns as f64)];
    knots.extend(latency.percentiles.iter().map(|p| (p.p, p.ns as f64)));
    knots.push((100.0, latency.max_ns as f64));
    let n = op.ios.clamp(1, HISTOGRAM_SAMPLES);
    let bytes = op.bytes / op.ios.max(1);
    for i in 0..n {
        let q = (i as f64 + 0.5) / n as f64 * 100.0;
        let k = knots.windows(2).find(|w| q <= w[1].0).unwrap_or(&knots[knots.len() - 2..]);
        let ((p0, v0), (p1, v1)) = (k[0], k[1]);
        let share = if p1 > p0 { (q - p0) / (p1 - p0) } else { 0.0 };
        let (v0, v1) = (v0.max(1.0), v1.max(1.0));
        stats.record((v0 * (v1 / v0).powf(share)).round() as u64, bytes);
    }
    stats
}

/// A fio `--output-format=json` result as an import would store it: percentiles and means,
/// no series, CPU per I/O, verdict or histograms.
pub fn fio_run(id: i64, file: &str) -> StoredRun {
    let doc = fixture(file);
    let started = doc["timestamp"].as_i64().unwrap_or(0);
    let points: Vec<Point> = doc["jobs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(seq, job)| {
            let (read, write) = (fio_op(&job["read"]), fio_op(&job["write"]));
            let total = OpSummary {
                ios: read.ios + write.ios,
                bytes: read.bytes + write.bytes,
                iops: read.iops + write.iops,
                mb_s: read.mb_s + write.mb_s,
                mib_s: read.mib_s + write.mib_s,
                latency: if write.ios == 0 { read.latency.clone() } else { None },
            };
            let options = &job["job options"];
            Point {
                seq: seq as u32,
                name: job["jobname"].as_str().unwrap_or_default().to_string(),
                source: "fio".into(),
                completed_at_unix_s: started,
                spec: options.clone(),
                summary: PointSummary {
                    engine: options["ioengine"].as_str().unwrap_or("fio").to_string(),
                    access: format!(
                        "{} {}",
                        options["rw"].as_str().unwrap_or("?"),
                        options["bs"].as_str().unwrap_or("")
                    ),
                    qd: options["iodepth"].as_str().and_then(|d| d.parse().ok()).unwrap_or(1),
                    workers: 1,
                    targets: options["filename"].as_str().map(String::from).into_iter().collect(),
                    measured_s: job["job_runtime"].as_f64().unwrap_or(0.0) / 1e3,
                    read,
                    write,
                    total,
                    cpu_us_per_io: None,
                    stop_reason: "runtime".into(),
                },
                series: Vec::new(),
                verdict: None,
                histograms: None,
                result: job.clone(),
            }
        })
        .collect();
    StoredRun {
        info: RunInfo {
            id,
            kind: "fio".into(),
            label: "fio import".into(),
            command: vec!["iolab".into(), "import".into(), "fio".into(), file.into()],
            iolab_version: "0.1.0".into(),
            host: String::new(),
            started_at_unix_s: started,
            finished_at_unix_s: Some(started),
            status: RunStatus::Complete,
            points: points.len(),
        },
        plan: Value::Null,
        environment: json!({}),
        environment_after: None,
        report: None,
        points,
    }
}

fn fio_op(op: &Value) -> OpSummary {
    let ios = op["total_ios"].as_u64().unwrap_or(0);
    let bw = op["bw_bytes"].as_f64().unwrap_or(0.0);
    let lat = &op["lat_ns"];
    let percentiles = op["clat_ns"]["percentile"]
        .as_object()
        .map(|table| {
            iolab_stats::PERCENTILES
                .iter()
                .filter_map(|&p| {
                    table.get(&format!("{p:.6}")).and_then(Value::as_u64).map(|ns| Percentile { p, ns })
                })
                .collect()
        })
        .unwrap_or_default();
    OpSummary {
        ios,
        bytes: op["io_bytes"].as_u64().unwrap_or(0),
        iops: op["iops"].as_f64().unwrap_or(0.0),
        mb_s: bw / 1e6,
        mib_s: bw / 1048576.0,
        latency: (ios > 0).then(|| LatencySummary {
            min_ns: lat["min"].as_u64().unwrap_or(0),
            mean_ns: lat["mean"].as_f64().unwrap_or(0.0),
            stdev_ns: lat["stddev"].as_f64().unwrap_or(0.0),
            max_ns: lat["max"].as_u64().unwrap_or(0),
            percentiles,
            within: Vec::new(),
            tail: None,
        }),
    }
}

/// Every fixture, one run each, numbered from 1: what the full report test overlays.
pub fn all_runs() -> Vec<StoredRun> {
    vec![
        iolab_run(1, "sweep", "sweep.json"),
        iolab_run(2, "sweep", "sweep_bs.json"),
        iolab_run(3, "sweep", "sweep_steady.json"),
        iolab_run(4, "steady", "steady.json"),
        iolab_run(5, "cliff", "cliff.json"),
        iolab_run(6, "cliff", "cliff_flat.json"),
        iolab_run(7, "run", "run.json"),
        iolab_run(8, "run", "run_rw.json"),
        iolab_run(9, "ramp", "ramp.json"),
        fio_run(10, "fio.json"),
    ]
}

/// A run exported by `iolab results export ID --format json` (trimmed by trim_export.py): the
/// stored run exactly as the store keeps it, histograms included.
pub fn stored_run(file: &str) -> StoredRun {
    let doc = fixture(file);
    let field = |name: &str| doc.get(name).cloned().unwrap_or(Value::Null);
    let text = |name: &str| doc[name].as_str().unwrap_or_default().to_string();
    StoredRun {
        info: RunInfo {
            id: doc["id"].as_i64().expect("an id"),
            kind: text("kind"),
            label: text("label"),
            command: serde_json::from_value(field("command")).unwrap_or_default(),
            iolab_version: text("iolab_version"),
            host: text("host"),
            started_at_unix_s: doc["started_at_unix_s"].as_i64().unwrap_or(0),
            finished_at_unix_s: doc["finished_at_unix_s"].as_i64(),
            status: serde_json::from_value(field("status")).unwrap_or(RunStatus::Complete),
            points: doc["points"].as_array().map_or(0, Vec::len),
        },
        plan: field("plan"),
        environment: field("environment"),
        environment_after: doc.get("environment_after").filter(|v| !v.is_null()).cloned(),
        report: doc.get("report").filter(|v| !v.is_null()).cloned(),
        points: serde_json::from_value(field("points")).unwrap_or_else(|e| panic!("{file}: points: {e}")),
    }
}

/// What a storage engineer compares, as real stored runs: sweeps of 4 KiB on two targets and
/// of 1 MiB, a quick suite, a two-group blender job and a fio import (see fixtures/README.md).
pub fn comparison_runs() -> Vec<StoredRun> {
    [
        "stored_sweep_4k.json",
        "stored_sweep_1m.json",
        "stored_sweep_4k_b.json",
        "stored_suite.json",
        "stored_blender.json",
        "stored_fio.json",
    ]
    .into_iter()
    .map(stored_run)
    .collect()
}
