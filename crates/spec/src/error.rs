//! Errors of the specification: each says what is wrong and how to fix it, in one line.

use thiserror::Error;

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

/// Job-file text that is not TOML, or sets a key or value that is not one: the TOML parser's
/// message (`message`, made one line) with the line it points at and the key of a bad value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TomlError {
    #[error("line {line} ({key}): {message}")]
    AtKey { line: usize, key: String, message: String },
    #[error("line {line}: {message}")]
    AtLine { line: usize, message: String },
    #[error("{message}")]
    Unplaced { message: String },
}
