//! `iolab compare A B [C...]`: runs (or single points of them) side by side, each against the
//! first, with whether each difference exceeds the run-to-run noise (iolab_report::compare).

use std::process::ExitCode;

use iolab_analysis::compare::match_cache_shares;
use iolab_report::{compare, compare_json, compare_text, CompareInput, CACHE_SCHEMA};
use iolab_spec::OutputSpec;
use iolab_store::{Point, RunId, Store, StoredRun};

use crate::args::{CompareArgs, StoreArgs};
use crate::results_command::open_existing;
use crate::{exit, flow};

pub fn run(args: CompareArgs, store: &StoreArgs) -> ExitCode {
    let db = match open_existing(store) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let sides = match args.sides.iter().map(|side| input(&db, side)).collect::<Result<Vec<_>, _>>() {
        Ok(sides) => sides,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let (mut inputs, regions): (Vec<CompareInput>, Vec<Option<u64>>) = sides.into_iter().unzip();
    let matched = match_cache_shares(&mut inputs, &regions);
    let mut comparison = compare(&inputs);
    comparison.notes.extend(matched);
    let text = if args.json { compare_json(&comparison) } else { compare_text(&comparison) };
    match flow::write_output(&OutputSpec::default(), &text) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(code) => code,
    }
}

/// One side: "12" (every point of run 12) or "12:qd 32" / "12:3" (that point and its repeats),
/// and the region its working sets are shares of when it is a cache run.
fn input(db: &Store, side: &str) -> Result<(CompareInput, Option<u64>), String> {
    let (run, points) = stored_side(db, side)?;
    let region = cache_region(run.report.as_ref());
    Ok((CompareInput { label: format!("#{}", side.trim_start_matches('#')), points }, region))
}

/// The run a side names ("12", "#12", "12:qd 32", "12:3") and the points it stands for: every
/// completed point, or the one named (by name, or by number) with its repeats.
pub(crate) fn stored_side(db: &Store, side: &str) -> Result<(StoredRun, Vec<Point>), String> {
    let (id, point) = match side.split_once(':') {
        Some((id, point)) => (id, Some(point)),
        None => (side, None),
    };
    let id: RunId = id.trim_start_matches('#').parse().map_err(|_| {
        format!("'{side}' is not a run: give ID or ID:POINT, as `iolab results list` shows them")
    })?;
    let mut run = db.run(id).map_err(|e| e.to_string())?;
    let all = std::mem::take(&mut run.points);
    let points = match point {
        None => all,
        Some(wanted) => {
            // A number names a point by its place; its repeats share its name.
            let name = match wanted.parse::<u32>() {
                Ok(seq) => all.iter().find(|p| p.seq == seq).map(|p| p.name.clone()),
                Err(_) => Some(wanted.to_string()),
            };
            let chosen: Vec<_> = all.into_iter().filter(|p| Some(&p.name) == name.as_ref()).collect();
            if chosen.is_empty() {
                return Err(format!("run {id} has no point '{wanted}' (see `iolab results show {id}`)"));
            }
            chosen
        }
    };
    if points.is_empty() {
        return Err(format!("run {id} holds no completed point"));
    }
    Ok((run, points))
}

/// The region a cache run's working sets are shares of: on a fleet the first host's, whose job
/// each stored point's spec is; `None` for another kind of run.
fn cache_region(report: Option<&serde_json::Value>) -> Option<u64> {
    let summary = report.filter(|r| r["schema"] == CACHE_SCHEMA)?.get("summary")?;
    let first_host = summary.pointer("/fleet/hosts/0/summary/region_bytes");
    first_host.or_else(|| summary.get("region_bytes"))?.as_u64()
}
