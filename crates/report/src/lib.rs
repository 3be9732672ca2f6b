//! Renders results for people (terminal tables) and for programs (JSON).
//!
//! JSON goes to its own writer and nothing else is ever written there: warnings and errors
//! belong on stderr, so JSON output always parses.

mod format;
mod studies;
mod text;

pub use format::{latency, thousands};
pub use studies::{ladder_json, ladder_text, scale_json, scale_text, LADDER_SCHEMA, SCALE_SCHEMA};
pub use text::{rate_summary, render_text};

use iolab_stats::result::RunReport;

/// The report as pretty-printed JSON (schema: docs/results-schema.md).
pub fn render_json(report: &RunReport) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}
