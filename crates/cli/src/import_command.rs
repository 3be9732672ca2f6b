//! `iolab import fio FILE|DIR...`: fio's JSON output (json or json+, fio 2.x to today's) into
//! the results database, as runs of kind "fio" beside iolab's own, or with `--as-sweep` as one
//! sweep stored as `iolab sweep` stores its own, for `results`, `compare` and `report`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use iolab_analysis::sweep::{summarize, PointFigures, PointOutcome};
use iolab_fio::limits::MAX_INPUT_BYTES;
use iolab_fio::{FioImportError, Imported, ImportedSweep};
use iolab_report::SWEEP_SCHEMA;
use iolab_stats::result::Bottleneck;
use iolab_store::{NewRun, Point, Recorder, RunEnd, RunStatus, Store};
use serde_json::{json, Value};

use crate::args::{ImportSource, StoreArgs};
use crate::exit;
use crate::exit::say;
use crate::recording::open_store;

/// Name and version of the report kept with an imported run.
pub const IMPORT_SCHEMA: &str = "iolab.import/1";

pub fn run(source: ImportSource, store: &StoreArgs) -> ExitCode {
    let ImportSource::Fio { files, as_sweep } = source;
    let files = match expand(&files) {
        Ok(files) => files,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    // Every file is read and parsed before anything is stored: a bad third file stores nothing.
    let mut imports = Vec::with_capacity(files.len());
    for file in &files {
        let name = file.display().to_string();
        let text = match read_capped(file, &name) {
            Ok(text) => text,
            Err(message) => return exit::fail(exit::USAGE, &message),
        };
        match iolab_fio::import(&text, &name) {
            Ok(imported) => imports.push((name, imported)),
            Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
        }
    }
    if as_sweep {
        return match iolab_fio::sweep(imports) {
            Ok(sweep) => store_sweep(sweep, store),
            Err(e) => exit::fail(exit::USAGE, &e.to_string()),
        };
    }
    // The database is opened (created when absent) as the measuring commands open it.
    let mut db = match open_store(store) {
        Ok(db) => db,
        Err(code) => return code,
    };
    for (name, imported) in imports {
        let Imported { run, points, notes } = imported;
        let report = json!({ "schema": IMPORT_SCHEMA, "file": name, "notes": notes });
        match keep(&mut db, &run, &points, report) {
            Ok(id) => {
                for note in &notes {
                    say!("iolab: {name}: {note}");
                }
                let plural = if points.len() == 1 { "" } else { "s" };
                say!("iolab: imported {name} as run {id} ({} point{plural})", points.len());
            }
            Err(code) => return code,
        }
    }
    ExitCode::from(exit::OK)
}

/// The files to read: each FILE as given, each DIR's `.json` files in name order.
fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")))
            .collect();
        if found.is_empty() {
            return Err(format!(
                "{} holds no .json files: give fio's JSON outputs or their directory",
                path.display()
            ));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// The file's text, refused before it is read when it is over the import's limit (its size
/// as the file system says, then as read, for a pipe or a file that grows).
fn read_capped(path: &Path, name: &str) -> Result<String, String> {
    let too_large =
        |size: u64| FioImportError::TooLarge { file: name.to_string(), size, limit: MAX_INPUT_BYTES };
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {name}: {e}"))?;
    if let Ok(meta) = file.metadata() {
        if meta.is_file() && meta.len() > MAX_INPUT_BYTES {
            return Err(too_large(meta.len()).to_string());
        }
    }
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {name}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large(bytes.len() as u64).to_string());
    }
    String::from_utf8(bytes).map_err(|_| format!("{name} is not text (not UTF-8): is it fio's JSON output?"))
}

/// Stores one run with its points and report, completely or not at all.
fn keep(db: &mut Store, run: &NewRun, points: &[Point], report: Value) -> Result<i64, ExitCode> {
    let finished = points.iter().map(|p| p.completed_at_unix_s).max();
    let end = RunEnd {
        status: RunStatus::Complete,
        finished_at_unix_s: finished.unwrap_or(run.started_at_unix_s),
        report: Some(report),
        environment_after: None,
    };
    Recorder::import(db, run, points, &end).map_err(|e| exit::store_failed(&e))
}

/// One sweep run, its report the summary `iolab sweep` keeps (rows, curves, sweet spots), so
/// `iolab report` draws its load curves and `iolab compare` matches its points by name.
fn store_sweep(sweep: ImportedSweep, store: &StoreArgs) -> ExitCode {
    let ImportedSweep { run, points, load_axis, curves, notes, files } = sweep;
    let outcomes: Vec<PointOutcome<'_>> = points
        .iter()
        .zip(&curves)
        .map(|(point, (curve, curve_name))| PointOutcome {
            name: &point.name,
            curve: *curve,
            curve_name,
            figures: PointFigures {
                access: point.summary.access.clone(),
                qd: point.summary.qd,
                workers: point.summary.workers,
                outstanding: point.summary.qd * point.summary.workers,
                total: point.summary.total.clone(),
                cpu_us_per_io: point.summary.cpu_us_per_io.unwrap_or(0.0),
                bottleneck: Bottleneck::Undetermined,
                retried: 0,
            },
            repeat_iops: vec![point.summary.total.iops],
        })
        .collect();
    let summary = summarize(load_axis, &outcomes);
    let report = json!({
        "schema": SWEEP_SCHEMA,
        "summary": summary,
        "import": { "schema": IMPORT_SCHEMA, "files": files },
        "notes": notes,
    });
    let mut db = match open_store(store) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let id = match keep(&mut db, &run, &points, report) {
        Ok(id) => id,
        Err(code) => return code,
    };
    for note in &notes {
        say!("iolab: {note}");
    }
    for line in &summary.verdict {
        say!("iolab: {line}");
    }
    say!(
        "iolab: imported {} files as sweep run {id} ({} points, {} curve(s))",
        files.len(),
        points.len(),
        summary.curves.len()
    );
    ExitCode::from(exit::OK)
}
