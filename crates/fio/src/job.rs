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
    /// The job in today's shape (`generation::normalize`): what the figures are read from.
    pub value: &'a Value,
    /// The job's object as fio wrote it: what is kept beside the point.
    pub original: &'a Value,
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
        consistency(name, ddir, side, notes);
        if let Some((binned, n)) = side.bins_mismatch {
            notes
                .push(format!("job '{name}': fio's {ddir} bins count {binned} latencies where its N is {n}"));
        }
        if let Some((total, n)) = side.bins_left_out {
            let total = total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string());
            notes.push(format!(
                "job '{name}': fio's {ddir} bins count {total} latencies where its N is {n}: the bins are left out \
                 (fio's own add up) and its percentile list is used"
            ));
        }
    }

    // Per direction, fio's runtime is the longest of the grouped jobs; job_runtime adds them up.
    let runtime_ms = [&read, &write].iter().filter(|s| s.summary.ios > 0).map(|s| s.runtime_ms).max();
    let job_runtime_ms = ctx.u64(job, "/job_runtime")?;
    let measured_s = runtime_ms.unwrap_or(job_runtime_ms) as f64 / 1000.0;
    // usr_cpu and sys_cpu are percentages of job_runtime (both summed over grouped jobs). A
    // negative one (fio never writes one) is no measurement: CPU is left out, with a note.
    let cpu_pct = cpu_pct(ctx, job, name, notes)?;
    let cpu_us_per_io = cpu_pct
        .filter(|_| total.ios > 0)
        .map(|pct| pct / 100.0 * job_runtime_ms as f64 * 1000.0 / total.ios as f64);

    let binned = |s: &latency::Side| s.summary.ios == 0 || s.stats.is_some();
    let histograms = if total.ios > 0 && binned(&read) && binned(&write) {
        let stats = IntervalStats {
            read: read.stats.clone().unwrap_or_default(),
            write: write.stats.clone().unwrap_or_default(),
            response: None,
            ..Default::default()
        };
        match EncodedHistograms::try_encode(&stats) {
            Ok(encoded) => Some(encoded),
            Err(e) => {
                notes.push(format!("job '{name}': its json+ bins are not kept ({e})"));
                None
            }
        }
    } else {
        None
    };

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
        result: entry.original.clone(),
    })
}

/// usr_cpu + sys_cpu, or `None` (with a note) when either is negative.
fn cpu_pct(ctx: &Ctx, job: &Value, name: &str, notes: &mut Notes) -> Result<Option<f64>, FioImportError> {
    let mut sum = 0.0;
    for field in ["usr_cpu", "sys_cpu"] {
        let pointer = format!("/{field}");
        let pct = ctx.get(job, &pointer)?.as_f64().ok_or_else(|| ctx.error(&pointer, "is not a number"))?;
        if pct < 0.0 {
            notes.push(format!(
                "job '{name}': fio's {field} is negative ({pct}), which fio never writes: its CPU per I/O is left out"
            ));
            return Ok(None);
        }
        sum += pct;
    }
    Ok(Some(sum))
}

/// fio derives iops and bw_bytes from total_ios, io_bytes and runtime, and counts one latency
/// per completed I/O: figures that disagree by more than rounding were edited, and are kept
/// as fio's with a note (which of them is wrong cannot be told).
fn consistency(name: &str, ddir: &str, side: &latency::Side, notes: &mut Notes) {
    let s = &side.summary;
    if s.ios == 0 || side.runtime_ms == 0 {
        return;
    }
    let seconds = side.runtime_ms as f64 / 1000.0;
    let off = |given: f64, derived: f64| (given - derived).abs() > derived * 0.01 + 1.0;
    if off(s.iops, s.ios as f64 / seconds) {
        notes.push(format!(
            "job '{name}': fio's {ddir} iops ({}) is not total_ios / runtime ({:.1}): kept as fio gives it",
            s.iops,
            s.ios as f64 / seconds
        ));
    }
    if off(s.mb_s * 1e6, s.bytes as f64 / seconds) {
        notes.push(format!(
            "job '{name}': fio's {ddir} bandwidth ({:.0} B/s) is not io_bytes / runtime ({:.0} B/s): kept as fio gives it",
            s.mb_s * 1e6,
            s.bytes as f64 / seconds
        ));
    }
    if side.moments.n > s.ios {
        notes.push(format!(
            "job '{name}': fio's {ddir} latencies count {} I/Os, more than its total_ios ({})",
            side.moments.n, s.ios
        ));
    }
}
