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
    #[error("{file}: job '{job}': \"{field}\" {problem}; is this fio 3.x JSON output?")]
    Field { file: String, job: String, field: String, problem: &'static str },
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

    pub fn u64(&self, value: &Value, pointer: &str) -> Result<u64, FioImportError> {
        let found = self.get(value, pointer)?;
        // fio prints counts as integers; a float that is a whole number is taken too.
        found
            .as_u64()
            .or_else(|| found.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
            .ok_or_else(|| self.error(pointer, "is not a whole number"))
    }

    pub fn f64(&self, value: &Value, pointer: &str) -> Result<f64, FioImportError> {
        self.get(value, pointer)?.as_f64().ok_or_else(|| self.error(pointer, "is not a number"))
    }
}
