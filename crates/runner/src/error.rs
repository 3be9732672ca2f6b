//! Errors that end a run before or instead of measuring. Each message says what to do next.

use std::path::PathBuf;

use iolab_engine::safety::Finding;
use iolab_engine::target::TargetError;
use iolab_engine::EngineError;
use thiserror::Error;

use crate::verify::VerifyError;

#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(
        "refusing to write to {path}: {found}; nothing was written{also}. Pass --allow-destroy to overwrite it",
        found = list(findings),
        also = fallback.as_ref().map(|note| format!(" ({note})")).unwrap_or_default()
    )]
    Refused {
        path: PathBuf,
        findings: Vec<Finding>,
        /// How the check fell short: libblkid was not found and iolab's own list was used.
        fallback: Option<String>,
    },
    #[error("{0}")]
    Invalid(String),
    /// `--verify` could not read, keep or save a target's records.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A stop signal came before the job started (on a fleet, before the hosts were started).
    #[error("interrupted before the job started; nothing ran")]
    Interrupted,
    /// A fleet could not go on: every host failed, or the coordinator lost them all.
    #[error("{0}")]
    Fleet(String),
    #[error("{context}: {source}")]
    Internal {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

fn list(findings: &[Finding]) -> String {
    findings.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl RunError {
    /// Whether a stop signal ended the run before any job started.
    pub fn is_interruption(&self) -> bool {
        matches!(self, RunError::Target(TargetError::Interrupted(_)) | RunError::Interrupted)
    }

    /// Whether the user can fix this by changing the command, target or environment (exit 2),
    /// rather than it being a failure of iolab or the machine.
    pub fn is_user_error(&self) -> bool {
        match self {
            RunError::Target(_) | RunError::Refused { .. } | RunError::Invalid(_) | RunError::Verify(_) => {
                true
            }
            RunError::Engine(EngineError::Unavailable(_)) => true,
            RunError::Engine(_) | RunError::Interrupted | RunError::Fleet(_) | RunError::Internal { .. } => {
                false
            }
        }
    }
}
