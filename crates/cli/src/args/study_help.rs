//! The help of each study's `--runtime` and `--ramp` says the study's own defaults (a sweep
//! measures each point 5 s after 1 s of ramp, not the 10 s and 2 s of `iolab run`), taken from
//! the numbers the studies use (`iolab_studies::timing`), so the help cannot disagree with them.

use clap::Command;

/// `command` with every study's timing help, here and under `iolab fleet`.
pub fn with_study_timing(command: Command) -> Command {
    let mut command = command;
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names {
        command = command.mut_subcommand(&name, |sub| match iolab_studies::timing::step_timing(&name) {
            Some((runtime, ramp)) if has_timing(&sub) => sub
                .mut_arg("runtime", |arg| {
                    arg.help(format!("Measured time of each step, after its ramp (default {runtime} in `{name}`)"))
                })
                .mut_arg("ramp", |arg| {
                    let default = if ramp.0 == 0 { "none".to_string() } else { ramp.to_string() };
                    arg.help(format!(
                        "Warm-up before each step is measured; its I/Os are not counted (default {default} in `{name}`)"
                    ))
                }),
            // `iolab fleet` holds the studies again.
            _ => with_study_timing(sub),
        });
    }
    command
}

fn has_timing(command: &Command) -> bool {
    ["runtime", "ramp"].iter().all(|id| command.get_arguments().any(|arg| arg.get_id() == *id))
}

#[cfg(test)]
mod tests {
    use iolab_studies::timing::step_timing;

    /// The help `iolab COMMAND --help` prints for `--runtime`.
    fn runtime_help(path: &[&str]) -> String {
        let mut command = super::super::command();
        let mut sub = &mut command;
        for name in path {
            sub = sub.find_subcommand_mut(name).expect("the command exists");
        }
        let arg = sub.get_arguments().find(|a| a.get_id() == "runtime").expect("--runtime");
        arg.get_help().map(ToString::to_string).unwrap_or_default()
    }

    #[test]
    fn each_study_says_its_own_step_time_and_run_says_the_job_default() {
        for name in ["sweep", "suite", "ramp", "ladder", "scale", "cache", "steady"] {
            let (runtime, _) = step_timing(name).expect("a study of steps");
            let help = runtime_help(&[name]);
            assert!(help.contains(&format!("default {runtime} in `{name}`")), "{name}: {help}");
        }
        assert_eq!(
            runtime_help(&["fleet", "sweep"]),
            runtime_help(&["sweep"]),
            "the fleet's sweep is a sweep"
        );
        assert!(runtime_help(&["run"]).contains("(default 10s)"), "{}", runtime_help(&["run"]));
    }
}
