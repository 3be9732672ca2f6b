//! Errors of the specification: each says what is wrong and how to fix it, in one line.

use thiserror::Error;

use crate::jobfile::TomlError;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SpecError {
    /// A value or combination of values that cannot run.
    #[error("{0}")]
    Invalid(String),
    /// A job file that cannot be read or parsed.
    #[error("job file {path}: {error}")]
    JobFile { path: String, error: TomlError },
    /// A job file that is not a regular file, or too large to be one.
    #[error("{0}")]
    UserFile(String),
}

pub(crate) fn invalid(message: impl Into<String>) -> SpecError {
    SpecError::Invalid(message.into())
}
