//! A sweep: the Cartesian product of the lists given to --bs, --read-pct, --random-pct,
//! --workers and --qd, one point per combination, grouped into load curves.
//!
//! A curve is the run of points where only the load changes: QD when QD is swept (one curve
//! per value of every other swept option, workers included), else workers. Its sweet spot is
//! found by `iolab_analysis::knee`.

use serde::{Deserialize, Serialize};

use crate::axis::Axis;
use crate::error::{invalid, SpecError};
use crate::options::Options;
use crate::units::Bytes;

/// The most points one sweep may have.
pub const MAX_POINTS: usize = 10_000;

/// Which option a curve's points climb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadAxis {
    Qd,
    Workers,
    /// Neither QD nor workers is swept: the points are not a load curve.
    None,
}

/// One point of a sweep: the options that run it, on top of the user's flags.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    /// "qd 8", "qd 8, bs 16KiB": the swept values only.
    pub name: String,
    /// Index of the curve the point belongs to; curves are numbered in order from 0.
    pub curve: usize,
    /// "bs 16KiB, read 70%": what the curve's points share (empty for a single curve).
    pub curve_name: String,
    pub flags: Options,
}

/// The points of a sweep over `flags`, outermost option first (bs, read %, random %, workers,
/// QD), so that each curve's points run one after another.
pub fn expand(flags: &Options) -> Result<(LoadAxis, Vec<SweepPoint>), SpecError> {
    let listed = |len: Option<usize>| len.is_some_and(|n| n > 1);
    let qd_swept = listed(flags.qd.as_ref().map(|a| a.0.len()));
    let workers_swept = listed(flags.workers.as_ref().map(|a| a.0.len()));
    let others_swept = [
        flags.bs.as_ref().map(|a| a.0.len()),
        flags.read_pct.as_ref().map(|a| a.0.len()),
        flags.random_pct.as_ref().map(|a| a.0.len()),
    ]
    .into_iter()
    .any(listed);
    if !qd_swept && !workers_swept && !others_swept {
        return Err(invalid(
            "a sweep needs a list for at least one of --qd, --workers, --bs, --read-pct, --random-pct (e.g. --qd 1..512)",
        ));
    }
    if flags.bs.as_ref().is_some_and(|a| a.0.len() > 1) && flags.bs_split.is_some() {
        return Err(invalid("--bs with a list cannot be combined with --bs-split; sweep one or the other"));
    }
    let load = if qd_swept {
        LoadAxis::Qd
    } else if workers_swept {
        LoadAxis::Workers
    } else {
        LoadAxis::None
    };

    let values = |axis: &Option<Axis<u32>>| {
        axis.as_ref().map(|a| a.0.iter().map(|&v| Some(v)).collect()).unwrap_or(vec![None])
    };
    let bs: Vec<Option<Bytes>> =
        flags.bs.as_ref().map(|a| a.0.iter().map(|&v| Some(v)).collect()).unwrap_or(vec![None]);
    let (read, random, workers, qd) =
        (values(&flags.read_pct), values(&flags.random_pct), values(&flags.workers), values(&flags.qd));
    let count = bs.len() * read.len() * random.len() * workers.len() * qd.len();
    if count > MAX_POINTS {
        return Err(invalid(format!(
            "the sweep has {count} points, more than {MAX_POINTS}; sweep fewer values"
        )));
    }

    let swept = |axis: &Option<Axis<u32>>| axis.as_ref().is_some_and(|a| a.0.len() > 1);
    let bs_swept = flags.bs.as_ref().is_some_and(|a| a.0.len() > 1);
    let mut points = Vec::with_capacity(count);
    let mut curve_names: Vec<String> = Vec::new();
    for &b in &bs {
        for &r in &read {
            for &x in &random {
                for &w in &workers {
                    // What the curve's points share, then the load value that tells them apart.
                    let mut shared = Vec::new();
                    if bs_swept {
                        shared.push(format!("bs {}", b.unwrap_or_default()));
                    }
                    if swept(&flags.read_pct) {
                        shared.push(format!("read {}%", r.unwrap_or_default()));
                    }
                    if swept(&flags.random_pct) {
                        shared.push(format!("random {}%", x.unwrap_or_default()));
                    }
                    let workers_label = format!("workers {}", w.unwrap_or_default());
                    if workers_swept && load != LoadAxis::Workers {
                        shared.push(workers_label.clone());
                    }
                    let curve_name = shared.join(", ");
                    let curve = curve_names.iter().position(|c| *c == curve_name).unwrap_or_else(|| {
                        curve_names.push(curve_name.clone());
                        curve_names.len() - 1
                    });
                    for &q in &qd {
                        let mut labels = shared.clone();
                        if load == LoadAxis::Workers {
                            labels.push(workers_label.clone());
                        }
                        if qd_swept {
                            labels.push(format!("qd {}", q.unwrap_or_default()));
                        }
                        let mut point = flags.clone();
                        point.bs = b.map(Axis::one).or(point.bs);
                        point.read_pct = r.map(Axis::one).or(point.read_pct);
                        point.random_pct = x.map(Axis::one).or(point.random_pct);
                        point.workers = w.map(Axis::one).or(point.workers);
                        point.qd = q.map(Axis::one).or(point.qd);
                        points.push(SweepPoint {
                            name: labels.join(", "),
                            curve,
                            curve_name: curve_name.clone(),
                            flags: point,
                        });
                    }
                }
            }
        }
    }
    Ok((load, points))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(qd: &str, workers: &str, bs: &str) -> Options {
        Options {
            qd: (!qd.is_empty()).then(|| qd.parse().expect("qd")),
            workers: (!workers.is_empty()).then(|| workers.parse().expect("workers")),
            bs: (!bs.is_empty()).then(|| bs.parse().expect("bs")),
            ..Options::default()
        }
    }

    #[test]
    fn the_product_in_curve_order() {
        let (load, points) = expand(&flags("1,4", "", "4k,64k")).expect("sweep");
        assert_eq!(load, LoadAxis::Qd);
        let names: Vec<&str> = points.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["bs 4KiB, qd 1", "bs 4KiB, qd 4", "bs 64KiB, qd 1", "bs 64KiB, qd 4"]);
        let curves: Vec<usize> = points.iter().map(|p| p.curve).collect();
        assert_eq!(curves, [0, 0, 1, 1]);
        assert_eq!(points[2].curve_name, "bs 64KiB");
        assert_eq!(points[3].flags.qd, Some(Axis::one(4)));
        assert_eq!(points[3].flags.bs, Some(Axis::one(Bytes(65536))));
    }

    #[test]
    fn workers_are_the_load_only_when_qd_is_not_swept() {
        let (load, points) = expand(&flags("", "1,2,4", "")).expect("sweep");
        assert_eq!(load, LoadAxis::Workers);
        assert!(points.iter().all(|p| p.curve == 0));
        let (load, points) = expand(&flags("1,2", "1,2", "")).expect("sweep");
        assert_eq!(load, LoadAxis::Qd);
        assert_eq!(points.iter().map(|p| p.curve).collect::<Vec<_>>(), [0, 0, 1, 1]);
        assert_eq!(points[2].name, "workers 2, qd 1");
    }

    #[test]
    fn a_sweep_needs_a_list_and_a_bounded_size() {
        let error = expand(&flags("32", "", "")).expect_err("no list");
        assert!(error.to_string().contains("needs a list"), "{error}");
        let huge =
            Options { read_pct: Some("0..100/1".parse().expect("pct")), ..flags("1..512", "1..64", "4k,8k") };
        let error = expand(&huge).map(|(_, points)| points.len()).expect_err("huge");
        assert!(error.to_string().contains("more than 10000"), "{error}");
    }
}
