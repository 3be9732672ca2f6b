//! `--repeat N`: the run's phases N times, as the block studies repeat a point, so that each
//! phase's rate comes with its spread. Each repeat works a tree of its own: a new tree, made
//! and removed as a run's (`--keep` keeps the last one's), or the kept tree the run began on,
//! which the phases must then leave as they found it (stat, read, readdir, two renames).

use crate::error::FilesError;
use crate::plan::FilesPlan;
use crate::report::{FilesReport, PhaseResult, RepeatSpread};
use crate::run::{run, RunOptions};

/// Repeats a run may ask.
pub const MAX_REPEATS: u32 = 1000;

/// Runs `plan` `repeats` times in `options.dir`, calling `on_phase` with each phase as it ends
/// (its `repeat` set); stops after a repeat that failed or was interrupted. One report of
/// every repeat's phases, with each phase's spread over the repeats.
pub fn run_repeated(
    plan: &FilesPlan,
    options: &RunOptions<'_>,
    repeats: u32,
    mut on_phase: impl FnMut(&PhaseResult),
) -> Result<FilesReport, FilesError> {
    check_repeats(plan, repeats)?;
    let mut whole: Option<FilesReport> = None;
    for repeat in 1..=repeats {
        // A kept tree stays for the next repeat; the last does as the user asked.
        let keep = if repeat < repeats { plan.start.dirs } else { options.keep };
        let this = RunOptions {
            dir: options.dir.clone(),
            keep,
            interrupt: options.interrupt,
            progress: options.progress,
        };
        let mut report = run(plan, &this, |phase| {
            let mut phase = phase.clone();
            phase.repeat = repeat;
            on_phase(&phase);
        })?;
        for phase in &mut report.phases {
            phase.repeat = repeat;
        }
        let stop = report.failure().is_some() || report.interrupted();
        whole = Some(match whole {
            None => report,
            Some(mut so_far) => {
                so_far.phases.append(&mut report.phases);
                for note in report.notes {
                    if !so_far.notes.contains(&note) {
                        so_far.notes.push(note);
                    }
                }
                so_far.peak_rss_bytes = so_far.peak_rss_bytes.max(report.peak_rss_bytes);
                so_far.kept = report.kept;
                so_far
            }
        });
        if stop {
            break;
        }
    }
    let mut whole = whole.expect("at least one repeat ran");
    if repeats > 1 {
        whole.repeats = spreads(plan, &whole.phases);
    }
    Ok(whole)
}

/// Refuses a count out of range, and repeats over a kept tree that the phases change: before
/// anything is made.
pub fn check_repeats(plan: &FilesPlan, repeats: u32) -> Result<(), FilesError> {
    if !(1..=MAX_REPEATS).contains(&repeats) {
        return Err(FilesError::Plan(format!("--repeat takes 1 to {MAX_REPEATS}, not {repeats}")));
    }
    let end = plan.phases.iter().fold(plan.start, |state, &phase| state.after(phase));
    if repeats > 1 && plan.start.dirs && end != plan.start {
        return Err(FilesError::Plan(format!(
            "--repeat over a kept tree needs phases that leave it as they found it (stat, read, readdir, rename twice): these leave {}, where it holds {}",
            end.words(),
            plan.start.words()
        )));
    }
    Ok(())
}

/// Each listed phase's rate in every repeat that finished it, and their spread.
fn spreads(plan: &FilesPlan, phases: &[PhaseResult]) -> Vec<RepeatSpread> {
    let per_repeat = plan.phases.len().max(1);
    plan.phases
        .iter()
        .enumerate()
        .filter_map(|(position, &phase)| {
            let rates: Vec<f64> = phases
                .iter()
                .enumerate()
                .filter(|(i, p)| i % per_repeat == position && p.failure.is_none() && !p.interrupted)
                .map(|(_, p)| p.ops_per_s)
                .collect();
            let mean = rates.iter().sum::<f64>() / rates.len().max(1) as f64;
            let (low, high) = rates.iter().fold((f64::MAX, 0.0_f64), |(l, h), &r| (l.min(r), h.max(r)));
            let spread_pct = if mean > 0.0 { (high - low) / mean * 100.0 } else { 0.0 };
            (!rates.is_empty()).then_some(RepeatSpread {
                position,
                phase,
                ops_per_s: rates,
                mean_ops_per_s: mean,
                spread_pct,
            })
        })
        .collect()
}
