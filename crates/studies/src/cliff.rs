//! `iolab cliff`: one sequential write over the whole region (or a length), sampled at a fine
//! interval, and throughput against bytes written read from its series.

use iolab_analysis::cliff::{CliffRule, ThroughputSample};
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::{Bytes, JobSpec, Nanos, Options, RunPlan};
use iolab_stats::result::JobResult;
use thiserror::Error;

use crate::plan::{Input, PlanError};
use crate::{fill, plan};

/// Why a cliff test cannot be planned.
#[derive(Debug, Error)]
pub enum CliffError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The rule's own check (`CliffRule::validate`), in its words.
    #[error("{0}")]
    Rule(String),
}

/// Why a cliff test takes one group.
const WHY_ONE: &str = "it writes one region once, sequentially, and reads the cliff from that one stream's throughput; give a file of one group";

/// Fine enough to place a cliff within a few hundred MB at several GB/s.
const SAMPLE: Nanos = Nanos(100_000_000);

/// A cliff test ready to run.
pub struct Cliff {
    pub plan: RunPlan,
    pub rule: CliffRule,
    job: JobSpec,
    bytes: Option<Bytes>,
}

impl Cliff {
    /// The fill of `input`'s one group (a job file's target, region and engine).
    pub fn over(input: &Input, bytes: Option<Bytes>, rule: CliffRule) -> Result<Cliff, CliffError> {
        plan::refuse_groups(input, "cliff", WHY_ONE)?;
        plan::refuse_input(
            input,
            fill::FILL_KEYS,
            "cliff",
            "writes the region once, sequentially (give its length with --bytes)",
        )?;
        rule.validate().map_err(CliffError::Rule)?;
        let defaults = Options { interval: Some(SAMPLE), ..fill::defaults() };
        let (plan, job) = plan::one_group(&defaults, input, "cliff", WHY_ONE)?;
        Ok(Cliff { plan, rule, job, bytes })
    }

    /// Writes the region (or the bytes asked for) once.
    pub fn run(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<(), RunError> {
        let targets = lab.prepare(&self.job, observer)?;
        let region: u64 = targets.iter().flatten().map(|t| t.region_size).sum();
        let bytes = self.bytes.map_or(region, |b| b.0);
        let job = fill::limited_to(&self.job, format!("cliff: {} of sequential writes", Bytes(bytes)), bytes);
        lab.run_prepared(&job, &targets, observer).map(|_| ())
    }
}

/// Throughput against bytes written, one sample per interval of the series. The last interval
/// is cut short by the end of the fill; shorter than half an interval, it says too little.
pub fn samples(job: &JobResult) -> Vec<ThroughputSample> {
    let full = job.series.iter().map(|p| p.duration_s).fold(0.0, f64::max);
    let mut done = 0.0;
    job.series
        .iter()
        .filter(|p| p.duration_s >= full / 2.0)
        .map(|p| {
            done += p.mb_s * 1e6 * p.duration_s;
            ThroughputSample { bytes_done: done as u64, mb_s: p.mb_s }
        })
        .collect()
}
