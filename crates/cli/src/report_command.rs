//! `iolab report ID... -o report.html`: one self-contained HTML file with the charts of the
//! kept runs, overlaid for comparison (iolab_html).

use std::process::ExitCode;

use crate::args::{ReportArgs, StoreArgs};
use crate::exit;
use crate::exit::say;
use crate::results_command::{load, open_existing};

pub fn run(args: ReportArgs, store: &StoreArgs) -> ExitCode {
    if let Err(code) = crate::output_file::check_output(Some(&args.output), &[], store) {
        return code;
    }
    let db = match open_existing(store) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let runs = match load(&db, &args.ids) {
        Ok(runs) => runs,
        Err(code) => return code,
    };
    let html = match iolab_html::render(&runs) {
        Ok(html) => html,
        Err(e) => return exit::fail(exit::INTERNAL, &format!("cannot draw the report: {e}")),
    };
    if let Err(e) = crate::output_file::write(&args.output, html.as_bytes()) {
        return exit::fail(exit::INTERNAL, &format!("cannot write {}: {e}", args.output.display()));
    }
    say!("iolab: wrote {} ({} runs)", args.output.display(), runs.len());
    ExitCode::from(exit::OK)
}
