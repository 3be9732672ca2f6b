//! TEMPORARY stand-in until h-merge lands.
use iolab_spec::JobSpec;
use iolab_stats::result::{JobResult, SeriesPoint};
use iolab_stats::IntervalStats;

use crate::protocol::AgentResult;

pub struct HostPart { pub host: String, pub hostname: String, pub clock_offset_ns: i64, pub outcome: HostOutcome }
pub enum HostOutcome { Finished { result: JobResult, intervals: Vec<IntervalStats> }, Failed { reason: String, live_series: Vec<SeriesPoint> } }
impl HostOutcome {
    pub fn from_agent(agent: AgentResult) -> Result<HostOutcome, String> {
        let mut result = agent.result;
        result.histograms = agent.histograms.decode().map_err(|e| e.to_string())?;
        let intervals = agent.intervals.iter().map(|h| h.decode()).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        Ok(HostOutcome::Finished { result, intervals })
    }
}
impl HostPart {
    pub fn window_end_unix_ns(&self) -> Option<u64> {
        match &self.outcome { HostOutcome::Finished { result, .. } => Some((result.window_start_unix_ns as i64 - self.clock_offset_ns) as u64 + (result.measured_s * 1e9) as u64), _ => None }
    }
}
#[derive(Debug, thiserror::Error)]
#[error("no host finished")]
pub struct MergeError;
pub fn merge(job: &JobSpec, parts: &[HostPart], _links: &[Option<f64>]) -> Result<JobResult, MergeError> {
    for p in parts { if let HostOutcome::Finished { result, .. } = &p.outcome { let mut r = result.clone(); r.spec = job.clone(); return Ok(r); } }
    Err(MergeError)
}
