//! The one judging step, after a measurement is kept: a fleet's merged job by the fleet's
//! rules (what limited the hosts together), any other job by the verdict's rules. A live run
//! (`flow`, the agent) and `results show --rejudge` both judge here, so a stored point judged
//! again meets the rules it was first judged by.

use iolab_stats::result::{JobResult, Verdict};

/// What limited `job`, from its result alone.
pub fn judge(job: &JobResult) -> Verdict {
    match &job.fleet {
        Some(fleet) => crate::fleet_verdict::judge_fleet(fleet, job.measured_s),
        None => crate::verdict::judge(job),
    }
}
