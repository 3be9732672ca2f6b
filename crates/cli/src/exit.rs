//! Exit codes (documented in README.md), which code each outcome earns, and the one-line
//! error format. A leaf: nothing else of the binary is used here.

use std::process::ExitCode;

use iolab_runner::RunError;
use iolab_stats::fleet::HostStatus;
use iolab_stats::result::{JobResult, RunReport, StopReason};
use iolab_store::StoreError;

/// `eprintln!` for iolab's messages: one escaped line, and no panic when stderr is full.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::exit::say_line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// The run finished and nothing went wrong.
pub const OK: u8 = 0;
/// iolab or the machine failed (not the user's input).
pub const INTERNAL: u8 = 1;
/// Bad input, a refused target, or an unavailable engine: fix the command and retry.
pub const USAGE: u8 = 2;
/// The target returned I/O errors (EIO, ENOSPC, short transfers).
pub const IO_ERRORS: u8 = 3;
/// A request never completed: the watchdog stopped the run.
pub const STUCK: u8 = 4;
/// The run completed, but some of its points (or its end) could not be kept in the results
/// database (a full disk, say); each lost point was named on stderr.
pub const NOT_KEPT: u8 = 5;
/// `--verify` or `iolab verify` found bad blocks (docs/verify.md).
pub const DATA_ERRORS: u8 = 6;
/// Interrupted by SIGINT, SIGTERM or SIGHUP; the results gathered so far were written.
pub const INTERRUPTED: u8 = 130;

/// Prints `message` as iolab's one-line error and returns `code`.
pub fn fail(code: u8, message: &str) -> ExitCode {
    say!("iolab: error: {message}");
    ExitCode::from(code)
}

/// A usage error: prints `message` and returns `USAGE`.
pub fn usage(message: impl std::fmt::Display) -> ExitCode {
    fail(USAGE, &message.to_string())
}

/// The exit code of a command body whose early exits are `Err(code)`.
pub fn of(body: Result<ExitCode, ExitCode>) -> ExitCode {
    body.unwrap_or_else(|code| code)
}

/// The code of an error that kept a run from starting or going on.
pub fn run_error_code(error: &RunError) -> u8 {
    if error.is_interruption() {
        INTERRUPTED
    } else if error.is_user_error() {
        USAGE
    } else {
        INTERNAL
    }
}

/// The code of a results-database error: the user's to fix (another file, another --db) unless
/// SQLite itself failed.
pub fn store_error_code(error: &StoreError) -> u8 {
    match error {
        StoreError::Sqlite(_) => INTERNAL,
        _ => USAGE,
    }
}

/// Prints a results-database error and returns its code.
pub fn store_failed(error: &StoreError) -> ExitCode {
    fail(store_error_code(error), &error.to_string())
}

/// The exit code a finished run earns (README: exit codes).
pub fn finished_run_code(report: &RunReport) -> u8 {
    if report.interrupted {
        return INTERRUPTED;
    }
    let reasons: Vec<StopReason> = report.jobs.iter().map(|j| j.stop_reason).collect();
    if reasons.contains(&StopReason::StuckIo) {
        STUCK
    } else if reasons.contains(&StopReason::EngineError) {
        INTERNAL
    } else if report.jobs.iter().any(|j| j.errors.count > 0 || fleet_lost_a_host(j)) {
        IO_ERRORS
    } else if report.jobs.iter().any(|j| j.data_errors() > 0) {
        DATA_ERRORS
    } else {
        OK
    }
}

/// A fleet job whose result lacks a host's I/Os: as much a partial result as one with I/O errors.
fn fleet_lost_a_host(job: &JobResult) -> bool {
    job.fleet.iter().flat_map(|f| &f.hosts).any(|h| h.status == HostStatus::Failed)
}

/// Writes one line to stderr with every control character in it escaped
/// (`iolab_spec::printable::line`): names, paths and values that users or remote hosts wrote
/// are shown, never obeyed by the terminal, and a line feed in one cannot split the line.
///
/// A stderr that cannot be written (a full disk, a closed pipe) loses the line and the process
/// goes on to its exit code; `eprintln!` would panic.
pub fn say_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = line.to_string();
    let mut shown = iolab_spec::printable::line(&text).into_owned();
    shown.push('\n');
    let _ = std::io::stderr().lock().write_all(shown.as_bytes());
}

/// clap's errors, on one line; help and version go to stdout with success. `cli` is the
/// command line's definition, to name the help of the subcommand the error belongs to.
pub fn clap_error(error: clap::Error, cli: &clap::Command) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // Help that cannot be written (stdout on a full disk) fails as other output does; a
        // closed pipe (`iolab --help | head`) does not.
        if let Err(e) = error.print() {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                return fail(INTERNAL, &format!("cannot write the help: {e}"));
            }
        }
        return ExitCode::from(if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            USAGE
        } else {
            OK
        });
    }
    let rendered = error.render().to_string();
    // clap's message, without the usage, tip and help lines it appends after blank lines. The
    // message itself may quote a value with line feeds in it: `fail` shows them escaped.
    let mut message = rendered.as_str();
    for trailer in ["\n\nFor more information", "\n\nUsage:", "\n\n  tip:"] {
        if let Some(cut) = message.rfind(trailer) {
            message = &message[..cut];
        }
    }
    let message = match message.trim() {
        "" => "invalid arguments",
        text => text.trim_start_matches("error: "),
    };
    // The help of the command the flag belongs to, when the first argument names one.
    let command = std::env::args()
        .nth(1)
        .filter(|word| cli.find_subcommand(word).is_some())
        .map_or_else(|| "iolab".to_string(), |sub| format!("iolab {sub}"));
    fail(USAGE, &format!("{message} (see `{command} --help`)"))
}
