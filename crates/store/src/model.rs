//! What the store keeps, as the rest of iolab reads it back: runs (one invocation of a
//! measuring command, or one imported fio result) and their points (one measured job each).

use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::result::{JobResult, OpSummary, SeriesPoint, Verdict};
use serde::{Deserialize, Serialize};

/// A run's number in the store, as the results commands take it.
pub type RunId = i64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started and not finished: still running, or the process died (SIGKILL, power loss).
    Running,
    Complete,
    Interrupted,
    /// Ended by an error (I/O errors, a stuck device, a job that could not start).
    Failed,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<RunStatus> {
        [RunStatus::Running, RunStatus::Complete, RunStatus::Interrupted, RunStatus::Failed]
            .into_iter()
            .find(|s| s.name() == text)
    }

    /// A run that did not finish, which `--resume` may continue.
    pub fn unfinished(self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::Interrupted)
    }
}

/// A run as it starts.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The command: "run", "sweep", "suite", ... or "fio" for an import.
    pub kind: String,
    /// What was measured, in a few words ("sweep /dev/nvme0n1 randread 4KiB").
    pub label: String,
    /// The command line, argument by argument.
    pub command: Vec<String>,
    pub iolab_version: String,
    pub host: String,
    pub started_at_unix_s: i64,
    /// Every job the run plans, as JSON: what `--resume` matches an identical rerun by.
    pub plan: serde_json::Value,
    /// The environment fingerprint at the start.
    pub environment: serde_json::Value,
}

impl NewRun {
    /// A run of `kind` starting now, on this host, by this process's command line: what it is
    /// (`label`), its `plan` and `environment`.
    pub fn starting_now(
        kind: &str,
        label: String,
        plan: serde_json::Value,
        environment: serde_json::Value,
    ) -> NewRun {
        NewRun {
            kind: kind.to_string(),
            label,
            command: std::env::args().collect(),
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            started_at_unix_s: now_unix_s(),
            plan,
            environment,
        }
    }
}

/// The time now, in whole seconds since the epoch, as the store keeps it.
pub fn now_unix_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunEnd {
    pub status: RunStatus,
    pub finished_at_unix_s: i64,
    /// The command's own JSON report (the sweep table, the steady rounds, ...).
    pub report: Option<serde_json::Value>,
    /// The fingerprint again at the end (NVMe health after the run).
    pub environment_after: Option<serde_json::Value>,
}

/// One line of `results list`.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: RunId,
    pub kind: String,
    pub label: String,
    pub command: Vec<String>,
    pub iolab_version: String,
    pub host: String,
    pub started_at_unix_s: i64,
    pub finished_at_unix_s: Option<i64>,
    pub status: RunStatus,
    pub points: usize,
}

impl RunInfo {
    /// The host the run was measured on, or "an unknown host" (fio's JSON names none outside
    /// its client/server mode).
    pub fn host_or_unknown(&self) -> &str {
        if self.host.trim().is_empty() {
            "an unknown host"
        } else {
            &self.host
        }
    }
}

/// A run with everything stored for it.
#[derive(Debug, Clone, Serialize)]
pub struct StoredRun {
    #[serde(flatten)]
    pub info: RunInfo,
    pub plan: serde_json::Value,
    pub environment: serde_json::Value,
    pub environment_after: Option<serde_json::Value>,
    pub report: Option<serde_json::Value>,
    pub points: Vec<Point>,
}

/// One measured job: a `run`'s job, a sweep point, a steady-state round, an imported fio job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Point {
    /// Its place in the run, from 0.
    pub seq: u32,
    pub name: String,
    /// "iolab", or "fio" for an import.
    pub source: String,
    pub completed_at_unix_s: i64,
    /// The job as run (iolab's JobSpec, or fio's job options).
    pub spec: serde_json::Value,
    pub summary: PointSummary,
    pub series: Vec<SeriesPoint>,
    pub verdict: Option<Verdict>,
    /// The merged latency histograms, to merge again later; `None` when the source had none
    /// (fio's normal JSON gives percentiles only).
    pub histograms: Option<EncodedHistograms>,
    /// The whole result as the command reported it (iolab's JobResult, fio's job object).
    pub result: serde_json::Value,
}

/// A point's figures and histograms without its series and whole result (`Store::point_figures`).
#[derive(Debug, Clone, PartialEq)]
pub struct PointFigures {
    pub seq: u32,
    pub name: String,
    pub completed_at_unix_s: i64,
    pub summary: PointSummary,
    pub histograms: Option<EncodedHistograms>,
    /// The I/O errors and the bad blocks `--verify` found that its result counted
    /// (`errors.count` and `verify.bad`); 0 for a source without them.
    pub errors: u64,
}

impl PointFigures {
    /// The figures of a point read in full.
    pub fn of(point: &Point) -> PointFigures {
        PointFigures {
            seq: point.seq,
            name: point.name.clone(),
            completed_at_unix_s: point.completed_at_unix_s,
            summary: point.summary.clone(),
            histograms: point.histograms.clone(),
            errors: [
                "/errors/count",
                "/verify/bad/lost_write",
                "/verify/bad/stale_data",
                "/verify/bad/misdirected_write",
                "/verify/bad/torn_write",
                "/verify/bad/corrupted_bytes",
            ]
            .iter()
            .filter_map(|at| point.result.pointer(at).and_then(serde_json::Value::as_u64))
            .sum(),
        }
    }
}

/// The figures that tables, comparisons and charts need, whatever the source.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PointSummary {
    pub engine: String,
    /// "randread 4KiB", "70% read, 100% random, 4KiB".
    pub access: String,
    pub qd: u32,
    pub workers: u32,
    pub targets: Vec<String>,
    pub measured_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    pub total: OpSummary,
    /// Process CPU microseconds per I/O; `None` where the source did not measure it.
    pub cpu_us_per_io: Option<f64>,
    /// Why the measurement ended ("runtime", "interrupted", ...).
    pub stop_reason: String,
}

impl StoredRun {
    /// Judges every iolab point again with `judge` (today's rules), from the facts kept with it
    /// (its whole result), replacing the stored verdict. Returns the points whose cause changed,
    /// with the stored cause. Imported points (fio's) keep theirs: there is no iolab result to
    /// judge.
    pub fn rejudge(&mut self, judge: impl Fn(&JobResult) -> Verdict) -> Vec<(u32, Option<Verdict>)> {
        let mut changed = Vec::new();
        for point in self.points.iter_mut().filter(|p| p.source == "iolab") {
            let Ok(result) = serde_json::from_value::<JobResult>(point.result.clone()) else { continue };
            let verdict = judge(&result);
            if point.verdict.as_ref().map(|v| v.cause) != Some(verdict.cause) {
                changed.push((point.seq, point.verdict.clone()));
            }
            point.verdict = Some(verdict);
        }
        changed
    }
}

impl Point {
    /// The stored form of an iolab job's measured result, `seq`-th of its run; its verdict is
    /// judged after it is kept (`Store::set_verdict`).
    pub fn from_job(seq: u32, result: &JobResult, completed_at_unix_s: i64) -> Point {
        let group = result.groups.first();
        let json = |value: serde_json::Result<serde_json::Value>| value.unwrap_or(serde_json::Value::Null);
        Point {
            seq,
            name: result.name.clone(),
            source: "iolab".to_string(),
            completed_at_unix_s,
            spec: json(serde_json::to_value(&result.spec)),
            summary: PointSummary {
                engine: group.map_or_else(String::new, |g| g.engine.clone()),
                // A blender's groups run at once: all of them, as the HTML report names its workload.
                access: result.groups.iter().map(|g| g.access.as_str()).collect::<Vec<_>>().join(" + "),
                qd: group.map_or(0, |g| g.qd),
                workers: result.groups.iter().map(|g| g.workers).sum(),
                targets: result
                    .groups
                    .iter()
                    .flat_map(|g| g.targets.iter().map(|t| t.path.clone()))
                    .collect(),
                measured_s: result.measured_s,
                read: result.read.clone(),
                write: result.write.clone(),
                total: result.total.clone(),
                cpu_us_per_io: (result.total.ios > 0).then_some(result.cpu.us_per_io),
                stop_reason: json(serde_json::to_value(result.stop_reason))
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            },
            series: result.series.clone(),
            verdict: None,
            histograms: Some(EncodedHistograms::encode(&result.histograms)),
            result: json(serde_json::to_value(result)),
        }
    }
}
