//! `iolab check`: a run against its baseline, as a CI gate (iolab_analysis::check). The subject
//! is run here (a job file, or the flags' workload, `--repeat` times, kept as a normal run), or
//! taken as kept or exported; the baseline is kept or exported. The result goes to stdout as
//! text or JSON, and to --markdown and --junit files; the exit code is the check's: 0 pass,
//! 1 regression, 2 not comparable (bad input earns 2 as everywhere, iolab's own failure 1).

use std::path::Path;
use std::process::ExitCode;

use iolab_analysis::check::{check, parse_max_regression, CheckSide, Difference, Rules};
use iolab_analysis::compare::CompareInput;
use iolab_report::{check_json, check_junit, check_markdown, check_text, render_text, EXPORT_SCHEMA};
use iolab_runner::{run_jobs, OnFailedStart};
use iolab_spec::{resolve, OutputSpec};
use iolab_store::{Point, Store};
use iolab_studies::plan;

use crate::args::{Accept, CheckArgs, StoreArgs};
use crate::compare_command::stored_side;
use crate::exit::say;
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::results_command::open_existing;
use crate::{exit, flow, job_source, output_file};

/// An exported run larger than this is refused rather than read into memory.
const MAX_EXPORT_BYTES: u64 = 256 << 20;

/// A side as the check reads it: its points and its environment.
struct Side {
    input: CompareInput,
    environment: serde_json::Value,
}

pub fn run(args: CheckArgs, store: &StoreArgs) -> ExitCode {
    exit::of(checked(args, store))
}

fn checked(args: CheckArgs, store: &StoreArgs) -> Result<ExitCode, ExitCode> {
    let rules = Rules {
        max_regression_pct: parse_max_regression(&args.max_regression)
            .map_err(|e| exit::usage(format!("--max-regression: {e}")))?,
        accept: args
            .accept
            .iter()
            .map(|a| match a {
                Accept::Kernel => Difference::Kernel,
                Accept::Model => Difference::Model,
                Accept::Engine => Difference::Engine,
            })
            .collect(),
    };
    let options = &args.workload.options;
    let output = OutputSpec {
        path: options.output.clone(),
        json: options.json == Some(true),
        quiet: options.quiet == Some(true),
    };
    for path in [&output.path, &args.markdown, &args.junit].into_iter().flatten() {
        output_file::check_output(Some(path), &[], store)?;
    }
    // The baseline first: a missing one is said before anything runs.
    let baseline = side(&args.baseline, store).map_err(exit::usage)?;
    let candidate = match subject(args.subject.as_deref())? {
        Subject::Kept(text) => side(&text, store).map_err(exit::usage)?,
        Subject::Job(file) => measured(&args, file.as_deref(), store)?,
    };
    let found = check(
        CheckSide { input: baseline.input, environment: &baseline.environment },
        CheckSide { input: candidate.input, environment: &candidate.environment },
        &rules,
    );
    let text = if output.json { check_json(&found) } else { check_text(&found) };
    flow::write_output(&output, &text)?;
    for (path, body) in [(&args.markdown, check_markdown(&found)), (&args.junit, check_junit(&found))] {
        if let Some(path) = path {
            output_file::write(path, body.as_bytes())
                .map_err(|e| exit::fail(exit::INTERNAL, &format!("cannot write {}: {e}", path.display())))?;
        }
    }
    Ok(ExitCode::from(found.exit_code()))
}

enum Subject {
    /// A kept run ("12", "12:qd 8") or an exported one (a JSON file).
    Kept(String),
    /// A job file to run, or `None`: the flags' workload.
    Job(Option<std::path::PathBuf>),
}

fn subject(text: Option<&str>) -> Result<Subject, ExitCode> {
    let Some(text) = text else { return Ok(Subject::Job(None)) };
    let path = Path::new(text);
    if path.is_file() {
        if is_export(path) {
            return Ok(Subject::Kept(text.to_string()));
        }
        if job_source::is_job_file(path) {
            return Ok(Subject::Job(Some(path.to_path_buf())));
        }
    }
    if names_a_run(text) {
        return Ok(Subject::Kept(text.to_string()));
    }
    if job_source::is_job_file(path) {
        return Err(exit::usage(format!("job file {text}: no such file")));
    }
    Err(exit::usage(format!(
        "'{text}' is not a kept run (ID or ID:POINT), a run exported as JSON (`iolab results export ID -o FILE`) or a job file"
    )))
}

/// "12", "#12", "12:qd 8".
fn names_a_run(text: &str) -> bool {
    let id = text.split_once(':').map_or(text, |(id, _)| id);
    let digits = id.trim_start_matches('#');
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A file whose text opens a JSON object: an export (its schema is checked when it is read).
fn is_export(path: &Path) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let mut head = [0u8; 256];
    let read = std::io::Read::read(&mut file, &mut head).unwrap_or(0);
    head[..read].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// A kept run ("12", "12:qd 8") or an exported run file, with its environment.
fn side(text: &str, store: &StoreArgs) -> Result<Side, String> {
    let path = Path::new(text);
    if path.is_file() && is_export(path) {
        return exported(path);
    }
    if !names_a_run(text) {
        return Err(format!(
            "'{text}' is not a kept run (ID or ID:POINT) or a run exported as JSON (`iolab results export ID -o FILE`)"
        ));
    }
    let db =
        open_existing(store).map_err(|_| "the results database cannot be opened (said above)".to_string())?;
    let (run, points) = stored_side(&db, text)?;
    Ok(Side {
        input: CompareInput { label: format!("#{}", text.trim_start_matches('#')), points },
        environment: run.environment,
    })
}

/// The one run of an `iolab results export` file.
fn exported(path: &Path) -> Result<Side, String> {
    let shown = path.display();
    let size = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?.len();
    if size > MAX_EXPORT_BYTES {
        return Err(format!("{shown} is {size} bytes; an exported run over 256 MiB is refused"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown} is not JSON: {e}"))?;
    if json["schema"] != EXPORT_SCHEMA {
        return Err(format!(
            "{shown} is not an iolab export (schema {EXPORT_SCHEMA}, as `iolab results export ID` writes); its schema is {}",
            json["schema"]
        ));
    }
    let runs = json["runs"].as_array().cloned().unwrap_or_default();
    let [run] = runs.as_slice() else {
        let ids: Vec<String> = runs.iter().map(|r| r["id"].to_string()).collect();
        return Err(format!(
            "{shown} holds {} runs ({}); export the one to check against alone (`iolab results export ID`)",
            runs.len(),
            ids.join(", ")
        ));
    };
    let points: Vec<Point> = serde_json::from_value(run["points"].clone())
        .map_err(|e| format!("{shown}: its points cannot be read: {e}"))?;
    if points.is_empty() {
        return Err(format!("{shown}: its run holds no point"));
    }
    let name = path.file_name().map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Side {
        input: CompareInput { label: format!("{name} (run {})", run["id"]), points },
        environment: run["environment"].clone(),
    })
}

/// Runs the job (or the flags' workload) `--repeat` times, kept as a normal run, and reads it
/// back as the store keeps it.
fn measured(args: &CheckArgs, file: Option<&Path>, store: &StoreArgs) -> Result<Side, ExitCode> {
    if args.workload.keep.no_store {
        return Err(exit::usage(
            "iolab check keeps the run it measures, to compare it as any kept run; drop --no-store",
        ));
    }
    let quiet = args.workload.options.quiet == Some(true);
    let file = file.map(|path| job_source::load(path, quiet)).transpose().map_err(exit::usage)?;
    // The check's own output is the result; the run's report is kept with the run.
    let mut options = args.workload.options.clone();
    (options.output, options.json) = (None, None);
    let plan = resolve(file.as_ref(), &options).map_err(exit::usage)?;
    let plan = plan::repeated(plan, args.repeat);
    let mut place = Place::here();
    let (code, kept_as) = Measurement::new("run", &plan).run_kept(
        store,
        &mut place,
        |lab, progress| run_jobs(lab, &plan, OnFailedStart::Stop, 0, progress),
        |failed, report| {
            // The run's report goes to stderr: stdout is the check's.
            if !quiet {
                for line in render_text(report).lines() {
                    say!("{line}");
                }
            }
            let delivery = Delivery { rendered: String::new(), json: None, failure: None };
            Ok(match failed.first() {
                Some((_, e)) => delivery.failed(e, Some(format!("a later job could not start: {e}"))),
                None => delivery,
            })
        },
    );
    if code != ExitCode::from(exit::OK) {
        return Err(code);
    }
    let Some(id) = kept_as else {
        return Err(exit::fail(exit::INTERNAL, "the run was not kept, so it cannot be checked"));
    };
    let db: Store = open_existing(store)?;
    let (run, points) = stored_side(&db, &id.to_string()).map_err(|e| exit::fail(exit::INTERNAL, &e))?;
    say!("iolab: checked run {id} (`iolab results show {id}`)");
    Ok(Side { input: CompareInput { label: format!("#{id}"), points }, environment: run.environment })
}
