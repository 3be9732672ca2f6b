//! How long each study measures a step unless `--runtime` and `--ramp` say otherwise: the
//! numbers the studies use, in one place for the command line's help to say.

use iolab_spec::Nanos;

use crate::{cache, plan, rounds};

/// The measured time and ramp of one step (a sweep's point, a suite's test, a ramp's level, a
/// ladder's rung, a scale step, a cache working set, a steady-state round) of study `command`;
/// `None` for a command that is not a study of steps.
pub fn step_timing(command: &str) -> Option<(Nanos, Nanos)> {
    let defaults = match command {
        "sweep" | "suite" | "ramp" | "ladder" | "scale" => plan::step_defaults(),
        "cache" => cache::step_defaults(),
        "steady" => rounds::round_defaults(),
        _ => return None,
    };
    Some((defaults.runtime?, defaults.ramp?))
}
