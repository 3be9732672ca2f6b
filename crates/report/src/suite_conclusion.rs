//! The closing paragraph of a suite (issue 36 item 1): per workload, the load to run it at (a
//! load curve's sweet spot, else the test with the most IOPS), its figures and what limited it,
//! and what the lightest and heaviest loads gave beside it. A disturbed test (another load, a
//! stolen CPU) is named so and is no candidate.

use iolab_analysis::suite::SuiteSection;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{JobResult, RunReport};

/// "conclusion:" and one paragraph per workload, or nothing when no test finished.
pub(crate) fn conclusion(sections: &[SuiteSection], run: &RunReport) -> Vec<String> {
    let mut workloads: Vec<(String, Vec<&JobResult>)> = Vec::new();
    let mut spots: Vec<&str> = Vec::new();
    for section in sections {
        let jobs = match section {
            SuiteSection::Table { jobs, .. } => jobs.clone(),
            SuiteSection::Curve { jobs, summary, .. } => {
                spots.extend(summary.curves.iter().filter_map(|c| {
                    let spot = c.sweet_spot.as_ref().filter(|s| s.knee_found)?;
                    Some(summary.rows.get(spot.row)?.name.as_str())
                }));
                jobs.clone()
            }
            SuiteSection::Matrix { jobs, .. } => jobs.iter().flatten().copied().collect(),
            // Preconditioning writes and steady-state rounds are the way to a state, not a load.
            SuiteSection::Precondition { .. } | SuiteSection::Steady { .. } => Vec::new(),
        };
        for job in jobs.iter().filter_map(|&i| run.jobs.get(i)).filter(|j| j.total.ios > 0) {
            let workload = workload(job);
            match workloads.iter_mut().find(|(w, _)| *w == workload) {
                Some((_, list)) => list.push(job),
                None => workloads.push((workload, vec![job])),
            }
        }
    }
    if workloads.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["conclusion:".to_string()];
    lines.extend(workloads.iter().map(|(workload, jobs)| paragraph(workload, jobs, &spots)));
    lines
}

/// One workload's sentence: the chosen test, then the lightest and the heaviest load beside it.
fn paragraph(workload: &str, jobs: &[&JobResult], spots: &[&str]) -> String {
    let clean: Vec<&JobResult> =
        jobs.iter().copied().filter(|j| !j.verdict.cause.disturbs_the_measure()).collect();
    let disturbed = jobs.len() - clean.len();
    let Some(most) = clean.iter().copied().max_by(|a, b| a.total.iops.total_cmp(&b.total.iops)) else {
        return format!("  {workload}: every test of it was disturbed (another load or a stolen CPU); nothing to conclude.");
    };
    let spot = clean.iter().copied().find(|j| spots.contains(&j.name.as_str()));
    let chosen = spot.unwrap_or(most);
    let how = if spot.is_some() {
        "sweet spot (the most IOPS before latency grows faster)"
    } else {
        "the most IOPS"
    };
    let mut said = format!("  {workload}: {how} at {}", figures(chosen));
    let mut beside: Vec<&JobResult> = Vec::new();
    for other in [most, lightest(&clean)] {
        if !std::ptr::eq(other, chosen) && !beside.iter().any(|b| std::ptr::eq(*b, other)) {
            beside.push(other);
        }
    }
    for other in beside {
        said.push_str(&format!("; at {} ({})", figures(other), versus(other, chosen)));
    }
    if disturbed > 0 {
        said.push_str(&format!("; {disturbed} test(s) left out, disturbed"));
    }
    said.push('.');
    said
}

/// "QD 32 x 16 workers (RND4K Q32T16 read): 38,821,568 IOPS, 159,013 MB/s, p99 1.35us, limited
/// by submitting CPU".
fn figures(job: &JobResult) -> String {
    let p99 = job.total.latency.as_ref().and_then(|l| l.percentiles.iter().find(|p| p.p == 99.0));
    let p99 = p99.map_or(String::new(), |p| format!(", p99 {}", latency(p.ns as f64)));
    let (qd, workers) = load(job);
    format!(
        "QD {qd} x {workers} worker(s) ({}): {} IOPS, {} MB/s{p99}, limited by {}",
        job.name,
        thousands(job.total.iops),
        thousands(job.total.mb_s),
        job.verdict.cause.name()
    )
}

/// "3.2x fewer IOPS" or "12% fewer IOPS" of `other` against `chosen`.
fn versus(other: &JobResult, chosen: &JobResult) -> String {
    let (a, b) = (other.total.iops, chosen.total.iops);
    if a <= 0.0 || b <= 0.0 {
        return "not comparable".into();
    }
    let (ratio, word) = if a < b { (b / a, "fewer") } else { (a / b, "more") };
    if ratio >= 2.0 {
        format!("{ratio:.1}x {word} IOPS")
    } else {
        format!("{:.0}% {word} IOPS", (ratio - 1.0) * 100.0)
    }
}

/// The test with the fewest I/Os outstanding.
fn lightest<'a>(jobs: &[&'a JobResult]) -> &'a JobResult {
    jobs.iter().copied().min_by_key(|j| load(j).0 * load(j).1).unwrap_or(jobs[0])
}

/// (QD, workers) of the job's groups together.
fn load(job: &JobResult) -> (u32, u32) {
    let qd = job.groups.iter().map(|g| g.qd).max().unwrap_or(0);
    let workers = job.groups.iter().map(|g| g.workers).sum();
    (qd, workers)
}

/// The job's workload as the store words it: its groups' accesses joined with " + ".
fn workload(job: &JobResult) -> String {
    job.groups.iter().map(|g| g.access.as_str()).collect::<Vec<_>>().join(" + ")
}
