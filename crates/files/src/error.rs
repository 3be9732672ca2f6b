//! What can stop a fileset run before its phases start, or its clean-up.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The options do not make a run (a shape, a size, a phase order).
    #[error("{0}")]
    Plan(String),
    /// The directory is not one iolab may work in.
    #[error("{0}")]
    Refused(String),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl FilesError {
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> FilesError {
        FilesError::Io { what, path: path.into(), source }
    }
}
