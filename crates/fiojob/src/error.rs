//! Errors of a fio job file: one line each, naming the file, the line and the option.

use std::fmt;

use thiserror::Error;

/// Where an option or section was written: the file (an included one, maybe) and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: line {}", self.file, self.line)
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FioJobError {
    /// The file cannot be read (`message` names it: `iolab_spec::user_file`).
    #[error("{message}")]
    Read { file: String, message: String },
    /// A bad line or value, at its place.
    #[error("fio job file {loc}: {message}")]
    At { loc: Loc, message: String },
    /// Something of the file as a whole (no jobs at all).
    #[error("fio job file {file}: {message}")]
    File { file: String, message: String },
    /// Options iolab has no equivalent for: all of them, so that one edit fixes the file.
    #[error(
        "fio job file {file}: iolab has no equivalent of {list}; remove {them}, or write an iolab job file instead (docs/job-file.md)"
    )]
    Unsupported { file: String, list: String, them: &'static str },
    /// The translation is a job file that iolab's own checks refuse.
    #[error("fio job file {file}: {message}")]
    Refused { file: String, message: String },
}

pub(crate) fn at(loc: &Loc, message: impl Into<String>) -> FioJobError {
    FioJobError::At { loc: loc.clone(), message: message.into() }
}
