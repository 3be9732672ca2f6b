//! The `iolab` binary: argument parsing, wiring, exit codes. Nothing else lives here.

mod agent_command;
mod args;
mod burnin_command;
mod cache_command;
mod check_command;
mod cliff_command;
mod compare_command;
mod exit;
mod files_command;
mod files_progress;
mod fio_job_command;
mod fleet_cache_command;
mod fleet_command;
mod fleet_files_command;
mod fleet_replay_command;
mod flow;
mod import_command;
mod job_source;
mod ladder_command;
mod metrics_args;
mod output_file;
mod place;
mod precondition_command;
mod progress;
mod ramp_command;
mod rated_input;
mod recording;
mod replay_command;
mod replay_job;
mod report_command;
mod results_command;
mod run_command;
mod scale_command;
mod steady_command;
mod suite_command;
mod sweep_command;
mod trace_command;
mod trace_job_command;
mod verify_command;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match args::parse() {
        Ok(cli) => cli,
        Err(error) => return exit::clap_error(error, &args::command()),
    };
    // Held until iolab exits: the kernel drops the request with the file.
    let _polling = match cli.command.cpu_idle() {
        Some(args::CpuIdleMode::Poll) => match iolab_runner::CpusPolling::hold() {
            Ok(held) => Some(held),
            Err(why) => return exit::usage(&why),
        },
        _ => None,
    };
    let store = &cli.store;
    match cli.command {
        args::Command::Run(run) => {
            let store = store.keeping(run.workload.keep);
            metrics_args::here(&run.metrics.clone(), "run", |place| run_command::run(run, &store, place))
        }
        args::Command::Ladder(args) => ladder_command::run(&store.keeping(args.workload.keep), args),
        args::Command::Scale(args) => scale_command::run(&store.keeping(args.workload.keep), args),
        args::Command::Precondition(args) => {
            precondition_command::run(&store.keeping(args.workload.keep), args)
        }
        args::Command::Cliff(args) => cliff_command::run(&store.keeping(args.workload.keep), args),
        args::Command::Cache(args) => cache_command::run(&store.keeping(args.workload.keep), args),
        args::Command::Sweep(args) => {
            let store = store.keeping(args.workload.keep);
            metrics_args::here(&args.metrics.clone(), "sweep", |place| {
                sweep_command::run(args, &store, place)
            })
        }
        args::Command::Steady(args) => {
            let store = store.keeping(args.workload.keep);
            metrics_args::here(&args.metrics.clone(), "steady", |place| {
                steady_command::run(args, &store, place)
            })
        }
        args::Command::Suite(args) => {
            let store = store.keeping(args.workload.keep);
            metrics_args::here(&args.metrics.clone(), "suite", |place| {
                suite_command::run(args, &store, place)
            })
        }
        args::Command::Ramp(args) => {
            let store = store.keeping(args.workload.keep);
            metrics_args::here(&args.metrics.clone(), "ramp", |place| ramp_command::run(args, &store, place))
        }
        args::Command::Burnin(args) => {
            let store = store.keeping(args.workload.keep);
            metrics_args::here(&args.metrics.clone(), "burnin", |place| {
                burnin_command::run(args, &store, place)
            })
        }
        args::Command::Compare(args) => compare_command::run(args, store),
        args::Command::Check(args) => check_command::run(args, store),
        args::Command::Report(args) => report_command::run(args, store),
        args::Command::Fleet(args) => fleet_command::run(*args, store),
        args::Command::Agent(args) => agent_command::run(args),
        args::Command::FioJob(args) => fio_job_command::run(args),
        args::Command::Import { source } => import_command::run(source, store),
        args::Command::Results { action } => results_command::run(action, store),
        args::Command::Files(args) => {
            let store = store.keeping(args.store);
            files_command::run(args, &store)
        }
        args::Command::Verify(args) => verify_command::run(args),
        args::Command::Capture(args) => trace_command::capture_run(args),
        args::Command::Replay(args) => {
            let store = store.keeping(args.how.keep);
            replay_command::run(args, &store)
        }
        args::Command::Trace { action } => match action {
            args::TraceAction::Show { file, json } => trace_command::show(&file, json),
            args::TraceAction::Import { file, output } => trace_command::import(&file, &output),
            args::TraceAction::Job { file, output, check, allow_destroy, json, keep } => {
                let request =
                    trace_job_command::JobRequest { file, output, check, allow_destroy, json, keep };
                trace_job_command::run(request, store)
            }
        },
    }
}
