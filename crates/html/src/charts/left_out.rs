//! What a panel leaves out: every run that measured the panel's workload but has no line in it
//! is named under the panel with the reason (issue 36: a fio run was missing from the
//! per-interval charts with no word why). One rule for every panel, so no chart can drop a run
//! silently.

use iolab_spec::sweep::LoadAxis;
use iolab_store::Point;

use crate::charts::{chosen_points, Figure};
use crate::studies::Study;
use crate::{workload, Subject};

/// Adds to each panel's caption the runs of its workload it does not draw, and why.
pub(crate) fn say(figures: &mut [Figure], subjects: &[Subject<'_>]) {
    for figure in figures.iter_mut().filter(|f| !f.workload.is_empty()) {
        let missing: Vec<String> = subjects
            .iter()
            .filter(|s| !figure.draws(s))
            .filter_map(|s| {
                let points: Vec<&Point> =
                    s.run.points.iter().filter(|p| workload::of(p) == figure.workload).collect();
                (!points.is_empty()).then(|| format!("{}: {}", s.name, why(figure.kind, s, &points)))
            })
            .collect();
        if !missing.is_empty() {
            figure.caption.push_str(&format!(" Not drawn here: {}.", missing.join("; ")));
        }
    }
}

/// Why `subject`, whose `points` are of the panel's workload, has no line in a panel of `kind`.
fn why(kind: &str, subject: &Subject<'_>, points: &[&Point]) -> String {
    let imported = points.iter().all(|p| p.source == "fio");
    let shown = chosen_points(subject);
    let chosen_here = shown.iter().any(|c| points.iter().any(|p| std::ptr::eq(*p, c.point)));
    let elsewhere = || {
        let what: Vec<&str> = shown.iter().map(|c| c.what.as_str()).collect();
        format!("the run is shown by {}, of another workload", what.join(", "))
    };
    match kind {
        "qd-iops" | "qd-latency" | "latency-iops" => no_load_curve(subject, imported),
        "cpu-per-io" if points.iter().all(|p| p.summary.cpu_us_per_io.is_none()) => {
            if imported {
                "fio's JSON gives no CPU time per I/O".into()
            } else {
                "its CPU time was not measured".into()
            }
        }
        "percentiles" if !chosen_here => elsewhere(),
        "percentiles" => "it kept no latency percentiles".into(),
        "histogram" if !chosen_here => elsewhere(),
        "histogram" if imported => "fio's JSON holds percentiles, not the histogram".into(),
        "histogram" => match shown.iter().find_map(|c| c.point.histograms.as_ref()?.decode().err()) {
            Some(error) => format!("its histogram does not decode ({error})"),
            None => "the store kept no histogram for it".into(),
        },
        "series-iops" | "series-p99" if !chosen_here => elsewhere(),
        "series-iops" | "series-p99" if imported => {
            "fio's JSON holds no per-interval figures (its --write_bw_log/--write_lat_log are not imported)"
                .into()
        }
        "series-iops" | "series-p99" => "its measurement was shorter than two intervals".into(),
        _ => "it has none of the figures this chart draws".into(),
    }
}

/// Why a run draws no curve against load.
fn no_load_curve(subject: &Subject<'_>, imported: bool) -> String {
    let sweeps = subject.study.sweeps();
    if !sweeps.is_empty() {
        return if sweeps.iter().all(|s| s.load_axis == LoadAxis::None) {
            "its sweep varied no load (only block sizes or mixes), so it has no curve against load".into()
        } else {
            "it ran this workload at one load; its curves are of other workloads".into()
        };
    }
    match &subject.study {
        Study::Ramp(_) => "a ramp: its open-loop levels are in the ramp chart".into(),
        _ if imported => "a fio import: one load, no curve".into(),
        _ => format!("a {} run, not a sweep: no curve against load", subject.run.info.kind),
    }
}
