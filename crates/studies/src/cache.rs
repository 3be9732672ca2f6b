//! `iolab cache`: random reads over growing working sets at the start of the region, each read
//! once sequentially first (warmed) and then measured; more working sets past each tier (its
//! capacity is judged on the share of reads that still hit there), each measured before any
//! larger working set asked for (a cache still holding blocks of a larger one serves a smaller
//! one less than it can); then working sets inside each bracket where latency stepped up,
//! until the rule (iolab_analysis::cache) knows each tier; then, past
//! the first tier, how fast a cold hot set becomes fast (promotion) and whether a hot set stays
//! fast after a scan of the rest (pollution).
//!
//! A working set is the region of its job (`--offset` and `--size` of the step), so any
//! target and engine works, and every step is a job of the run like any other.

use iolab_analysis::cache::{
    capacity_probe_below, find_tiers, next_probe, polluted, promotion, CachePoint, CacheRule, LatencySample,
    Pollution, Promotion, Tier,
};
use iolab_analysis::cache_capacity::latency_shares;
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::cache::WorkingSets;
use iolab_spec::{Axis, BsWeight, Bytes, IoLimit, JobSpec, Nanos, Options, RunPlan, Rw};
use iolab_stats::central::median;
use iolab_stats::result::JobResult;
use thiserror::Error;

use crate::plan::{self, Input, PlanError};

/// Why a cache study cannot be planned, here or on a fleet.
#[derive(Debug, Error)]
pub enum CacheError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The rule's own check (`CacheRule::validate`), in its words.
    #[error("{0}")]
    Rule(String),
    #[error("give at least one working set with --sizes")]
    NoSizes,
    #[error(
        "`iolab cache` measures one target; give one (a striped set spreads each working set over its members)"
    )]
    SeveralTargets,
    #[error("--promotion-time {0} is too short to see a trend; give 1s or more, or 0 to skip it")]
    ShortPromotion(Nanos),
    #[error(
        "`iolab fleet cache` needs a target on the hosts (a file or device each agent can read, the same path on every host); a scratch file would be laid out anew for each working set"
    )]
    FleetScratch,
}

/// Working sets are whole multiples of this (or of a larger block): the warm pass reads them
/// in blocks of this size.
pub(crate) const GRAIN: u64 = 128 << 10;
/// Working sets measured to refine the tiers, at most: enough to narrow a 100x bracket to 10%
/// for three tiers and to judge their capacities.
pub(crate) const MAX_PROBES: usize = 24;
/// Long enough never to end a warm pass or a scan early: the I/O limit ends the job. Under the
/// century a job file's runtime may be, so the job travels to a fleet's agents.
pub(crate) const UNBOUNDED: Nanos = Nanos(10 * 365 * 24 * 3600 * 1_000_000_000);
/// Measured time per working set unless the user gives --runtime.
const STEP_RUNTIME: Nanos = Nanos(2_000_000_000);
/// The shortest series interval iolab takes (iolab_spec's own limit).
pub(crate) const MIN_INTERVAL: Nanos = Nanos(50_000_000);
/// Random reads before each measurement unless the user gives --ramp: after the warm pass
/// (sequential) the cache settles into the random workload's own state (an LRU's lists,
/// a tier's promotions) before it is measured.
const STEP_RAMP: Nanos = Nanos(1_000_000_000);
/// A working set's timing: measured for `STEP_RUNTIME` after `STEP_RAMP` of random reads.
pub fn step_defaults() -> Options {
    Options { runtime: Some(STEP_RUNTIME), ramp: Some(STEP_RAMP), ..Options::default() }
}

/// The share of reads the judged latency is the mean of: the slowest 1% (a busy machine's
/// stalls) are left out.
const KEPT: f64 = 0.99;
/// Intervals of the promotion run: its latency is judged interval by interval.
pub(crate) const PROMOTION_INTERVALS: u64 = 20;

/// The options `iolab cache` sets itself.
const CACHE_KEYS: &[&str] = &[
    "rw",
    "read_pct",
    "random_pct",
    "io_limit",
    "rate_iops",
    "burst",
    "bs_split",
    "distribution",
    "working_set",
    "working_set_moves",
];

/// Why the study reads one stream.
const WHY_ONE: &str = "it grows one working set of one target";

/// A cache study ready to run.
pub struct CacheStudy {
    pub plan: RunPlan,
    pub rule: CacheRule,
    pub(crate) job: JobSpec,
    pub(crate) sizes: WorkingSets,
    /// How long a cold hot set is read to see it promoted; `None`: not measured.
    pub(crate) promotion_time: Option<Nanos>,
    pub(crate) pollution: bool,
}

/// What the study measured, for the rule and the report.
#[derive(Default)]
pub struct CacheFound {
    pub region_bytes: u64,
    pub points: Vec<CachePoint>,
    pub promotion: Option<Promotion>,
    pub pollution: Option<Pollution>,
    pub notes: Vec<String>,
}

impl CacheStudy {
    /// Random reads of `input` (4 KiB at QD 1 unless given; a job file of one group, or flags
    /// and a target) over each of `sizes`.
    pub fn new(
        input: &Input,
        sizes: WorkingSets,
        rule: CacheRule,
        promotion_time: Option<Nanos>,
        pollution: bool,
    ) -> Result<CacheStudy, CacheError> {
        plan::refuse_groups(input, "cache", WHY_ONE)?;
        plan::refuse_input(
            input,
            CACHE_KEYS,
            "cache",
            "reads at random over each working set (give the region with --offset and --size)",
        )?;
        rule.validate().map_err(CacheError::Rule)?;
        if sizes.0.is_empty() {
            return Err(CacheError::NoSizes);
        }
        let defaults = Options { rw: Some(Rw::RandRead), qd: Some(Axis::one(1)), ..step_defaults() };
        let (plan, job) = plan::one_group(&defaults, input, "cache", WHY_ONE)?;
        if job.groups[0].target.paths.len() > 1 {
            return Err(CacheError::SeveralTargets);
        }
        if let Some(time) =
            promotion_time.filter(|t| t.0 > 0 && *t < Nanos(PROMOTION_INTERVALS * MIN_INTERVAL.0))
        {
            return Err(CacheError::ShortPromotion(time));
        }
        Ok(CacheStudy {
            plan,
            rule,
            job,
            sizes,
            promotion_time: promotion_time.filter(|t| t.0 > 0),
            pollution,
        })
    }

    /// Every working set of the plan, the refinements the rule asks for, then promotion and
    /// pollution past the first tier found; the points smallest first, interrupted or not.
    pub fn run(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<CacheFound, RunError> {
        let mut found = self.measure_all(lab, observer)?;
        found.points.sort_by_key(|p| p.working_set_bytes);
        Ok(found)
    }

    fn measure_all(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<CacheFound, RunError> {
        let targets = lab.prepare(&self.job, observer)?;
        let Some(region) = targets.first().and_then(|t| t.first()).map(|t| t.region_size) else {
            return Err(RunError::Invalid("`iolab cache` runs on this machine only, not on a fleet".into()));
        };
        let grain = self.grain();
        let sizes = self.sizes.resolve(region, grain).map_err(|e| RunError::Invalid(e.to_string()))?;
        let mut found = CacheFound { region_bytes: region, ..CacheFound::default() };
        let mut probes = 0;
        for (k, &size) in sizes.iter().enumerate() {
            // The working sets a tier's capacity wants that lie below this size come first.
            while probes < MAX_PROBES {
                let tiers = find_tiers(&found.points, &self.rule);
                let planned: Vec<u64> = found
                    .points
                    .iter()
                    .map(|p| p.working_set_bytes)
                    .chain(sizes[k..].iter().copied())
                    .collect();
                let Some(probe) = capacity_probe_below(&tiers, &planned, size, grain) else { break };
                if self.stop(lab) {
                    return Ok(found);
                }
                found.points.push(self.measure_next(lab, (probe, true), &found.points, observer)?);
                probes += 1;
            }
            if self.stop(lab) {
                return Ok(found);
            }
            found.points.push(self.measure_next(lab, (size, false), &found.points, observer)?);
        }
        while probes < MAX_PROBES {
            let tiers = find_tiers(&found.points, &self.rule);
            let Some(size) = next_probe(&tiers, &found.points, &self.rule, grain) else { break };
            if self.stop(lab) {
                return Ok(found);
            }
            found.points.push(self.measure_next(lab, (size, true), &found.points, observer)?);
            probes += 1;
        }
        let tiers = find_tiers(&found.points, &self.rule);
        let Some(first) = tiers.tiers.first() else {
            found.notes.push("no tier found: promotion and pollution are not measured".into());
            return Ok(found);
        };
        let hot = (first.size_bytes / 2 / grain * grain).max(grain);
        if let Some(time) = self.promotion_time {
            if self.stop(lab) {
                return Ok(found);
            }
            found.promotion = self.promotion(lab, (region, hot), (first, &found.points), time, observer)?;
            if found.promotion.is_none() {
                found.notes.push(format!(
                    "promotion not measured: the region holds no {} that the study had not just read (it must lie past {})",
                    Bytes(hot),
                    Bytes(first.upper_bytes)
                ));
            }
        }
        if self.pollution && !self.stop(lab) {
            found.pollution = Some(self.pollution(lab, region, hot, observer)?);
        }
        Ok(found)
    }

    /// Working sets are whole warm blocks and whole blocks of the workload.
    pub(crate) fn grain(&self) -> u64 {
        let access = &self.job.groups[0].access;
        GRAIN.max(access.max_bs().0).max(access.align.0).next_multiple_of(access.max_bs().0.max(1))
    }

    /// Interrupted, or the last job ended the run (I/O errors).
    pub(crate) fn stop(&self, lab: &Lab<'_>) -> bool {
        lab.interrupted() || lab.jobs().last().is_some_and(|j| j.stop_reason.ends_the_run())
    }

    /// `size` bytes at the start of the region, warmed then measured, after the working sets
    /// `before`.
    fn measure_next(
        &self,
        lab: &mut Lab<'_>,
        (size, refined): (u64, bool),
        before: &[CachePoint],
        observer: &mut dyn Observer,
    ) -> Result<CachePoint, RunError> {
        Ok(marked_after(before, self.measure(lab, size, refined, observer)?))
    }

    /// `size` bytes at the start of the region, warmed then measured.
    fn measure(
        &self,
        lab: &mut Lab<'_>,
        size: u64,
        refined: bool,
        observer: &mut dyn Observer,
    ) -> Result<CachePoint, RunError> {
        self.read_once(lab, 0, size, format!("warm {}", Bytes(size)), observer)?;
        let job = self.over(0, size, format!("working set {}", Bytes(size)));
        run(lab, &job, observer, |result| point(result, size, refined))
    }

    /// The measuring job over `size` bytes from `offset` in the region.
    pub(crate) fn over(&self, offset: u64, size: u64, name: String) -> JobSpec {
        let mut job = JobSpec { name, ..self.job.clone() };
        let target = &mut job.groups[0].target;
        target.offset = Bytes(target.offset.0 + offset);
        target.size = Some(Bytes(size));
        job
    }

    /// Reads `size` bytes from `offset` in the region once, sequentially, in warm blocks.
    fn read_once(
        &self,
        lab: &mut Lab<'_>,
        offset: u64,
        size: u64,
        name: String,
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        run(lab, &self.once(offset, size, name), observer, |_| ())
    }

    /// The job that reads `size` bytes from `offset` in the region once, sequentially.
    pub(crate) fn once(&self, offset: u64, size: u64, name: String) -> JobSpec {
        let mut job = self.over(offset, size, name);
        job.io_limit = Some(IoLimit::Bytes(Bytes(size)));
        job.runtime = UNBOUNDED;
        job.ramp = Nanos(0);
        let bs = self.grain();
        let access = &mut job.groups[0].access;
        access.random_pct = 0;
        access.bs_split = vec![BsWeight { bs: Bytes(bs), weight: 1 }];
        job
    }

    /// A hot set of `hot` bytes at the end of the `region`, past the first working set that did
    /// not fit the `first` tier (where the study had been reading), read at random from cold for
    /// `time` and judged against the working sets measured inside it (`points`); `None` when no
    /// such set fits.
    fn promotion(
        &self,
        lab: &mut Lab<'_>,
        (region, hot): (u64, u64),
        (first, points): (&Tier, &[CachePoint]),
        time: Nanos,
        observer: &mut dyn Observer,
    ) -> Result<Option<Promotion>, RunError> {
        let grain = self.grain();
        let offset = (region - hot) / grain * grain;
        if offset < first.upper_bytes {
            return Ok(None);
        }
        // Judged like the intervals (plain means, stalls included): the ceiling of the median
        // plain mean of the working sets inside the tier.
        let inside: Vec<f64> =
            points.iter().filter(|p| p.working_set_bytes <= first.fits_bytes).map(|p| p.mean_ns).collect();
        let target_ns = self.rule.ceiling(median(&inside).unwrap_or(first.hit_ns));
        // The last working set measured may have been the whole region, hot set included:
        // reading twice the tier's capacity from the start (or what did not fit, if more)
        // evicts it, so the hot set starts cold.
        let flush = first.upper_bytes.max(2 * first.size_bytes).min(offset) / grain * grain;
        if flush > 0 {
            self.read_once(
                lab,
                0,
                flush,
                format!("evict: read {} before the promotion", Bytes(flush)),
                observer,
            )?;
        }
        let mut job = self.over(offset, hot, format!("promotion: cold {} read at random", Bytes(hot)));
        job.runtime = time;
        job.ramp = Nanos(0);
        job.interval = Nanos((time.0 / PROMOTION_INTERVALS).max(MIN_INTERVAL.0));
        let samples: Vec<LatencySample> = run(lab, &job, observer, |result| {
            result
                .series
                .iter()
                .map(|p| LatencySample { t_s: p.t_s + p.duration_s, mean_ns: p.mean_ns })
                .collect()
        })?;
        let (fast_after_s, fast_from_start) = promotion(&samples, target_ns);
        Ok(Some(Promotion {
            hot_set_bytes: hot,
            offset_bytes: offset,
            target_ns,
            samples,
            fast_after_s,
            fast_from_start,
        }))
    }

    /// A hot set of `hot` bytes at the start of the region, warmed and measured, the rest of
    /// the region read once, and the hot set measured again.
    fn pollution(
        &self,
        lab: &mut Lab<'_>,
        region: u64,
        hot: u64,
        observer: &mut dyn Observer,
    ) -> Result<Pollution, RunError> {
        let before = self.measure(lab, hot, false, observer)?;
        let scan = (region - hot) / self.grain() * self.grain();
        if scan > 0 {
            self.read_once(lab, hot, scan, format!("scan {} after the hot set", Bytes(scan)), observer)?;
        }
        let job = self.over(0, hot, format!("hot set {} after the scan", Bytes(hot)));
        let after = run(lab, &job, observer, |result| point(result, hot, false))?;
        let polluted = polluted(&before, &after, &self.rule);
        Ok(Pollution { hot_set_bytes: hot, scan_bytes: scan, before, after, polluted })
    }
}

/// Runs `job` and answers what `read` takes from its result, then lets go of the latency
/// histograms of the jobs run (the store kept them as each job ended; the study keeps only what
/// `read` took): 300 KiB or more a job that would otherwise grow the study's own memory by
/// several MiB over a study, charged to a memory cgroup beside the page cache it measures.
pub(crate) fn run<T>(
    lab: &mut Lab<'_>,
    job: &JobSpec,
    observer: &mut dyn Observer,
    read: impl FnOnce(&JobResult) -> T,
) -> Result<T, RunError> {
    let targets = lab.prepare(job, observer)?;
    let taken = read(lab.run_prepared(job, &targets, observer)?);
    lab.release_histograms();
    Ok(taken)
}

/// The read figures of a measured working set.
pub(crate) fn point(job: &JobResult, size: u64, refined: bool) -> CachePoint {
    let read = &job.read;
    let latency = read.latency.as_ref();
    CachePoint {
        working_set_bytes: size,
        mean_ns: latency.map_or(0.0, |l| l.mean_ns),
        trimmed_ns: trimmed_mean_ns(job),
        p50_ns: read.percentile(50.0).unwrap_or(0),
        p99_ns: read.percentile(99.0).unwrap_or(0),
        iops: read.iops,
        refined,
        after_larger: false,
        below: latency_shares(
            job.histograms
                .read
                .histogram()
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value())),
        ),
    }
}

/// The mean of the fastest `KEPT` of the job's reads, from its histogram (each value at the
/// middle of its bucket): 0 for no reads.
fn trimmed_mean_ns(job: &JobResult) -> f64 {
    let histogram = job.histograms.read.histogram();
    let keep = (histogram.len() as f64 * KEPT).ceil() as u64;
    let (mut left, mut sum) = (keep, 0.0);
    for value in histogram.iter_recorded() {
        let take = value.count_at_value().min(left);
        sum += take as f64 * histogram.median_equivalent(value.value_iterated_to()) as f64;
        left -= take;
        if left == 0 {
            break;
        }
    }
    if keep == 0 {
        0.0
    } else {
        sum / keep as f64
    }
}

/// `point`, measured after the working sets `before` on its curve, marked `after_larger` when
/// one of them was larger (a cache may still hold its blocks).
pub(crate) fn marked_after(before: &[CachePoint], point: CachePoint) -> CachePoint {
    CachePoint { after_larger: before.iter().any(|p| p.working_set_bytes > point.working_set_bytes), ..point }
}
