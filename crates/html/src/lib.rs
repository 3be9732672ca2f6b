//! The HTML report of stored runs (`iolab report ID... -o report.html`): one self-contained
//! file, inline CSS and SVG charts drawn with plotters, no script and nothing fetched, so it
//! opens anywhere, offline, years later.
//!
//! It reads only what the store keeps (each point's summary, series, verdict and histograms,
//! and the command's own report), never re-runs anything. It opens with a summary: per workload
//! which run is fastest, by how much and whether beyond noise (`iolab compare`'s rule), and
//! each run's sweet spot and what limited it. Several runs are overlaid in each chart, one
//! panel per workload (block size and mix), each run named "#ID kind target" in the legend and
//! drawn in one colour throughout the page (its several lines in shades of it). A point run
//! across a fleet gets a Hosts panel: each host's figures, start offset, verdict and link, and
//! its IOPS over time. A chart is drawn only where some run has its data, so a run imported from
//! fio (no series or histograms) renders what it has.

mod axis;
mod charts;
mod environment;
mod escape;
mod files;
mod fleet;
mod hosts;
mod page;
mod plot;
mod shades;
mod studies;
mod summary;
mod workload;

use iolab_store::{Point, StoredRun};
use plotters::style::RGBColor;

use crate::studies::Study;

pub use shades::delta_e;

#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error("no runs to report: give at least one run ID (see `iolab results list`)")]
    NoRuns,
    #[error("a chart could not be drawn: {0}")]
    Draw(String),
}

/// The report of `runs`, in the order given, as one HTML document.
pub fn render(runs: &[StoredRun]) -> Result<String, HtmlError> {
    if runs.is_empty() {
        return Err(HtmlError::NoRuns);
    }
    let subjects: Vec<Subject<'_>> = runs
        .iter()
        .enumerate()
        .map(|(index, run)| Subject {
            name: run_name(run),
            run,
            study: Study::of(run.report.as_ref()),
            base: plot::color(index),
        })
        .collect();
    let figures = charts::all(&subjects)?;
    let hosts = subjects
        .iter()
        .map(|s| hosts::panels(s).map(|h| h + &files::panels(s)))
        .collect::<Result<Vec<_>, _>>()?;
    let summary = summary::html(&subjects);
    Ok(page::document(&subjects, &summary, &figures, &hosts))
}

/// A run as the report shows it.
pub(crate) struct Subject<'a> {
    pub run: &'a StoredRun,
    /// "#12 sweep /dev/nvme0n1": what every legend calls it.
    pub name: String,
    pub study: Study,
    /// The run's colour, the same in every chart and table of the page.
    pub base: RGBColor,
}

impl Subject<'_> {
    /// The run's colour for its `index`-th line of one kind (a sweep's curves, a suite's
    /// points): its own hue, darker or lighter by turns, so a colour never means two runs.
    pub fn color(&self, index: usize) -> RGBColor {
        shades::shade(self.base, index)
    }

    /// "#12": what a label in a chart calls the run (the legend gives its full name).
    pub fn tag(&self) -> String {
        format!("#{}", self.run.info.id)
    }

    /// The point a sweep row was measured by: the point of that name, or with
    /// --until-steady its last round ("qd 4 round 6").
    pub fn point_named(&self, name: &str) -> Option<&Point> {
        let rounds = format!("{name} round ");
        let points = &self.run.points;
        points
            .iter()
            .find(|p| p.name == name)
            .or_else(|| points.iter().rev().find(|p| p.name.starts_with(&rounds)))
    }
}

/// "#12 sweep uring /dev/nvme0n1": the id, the command, the engines and the targets (a long
/// file path by its file name, so the legend stays readable). The engine tells apart runs of
/// one target, the commonest comparison.
fn run_name(run: &StoredRun) -> String {
    let mut engines: Vec<&str> = Vec::new();
    for engine in run.points.iter().map(|p| p.summary.engine.as_str()).filter(|e| !e.is_empty()) {
        if !engines.contains(&engine) {
            engines.push(engine);
        }
    }
    let mut targets: Vec<String> = Vec::new();
    for target in run.points.iter().flat_map(|p| &p.summary.targets) {
        let short = if target.starts_with("/dev/") || target.chars().count() <= 28 {
            target.clone()
        } else {
            target.rsplit('/').next().unwrap_or(target).to_string()
        };
        if !targets.contains(&short) {
            targets.push(short);
        }
    }
    if targets.len() > 2 {
        let more = targets.len() - 2;
        targets.truncate(2);
        targets.push(format!("{more} more"));
    }
    let what = if targets.is_empty() { run.info.label.clone() } else { targets.join(" + ") };
    format!("#{} {} {} {}", run.info.id, run.info.kind, engines.join("/"), what)
        .replace("  ", " ")
        .trim_end()
        .to_string()
}
