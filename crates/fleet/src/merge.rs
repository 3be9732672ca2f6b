//! The coordinator's merge: one `JobResult` for the fleet from each host's own, with the
//! per-host breakdown (`FleetReport`) beside it.
//!
//! Latencies are never averaged across hosts: every percentile, mean, minimum and maximum comes
//! from the union of the hosts' histograms (`OpStats::merge`), so the fleet's p99.99 is that of
//! every I/O the fleet did, within the histogram's 0.1%. Rates are different: each host divides
//! its I/Os by its own measured window, and the windows differ by the start skew (a few ms), so
//! the fleet's IOPS and MB/s are the sum of the hosts' rates (what the fleet delivered per second
//! while its hosts ran), not the union's I/Os over one window no host had.
//!
//! A host that failed is reported (its reason, the live series it delivered) and left out of
//! every merged figure: half a window of it would pull the fleet's rates down by a fraction no
//! one could read back.

pub mod files;
mod parts;

use iolab_spec::{JobSpec, RateSpec};
use iolab_stats::encoded::{DecodeError, EncodedHistograms};
use iolab_stats::fleet::{FleetReport, HostResult, HostStatus};
use iolab_stats::replay::ReplayReport;
use iolab_stats::result::{
    BlockCoverage, GroupResult, JobResult, OpSummary, RateReport, SeriesPoint, StopReason, Verdict,
};
use iolab_stats::slots::SlotSplit;
use iolab_stats::{IntervalStats, OpStats};

use crate::protocol::AgentResult;
use parts::{merge_cpu, merge_errors, merge_notes, on_host, series_bound, target_on_host};

/// One host's part in a fleet job, as the coordinator ended up with it.
#[derive(Debug, Clone)]
pub struct HostPart {
    /// As the user named it: "10.0.0.2:7878". Prefixes the host's targets and devices.
    pub host: String,
    /// What the agent calls itself.
    pub hostname: String,
    /// The agent's clock minus the coordinator's, measured at the handshake.
    pub clock_offset_ns: i64,
    pub outcome: HostOutcome,
}

#[derive(Debug, Clone)]
pub enum HostOutcome {
    /// It ran the whole window and handed over its result.
    Finished(Box<FinishedHost>),
    /// It failed, or could not be reached, before handing over a result.
    Failed {
        /// The error that ended it, in its own words.
        reason: String,
        /// What its live stream delivered before it failed.
        live_series: Vec<SeriesPoint>,
    },
}

/// A finished host's result with its histograms decoded: what the merge reads.
#[derive(Debug, Clone)]
pub struct FinishedHost {
    /// Its `histograms` and each group's `histograms` filled in from their encodings.
    pub result: JobResult,
    /// Each measured interval's histograms, in the order of `result.series`.
    pub intervals: Vec<IntervalStats>,
}

impl FinishedHost {
    /// Decodes what an agent handed over (the wire form keeps histograms beside the result).
    pub fn decode(agent: AgentResult) -> Result<FinishedHost, DecodeError> {
        let AgentResult { mut result, histograms, groups, intervals } = agent;
        if groups.len() != result.groups.len() {
            return Err(DecodeError::Damaged(format!(
                "{} group histograms for {} groups",
                groups.len(),
                result.groups.len()
            )));
        }
        result.histograms = histograms.decode()?;
        for (group, encoded) in result.groups.iter_mut().zip(&groups) {
            group.histograms = encoded.decode()?;
        }
        let intervals = intervals.iter().map(EncodedHistograms::decode).collect::<Result<_, _>>()?;
        Ok(FinishedHost { result, intervals })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("no host finished the job, so there is nothing to merge ({0}); check the hosts and rerun")]
    NoHostFinished(String),
    #[error("host {host} ran {got} group(s) where the job has {expected}: its agent ran another job; run the same iolab version on every host")]
    GroupsDiffer { host: String, got: usize, expected: usize },
}

/// A finished host, with the part it came in.
struct Ran<'a> {
    part: &'a HostPart,
    host: &'a FinishedHost,
}

impl Ran<'_> {
    fn result(&self) -> &JobResult {
        &self.host.result
    }

    /// When its measured window opened, on the coordinator's clock.
    fn window_start_ns(&self) -> u64 {
        let start = i128::from(self.result().window_start_unix_ns) - i128::from(self.part.clock_offset_ns);
        start.clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// The fleet's result of `job`, from each host's part (`link_mb_s[i]` is the measured link of
/// `parts[i]`, if measured). `merge_latency_ms` and `max_stream_lag_ms` of the fleet report are
/// the caller's to fill in (they are 0 here).
pub fn merge(job: &JobSpec, parts: &[HostPart], link_mb_s: &[Option<f64>]) -> Result<JobResult, MergeError> {
    let ran: Vec<Ran<'_>> = parts
        .iter()
        .filter_map(|part| match &part.outcome {
            HostOutcome::Finished(host) => Some(Ran { part, host }),
            HostOutcome::Failed { .. } => None,
        })
        .collect();
    if ran.is_empty() {
        return Err(MergeError::NoHostFinished(failures(parts)));
    }
    if let Some(r) = ran.iter().find(|r| r.result().groups.len() != job.groups.len()) {
        return Err(MergeError::GroupsDiffer {
            host: r.part.host.clone(),
            got: r.result().groups.len(),
            expected: job.groups.len(),
        });
    }
    let results: Vec<&JobResult> = ran.iter().map(Ran::result).collect();
    let measured_s = mean(results.iter().map(|r| r.measured_s));
    let slo = &job.slo;
    let mut all = IntervalStats::default();
    results.iter().for_each(|r| all.merge(&r.histograms));
    let rates = |pick: fn(&JobResult) -> &OpSummary| results.iter().map(move |r| pick(r));

    let series = merge_series(&ran);
    let groups = (0..job.groups.len()).map(|g| merge_group(&ran, g, measured_s, slo, &series)).collect();
    let earliest = ran.iter().map(Ran::window_start_ns).min().unwrap_or(0);
    let latest = ran.iter().map(Ran::window_start_ns).max().unwrap_or(0);
    let fleet = FleetReport {
        hosts: parts
            .iter()
            .enumerate()
            .map(|(i, part)| host_result(part, earliest, link_mb_s.get(i)))
            .collect(),
        start_skew_ns: latest - earliest,
        merge_latency_ms: 0.0,
        max_stream_lag_ms: 0.0,
    };
    let total = all.combined();
    // Not judged here: the merged result is judged after it is kept, as a job run here is.
    let merged = JobResult {
        name: job.name.clone(),
        spec: job.clone(),
        stop_reason: results
            .iter()
            .map(|r| r.stop_reason)
            .find(|&s| s != StopReason::Runtime)
            .unwrap_or(StopReason::Runtime),
        measured_s,
        ramp_s: mean(results.iter().map(|r| r.ramp_s)),
        window_start_unix_ns: earliest,
        groups,
        read: summed(&all.read, rates(|r| &r.read), measured_s, slo),
        write: summed(&all.write, rates(|r| &r.write), measured_s, slo),
        total: summed(&total, rates(|r| &r.total), measured_s, slo),
        series,
        cpu: merge_cpu(results.iter().map(|r| &r.cpu), total.ios()),
        errors: merge_errors(ran.iter().map(|r| (r.part.host.as_str(), &r.result().errors))),
        notes: merge_notes(&results, parts, fleet.start_skew_ns),
        devices: ran
            .iter()
            .flat_map(|r| {
                r.result().devices.iter().map(|d| {
                    let mut d = d.clone();
                    d.device = on_host(&r.part.host, &d.device);
                    d
                })
            })
            .collect(),
        // Each host's machine is its own: it stays with the host (fleet.hosts[].machine).
        machine: None,
        // Every host's slots together: Little's law holds for the sum as for each.
        slots: Some(SlotSplit::sum(&ran.iter().filter_map(|r| r.result().slots).collect::<Vec<_>>())),
        verdict: Verdict::not_judged(),
        fleet: Some(fleet),
        histograms: all,
        // Every host's bad blocks, each on its own host's target (named host:path).
        verify: ran
            .iter()
            .filter_map(|r| r.result().verify.as_ref().map(|v| (r.part.host.as_str(), v)))
            .fold(None, |merged: Option<iolab_stats::verify::VerifySummary>, (host, v)| {
                let mut v = v.clone();
                v.bad_blocks.iter_mut().for_each(|b| b.target = on_host(host, &b.target));
                let mut merged = merged.unwrap_or_default();
                merged.merge(&v);
                Some(merged)
            }),
        // A fleet's verdict advises nothing a trial here could test.
        trial: None,
        disturbed_attempts: Vec::new(),
    };
    Ok(merged)
}

/// "h3 failed: connection refused; h4 failed: ...", or that no host was given.
fn failures(parts: &[HostPart]) -> String {
    let each: Vec<String> = parts
        .iter()
        .filter_map(|p| match &p.outcome {
            HostOutcome::Failed { reason, .. } => Some(format!("{} failed: {reason}", p.host)),
            HostOutcome::Finished(_) => None,
        })
        .collect();
    if each.is_empty() {
        "no host was given".to_string()
    } else {
        each.join("; ")
    }
}

/// The hosts' mean of a figure; 0 with no host.
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    iolab_stats::central::mean(&values.collect::<Vec<_>>()).unwrap_or(0.0)
}

/// The union's summary (exact I/Os, bytes and latencies) with the rates the sum of the hosts'
/// own: each host's over its own window (see the module's docs).
fn summed<'a>(
    union: &OpStats,
    hosts: impl Iterator<Item = &'a OpSummary>,
    measured_s: f64,
    slo: &[iolab_spec::Nanos],
) -> OpSummary {
    let mut summary = union.summary(measured_s, slo);
    (summary.iops, summary.mb_s, summary.mib_s) =
        hosts.fold((0.0, 0.0, 0.0), |(i, m, b), h| (i + h.iops, m + h.mb_s, b + h.mib_s));
    summary
}

/// Group `g` of every host: the same group of one spec, so its figures merge like the job's.
/// Its targets are listed per host ("host:path": the same path on two hosts is two devices);
/// QD is each host's, workers and threads are the fleet's (so QD x workers is what the fleet
/// kept outstanding); engine setup is what every host's kernel granted.
fn merge_group(
    ran: &[Ran<'_>],
    g: usize,
    measured_s: f64,
    slo: &[iolab_spec::Nanos],
    job_series: &[SeriesPoint],
) -> GroupResult {
    let groups: Vec<&GroupResult> = ran.iter().map(|r| &r.result().groups[g]).collect();
    let first = groups[0];
    let mut stats = IntervalStats::default();
    groups.iter().for_each(|group| stats.merge(&group.histograms));
    GroupResult {
        name: first.name.clone(),
        targets: ran
            .iter()
            .flat_map(|r| r.result().groups[g].targets.iter().map(|t| target_on_host(&r.part.host, t)))
            .collect(),
        stripe_bytes: first.stripe_bytes,
        access: first.access.clone(),
        engine: first.engine.clone(),
        engine_setup: first
            .engine_setup
            .iter()
            .filter(|s| groups.iter().all(|group| group.engine_setup.contains(s)))
            .cloned()
            .collect(),
        direct: first.direct,
        slots: Some(SlotSplit::sum(&groups.iter().filter_map(|g| g.slots).collect::<Vec<_>>())),
        qd: first.qd,
        workers: groups.iter().map(|group| group.workers).sum(),
        threads: groups.iter().map(|group| group.threads).sum(),
        cpus: first.cpus.clone(),
        data: iolab_stats::DataReport::merged(groups.iter().filter_map(|group| group.data.as_ref())),
        read: summed(&stats.read, groups.iter().map(|group| &group.read), measured_s, slo),
        write: summed(&stats.write, groups.iter().map(|group| &group.write), measured_s, slo),
        total: summed(&stats.combined(), groups.iter().map(|group| &group.total), measured_s, slo),
        // The job's merged series is this group's when it is the only one (exact); otherwise
        // only the job's intervals travel with histograms, and the group's p99 is a bound.
        series: if ran[0].result().groups.len() == 1 {
            job_series.to_vec()
        } else {
            series_bound(groups.iter().map(|group| group.series.as_slice()))
        },
        rate: merge_rate(&groups, &stats, measured_s, slo),
        // Each host replayed its own trace: the fleet's lags are the union of theirs.
        replay: ReplayReport::merged(
            &groups.iter().filter_map(|group| group.replay.as_ref()).collect::<Vec<_>>(),
            &stats,
            slo,
        ),
        blocks: BlockCoverage::sum(&groups.iter().filter_map(|group| group.blocks).collect::<Vec<_>>()),
        histograms: stats,
    }
}

/// Open loop: the fleet's schedule is the sum of the hosts' (each host ran the group's rate),
/// judged by `RateReport::new`'s one rule over the summed counts, the worst lag and the merged
/// response histogram; achieved IOPS is the sum of the hosts' (as every rate of the merge).
fn merge_rate(
    groups: &[&GroupResult],
    stats: &IntervalStats,
    measured_s: f64,
    slo: &[iolab_spec::Nanos],
) -> Option<RateReport> {
    let reports: Vec<&RateReport> = groups.iter().filter_map(|g| g.rate.as_ref()).collect();
    let first = reports.first()?;
    let target: f64 = reports.iter().map(|r| r.target_iops).sum();
    let rate = RateSpec { iops: target.round() as u64, arrival: first.arrival };
    let scheduled = reports.iter().map(|r| r.scheduled_ios).sum();
    let completed = reports.iter().map(|r| r.completed_ios).sum();
    let max_lag_ns = reports.iter().map(|r| r.max_lag_ns).max().unwrap_or(0);
    let response = stats.response.as_ref().and_then(|r| r.latency_summary(slo));
    let mut report = RateReport::new(&rate, scheduled, completed, measured_s, max_lag_ns, response);
    report.achieved_iops = reports.iter().map(|r| r.achieved_iops).sum();
    Some(report)
}

/// The job's series, interval by interval: an interval counts for each host that delivered its
/// point and its histograms (an agent sends them together). IOPS and MB/s are the sum of the
/// hosts' own; mean and p99 come from the union of the interval's histograms, exactly. Each
/// interval is timed as the first host's that has it (the others' differ by the start skew).
fn merge_series(ran: &[Ran<'_>]) -> Vec<SeriesPoint> {
    let count = ran.iter().map(|r| r.result().series.len().min(r.host.intervals.len())).max().unwrap_or(0);
    (0..count)
        .filter_map(|i| {
            let mut union = IntervalStats::default();
            let mut merged: Option<SeriesPoint> = None;
            for r in ran {
                let (Some(point), Some(stats)) = (r.result().series.get(i), r.host.intervals.get(i)) else {
                    continue;
                };
                union.merge(stats);
                let sum = merged.get_or_insert_with(|| SeriesPoint {
                    iops: 0.0,
                    read_iops: 0.0,
                    write_iops: 0.0,
                    mb_s: 0.0,
                    ..point.clone()
                });
                sum.iops += point.iops;
                sum.read_iops += point.read_iops;
                sum.write_iops += point.write_iops;
                sum.mb_s += point.mb_s;
            }
            let mut point = merged?;
            let all = union.combined();
            point.mean_ns = all.mean_ns();
            point.p99_ns = all.percentile_ns(99.0);
            Some(point)
        })
        .collect()
}

/// One host's line of the fleet report. A failed host's figures are those of its live series
/// (rates over the intervals it delivered, no latency); its start is unknown (0).
fn host_result(part: &HostPart, earliest_ns: u64, link: Option<&Option<f64>>) -> HostResult {
    let link_mb_s = link.copied().flatten();
    match &part.outcome {
        HostOutcome::Finished(host) => {
            let result = &host.result;
            let ran = Ran { part, host };
            HostResult {
                host: part.host.clone(),
                hostname: part.hostname.clone(),
                status: HostStatus::Ok,
                failure: None,
                start_offset_ns: ran.window_start_ns() - earliest_ns,
                clock_offset_ns: part.clock_offset_ns,
                measured_s: result.measured_s,
                read: result.read.clone(),
                write: result.write.clone(),
                total: result.total.clone(),
                series: result.series.clone(),
                cpu: result.cpu.clone(),
                errors: result.errors.count,
                devices: result.devices.clone(),
                machine: result.machine.clone(),
                verdict: Some(result.verdict.clone()),
                link_mb_s,
            }
        }
        HostOutcome::Failed { reason, live_series } => {
            let seconds: f64 = live_series.iter().map(|p| p.duration_s).sum();
            let rate = |pick: fn(&SeriesPoint) -> f64| {
                let done: f64 = live_series.iter().map(|p| pick(p) * p.duration_s).sum();
                if seconds > 0.0 {
                    done / seconds
                } else {
                    0.0
                }
            };
            let op = |iops: f64, mb_s: f64| OpSummary {
                ios: (iops * seconds).round() as u64,
                bytes: (mb_s * 1e6 * seconds).round() as u64,
                iops,
                mb_s,
                mib_s: mb_s * 1e6 / f64::from(1u32 << 20),
                latency: None,
            };
            let mb_share = |iops: f64| {
                let all = rate(|p| p.iops);
                if all > 0.0 {
                    rate(|p| p.mb_s) * iops / all
                } else {
                    0.0
                }
            };
            let (read_iops, write_iops) = (rate(|p| p.read_iops), rate(|p| p.write_iops));
            HostResult {
                host: part.host.clone(),
                hostname: part.hostname.clone(),
                status: HostStatus::Failed,
                failure: Some(reason.clone()),
                start_offset_ns: 0,
                clock_offset_ns: part.clock_offset_ns,
                measured_s: seconds,
                read: op(read_iops, mb_share(read_iops)),
                write: op(write_iops, mb_share(write_iops)),
                total: op(rate(|p| p.iops), rate(|p| p.mb_s)),
                series: live_series.clone(),
                cpu: Default::default(),
                errors: 0,
                devices: Vec::new(),
                machine: None,
                verdict: None,
                link_mb_s,
            }
        }
    }
}
