//! Several fio results, one file per point, as one sweep (`iolab import fio DIR --as-sweep`):
//! the way fio users script a load curve (bench-fio and fio-plot write one
//! `<rw>-<iodepth>-<numjobs>.json` per point). Each point's iodepth, numjobs, rw and block size
//! are read from the options fio printed in the file, never from its name, and the points are
//! named and grouped into curves as `iolab sweep` names and groups its own ("qd 8",
//! "workers 4", "bs 64KiB, qd 8"), so reports and comparisons treat both alike.

use std::collections::BTreeSet;

use iolab_spec::sweep::LoadAxis;
use iolab_store::{NewRun, Point};
use serde_json::json;

use crate::error::FioImportError;
use crate::Imported;

/// The points of one sweep, in curve order then load order, with what groups them.
#[derive(Debug, Clone)]
pub struct ImportedSweep {
    pub run: NewRun,
    pub points: Vec<Point>,
    pub load_axis: LoadAxis,
    /// Per point: the curve it belongs to and the curve's name (what its points share).
    pub curves: Vec<(usize, String)>,
    pub notes: Vec<String>,
    /// Per point: the file it came from.
    pub files: Vec<String>,
}

/// What tells the points apart: the load (qd, workers) and what makes curves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    rw: String,
    bs: String,
    access: String,
    workers: u32,
    qd: u32,
}

/// One sweep of `files` (name, import of that file), each holding one point.
pub fn sweep(files: Vec<(String, Imported)>) -> Result<ImportedSweep, FioImportError> {
    if files.is_empty() {
        return Err(FioImportError::EmptySweep(
            ": give a directory of fio JSON files or several files".into(),
        ));
    }
    let mut points = Vec::with_capacity(files.len());
    let mut notes: Vec<String> = Vec::new();
    let mut first_run = None;
    for (name, imported) in files {
        if imported.points.len() != 1 {
            return Err(FioImportError::NotOnePoint { file: name, points: imported.points.len() });
        }
        for note in imported.notes {
            // A job's note names the job, which every file may name alike: say which file.
            let note = if note.starts_with("job '") { format!("{name}: {note}") } else { note };
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        let point = imported.points.into_iter().next().expect("one point, checked above");
        let spec = &point.spec;
        let text = |key: &str| spec.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let shape = Shape {
            rw: text("rw"),
            bs: [text("bs"), text("bssplit"), text("bsrange")].join(" ").trim().to_string(),
            access: point.summary.access.clone(),
            workers: point.summary.workers.max(numjobs(spec)),
            qd: point.summary.qd,
        };
        first_run.get_or_insert(imported.run);
        points.push((shape, name, point));
    }
    let distinct =
        |f: &dyn Fn(&Shape) -> String| points.iter().map(|(s, ..)| f(s)).collect::<BTreeSet<_>>().len();
    let qd_swept = distinct(&|s| s.qd.to_string()) > 1;
    let workers_swept = distinct(&|s| s.workers.to_string()) > 1;
    let access_swept = distinct(&|s| s.access.clone()) > 1;
    let load_axis = if qd_swept {
        LoadAxis::Qd
    } else if workers_swept {
        LoadAxis::Workers
    } else {
        LoadAxis::None
    };
    // Curves in order of what they share, each curve's points by load.
    points.sort_by(|(a, ..), (b, ..)| {
        let curve =
            |s: &Shape| (s.access.clone(), if load_axis == LoadAxis::Workers { 0 } else { s.workers });
        curve(a).cmp(&curve(b)).then(a.workers.cmp(&b.workers)).then(a.qd.cmp(&b.qd))
    });
    let seen: BTreeSet<(String, u32, u32)> =
        points.iter().map(|(s, ..)| (s.access.clone(), s.workers, s.qd)).collect();
    if seen.len() != points.len() {
        notes.push(
            "several files hold the same point (access, iodepth, numjobs): they are kept as repeats of it"
                .into(),
        );
    }
    let mut curve_names: Vec<String> = Vec::new();
    let mut curves = Vec::with_capacity(points.len());
    let mut stored = Vec::with_capacity(points.len());
    let mut sources = Vec::with_capacity(points.len());
    for (seq, (shape, file, mut point)) in points.into_iter().enumerate() {
        let mut shared = Vec::new();
        if access_swept {
            shared.push(shape.access.clone());
        }
        if workers_swept && load_axis != LoadAxis::Workers {
            shared.push(format!("workers {}", shape.workers));
        }
        let curve_name = shared.join(", ");
        let curve = curve_names.iter().position(|c| *c == curve_name).unwrap_or_else(|| {
            curve_names.push(curve_name.clone());
            curve_names.len() - 1
        });
        let mut labels = shared;
        match load_axis {
            LoadAxis::Qd => labels.push(format!("qd {}", shape.qd)),
            LoadAxis::Workers => labels.push(format!("workers {}", shape.workers)),
            LoadAxis::None if labels.is_empty() => labels.push(point.name.clone()),
            LoadAxis::None => {}
        }
        point.name = labels.join(", ");
        point.seq = u32::try_from(seq).unwrap_or(u32::MAX);
        curves.push((curve, curve_name));
        stored.push(point);
        sources.push(file);
    }
    let first = first_run.expect("at least one file, checked above");
    let started = stored.iter().map(|p| p.completed_at_unix_s).min().unwrap_or(first.started_at_unix_s);
    let label =
        format!("sweep (fio) {}; {} points", first.label.split(';').next().unwrap_or_default(), stored.len());
    let run = NewRun {
        kind: "sweep".to_string(),
        label,
        command: first.command.clone(),
        iolab_version: first.iolab_version.clone(),
        host: first.host.clone(),
        started_at_unix_s: started.min(first.started_at_unix_s),
        plan: json!({
            "source": "fio",
            "as_sweep": true,
            "files": sources,
            "points": stored.iter().map(|p| json!({"name": p.name, "job options": p.spec})).collect::<Vec<_>>(),
        }),
        environment: first.environment.clone(),
    };
    notes.insert(
        0,
        "imported as one sweep: each point's iodepth, numjobs, rw and block size are read from the options fio \
         printed in its file, never from the file's name"
            .into(),
    );
    Ok(ImportedSweep { run, points: stored, load_axis, curves, notes, files: sources })
}

fn numjobs(spec: &serde_json::Value) -> u32 {
    spec.get("numjobs").and_then(|v| v.as_str()).and_then(|v| v.trim().parse().ok()).unwrap_or(1)
}
