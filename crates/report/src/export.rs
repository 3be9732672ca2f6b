//! `iolab results export`: stored runs as JSON (everything kept, histograms included, so they
//! can be merged again elsewhere) or CSV (one row per point, for spreadsheets).

use iolab_stats::PERCENTILES;
use iolab_store::StoredRun;
use serde::Serialize;

/// Name and version of the JSON export's schema.
pub const EXPORT_SCHEMA: &str = "iolab.export/1";

#[derive(Serialize)]
struct Export<'a> {
    schema: &'static str,
    runs: &'a [StoredRun],
}

pub fn export_json(runs: &[StoredRun]) -> String {
    let mut text = serde_json::to_string_pretty(&Export { schema: EXPORT_SCHEMA, runs })
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

/// The CSV columns, in order.
pub fn csv_header() -> Vec<String> {
    let mut columns: Vec<String> = [
        "run",
        "kind",
        "run_status",
        "point",
        "name",
        "source",
        "engine",
        "access",
        "qd",
        "workers",
        "targets",
        "measured_s",
        "stop_reason",
        "ios",
        "bytes",
        "iops",
        "mb_s",
        "read_iops",
        "write_iops",
        "min_ns",
        "mean_ns",
        "stdev_ns",
        "max_ns",
    ]
    .map(String::from)
    .into();
    columns.extend(PERCENTILES.iter().map(|p| format!("p{p}_ns")));
    columns.extend(["cpu_us_per_io", "bottleneck", "verdict"].map(String::from));
    columns
}

/// One row per point of every run; empty cells where the source had no value.
pub fn export_csv(runs: &[StoredRun]) -> Result<String, String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| format!("cannot write CSV: {e}");
    writer.write_record(csv_header()).map_err(fail)?;
    for run in runs {
        for point in &run.points {
            let s = &point.summary;
            let latency = s.total.latency.as_ref();
            let opt = |v: Option<String>| v.unwrap_or_default();
            let mut row = vec![
                run.info.id.to_string(),
                run.info.kind.clone(),
                run.info.status.name().to_string(),
                point.seq.to_string(),
                point.name.clone(),
                point.source.clone(),
                s.engine.clone(),
                s.access.clone(),
                s.qd.to_string(),
                s.workers.to_string(),
                s.targets.join(" "),
                s.measured_s.to_string(),
                s.stop_reason.clone(),
                s.total.ios.to_string(),
                s.total.bytes.to_string(),
                s.total.iops.to_string(),
                s.total.mb_s.to_string(),
                s.read.iops.to_string(),
                s.write.iops.to_string(),
                opt(latency.map(|l| l.min_ns.to_string())),
                opt(latency.map(|l| l.mean_ns.to_string())),
                opt(latency.map(|l| l.stdev_ns.to_string())),
                opt(latency.map(|l| l.max_ns.to_string())),
            ];
            row.extend(PERCENTILES.iter().map(|&p| opt(s.total.percentile(p).map(|ns| ns.to_string()))));
            row.push(opt(s.cpu_us_per_io.map(|us| us.to_string())));
            row.push(opt(point.verdict.as_ref().map(|v| v.cause.name().to_string())));
            row.push(opt(point.verdict.as_ref().map(|v| v.summary.clone())));
            // A cell may hold what a user or host wrote (a job's name, a target's path): shown,
            // never obeyed, when the CSV reaches a terminal (`cat`, `column`). A line feed is
            // kept: CSV quotes the cell around it.
            writer
                .write_record(row.iter().map(|cell| iolab_spec::printable::lines(cell).into_owned()))
                .map_err(fail)?;
        }
    }
    let bytes = writer.into_inner().map_err(|e| format!("cannot write CSV: {e}"))?;
    String::from_utf8(bytes).map_err(|e| format!("cannot write CSV: {e}"))
}
