//! `iolab import fio FILE...`: fio's JSON output (json or json+) into the results database, as
//! runs of kind "fio" beside iolab's own, for `results`, `compare` and `report`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use iolab_store::{RunEnd, RunStatus};

use crate::exit;
use crate::exit::say;
use crate::recording::{code, StoreArgs};

/// Name and version of the report kept with an imported run.
pub const IMPORT_SCHEMA: &str = "iolab.import/1";

#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// fio's JSON output (`--output-format=json` or `json+`, fio 3.x): one run per file, one
    /// point per fio job (per group with group_reporting); with json+ its latency bins become
    /// a histogram, so every percentile to p99.9999 and exact merges are available.
    Fio {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

pub fn run(source: ImportSource, store: &StoreArgs) -> ExitCode {
    let ImportSource::Fio { files } = source;
    // Every file is read and parsed before anything is stored: a bad third file stores nothing.
    let mut imports = Vec::with_capacity(files.len());
    for file in &files {
        let name = file.display().to_string();
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => return exit::fail(exit::USAGE, &format!("cannot read {name}: {e}")),
        };
        match iolab_fio::import(&text, &name) {
            Ok(imported) => imports.push((name, imported)),
            Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
        }
    }
    let mut db = match store.open() {
        Ok(db) => db,
        Err(code) => return code,
    };
    for (name, imported) in imports {
        let mut begun = None;
        let stored = (|| {
            let run = db.begin_run(&imported.run)?;
            begun = Some(run);
            for point in &imported.points {
                db.add_point(run, point)?;
            }
            let finished = imported.points.iter().map(|p| p.completed_at_unix_s).max();
            let report =
                serde_json::json!({ "schema": IMPORT_SCHEMA, "file": name, "notes": imported.notes });
            db.finish_run(
                run,
                &RunEnd {
                    status: RunStatus::Complete,
                    finished_at_unix_s: finished.unwrap_or(imported.run.started_at_unix_s),
                    report: Some(report),
                    environment_after: None,
                },
            )?;
            Ok(run)
        })();
        match stored {
            Ok(run) => {
                for note in &imported.notes {
                    say!("iolab: {name}: {note}");
                }
                say!("iolab: imported {name} as run {run} ({} points)", imported.points.len());
            }
            Err(e) => {
                // A half-stored file is no result: take it out again.
                if let Some(run) = begun {
                    let _ = db.delete_run(run);
                }
                return exit::fail(code(&e), &format!("{name}: {e}"));
            }
        }
    }
    ExitCode::from(exit::OK)
}
