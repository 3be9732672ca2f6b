//! The agent's HTTP API, version 1: the paths, and the JSON bodies both sides exchange.
//! docs/fleet.md describes it for people; this file is its definition.
//!
//! Every request carries `Authorization: Bearer <token>`; without the right token the answer is
//! 401 and nothing runs. Errors are 4xx/5xx with an `ApiError` body. A coordinator opens a
//! session (one at a time per agent) with a lease; any request to the session renews it, and a
//! coordinator renews it on its own with heartbeats. When the lease runs out, the agent stops
//! the session's job and closes it: an agent never runs unattended.
//!
//! ```text
//! POST   /v1/hello                          HelloRequest -> Hello        the version handshake
//! POST   /v1/sessions                       OpenSession  -> SessionOpened (409 if one is live)
//! PUT    /v1/sessions/{id}/replay           requests     -> ReplayLoaded a replay's requests
//!                                                                        (bytes: replay_wire)
//! POST   /v1/sessions/{id}/prepare          Prepare      -> Prepared     open and check targets
//! POST   /v1/sessions/{id}/start            Start        -> 202          run at an instant
//! GET    /v1/sessions/{id}/live?from=N      NDJSON of LiveEvent, from the N-th event on
//! GET    /v1/sessions/{id}/result?wait_ms=N AgentResult (202 while the job runs)
//! POST   /v1/sessions/{id}/heartbeat        -> SessionOpened
//! POST   /v1/sessions/{id}/abort            stop the running job; the session stays
//! DELETE /v1/sessions/{id}                  stop and close the session
//! POST   /v1/netbench/send                  NetSend -> NetMeasured       push to another agent
//! POST   /v1/netbench/sink                  any bytes, discarded -> NetMeasured
//! ```

use serde::{Deserialize, Serialize};

use iolab_stats::encoded::{EncodedHistograms, EncodedOpStats};
use iolab_stats::result::{JobResult, SeriesPoint};

/// Name and version of the protocol, sent both ways in the handshake. The version moves with
/// every change an agent of another build could not read, so such a pair fails at the
/// handshake, naming both versions, rather than at a job's first unknown key. 2: a files job's
/// engine `auto`, and the job key `completion_watch`.
pub const PROTOCOL: &str = "iolab.fleet/2";

/// The largest request body an agent reads (netbench's sink aside); a job file is a few KiB.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Leases a coordinator may ask for: long enough for a loaded network, short enough that an
/// orphaned agent stops soon.
pub const MIN_LEASE_MS: u64 = 500;
pub const MAX_LEASE_MS: u64 = 120_000;

/// How far in the future a start instant may lie.
pub const MAX_START_DELAY_MS: u64 = 60_000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ApiError {
    pub error: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HelloRequest {
    /// The coordinator's `PROTOCOL`; an agent that speaks another answers 400 and says which.
    pub protocol: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Hello {
    pub protocol: String,
    pub iolab_version: String,
    pub hostname: String,
    pub kernel: String,
    pub cpus: usize,
    /// The agent's wall clock as it answered, ns since the Unix epoch: with the request's
    /// send and receive times, the coordinator estimates the agent's clock offset.
    pub unix_ns: u64,
    /// What its operator allowed it to write (`--allow-write`), as given.
    pub allow_write: Vec<String>,
    /// A session in progress (another coordinator's, or a crashed one's until its lease ends).
    pub session: Option<String>,
}

/// The longest coordinator name an agent takes (`OpenSession::coordinator`).
pub const MAX_COORDINATOR_NAME: usize = 256;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpenSession {
    /// MIN_LEASE_MS..=MAX_LEASE_MS.
    pub lease_ms: u64,
    /// Who opened it, for the agent's log and `Hello::session`.
    pub coordinator: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionOpened {
    pub session: String,
    pub lease_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prepare {
    /// One job as job-file text (`iolab_spec::wire::job_file_text`): the agent parses and
    /// validates it exactly as it would a user's job file.
    pub job: String,
    /// The job's one group replays the requests last PUT to the session's `replay` (`iolab
    /// fleet replay`): how they were laid out. The agent checks them against the target it
    /// opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayWire>,
}

/// A replay's description (`iolab_spec::ReplaySpec` without its requests, which go as bytes).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayWire {
    /// The trace, as the user named it on the coordinator.
    pub source: String,
    /// `None`: as fast as the queue allows.
    pub speed: Option<f64>,
    pub fit: Option<String>,
    /// Discards and flushes of the trace, not replayed.
    pub skipped: u64,
    /// How many requests the upload held: a mismatch means another upload came between.
    pub requests: u64,
}

/// The answer to a replay's upload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayLoaded {
    pub requests: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prepared {
    /// The targets as opened, after the agent laid out any scratch file.
    pub targets: Vec<String>,
    /// What the agent would tell its user (a file being laid out, a warning).
    pub notes: Vec<String>,
    /// The first target's region as opened, bytes (`iolab fleet cache` takes its working sets
    /// as shares of each host's own region); absent from an older agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Start {
    /// When to start the prepared job, on the agent's clock, ns since the Unix epoch; at most
    /// MAX_START_DELAY_MS ahead. An instant already past starts at once.
    pub at_unix_ns: u64,
}

/// One line of the live stream.
// A job's log holds a few hundred events at most; boxing the interval would save little and
// make both sides build it differently (the JSON is the same either way).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LiveEvent {
    /// About five times a second: where the job is and its last second.
    Progress {
        /// "ramp" or "measure".
        phase: String,
        elapsed_ns: u64,
        total_ns: u64,
        iops: f64,
        mean_ns: f64,
        p99_ns: u64,
        /// The agent's clock when it was sent.
        unix_ns: u64,
    },
    /// A measured interval closed: its point and histograms, so the coordinator merges the
    /// fleet's live figures exactly.
    Interval {
        index: u64,
        point: SeriesPoint,
        histograms: EncodedHistograms,
        unix_ns: u64,
    },
    Note {
        message: String,
    },
    /// The job ended; its result is ready.
    Finished,
    /// The job could not run or failed.
    Failed {
        message: String,
    },
}

/// A finished job, as an agent hands it over.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentResult {
    /// Its `spec` is not read back: the coordinator knows what it sent.
    pub result: JobResult,
    /// `result.histograms`, `result.groups[i].histograms` and each measured interval's,
    /// encoded (they are not part of the result's JSON).
    pub histograms: EncodedHistograms,
    pub groups: Vec<EncodedHistograms>,
    pub intervals: Vec<EncodedHistograms>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetSend {
    /// Another agent: "host:port", reached with the same token.
    pub to: String,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetMeasured {
    pub bytes: u64,
    pub seconds: f64,
    /// 10^6 bytes per second.
    pub mb_s: f64,
}

// The fileset (`iolab fleet files`), phase by phase in lock-step; see docs/fleet.md:
//
// POST /v1/sessions/{id}/files/prepare          FilesPrepare -> FilesPrepared   make DIR ready
// POST /v1/sessions/{id}/files/start            Start -> 202     the next phase, at an instant
// GET  /v1/sessions/{id}/files/result?wait_ms=N FilesPhaseDone (202 with FilesProgress while
//                                               the phase runs)
//
// The tree is removed once the run is over (its last phase, or one that failed or was
// interrupted, and that phase's answer says what was removed and left: `FilesPhaseDone::tree`),
// else when the session closes, whatever happened.

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FilesPrepare {
    /// The run as `iolab files` job-file text (docs/files.md): the agent parses and checks it
    /// as a user's; its `dir`, `keep`, `json` and `quiet` are not taken from it.
    pub job: String,
    /// Where to build the tree: an absolute path under the agent's `--allow-write`.
    pub dir: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FilesPrepared {
    /// The directory as opened (links in the given path resolved).
    pub dir: String,
    /// The phases in order with their planned operations on this host.
    pub planned: Vec<(iolab_files::Phase, u64)>,
    pub notes: Vec<String>,
}

/// How far a host's running phase is (the 202 answer to a result request).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct FilesProgress {
    pub phase: iolab_files::Phase,
    /// The phase's own operations done so far (each thread's count is up to 63 behind).
    pub done: u64,
    pub planned: u64,
    /// Since the phase began on the host.
    pub elapsed_ns: u64,
}

/// One phase as a host ran it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FilesPhaseDone {
    /// Which phase of the plan (0 is the first).
    pub index: usize,
    /// Its figures (`iolab.files/1`'s phase, without histograms).
    pub result: iolab_files::PhaseResult,
    /// Each kind's histogram, encoded, to merge exactly.
    pub histograms: Vec<(iolab_files::OpKind, EncodedOpStats)>,
    /// The host's notes so far (ring operations done as system calls, ...).
    pub notes: Vec<String>,
    /// When the phase began on the agent's clock (ns since the Unix epoch): the fleet's start
    /// skew comes from these.
    #[serde(default)]
    pub started_unix_ns: u64,
    /// The agent's peak resident memory so far (ru_maxrss), bytes.
    #[serde(default)]
    pub peak_rss_bytes: u64,
    /// The run is over with this phase, and its tree was removed then: what was removed and
    /// what was left. None while phases remain (and from an older agent).
    #[serde(default)]
    pub tree: Option<TreeRemoved>,
}

/// A host's tree removed at the end of its run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TreeRemoved {
    pub files: u64,
    pub dirs: u64,
    /// Entries iolab did not make (other names, links, files changed since the run's last
    /// mark), left with the marker; the first of them.
    pub left: u64,
    pub first_left: Option<String>,
    /// Why the removal itself failed (the tree then stays for `iolab files --clean`).
    pub error: Option<String>,
}

impl TreeRemoved {
    /// Everything iolab made went, and nothing else was there.
    pub fn whole(&self) -> bool {
        self.left == 0 && self.error.is_none()
    }
}
