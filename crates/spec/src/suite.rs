//! The suites: the tests reviewers and storage engineers run, each as steps over the user's
//! target and timing. The steps say what to run; the CLI runs them and the report lays them out.

use thiserror::Error;

use crate::axis::Axis;
use crate::distribution::Distribution;
use crate::options::Options;
use crate::units::Bytes;
use crate::values::Rw;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// The four classic desktop tests (CrystalDiskMark's), read and write.
    Quick,
    /// QD 1 latency, random read and write load curves to 512 outstanding I/Os (at most 16
    /// workers), a 70/30 mix curve uniform and zipf-skewed, sequential read and write.
    Enterprise,
    /// SNIA PTS style: precondition, steady state, then an IOPS matrix of block size by mix.
    Pts,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::Quick => "quick",
            Suite::Enterprise => "enterprise",
            Suite::Pts => "pts",
        }
    }
}

/// A `--suite` iolab does not have.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("'{0}' is not a suite; use quick, enterprise or pts")]
pub struct UnknownSuite(String);

impl std::str::FromStr for Suite {
    type Err = UnknownSuite;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "quick" => Ok(Suite::Quick),
            "enterprise" => Ok(Suite::Enterprise),
            "pts" => Ok(Suite::Pts),
            _ => Err(UnknownSuite(text.to_string())),
        }
    }
}

/// One named run of a step: the options it lays over the user's.
#[derive(Debug, Clone)]
pub struct SuiteJob {
    pub name: String,
    pub flags: Options,
}

// A suite has a handful of steps, built once: their size does not matter.
#[derive(Debug, Clone)]
pub enum SuiteStep {
    /// Jobs reported together in one table.
    Table { title: String, jobs: Vec<SuiteJob> },
    /// A load curve: its points in order of outstanding I/Os; the sweet spot is found.
    Curve { title: String, points: Vec<SuiteJob> },
    /// Sequential writes over the whole region, `passes` times.
    Precondition { passes: u32 },
    /// Rounds of one job until steady state.
    Steady { title: String, job: Box<SuiteJob> },
    /// Jobs laid out as a grid: `rows` x `columns` labels, `jobs` row by row.
    Matrix { title: String, rows: Vec<String>, columns: Vec<String>, jobs: Vec<SuiteJob> },
}

impl SuiteStep {
    /// The jobs known before the step runs (steady rounds and preconditioning decide theirs).
    pub fn jobs(&self) -> &[SuiteJob] {
        match self {
            SuiteStep::Table { jobs, .. }
            | SuiteStep::Curve { points: jobs, .. }
            | SuiteStep::Matrix { jobs, .. } => jobs,
            SuiteStep::Steady { job, .. } => std::slice::from_ref(job),
            SuiteStep::Precondition { .. } => &[],
        }
    }
}

/// The options a suite sets itself, which the user may not give.
pub const SUITE_KEYS: &[&str] = &[
    "rw",
    "read_pct",
    "random_pct",
    "bs",
    "bs_split",
    "qd",
    "workers",
    "io_limit",
    "rate_iops",
    "burst",
    "distribution",
];

fn job(name: impl Into<String>, rw: Rw, read_pct: Option<u32>, bs: u64, qd: u32, workers: u32) -> SuiteJob {
    SuiteJob {
        name: name.into(),
        flags: Options {
            rw: Some(rw),
            read_pct: read_pct.map(Axis::one),
            bs: Some(Axis::one(Bytes(bs))),
            qd: Some(Axis::one(qd)),
            workers: Some(Axis::one(workers)),
            ..Options::default()
        },
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

pub fn steps(suite: Suite) -> Vec<SuiteStep> {
    match suite {
        Suite::Quick => quick(),
        Suite::Enterprise => enterprise(),
        Suite::Pts => pts(),
    }
}

fn quick() -> Vec<SuiteStep> {
    let tests = [
        ("SEQ1M Q8T1", Rw::Read, Rw::Write, MIB, 8, 1),
        ("SEQ1M Q1T1", Rw::Read, Rw::Write, MIB, 1, 1),
        ("RND4K Q32T16", Rw::RandRead, Rw::RandWrite, 4 * KIB, 32, 16),
        ("RND4K Q1T1", Rw::RandRead, Rw::RandWrite, 4 * KIB, 1, 1),
    ];
    let jobs = tests
        .iter()
        .flat_map(|&(name, read, write, bs, qd, workers)| {
            [
                job(format!("{name} read"), read, None, bs, qd, workers),
                job(format!("{name} write"), write, None, bs, qd, workers),
            ]
        })
        .collect();
    vec![SuiteStep::Table { title: "the four classic desktop tests".into(), jobs }]
}

/// 1, 2, 4, ... 512 outstanding I/Os: QD grows to 32 on one worker, then workers to 16.
fn load_curve(prefix: &str, rw: Rw, read_pct: Option<u32>) -> Vec<SuiteJob> {
    (0..10)
        .map(|step| {
            let outstanding = 1u32 << step;
            let workers = (outstanding / 32).max(1);
            let qd = outstanding / workers;
            job(format!("{prefix} QD{qd}T{workers}"), rw, read_pct, 4 * KIB, qd, workers)
        })
        .collect()
}

/// The enterprise suite's skewed mix: YCSB's zipfian constant, the usual model of a database's
/// hot rows, over the region's blocks.
pub const SKEW: &str = "zipf:0.99";

/// The 70/30 load curve again, its random offsets zipf-distributed (docs/distributions.md).
fn skewed_curve() -> Vec<SuiteJob> {
    let skew: Distribution = SKEW.parse().expect("the suite's skew parses");
    load_curve("70/30 zipf", Rw::RandRw, Some(70))
        .into_iter()
        .map(|mut point| {
            point.flags.distribution = Some(skew.clone());
            point
        })
        .collect()
}

fn enterprise() -> Vec<SuiteStep> {
    vec![
        SuiteStep::Table {
            title: "QD 1 latency, 4KiB random".into(),
            jobs: vec![
                job("read QD1", Rw::RandRead, None, 4 * KIB, 1, 1),
                job("write QD1", Rw::RandWrite, None, 4 * KIB, 1, 1),
            ],
        },
        SuiteStep::Curve { title: "4KiB random read".into(), points: load_curve("read", Rw::RandRead, None) },
        SuiteStep::Curve {
            title: "4KiB random write".into(),
            points: load_curve("write", Rw::RandWrite, None),
        },
        SuiteStep::Curve {
            title: "4KiB random 70/30 read/write".into(),
            points: load_curve("70/30", Rw::RandRw, Some(70)),
        },
        SuiteStep::Curve { title: format!("4KiB random 70/30 read/write, {SKEW}"), points: skewed_curve() },
        SuiteStep::Table {
            title: "sequential 128KiB QD 32".into(),
            jobs: vec![
                job("seq read", Rw::Read, None, 128 * KIB, 32, 1),
                job("seq write", Rw::Write, None, 128 * KIB, 32, 1),
            ],
        },
    ]
}

fn pts() -> Vec<SuiteStep> {
    let sizes: [(u64, &str); 8] = [
        (MIB, "1MiB"),
        (128 * KIB, "128KiB"),
        (64 * KIB, "64KiB"),
        (32 * KIB, "32KiB"),
        (16 * KIB, "16KiB"),
        (8 * KIB, "8KiB"),
        (4 * KIB, "4KiB"),
        (512, "512B"),
    ];
    let mixes: [u32; 7] = [100, 95, 65, 50, 35, 5, 0];
    let jobs = sizes
        .iter()
        .flat_map(|&(bs, label)| {
            mixes.iter().map(move |&read| {
                job(format!("{label} {read}/{}", 100 - read), Rw::RandRw, Some(read), bs, 32, 1)
            })
        })
        .collect();
    vec![
        SuiteStep::Precondition { passes: 2 },
        SuiteStep::Steady {
            title: "4KiB random write until steady".into(),
            job: Box::new(job("steady 4KiB randwrite", Rw::RandWrite, None, 4 * KIB, 32, 1)),
        },
        SuiteStep::Matrix {
            title: "IOPS by block size (rows) and read/write mix (columns), QD 32".into(),
            rows: sizes.iter().map(|(_, label)| label.to_string()).collect(),
            columns: mixes.iter().map(|r| format!("{r}/{}", 100 - r)).collect(),
            jobs,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enterprise_curves_reach_512_with_at_most_16_workers() {
        let steps = steps(Suite::Enterprise);
        let SuiteStep::Curve { points, .. } = &steps[1] else { panic!("a curve") };
        let last = &points[9].flags;
        assert_eq!((last.qd.clone(), last.workers.clone()), (Some(Axis::one(32)), Some(Axis::one(16))));
        assert_eq!(points[5].name, "read QD32T1");
        assert!(points.iter().all(|p| p.flags.workers.as_ref().and_then(Axis::single).unwrap_or(0) <= 16));
    }

    #[test]
    fn the_pts_matrix_is_every_size_by_every_mix() {
        let steps = steps(Suite::Pts);
        let SuiteStep::Matrix { rows, columns, jobs, .. } = &steps[2] else { panic!("a matrix") };
        assert_eq!(jobs.len(), rows.len() * columns.len());
        assert_eq!(jobs[1].name, "1MiB 95/5");
        assert_eq!(jobs[1].flags.read_pct, Some(Axis::one(95)));
    }

    #[test]
    fn the_skewed_mix_is_the_uniform_one_with_zipf_offsets() {
        let steps = steps(Suite::Enterprise);
        let (SuiteStep::Curve { points: uniform, .. }, SuiteStep::Curve { title, points: skewed }) =
            (&steps[3], &steps[4])
        else {
            panic!("two curves")
        };
        assert_eq!(title, "4KiB random 70/30 read/write, zipf:0.99");
        assert_eq!(skewed[0].name, "70/30 zipf QD1T1");
        for (u, s) in uniform.iter().zip(skewed) {
            assert_eq!(
                (u.flags.qd.clone(), u.flags.read_pct.clone()),
                (s.flags.qd.clone(), s.flags.read_pct.clone())
            );
            assert_eq!(s.flags.distribution, Some(Distribution::Zipf { theta: 0.99 }));
            assert_eq!(u.flags.distribution, None);
        }
    }

    #[test]
    fn quick_is_eight_jobs() {
        assert_eq!(steps(Suite::Quick)[0].jobs().len(), 8);
    }
}
