//! The rules about limits the machine's configuration sets, not its hardware: a cgroup CPU
//! quota that throttled the job, and an affinity mask that put more submitting threads than it
//! allows CPUs on the same cores. Each names the limit and its own figure; neither gives advice
//! it has not tested.

use iolab_stats::result::Bottleneck;
use iolab_stats::threads::ThreadClass;

use super::evidence::worker_line;
use super::facts::Facts;
use super::Finding;

/// A quota that ran out in this share of the window's enforcement periods or more held the job
/// back: its threads sat throttled for the rest of each such period.
pub const THROTTLED_PERIODS_PCT: f64 = 10.0;
/// Submitting threads wanting (running or waiting to run) this share of the CPUs their mask
/// allows, or more, were held by the mask. Wanted, not used: on a machine busy with other work
/// the threads get less than the mask allows, and the mask still held them.
pub const MASK_WANTED_SHARE: f64 = 0.8;

/// iolab's cgroup (or a parent) has a CPU quota that ran out during the window.
pub fn cpu_quota(facts: &Facts<'_>) -> Option<Finding> {
    let quota = facts.machine?.limits.cpu_quota.as_ref()?;
    let pct = quota.throttled_pct();
    if pct < THROTTLED_PERIODS_PCT {
        return None;
    }
    Finding::new(
        Bottleneck::ConfiguredLimit,
        format!(
            "The CPU quota of cgroup {} held the job back: {:.2} cores ({} us per {} us), which ran out in {pct:.0}% of the window's {} periods; its threads waited {:.2} s throttled, so the figures are the quota's, not the target's.",
            quota.cgroup,
            quota.cores(),
            quota.quota_us,
            quota.period_us,
            quota.periods,
            quota.throttled_s
        ),
        worker_line(facts).into_iter().collect(),
    )
}

/// iolab may run on fewer CPUs than it has submitting threads, and those threads wanted the
/// CPUs allowed: the mask, not the machine, held them.
pub fn affinity_mask(facts: &Facts<'_>) -> Option<Finding> {
    let affinity = facts.machine?.limits.affinity.as_ref().filter(|a| a.narrowed())?;
    let workers = facts.class(ThreadClass::Worker)?;
    let allowed = affinity.allowed.len() as f64;
    let window = facts.job.measured_s;
    if f64::from(workers.threads) <= allowed || window <= 0.0 {
        return None;
    }
    let used = (workers.user_s + workers.system_s) / window;
    let wanted = used + workers.runqueue_wait_s / window;
    if wanted < allowed * MASK_WANTED_SHARE {
        return None;
    }
    let cpus: Vec<String> = affinity.allowed.iter().map(u32::to_string).collect();
    Finding::new(
        Bottleneck::ConfiguredLimit,
        format!(
            "iolab may run only on CPU {} of the machine's {} (its affinity mask): its {} submitting threads wanted {wanted:.2} cores and ran {used:.2} on the {} allowed, waiting {:.2} s in all for a CPU, so the figures are the mask's, not the target's.",
            cpus.join(","),
            affinity.online,
            workers.threads,
            cpus.len(),
            workers.runqueue_wait_s
        ),
        worker_line(facts).into_iter().collect(),
    )
}
