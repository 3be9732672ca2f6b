//! A job run on many hosts at once (`iolab fleet`): each host's share of the merged result, how
//! closely the hosts started together, and what the network between them could carry. The
//! merged figures themselves live in the `JobResult` as for any job; this is the breakdown.

use serde::{Deserialize, Serialize};

use crate::activity::{CpuReport, DeviceActivity};
use crate::machine::MachineReport;
use crate::summary::{OpSummary, SeriesPoint};
use crate::verdict::Verdict;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FleetReport {
    pub hosts: Vec<HostResult>,
    /// Latest minus earliest start of the measured window across the hosts that ran, on the
    /// coordinator's clock (each agent's clock offset measured at the handshake and taken out).
    pub start_skew_ns: u64,
    /// From the end of the measured window (the last host's) to the merged result in hand.
    pub merge_latency_ms: f64,
    /// The most any host's live stats arrived behind its clock: a coordinator falling behind.
    pub max_stream_lag_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostStatus {
    /// Ran the whole window and delivered its result.
    Ok,
    /// Killed, unreachable or failed mid-run: its live stats up to then are kept, not merged.
    Failed,
}

/// One host's share of a fleet job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostResult {
    /// As the user named it: "10.0.0.2:7878".
    pub host: String,
    /// What the agent calls itself.
    pub hostname: String,
    pub status: HostStatus,
    /// Why a failed host failed, in the words of the error that ended it.
    pub failure: Option<String>,
    /// When its measured window opened, after the earliest host's (coordinator clock).
    pub start_offset_ns: u64,
    /// The agent's clock minus the coordinator's, measured at the handshake.
    pub clock_offset_ns: i64,
    pub measured_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    pub total: OpSummary,
    /// Per interval; for a failed host, what its live stream delivered before it failed.
    pub series: Vec<SeriesPoint>,
    pub cpu: CpuReport,
    pub errors: u64,
    pub devices: Vec<DeviceActivity>,
    /// The host's whole machine over its window: CPU by owner, cores, interrupts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineReport>,
    /// What limited this host on its own.
    pub verdict: Option<Verdict>,
    /// The host's measured network throughput (`iolab fleet --netbench`), 10^6 bytes/s.
    pub link_mb_s: Option<f64>,
}
