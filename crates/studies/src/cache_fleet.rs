//! `iolab fleet cache`: the cache study (crate::cache) on every host of a fleet at once. Each
//! host has its own cache (page cache, controller DRAM), so each host's tiers are judged on its
//! own curve, from its own exact histograms; the fleet's merged curve (each point's histograms
//! merged, IOPS summed) is reported beside them.
//!
//! Every host runs the same ladder in lock-step: each working set, its warm pass and its
//! measured reads start together on every host, as a fleet sweep's points do. A working set is
//! a share of each host's own region (the agents say their region when the job is checked), so
//! hosts with different targets each read their own share; a working set given as a size is
//! that size on every host. Refinement is on the union of the hosts' refinement points: each
//! round, every host that still has a working set to measure asks for it, and every host
//! measures every one asked, each as the same share of its own region (the host that asked at
//! exactly its size); shares asked within 2% of each other are measured once, so a fleet of
//! alike hosts refines about as fast as one host. As in `iolab cache`, the working sets a
//! host's capacity wants that lie below the next rung (`capacity_probe_below`) are measured
//! before that rung, the rest (`next_probe`) after the ladder. Each point is marked
//! `after_larger` from its own curve's earlier points (a host's, or the merged curve's).
//! Promotion and pollution run, in lock-step too, past each host's own first tier, when every
//! host found one.

use iolab_analysis::cache::{
    capacity_probe_below, find_tiers, next_probe, polluted, promotion, CachePoint, CacheTiers, LatencySample,
    Pollution, Promotion, Tier,
};
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::cache::{WorkingSet, WorkingSets};
use iolab_spec::{Bytes, JobSpec, Nanos};
use iolab_stats::central::median;
use iolab_stats::result::JobResult;

use crate::cache::{
    marked_after, point, CacheError, CacheFound, CacheStudy, MAX_PROBES, MIN_INTERVAL, PROMOTION_INTERVALS,
};

/// Refinement points asked for by several hosts within this share of each other are one.
const SAME_SHARE: f64 = 0.02;

/// What a fleet's cache study measured: each host's own study and the merged curve.
#[derive(Default)]
pub struct FleetCacheFound {
    pub hosts: Vec<HostFound>,
    /// The merged curve: each point's working set and the region are the sums over the hosts
    /// that finished it.
    pub merged: CacheFound,
}

#[derive(Default)]
pub struct HostFound {
    /// As the user named it.
    pub host: String,
    pub found: CacheFound,
    /// Why it dropped out; its working sets until then are kept.
    pub failure: Option<String>,
}

/// One lock-step working set: its size on each host.
struct Step {
    sizes: Vec<u64>,
    /// What it is of the ladder ("5%", "64MiB"), the same on every host.
    label: String,
    refined: bool,
}

impl CacheStudy {
    /// Refuses what a fleet cannot do: a scratch file is laid out anew on an agent for each
    /// working set (a new file has nothing cached), so the hosts' target must be named.
    pub fn check_fleet(&self) -> Result<(), CacheError> {
        if self.job.groups[0].target.paths.is_empty() {
            return Err(CacheError::FleetScratch);
        }
        Ok(())
    }

    /// The study on every host of the fleet behind `lab`, each host sized to its own region.
    pub fn run_fleet(
        &self,
        lab: &mut Lab<'_>,
        observer: &mut dyn Observer,
    ) -> Result<FleetCacheFound, RunError> {
        let names = lab.host_names();
        let regions = lab.check_regions(&self.job, observer)?;
        let mut found = FleetCacheFound::default();
        for (host, region) in names.iter().zip(&regions) {
            let Some(region) = *region else {
                return Err(RunError::Invalid(format!(
                    "{host} did not say the size of its region (an older iolab agent, or it dropped out); run the same iolab version on every host"
                )));
            };
            let found_here = CacheFound { region_bytes: region, ..CacheFound::default() };
            found.hosts.push(HostFound { host: host.clone(), found: found_here, failure: None });
        }
        found.merged.region_bytes = found.hosts.iter().map(|h| h.found.region_bytes).sum();
        self.measure_fleet(lab, &mut found, observer)?;
        found.merged.points.sort_by_key(|p| p.working_set_bytes);
        for host in &mut found.hosts {
            host.found.points.sort_by_key(|p| p.working_set_bytes);
        }
        Ok(found)
    }

    fn measure_fleet(
        &self,
        lab: &mut Lab<'_>,
        found: &mut FleetCacheFound,
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let finished = self.walk(found, |step, found| {
            if self.stop(lab) {
                return Ok(false);
            }
            self.step(lab, step, found, observer)?;
            Ok(true)
        })?;
        if finished {
            self.phases(lab, found, observer)?;
        }
        Ok(())
    }

    /// Measures (`measure`, which answers false to stop) the ladder, before each rung the
    /// working sets the hosts' capacities want below it, then the refinements left; false when
    /// stopped.
    fn walk(
        &self,
        found: &mut FleetCacheFound,
        mut measure: impl FnMut(&Step, &mut FleetCacheFound) -> Result<bool, RunError>,
    ) -> Result<bool, RunError> {
        let ladder = self.ladder(found)?;
        let mut asked = vec![0usize; found.hosts.len()];
        for k in 0..ladder.len() {
            // Every working set a capacity is judged on is measured before any larger one asked
            // for, on each host (a cache still holding blocks of a larger working set serves a
            // smaller one less than it can).
            loop {
                let steps = self.capacity_steps(found, &ladder[k..], &mut asked);
                if steps.is_empty() {
                    break;
                }
                for step in steps {
                    if !measure(&step, found)? {
                        return Ok(false);
                    }
                }
            }
            if !measure(&ladder[k], found)? {
                return Ok(false);
            }
        }
        loop {
            let steps = self.refinement_steps(found, &mut asked);
            if steps.is_empty() {
                return Ok(true);
            }
            for step in steps {
                if !measure(&step, found)? {
                    return Ok(false);
                }
            }
        }
    }

    /// The working sets the running hosts' capacities want below the next rung (`rest[0]`,
    /// `rest` the ladder still to come), each host judged on its own curve and planned sizes,
    /// as union steps; counts each host that asked in `asked`.
    fn capacity_steps(&self, found: &FleetCacheFound, rest: &[Step], asked: &mut [usize]) -> Vec<Step> {
        self.asked_steps(found, asked, |h, points, tiers| {
            let planned: Vec<u64> =
                points.iter().map(|p| p.working_set_bytes).chain(rest.iter().map(|s| s.sizes[h])).collect();
            capacity_probe_below(tiers, &planned, rest[0].sizes[h], self.grain())
        })
    }

    /// The working sets the running hosts' curves want next (`next_probe`), as union steps;
    /// counts each host that asked in `asked`.
    fn refinement_steps(&self, found: &FleetCacheFound, asked: &mut [usize]) -> Vec<Step> {
        self.asked_steps(found, asked, |_, points, tiers| next_probe(tiers, points, &self.rule, self.grain()))
    }

    /// The working set each running host with probes left wants (`want`: the host's number,
    /// its points and the tiers found in them), as one round of union steps.
    fn asked_steps(
        &self,
        found: &FleetCacheFound,
        asked: &mut [usize],
        want: impl Fn(usize, &[CachePoint], &CacheTiers) -> Option<u64>,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        for (h, host) in found.hosts.iter().enumerate() {
            if host.failure.is_some() || asked[h] >= MAX_PROBES {
                continue;
            }
            let points = &host.found.points;
            if let Some(size) = want(h, points, &find_tiers(points, &self.rule)) {
                asked[h] += 1;
                steps.push(self.union_step(found, h, size));
            }
        }
        union_round(found, steps)
    }

    /// The working sets of `--sizes` on every host, in the order of their mean share of the
    /// hosts' regions; one that is the same size on every host as another is measured once.
    fn ladder(&self, found: &FleetCacheFound) -> Result<Vec<Step>, RunError> {
        let mut steps = Vec::new();
        for set in &self.sizes.0 {
            let mut sizes = Vec::new();
            for host in &found.hosts {
                let one = WorkingSets(vec![*set]).resolve(host.found.region_bytes, self.grain());
                let size = one.map_err(|e| RunError::Invalid(format!("{}: {e}", host.host)))?;
                sizes.push(size[0]);
            }
            steps.push(Step { sizes, label: set.to_string(), refined: false });
        }
        steps.sort_by(|a, b| mean_share(found, a).total_cmp(&mean_share(found, b)));
        steps.dedup_by(|a, b| a.sizes == b.sizes);
        Ok(steps)
    }

    /// The working set host `asker` wants (`size` bytes of its region), as the same share of
    /// every other host's region.
    fn union_step(&self, found: &FleetCacheFound, asker: usize, size: u64) -> Step {
        let share = size as f64 / found.hosts[asker].found.region_bytes.max(1) as f64;
        let grain = self.grain();
        let sizes = found
            .hosts
            .iter()
            .enumerate()
            .map(|(h, host)| {
                if h == asker {
                    return size;
                }
                let region = host.found.region_bytes;
                ((share * region as f64) as u64 / grain * grain).clamp(grain, region / grain * grain)
            })
            .collect();
        let label = format!("{}", WorkingSet::Pct(round_share(share * 100.0)));
        Step { sizes, label, refined: true }
    }

    /// Warms and measures `step` on every host; keeps each host's point and the merged one.
    fn step(
        &self,
        lab: &mut Lab<'_>,
        step: &Step,
        found: &mut FleetCacheFound,
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let warm: Vec<JobSpec> =
            step.sizes.iter().map(|&size| self.once(0, size, format!("warm {}", step.label))).collect();
        self.each(lab, &warm, found, observer)?;
        let name = format!("working set {}", step.label);
        let jobs: Vec<JobSpec> = step.sizes.iter().map(|&size| self.over(0, size, name.clone())).collect();
        let (points, merged) = self.measured(lab, &jobs, &step.sizes, step.refined, found, observer)?;
        keep(found, points, merged);
        Ok(())
    }

    /// Runs `jobs` (one per host) and answers each host's point (`sizes[h]` bytes) and the
    /// merged one (the sum of the sizes of the hosts that finished).
    fn measured(
        &self,
        lab: &mut Lab<'_>,
        jobs: &[JobSpec],
        sizes: &[u64],
        refined: bool,
        found: &mut FleetCacheFound,
        observer: &mut dyn Observer,
    ) -> Result<(Vec<Option<CachePoint>>, CachePoint), RunError> {
        let results = self.each(lab, jobs, found, observer)?;
        let points: Vec<Option<CachePoint>> = results
            .iter()
            .zip(sizes)
            .map(|(result, &size)| result.as_ref().map(|r| point(r, size, refined)))
            .collect();
        let total = points.iter().flatten().map(|p| p.working_set_bytes).sum();
        let merged = lab.jobs().last().map(|job| point(job, total, refined)).unwrap_or_default();
        Ok((points, merged))
    }

    /// Runs `jobs` (one per host) in lock-step; a host that did not finish is marked failed
    /// with the reason the merged result gives.
    fn each(
        &self,
        lab: &mut Lab<'_>,
        jobs: &[JobSpec],
        found: &mut FleetCacheFound,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<JobResult>>, RunError> {
        let results = lab.run_each(jobs, observer)?;
        let merged = lab.jobs().last();
        for (h, result) in results.iter().enumerate() {
            let host = &mut found.hosts[h];
            if result.is_none() && host.failure.is_none() {
                let reason = merged
                    .and_then(|m| m.fleet.as_ref())
                    .and_then(|f| f.hosts.get(h))
                    .and_then(|r| r.failure.clone())
                    .unwrap_or_else(|| "no result".into());
                host.failure = Some(format!("dropped out at '{}': {reason}", jobs[h].name));
            }
        }
        Ok(results)
    }

    /// Promotion and pollution past each host's own first tier, every host at once; not
    /// measured (with a note) unless every running host found a tier.
    fn phases(
        &self,
        lab: &mut Lab<'_>,
        found: &mut FleetCacheFound,
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let running: Vec<usize> =
            (0..found.hosts.len()).filter(|&h| found.hosts[h].failure.is_none()).collect();
        let firsts: Vec<Option<Tier>> = found
            .hosts
            .iter()
            .map(|h| find_tiers(&h.found.points, &self.rule).tiers.first().cloned())
            .collect();
        let without: Vec<&str> =
            running.iter().filter(|&&h| firsts[h].is_none()).map(|&h| found.hosts[h].host.as_str()).collect();
        if !without.is_empty() {
            let note = format!(
                "promotion and pollution not measured: {} found no tier (every host runs them at once, each past its own first tier)",
                without.join(", ")
            );
            found.merged.notes.push(note);
            return Ok(());
        }
        let grain = self.grain();
        let hot: Vec<u64> = firsts
            .iter()
            .map(|t| t.as_ref().map_or(grain, |t| (t.size_bytes / 2 / grain * grain).max(grain)))
            .collect();
        if let Some(time) = self.promotion_time {
            if self.stop(lab) {
                return Ok(());
            }
            self.fleet_promotion(lab, found, (&firsts, &hot), time, observer)?;
        }
        if self.pollution && !self.stop(lab) {
            self.fleet_pollution(lab, found, &hot, observer)?;
        }
        Ok(())
    }

    fn fleet_promotion(
        &self,
        lab: &mut Lab<'_>,
        found: &mut FleetCacheFound,
        (firsts, hot): (&[Option<Tier>], &[u64]),
        time: Nanos,
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let grain = self.grain();
        let n = found.hosts.len();
        let (mut offsets, mut flushes, mut targets) = (vec![0; n], vec![grain; n], vec![0.0; n]);
        for (h, host) in found.hosts.iter_mut().enumerate() {
            let (Some(first), None) = (&firsts[h], &host.failure) else { continue };
            let region = host.found.region_bytes;
            offsets[h] = (region - hot[h]) / grain * grain;
            if offsets[h] < first.upper_bytes {
                let note = format!(
                    "promotion not measured: {}'s region holds no {} that the study had not just read (it must lie past {})",
                    host.host,
                    Bytes(hot[h]),
                    Bytes(first.upper_bytes)
                );
                found.merged.notes.push(note.clone());
                host.found.notes.push(note);
                return Ok(());
            }
            let inside: Vec<f64> = host
                .found
                .points
                .iter()
                .filter(|p| p.working_set_bytes <= first.fits_bytes)
                .map(|p| p.mean_ns)
                .collect();
            targets[h] = self.rule.ceiling(median(&inside).unwrap_or(first.hit_ns));
            flushes[h] =
                (first.upper_bytes.max(2 * first.size_bytes).min(offsets[h]) / grain * grain).max(grain);
        }
        let evict: Vec<JobSpec> = flushes
            .iter()
            .map(|&size| self.once(0, size, "evict: read before the promotion".into()))
            .collect();
        self.each(lab, &evict, found, observer)?;
        let jobs: Vec<JobSpec> = (0..n)
            .map(|h| {
                let mut job = self.over(offsets[h], hot[h], "promotion: cold hot set read at random".into());
                job.runtime = time;
                job.ramp = Nanos(0);
                job.interval = Nanos((time.0 / PROMOTION_INTERVALS).max(MIN_INTERVAL.0));
                job
            })
            .collect();
        let results = self.each(lab, &jobs, found, observer)?;
        for (h, result) in results.iter().enumerate() {
            let Some(result) = result else { continue };
            let samples: Vec<LatencySample> = result
                .series
                .iter()
                .map(|p| LatencySample { t_s: p.t_s + p.duration_s, mean_ns: p.mean_ns })
                .collect();
            let (fast_after_s, fast_from_start) = promotion(&samples, targets[h]);
            found.hosts[h].found.promotion = Some(Promotion {
                hot_set_bytes: hot[h],
                offset_bytes: offsets[h],
                target_ns: targets[h],
                samples,
                fast_after_s,
                fast_from_start,
            });
        }
        Ok(())
    }

    fn fleet_pollution(
        &self,
        lab: &mut Lab<'_>,
        found: &mut FleetCacheFound,
        hot: &[u64],
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let grain = self.grain();
        let scans: Vec<u64> = found
            .hosts
            .iter()
            .zip(hot)
            .map(|(h, &hot)| (h.found.region_bytes - hot) / grain * grain)
            .collect();
        if let Some(h) = (0..scans.len()).find(|&h| scans[h] == 0 && found.hosts[h].failure.is_none()) {
            let note =
                format!("pollution not measured: {}'s hot set is its whole region", found.hosts[h].host);
            found.merged.notes.push(note.clone());
            found.hosts[h].found.notes.push(note);
            return Ok(());
        }
        let warm: Vec<JobSpec> = hot.iter().map(|&size| self.once(0, size, "warm hot set".into())).collect();
        self.each(lab, &warm, found, observer)?;
        let measure: Vec<JobSpec> =
            hot.iter().map(|&size| self.over(0, size, "hot set before the scan".into())).collect();
        let (before, _) = self.measured(lab, &measure, hot, false, found, observer)?;
        let scan: Vec<JobSpec> = hot
            .iter()
            .zip(&scans)
            .map(|(&hot, &scan)| self.once(hot, scan.max(grain), "scan after the hot set".into()))
            .collect();
        self.each(lab, &scan, found, observer)?;
        let again: Vec<JobSpec> =
            hot.iter().map(|&size| self.over(0, size, "hot set after the scan".into())).collect();
        let (after, _) = self.measured(lab, &again, hot, false, found, observer)?;
        for (h, (before, after)) in before.into_iter().zip(after).enumerate() {
            let (Some(before), Some(after)) = (before, after) else { continue };
            let polluted = polluted(&before, &after, &self.rule);
            found.hosts[h].found.pollution =
                Some(Pollution { hot_set_bytes: hot[h], scan_bytes: scans[h], before, after, polluted });
        }
        Ok(())
    }
}

/// One round's union steps smallest share first; shares within `SAME_SHARE` of each other are
/// measured once.
fn union_round(found: &FleetCacheFound, mut steps: Vec<Step>) -> Vec<Step> {
    steps.sort_by(|a, b| mean_share(found, a).total_cmp(&mean_share(found, b)));
    // Alike hosts ask for nearly the same shares: one point serves them all (a host whose point
    // was left out measures one within SAME_SHARE of it, and asks again if it must).
    steps.dedup_by(|a, b| {
        a.sizes == b.sizes || mean_share(found, a) <= mean_share(found, b) * (1.0 + SAME_SHARE)
    });
    steps
}

/// Adds each host's point (`None`: it did not finish) and the merged one to their curves, each
/// marked `after_larger` when a working set measured before it on its curve was larger.
fn keep(found: &mut FleetCacheFound, points: Vec<Option<CachePoint>>, merged: CachePoint) {
    for (host, point) in found.hosts.iter_mut().zip(points) {
        if let Some(point) = point {
            let point = marked_after(&host.found.points, point);
            host.found.points.push(point);
        }
    }
    let merged = marked_after(&found.merged.points, merged);
    found.merged.points.push(merged);
}

/// A step's mean share of the hosts' regions: the order the ladder is measured in.
fn mean_share(found: &FleetCacheFound, step: &Step) -> f64 {
    let shares: f64 = step
        .sizes
        .iter()
        .zip(&found.hosts)
        .map(|(&s, h)| s as f64 / h.found.region_bytes.max(1) as f64)
        .sum();
    shares / step.sizes.len().max(1) as f64
}

/// Three significant digits: a refined share's name ("3.41%").
fn round_share(pct: f64) -> f64 {
    if pct <= 0.0 {
        return pct;
    }
    let scale = 10f64.powi(2 - pct.log10().floor() as i32);
    (pct * scale).round() / scale
}

#[cfg(test)]
#[path = "cache_fleet_tests.rs"]
mod tests;
