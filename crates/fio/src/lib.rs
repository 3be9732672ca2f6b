//! `iolab import fio`: fio's JSON output (`--output-format=json` or `json+`, fio 2.x to
//! today's) as one stored run of kind "fio", one point per fio job entry, so fio's results sit
//! beside iolab's in tables, comparisons and reports; or a directory of one file per point as
//! one sweep (`sweep`).
//!
//! Older generations of fio's JSON are read into today's shape first (`generation`); every
//! value is checked before it is kept (counts whole and under 2^63, rates not negative,
//! min <= mean <= max: what fio never writes is refused, naming the field), and what one
//! import may store is bounded (`limits`). What was converted, derived, cut or left out is
//! said in the run's notes.
//!
//! Latency is fio's completion latency (clat: from submission to completion), the closest of
//! fio's figures to iolab's service time; fio's lat adds the submission itself. With json+,
//! fio's histogram bins are rebuilt into iolab's histogram, so every iolab percentile comes
//! from them and the point merges exactly later; with plain json only fio's own percentiles
//! exist, and iolab's that fio does not list (p99.999, p99.9999) are left out, not guessed.
//! Counts, bytes, IOPS, bandwidth, min, max, mean and stdev are fio's figures, unchanged.

mod error;
mod generation;
mod job;
mod latency;
pub mod limits;
mod options;
mod sweep;

use std::collections::BTreeMap;

use iolab_store::{NewRun, Point};
use serde_json::{json, Value};

pub use error::FioImportError;
pub use sweep::{sweep, ImportedSweep};

use error::Ctx;
use job::Entry;
use options::Options;

/// A fio result as the store takes it, with what the user should know about the import.
#[derive(Debug, Clone)]
pub struct Imported {
    pub run: NewRun,
    pub points: Vec<Point>,
    /// One line each, to print after the import (and to keep beside the run).
    pub notes: Vec<String>,
}

/// fio's aggregate of every client in a client/server run: the clients' own entries are kept.
const ALL_CLIENTS: &str = "All clients";

/// Reads fio's JSON output. `file_name` names the file in errors and in the run's environment.
///
/// Text before the JSON object (fio prints notes and errors to stdout ahead of it) and after
/// it is skipped.
pub fn import(text: &str, file_name: &str) -> Result<Imported, FioImportError> {
    let file = || file_name.to_string();
    if text.len() as u64 > limits::MAX_INPUT_BYTES {
        return Err(FioImportError::TooLarge {
            file: file(),
            size: text.len() as u64,
            limit: limits::MAX_INPUT_BYTES,
        });
    }
    let start = json_start(text).ok_or_else(|| FioImportError::NoJson { file: file() })?;
    let mut doc: Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .next()
        .ok_or_else(|| FioImportError::NoJson { file: file() })?
        .map_err(|error| FioImportError::BadJson { file: file(), error })?;
    let mut notes = Notes::default();
    let clipped = limits::clip(&mut doc);
    if clipped > 0 {
        notes.push(format!(
            "{clipped} texts (job names, options, descriptions) longer than {} characters were cut there, \
             and longer keys left out",
            limits::MAX_TEXT_CHARS
        ));
    }
    let not_fio = |missing| FioImportError::NotFio { file: file(), missing };
    let fio_version = doc.get("fio version").and_then(Value::as_str).ok_or_else(|| not_fio("fio version"))?;
    let (entries, client_server) = match (doc.get("jobs"), doc.get("client_stats")) {
        (Some(jobs), _) => (jobs.as_array().ok_or_else(|| not_fio("jobs"))?, false),
        (None, Some(clients)) => (clients.as_array().ok_or_else(|| not_fio("client_stats"))?, true),
        (None, None) => return Err(not_fio("jobs")),
    };
    let timestamp = timestamp(&doc, file_name, &mut notes)?;
    let global = doc.get("global options");

    let mut raw = Vec::new();
    for value in entries {
        let job = value.get("jobname").and_then(Value::as_str);
        let ctx = Ctx { file: file_name, job: job.unwrap_or("?").to_string() };
        let jobname = job.ok_or_else(|| ctx.error("/jobname", "is missing"))?;
        if client_server && jobname == ALL_CLIENTS {
            notes.push("fio's \"All clients\" aggregate is left out: each client's jobs are imported".into());
            continue;
        }
        let host = value.get("hostname").and_then(Value::as_str).map(str::to_string);
        let groupid = value.get("groupid").and_then(Value::as_u64).unwrap_or(0);
        let options = Options::merged(global, value.get("job options"));
        raw.push((value, jobname, host, groupid, options));
    }
    // Each job in today's shape, read by the points; the job's own object is what is kept.
    let normalized: Vec<Value> =
        raw.iter().map(|(value, ..)| generation::normalize(value, &mut notes)).collect();
    if raw.is_empty() {
        return Err(FioImportError::NoJobs { file: file() });
    }

    let hosts: Vec<String> =
        raw.iter().filter_map(|(_, _, host, _, _)| host.clone()).fold(Vec::new(), |mut hosts, h| {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
            hosts
        });
    // numjobs=N without group_reporting gives N entries of one name; with it, one entry for
    // all N (fio's JSON does not list group_reporting, so the count tells).
    let mut same = BTreeMap::new();
    for (_, jobname, host, groupid, _) in &raw {
        *same.entry((*jobname, host.clone(), *groupid)).or_insert(0u32) += 1;
    }
    let mut seen = BTreeMap::new();
    let mut points = Vec::new();
    for (seq, (value, jobname, host, groupid, options)) in raw.iter().enumerate() {
        let copies = same[&(*jobname, host.clone(), *groupid)];
        let grouped = options.numjobs() > 1 && copies < options.numjobs();
        let mut name = jobname.to_string();
        if hosts.len() > 1 {
            name = format!("{name}@{}", host.as_deref().unwrap_or("?"));
        }
        if copies > 1 {
            let k = seen.entry(name.clone()).or_insert(0u32);
            name = format!("{name}.{k}");
            *k += 1;
        }
        if grouped {
            notes.push(format!(
                "job '{name}': fio reported its {} jobs as one (group_reporting): one point, {} workers",
                options.numjobs(),
                options.numjobs()
            ));
        }
        let entry = Entry {
            value: &normalized[seq],
            original: value,
            options: options.clone(),
            name,
            workers: if grouped { options.numjobs() } else { 1 },
        };
        let ctx = Ctx { file: file_name, job: entry.name.clone() };
        let seq = u32::try_from(seq).unwrap_or(u32::MAX);
        points.push(job::point(&ctx, seq, &entry, timestamp, &mut notes)?);
    }

    let binned = points.iter().any(|p| p.histograms.is_some());
    let mut run_notes = vec![
        "latencies are fio's completion latency (clat_ns: from submission to completion, the closest to \
         iolab's service time); fio's lat_ns also counts the submission"
            .to_string(),
        if binned {
            "percentiles come from fio's json+ bins (fio's own histogram: each latency is counted at its \
             bucket's middle, within 1/128 of its value)"
        } else {
            "percentiles are fio's own list; iolab's p99.999 and p99.9999 are not in it and are left out \
             (run fio with --output-format=json+ for all of them)"
        }
        .to_string(),
        "CPU per I/O is fio's usr_cpu + sys_cpu of its job threads: io_uring's kernel workers (io-wq, SQPOLL) \
         are not in it, where iolab counts its whole process"
            .to_string(),
    ];
    run_notes.append(&mut notes.0);

    // fio stamps its output when the jobs end; elapsed is each job's wall time from its start
    // (a negative one, which fio never writes, counts as none).
    let elapsed = entries
        .iter()
        .filter_map(|j| j.get("elapsed").and_then(Value::as_i64))
        .max()
        .unwrap_or(0)
        .clamp(0, timestamp);
    let jobs_plan: Vec<Value> = raw
        .iter()
        .map(|(value, jobname, _, _, _)| json!({"jobname": jobname, "job options": value.get("job options")}))
        .collect();
    let run = NewRun {
        kind: "fio".to_string(),
        label: label(fio_version, raw.iter().map(|(_, _, _, _, o)| o)),
        command: command(global, &raw.iter().map(|(v, name, ..)| (*name, *v)).collect::<Vec<_>>()),
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        host: hosts.join(","),
        started_at_unix_s: timestamp - elapsed,
        plan: json!({
            "source": "fio",
            "fio_version": fio_version,
            "global options": global.cloned().unwrap_or_else(|| json!({})),
            "jobs": jobs_plan,
        }),
        environment: json!({
            "source": "fio",
            "fio_version": fio_version,
            "file": file_name,
            "time": doc.get("time"),
            "hosts": hosts,
            "disk_util": doc.get("disk_util").cloned().unwrap_or_else(|| json!([])),
        }),
    };
    Ok(Imported { run, points, notes: run_notes })
}

/// When fio wrote the output (Unix seconds). fio 2.x before about 2.2 wrote none: the run is
/// dated to the import then, and says so.
fn timestamp(doc: &Value, file: &str, notes: &mut Notes) -> Result<i64, FioImportError> {
    let document =
        |detail: String| FioImportError::Document { file: file.to_string(), field: "timestamp", detail };
    let Some(found) = doc.get("timestamp") else {
        notes.push(
            "fio's output has no timestamp (fio 2.x before about 2.2): the run is dated to the import".into(),
        );
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        return Ok(now.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)));
    };
    match found.as_i64() {
        Some(t) if t >= 0 => Ok(t),
        Some(t) => Err(document(format!("is negative ({t})"))),
        None => Err(document(format!("is not a whole number of seconds ({found})"))),
    }
}

/// Where fio's JSON object starts: the first line that opens with '{'.
fn json_start(text: &str) -> Option<usize> {
    if text.trim_start().starts_with('{') {
        return text.find('{');
    }
    text.match_indices("\n{").next().map(|(at, _)| at + 1)
}

/// "fio-3.33 randread 4k iodepth=8 io_uring on /dev/nvme0n1"; several jobs: the first three
/// different ones.
fn label<'a>(fio_version: &str, jobs: impl Iterator<Item = &'a Options>) -> String {
    let mut described: Vec<String> = Vec::new();
    for job in jobs {
        let text = job.describe();
        if !described.contains(&text) {
            described.push(text);
        }
    }
    let more = described.len().saturating_sub(3);
    described.truncate(3);
    let mut label = format!("{fio_version} {}", described.join("; "));
    if more > 0 {
        label.push_str(&format!("; +{more} more"));
    }
    label
}

/// A fio command line that would run the same jobs, from the options fio's JSON lists. fio
/// leaves out options given without a value (time_based, group_reporting), so it is a
/// reconstruction, not the command as typed.
fn command(global: Option<&Value>, jobs: &[(&str, &Value)]) -> Vec<String> {
    let flags = |options: Option<&Value>| -> Vec<String> {
        let Some(map) = options.and_then(Value::as_object) else { return Vec::new() };
        map.iter()
            .filter(|(key, _)| key.as_str() != "name")
            .map(|(key, value)| match value.as_str() {
                Some(text) => format!("--{key}={text}"),
                None => format!("--{key}={value}"),
            })
            .collect()
    };
    let mut command = vec!["fio".to_string()];
    command.extend(flags(global));
    let mut listed = Vec::new();
    for (name, job) in jobs {
        let options = job.get("job options");
        // numjobs=N repeats one job N times in the output; fio's command names it once.
        if listed.contains(&(name, options)) {
            continue;
        }
        listed.push((name, options));
        command.push(format!("--name={name}"));
        command.extend(flags(options));
    }
    command
}

/// The import's notes, each once.
#[derive(Debug, Default)]
pub(crate) struct Notes(Vec<String>);

impl Notes {
    pub fn push(&mut self, note: String) {
        if !self.0.contains(&note) {
            self.0.push(note);
        }
    }
}
