//! What can be wrong with a file handed to `iolab import fio`, and reading fio's fields with
//! an error that names the file, the job and the field.

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum FioImportError {
    #[error(
        "{file} holds no JSON object: is it fio's output? Run fio with --output-format=json \
         (or json+) and import what it writes"
    )]
    NoJson { file: String },
    #[error("{file}: the JSON in it does not parse ({error}); is the file cut short?")]
    BadJson { file: String, error: serde_json::Error },
    #[error(
        "{file} is not fio's JSON output: it has no \"{missing}\" (fio 3.x writes one with \
         --output-format=json or json+)"
    )]
    NotFio { file: String, missing: &'static str },
    #[error("{file}: fio's output holds no jobs (\"jobs\" and \"client_stats\" are empty)")]
    NoJobs { file: String },
    #[error("{file}: job '{job}': \"{field}\" {problem}; is this fio's JSON output?")]
    Field { file: String, job: String, field: String, problem: &'static str },
    /// A value fio never writes (a negative rate, min above max): the file was edited or
    /// damaged, and storing it would put nonsense beside real results.
    #[error(
        "{file}: job '{job}': \"{field}\" {detail}; fio never writes that: is the file edited or damaged?"
    )]
    Inconsistent { file: String, job: String, field: String, detail: String },
    #[error("{file}: \"{field}\" {detail}; fio never writes that: is the file edited or damaged?")]
    Document { file: String, field: &'static str, detail: String },
    #[error(
        "{file} is {size} bytes, more than the {limit} bytes (16 MiB) one import takes: fio's JSON of \
         even hundreds of jobs is far smaller; is it fio's output? (split a larger result by job)"
    )]
    TooLarge { file: String, size: u64, limit: u64 },
    #[error(
        "{file} holds {points} fio jobs; --as-sweep takes one point per file (run each point with \
         --group_reporting, or import the file on its own)"
    )]
    NotOnePoint { file: String, points: usize },
    #[error("no files to import as a sweep{0}")]
    EmptySweep(String),
}

/// Where a field is read from, for the error when it is missing or of the wrong kind.
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
    pub job: String,
}

impl Ctx<'_> {
    pub fn error(&self, pointer: &str, problem: &'static str) -> FioImportError {
        FioImportError::Field {
            file: self.file.to_string(),
            job: self.job.clone(),
            field: pointer.trim_start_matches('/').replace('/', "."),
            problem,
        }
    }

    /// The value at a JSON pointer ("/read/clat_ns/N") under `value`.
    pub fn get<'v>(&self, value: &'v Value, pointer: &str) -> Result<&'v Value, FioImportError> {
        value.pointer(pointer).ok_or_else(|| self.error(pointer, "is missing"))
    }

    pub fn inconsistent(&self, pointer: &str, detail: String) -> FioImportError {
        FioImportError::Inconsistent {
            file: self.file.to_string(),
            job: self.job.clone(),
            field: pointer.trim_start_matches('/').replace('/', "."),
            detail,
        }
    }

    /// A count (I/Os, bytes, ms): a whole number from 0 to `MAX_COUNT`.
    pub fn u64(&self, value: &Value, pointer: &str) -> Result<u64, FioImportError> {
        count(self.get(value, pointer)?).map_err(|problem| self.problem(pointer, problem))
    }

    /// A rate or share: a finite number, never negative.
    pub fn f64(&self, value: &Value, pointer: &str) -> Result<f64, FioImportError> {
        let found =
            self.get(value, pointer)?.as_f64().ok_or_else(|| self.error(pointer, "is not a number"))?;
        if found < 0.0 {
            return Err(self.inconsistent(pointer, format!("is negative ({found})")));
        }
        Ok(found)
    }

    fn problem(&self, pointer: &str, problem: Problem) -> FioImportError {
        match problem {
            Problem::NotWhole => self.error(pointer, "is not a whole number"),
            Problem::Negative(text) => self.inconsistent(pointer, format!("is negative ({text})")),
            Problem::TooLarge(text) => {
                self.inconsistent(pointer, format!("is {text}, beyond 2^63, more than any run counts"))
            }
        }
    }
}

/// The largest count the import takes: SQLite's and JSON readers' integers end at 2^63, and
/// no run counts that many I/Os or bytes (fio's own counters are 64-bit).
pub const MAX_COUNT: u64 = i64::MAX as u64;

pub(crate) enum Problem {
    NotWhole,
    Negative(String),
    TooLarge(String),
}

/// A whole number from 0 to `MAX_COUNT`. fio prints counts as integers; a float that is a
/// whole number is taken too, but never cast (1.23e29 `as u64` is u64::MAX, silently).
pub(crate) fn count(found: &Value) -> Result<u64, Problem> {
    if let Some(n) = found.as_u64() {
        return if n > MAX_COUNT { Err(Problem::TooLarge(n.to_string())) } else { Ok(n) };
    }
    if found.as_i64().is_some_and(|n| n < 0) {
        return Err(Problem::Negative(found.to_string()));
    }
    let f = found.as_f64().ok_or(Problem::NotWhole)?;
    if f < 0.0 {
        return Err(Problem::Negative(found.to_string()));
    }
    if f.fract() != 0.0 {
        return Err(Problem::NotWhole);
    }
    if f >= MAX_COUNT as f64 {
        return Err(Problem::TooLarge(found.to_string()));
    }
    Ok(f as u64)
}
