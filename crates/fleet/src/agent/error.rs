//! The agent's two kinds of failure: `AgentError`, which stops the agent from starting or
//! serving (its operator reads it), and `Failure`, one refused request (its coordinator reads
//! it as an `ApiError` body, and the agent's log gets one line).

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use thiserror::Error;

use crate::protocol::ApiError;

#[derive(Debug, Error)]
pub enum AgentError {
    #[error("cannot read the token file {path}: {source}; create it with a secret shared with the coordinator (e.g. `head -c 32 /dev/urandom | base64 > {path}; chmod 600 {path}`)", path = path.display())]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file, or larger than a token file may be.
    #[error(transparent)]
    TokenFileRead(#[from] iolab_spec::user_file::UserFileError),
    #[error("the token file {path} is empty; write a secret shared with the coordinator into it", path = path.display())]
    EmptyToken { path: PathBuf },
    #[error("the token is empty; give the agent a secret shared with the coordinator")]
    NoToken,
    #[error("the token file {path} can be read or written by other users (mode {mode:o}); run `chmod 600 {path}`", path = path.display())]
    TokenFileOpen { path: PathBuf, mode: u32 },
    #[error("--allow-write {path}: {source}; give a directory or device that exists", path = path.display())]
    AllowWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--scratch-dir {path}: {source}; give a directory that exists and the agent can write", path = path.display())]
    ScratchDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}; pick a free port or address with --listen")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Metrics(#[from] iolab_metrics::MetricsError),
    #[error("the agent's runtime could not start: {0}; check the process limits (threads, open files)")]
    Runtime(#[source] std::io::Error),
    #[error("the agent stopped serving: {0}; restart it")]
    Serve(#[source] std::io::Error),
}

/// A request the agent refuses or fails: its status and a message saying what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub status: StatusCode,
    pub message: String,
}

/// Put on a refused response so the request log names the reason without reading bodies.
#[derive(Debug, Clone)]
pub struct Refusal(pub String);

impl Failure {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Failure { status, message: message.into() }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Failure::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Failure::new(StatusCode::CONFLICT, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Failure::new(StatusCode::NOT_FOUND, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Failure::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status.as_u16(), self.message)
    }
}

/// The longest message an answer carries: messages quote what the peer sent (paths, names),
/// and an answer never echoes a flood back.
const MAX_MESSAGE: usize = 8 * 1024;

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let message = match super::refusal_log::capped(&self.message, MAX_MESSAGE) {
            std::borrow::Cow::Borrowed(_) => self.message,
            std::borrow::Cow::Owned(cut) => cut,
        };
        let mut response = (self.status, Json(ApiError { error: message.clone() })).into_response();
        response.extensions_mut().insert(Refusal(message));
        response
    }
}
