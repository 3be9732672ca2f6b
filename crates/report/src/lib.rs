//! Renders results for people (terminal tables) and for programs (JSON).
//!
//! JSON goes to its own writer and nothing else is ever written there: warnings and errors
//! belong on stderr, so JSON output always parses.

mod blend;
mod burnin;
mod cache;
mod cache_fleet;
mod check;
mod cliff;
mod compare;
mod export;
mod files;
mod fleet;
mod groups;
mod precondition;
mod ramp;
mod replay;
mod results;
mod steady;
mod studies;
mod suite;
mod suite_conclusion;
mod sweep;
mod tails;
mod text;
mod trace_shape;

pub use blend::{blend_json, blend_text, BLEND_SCHEMA};
pub use burnin::{burnin_json, burnin_text, rated_text, BURNIN_SCHEMA};
pub use cache::{cache_json, cache_text, CACHE_SCHEMA};
pub use cache_fleet::{fleet_cache_json, fleet_cache_text};
pub use check::{check_json, check_junit, check_markdown, check_text};
pub use cliff::{cliff_json, cliff_text, CLIFF_SCHEMA};
pub use compare::{
    compare, compare_json, compare_text, CompareInput, Comparison, COMPARE_SCHEMA, NOISE_RULE,
};
pub use export::{csv_header, export_csv, export_json, EXPORT_SCHEMA};
pub use files::{files_json, files_text};
pub use iolab_stats::format::{latency, thousands};
pub use precondition::{precondition_json, precondition_text, PRECONDITION_SCHEMA};
pub use ramp::{ramp_json, ramp_text, RAMP_SCHEMA};
pub use replay::{replay_json, replay_text, HostReplay, REPLAY_SCHEMA};
pub use results::{run_text, runs_text, utc};
pub use steady::{steady_json, steady_text, STEADY_SCHEMA};
pub use studies::planned_workload;
pub use studies::{ladder_json, ladder_text, scale_json, scale_text, LADDER_SCHEMA, SCALE_SCHEMA};
pub use suite::{suite_json, suite_text, SUITE_SCHEMA};
pub use sweep::{sweep_json, sweep_text, SWEEP_SCHEMA};
pub use text::{rate_summary, render_text};
pub use trace_shape::{
    capture_text, trace_job_json, trace_job_text, trace_json, trace_text, TRACE_JOB_SCHEMA, TRACE_SCHEMA,
};

use iolab_stats::result::RunReport;

/// A text report as it may reach a terminal: names, paths and messages that came from users or
/// remote hosts keep their line feeds and lose every other control character
/// (`iolab_spec::printable`). JSON needs none of this: serde_json escapes them itself.
fn shown(text: String) -> String {
    match iolab_spec::printable::lines(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// The report as pretty-printed JSON (schema: docs/results-schema.md).
pub fn render_json(report: &RunReport) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}
