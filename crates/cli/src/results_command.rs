//! `iolab results list|show|export|delete`: the runs kept in the results database.

use std::process::ExitCode;

use iolab_environment::Environment;
use iolab_report::{export_csv, export_json, run_text, runs_text};
use iolab_spec::OutputSpec;
use iolab_store::{RunId, Store, StoredRun};

use crate::args::{ExportFormat, ResultsAction, StoreArgs};
use crate::exit::say;
use crate::recording::open_store;
use crate::{exit, flow, output_file};

pub fn run(action: ResultsAction, store: &StoreArgs) -> ExitCode {
    let mut db = match open_existing(store) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let fail = |e: iolab_store::StoreError| exit::store_failed(&e);
    let stdout = OutputSpec::default();
    let written = match action {
        ResultsAction::List { json } => match db.runs() {
            Ok(runs) if json => flow::write_output(&stdout, &runs_json(&runs)),
            Ok(runs) => flow::write_output(&stdout, &runs_text(&runs)),
            Err(e) => Err(fail(e)),
        },
        ResultsAction::Show { id, json, rejudge } => match db.run(id) {
            Ok(mut run) => {
                if rejudge {
                    rejudged(&mut run);
                }
                if json {
                    flow::write_output(&stdout, &export_json(std::slice::from_ref(&run)))
                } else {
                    flow::write_output(&stdout, &run_text(&run, &environment_lines(&run)))
                }
            }
            Err(e) => Err(fail(e)),
        },
        ResultsAction::Export { ids, format, output } => {
            if let Err(code) = output_file::check_output(output.as_deref(), &[], store) {
                return code;
            }
            let runs = match load(&db, &ids) {
                Ok(runs) => runs,
                Err(code) => return code,
            };
            let text = match format {
                ExportFormat::Json => Ok(export_json(&runs)),
                ExportFormat::Csv => export_csv(&runs),
            };
            match text {
                Ok(text) => flow::write_output(&OutputSpec { path: output, ..OutputSpec::default() }, &text),
                Err(message) => Err(exit::fail(exit::INTERNAL, &message)),
            }
        }
        ResultsAction::Delete { ids } => {
            // All or nothing: every id must exist before any is deleted.
            if let Err(code) = ids.iter().try_for_each(|&id| db.run(id).map(|_| ()).map_err(fail)) {
                return code;
            }
            ids.iter().try_for_each(|&id| {
                db.delete_run(id).map_err(fail)?;
                say!("iolab: deleted run {id}");
                Ok(())
            })
        }
    };
    match written {
        Ok(()) => ExitCode::from(exit::OK),
        Err(code) => code,
    }
}

/// Applies today's verdict rules to a stored run, and says on stderr what they changed.
fn rejudged(run: &mut StoredRun) {
    let changed = run.rejudge(iolab_analysis::judge::judge);
    if changed.is_empty() {
        say!("iolab: every verdict of run {} stands under this iolab's rules", run.info.id);
    }
    for (seq, before) in changed {
        let now = run.points.iter().find(|p| p.seq == seq).and_then(|p| p.verdict.as_ref());
        say!(
            "iolab: point {seq} of run {}: {} -> {} under this iolab's rules",
            run.info.id,
            before.map_or("none", |v| v.cause.name()),
            now.map_or("none", |v| v.cause.name())
        );
    }
}

/// The run's fingerprint as short lines, and the NVMe health delta over the run; nothing for
/// a fingerprint this iolab cannot read (an import's).
fn environment_lines(run: &StoredRun) -> Vec<String> {
    let parse = |value: &serde_json::Value| serde_json::from_value::<Environment>(value.clone()).ok();
    let Some(before) = parse(&run.environment) else { return Vec::new() };
    let mut lines = before.describe();
    if let Some(after) = run.environment_after.as_ref().and_then(parse) {
        for delta in before.health_deltas(&after) {
            lines.push(format!(
                "{}: NVMe health over the run: {}",
                delta.path.display(),
                delta.delta.describe()
            ));
        }
    }
    lines
}

/// The database, which must exist already: reading commands never create one.
pub fn open_existing(store: &StoreArgs) -> Result<Store, ExitCode> {
    let path = store.path().map_err(|message| exit::fail(exit::USAGE, &message))?;
    if !path.exists() {
        return Err(exit::fail(
            exit::USAGE,
            &format!(
                "no results database at {} yet: measuring commands create it (or give --db)",
                path.display()
            ),
        ));
    }
    open_store(store)
}

/// The runs `ids`, in that order.
pub fn load(db: &Store, ids: &[RunId]) -> Result<Vec<StoredRun>, ExitCode> {
    ids.iter().map(|&id| db.run(id).map_err(|e| exit::store_failed(&e))).collect()
}

fn runs_json(runs: &[iolab_store::RunInfo]) -> String {
    let mut text = serde_json::to_string_pretty(runs).unwrap_or_default();
    text.push('\n');
    text
}
