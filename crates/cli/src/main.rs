//! The `iolab` binary: argument parsing, wiring, exit codes. Nothing else lives here.

mod args;
mod exit;
mod progress;
mod run_command;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return exit::clap_error(error),
    };
    match cli.command {
        args::Command::Run(run) => run_command::run(run),
    }
}
