//! Job files: TOML with the same keys as the flags (`read_pct` for `--read-pct`).
//!
//! The format is documented in docs/job-file.md. Unknown keys are errors, never ignored: a
//! misspelt `qdepth` that silently ran at the default QD would be a wrong result.

use std::path::Path;

use crate::error::{SpecError, TomlError};
use crate::options::Options;

/// Reads and parses a job file.
pub fn load(path: &Path) -> Result<Options, SpecError> {
    let text = crate::user_file::read_to_string(path, crate::user_file::JOB_FILE)
        .map_err(|e| SpecError::UserFile(e.to_string()))?;
    parse(&text).map_err(|error| SpecError::JobFile { path: path.display().to_string(), error })
}

/// Parses job-file text; the error is one line with the line number.
pub fn parse(text: &str) -> Result<Options, TomlError> {
    parse_toml(text, "unknown field", "the keys are listed in docs/job-file.md")
}

/// Parses a TOML job file of any command into `T`; the error is one line: the line number,
/// the key a bad value was given to, `unknown` for serde's "unknown field" and, for a key
/// that is not one, where the keys are listed (`keys_are`) instead of serde's whole list.
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    unknown: &str,
    keys_are: &str,
) -> Result<T, TomlError> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let mut message = e.message().trim().replace('\n', " ").replace("unknown field", unknown);
        if let Some(cut) = message.find(", expected one of") {
            message.truncate(cut);
            message.push_str(&format!(" ({keys_are})"));
        }
        // A value's error names the value, not its key: say which key it was given to.
        let key = e
            .span()
            .and_then(|span| key_before(text, span.start))
            .filter(|key| !message.contains(&format!("`{key}`")));
        match (line, key) {
            (Some(line), Some(key)) => TomlError::AtKey { line, key: key.to_string(), message },
            (Some(line), None) => TomlError::AtLine { line, message },
            (None, _) => TomlError::Unplaced { message },
        }
    })
}

/// The bare key of the `key = value` that the value at byte `at` belongs to, if it is on the
/// value's line.
fn key_before(text: &str, at: usize) -> Option<&str> {
    let before = text.get(..at)?;
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    let key = line.split_once('=')?.0.trim();
    let bare = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    bare.then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_an_error_with_its_line() {
        let err = parse("qd = 4\nqdepth = 8\n").unwrap_err().to_string();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(err.contains("qdepth"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn values_take_units_as_strings_or_numbers() {
        let options =
            parse("bs = \"64k\"\nsize = 1048576\nruntime = \"5s\"\nslo = [\"500us\", \"1ms\"]\n").unwrap();
        assert_eq!(options.bs, Some(crate::Axis::one(crate::Bytes(65536))));
        assert_eq!(options.size, Some(crate::Bytes(1 << 20)));
        assert_eq!(options.runtime, Some(crate::Nanos::from_secs(5)));
        assert_eq!(options.slo.unwrap().0.len(), 2);
    }

    #[test]
    fn qd_list_with_empty_value_names_the_key_and_the_value() {
        let err = parse("bs = \"4k\"\nqd = \"1,,2\"\n").unwrap_err().to_string();
        assert!(err.starts_with("line 2 (qd): '1,,2' has an empty value"), "{err}");
    }

    #[test]
    fn bad_value_names_the_fix() {
        let err = parse("bs = \"4q\"\n").unwrap_err().to_string();
        assert!(err.contains("write e.g."), "{err}");
    }
}
