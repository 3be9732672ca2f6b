//! Exit codes (documented in README.md) and the one-line error format.

use std::process::ExitCode;

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
/// Interrupted by SIGINT or SIGTERM; the results gathered so far were written.
pub const INTERRUPTED: u8 = 130;

/// Prints `message` as iolab's one-line error and returns `code`.
pub fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("iolab: error: {}", message.replace('\n', " "));
    ExitCode::from(code)
}

/// clap's errors, on one line; help and version go to stdout with success.
pub fn clap_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return ExitCode::from(if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            USAGE
        } else {
            OK
        });
    }
    let rendered = error.render().to_string();
    let first = rendered.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
    let message = first.trim().trim_start_matches("error: ");
    // The help of the command the flag belongs to, when the first argument names one.
    let command = std::env::args()
        .nth(1)
        .filter(|word| <crate::args::Cli as clap::CommandFactory>::command().find_subcommand(word).is_some())
        .map_or_else(|| "iolab".to_string(), |sub| format!("iolab {sub}"));
    fail(USAGE, &format!("{message} (see `{command} --help`)"))
}
