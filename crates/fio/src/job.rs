//! One fio job entry (a job, or a group under group_reporting) as one stored `Point`.

use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::IntervalStats;
use iolab_store::{Point, PointSummary};
use serde_json::Value;

use crate::error::{Ctx, FioImportError};
use crate::latency::{self, Source};
use crate::options::Options;
use crate::Notes;

/// A job entry and what the document around it says about it.
pub(crate) struct Entry<'a> {
    pub value: &'a Value,
    pub options: Options,
    /// The point's name: the jobname, made unique when fio repeats it (numjobs without
    /// group_reporting gives one entry per job, all with the same name).
    pub name: String,
    /// Jobs the entry stands for: numjobs when fio grouped them, else 1.
    pub workers: u32,
}

pub(crate) fn point(
    ctx: &Ctx,
    seq: u32,
    entry: &Entry,
    completed_at_unix_s: i64,
    notes: &mut Notes,
) -> Result<Point, FioImportError> {
    let job = entry.value;
    let name = &entry.name;
    let count = |pointer: &str| job.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let (read_ios, write_ios) = (ctx.u64(job, "/read/total_ios")?, ctx.u64(job, "/write/total_ios")?);
    let (trims, syncs) = (count("/trim/total_ios"), count("/sync/total_ios"));
    // fio's latency buckets count every direction together, as clat: they give a direction's
    // shares only when it holds all the job's I/Os, and the job's when it had no trims.
    let lat_only = ["read", "write"].iter().any(|ddir| latency::source(job, ddir) == Source::Lat);
    let within = if trims == 0 && !lat_only { latency::bucket_within(job) } else { None };
    let read = latency::side(ctx, job, "read", within.as_deref().filter(|_| write_ios == 0))?;
    let write = latency::side(ctx, job, "write", within.as_deref().filter(|_| read_ios == 0))?;
    let total = latency::total(&read, &write, within.as_deref());
    if lat_only {
        notes.push(format!(
            "job '{name}': fio gave its latency distribution as lat (lat_percentiles=1), so its latencies are \
             lat_ns (submission included), not clat"
        ));
    }

    let error = job.get("error").and_then(Value::as_i64).unwrap_or(0);
    if error != 0 {
        // fio's error is an errno: 22 reads "Invalid argument".
        let text = i32::try_from(error)
            .map(|e| std::io::Error::from_raw_os_error(e).to_string())
            .unwrap_or_default();
        let text = text.split(" (os error").next().unwrap_or_default();
        notes.push(format!(
            "job '{name}': fio reports error {error} ({text}); its figures are what it did before the error"
        ));
    }
    if trims > 0 {
        notes.push(format!(
            "job '{name}': its {trims} trims are not imported (iolab measures reads and writes); totals leave them out"
        ));
    }
    if syncs > 0 {
        notes.push(format!("job '{name}': its {syncs} fsyncs are not imported"));
    }
    if entry.options.sync_engine() && entry.options.iodepth() > 1 {
        notes.push(format!(
            "job '{name}': fio runs its synchronous engine {} one I/O at a time (iodepth={} has no effect); qd is 1",
            entry.options.fio_engine(),
            entry.options.iodepth()
        ));
    }
    for (side, ddir) in [(&read, "read"), (&write, "write")] {
        if let Some((binned, n)) = side.bins_mismatch {
            notes
                .push(format!("job '{name}': fio's {ddir} bins count {binned} latencies where its N is {n}"));
        }
    }

    // Per direction, fio's runtime is the longest of the grouped jobs; job_runtime adds them up.
    let runtime_ms = [&read, &write].iter().filter(|s| s.summary.ios > 0).map(|s| s.runtime_ms).max();
    let job_runtime_ms = ctx.u64(job, "/job_runtime")?;
    let measured_s = runtime_ms.unwrap_or(job_runtime_ms) as f64 / 1000.0;
    // usr_cpu and sys_cpu are percentages of job_runtime (both summed over grouped jobs).
    let cpu_pct = ctx.f64(job, "/usr_cpu")? + ctx.f64(job, "/sys_cpu")?;
    let cpu_us_per_io =
        (total.ios > 0).then(|| cpu_pct / 100.0 * job_runtime_ms as f64 * 1000.0 / total.ios as f64);

    let binned = |s: &latency::Side| s.summary.ios == 0 || s.stats.is_some();
    let histograms = (total.ios > 0 && binned(&read) && binned(&write)).then(|| {
        EncodedHistograms::encode(&IntervalStats {
            read: read.stats.clone().unwrap_or_default(),
            write: write.stats.clone().unwrap_or_default(),
            response: None,
        })
    });

    Ok(Point {
        seq,
        name: name.clone(),
        source: "fio".to_string(),
        completed_at_unix_s,
        spec: entry.options.to_json(),
        summary: PointSummary {
            engine: entry.options.engine(),
            access: entry.options.access(),
            qd: entry.options.qd(),
            workers: entry.workers,
            targets: entry.options.targets(),
            measured_s,
            read: read.summary,
            write: write.summary,
            total,
            cpu_us_per_io,
            stop_reason: if error != 0 { "io_error" } else { "runtime" }.to_string(),
        },
        series: Vec::new(),
        verdict: None,
        histograms,
        result: job.clone(),
    })
}
