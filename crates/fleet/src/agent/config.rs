//! What the agent's operator decides, and no coordinator can change: where it listens, the
//! shared token, what it may write, where scratch files go, the longest lease it grants.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_stats::result::{JobResult, Verdict};

use crate::protocol::MAX_LEASE_MS;

use super::error::AgentError;

/// Where an agent listens unless told otherwise: loopback only, so exposing it is a decision.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub listen: SocketAddr,
    /// The secret every request must carry as `Authorization: Bearer <token>`.
    pub token: String,
    /// `--allow-write`: the only places (directories, files, devices) jobs may write to.
    pub allow_write: Vec<PathBuf>,
    /// Where scratch files go (the agent's current directory becomes this one); `None`: the
    /// current directory.
    pub scratch_dir: Option<PathBuf>,
    /// The longest lease the agent grants (at most `MAX_LEASE_MS`).
    pub max_lease: Duration,
    /// The largest scratch file a job may ask for (`--max-scratch`), in bytes.
    pub max_scratch: u64,
    /// `--metrics`: where the figures of every job the agent runs are served for the operator's
    /// Prometheus (apart from the API, with no token); `None` unless asked for.
    pub metrics: Option<super::MetricsPort>,
    /// `--allow-hardlinks`: jobs may write a file with more than one hard link (another name,
    /// possibly outside `--allow-write`, reaches the same data).
    pub allow_hardlinks: bool,
    /// How long reading a request may take, and how many connections may be open.
    pub limits: super::Limits,
    /// Judges each job's result after it is measured, before the coordinator gets it: the
    /// host's own verdict. Given by the binary (the analysis crate's rules); the fleet crate
    /// measures and merges, and never judges.
    pub judge: Judge,
}

/// What limited a job, from its result alone.
pub type Judge = fn(&JobResult) -> Verdict;

/// `--max-scratch` unless the operator says otherwise.
pub const DEFAULT_MAX_SCRATCH: u64 = 16 << 30;

impl AgentConfig {
    /// Listens on `listen`, writes nowhere but scratch files in the current directory, and
    /// judges nothing (its results' verdicts are `Verdict::not_judged`) until given a `judge`.
    pub fn new(listen: SocketAddr, token: impl Into<String>) -> Self {
        AgentConfig {
            listen,
            token: token.into(),
            allow_write: Vec::new(),
            scratch_dir: None,
            max_lease: Duration::from_millis(MAX_LEASE_MS),
            max_scratch: DEFAULT_MAX_SCRATCH,
            metrics: None,
            allow_hardlinks: false,
            limits: super::Limits::default(),
            judge: |_| Verdict::not_judged(),
        }
    }
}

/// Reads the token from `path`, trimmed. Refuses an empty one, and a file other users can read
/// or write: the token is the only thing between the network and the agent's disks.
pub fn read_token(path: &Path) -> Result<String, AgentError> {
    use std::os::unix::fs::PermissionsExt;
    let file_error = |source| AgentError::TokenFile { path: path.to_path_buf(), source };
    let mode = std::fs::metadata(path).map_err(file_error)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(AgentError::TokenFileOpen { path: path.to_path_buf(), mode });
    }
    let text = iolab_spec::user_file::read_to_string(path, iolab_spec::user_file::TOKEN_FILE)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(AgentError::EmptyToken { path: path.to_path_buf() });
    }
    Ok(token.to_string())
}
