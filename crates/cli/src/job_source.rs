//! Where `iolab run` and the studies read a job file from: an iolab (TOML) job file, or a fio
//! job file translated into one (iolab_fiojob), told apart by name or first line; and whether a
//! study's argument is a job file or its target.

use crate::exit::say;
use std::io::Read;
use std::path::{Path, PathBuf};

use iolab_spec::{jobfile, Options};
use iolab_studies::plan::Input;

/// The job file's options; a fio job file's notes go to stderr unless `quiet`.
pub fn load(path: &Path, quiet: bool) -> Result<Options, String> {
    if !iolab_fiojob::looks_like_fio(path) {
        return jobfile::load(path).map_err(|e| e.to_string());
    }
    let translation = iolab_fiojob::translate_file(path).map_err(|e| e.to_string())?;
    if !quiet {
        for note in &translation.notes {
            say!("iolab: note: fio job file {note}");
        }
    }
    translation.options(&path.display().to_string()).map_err(|e| e.to_string())
}

/// What a study measures (`iolab sweep ARG`, `ramp`, `steady`, ...): its one argument is a job
/// file when `is_job_file` says so, read as `iolab run` reads one (the flags override it), and
/// otherwise the target.
pub fn study_input(argument: Option<PathBuf>, flags: &Options) -> Result<Input, String> {
    let quiet = flags.quiet == Some(true);
    match argument {
        Some(path) if is_job_file(&path) => {
            Ok(Input { file: Some(load(&path, quiet)?), flags: flags.clone(), targets: Vec::new() })
        }
        argument => Ok(Input::flags(flags, argument.into_iter().collect())),
    }
}

/// `iolab scale [JOB_FILE] TARGET...`: a first argument that is a job file, and the targets.
pub fn scale_input(mut arguments: Vec<PathBuf>, flags: &Options) -> Result<Input, String> {
    let file = match arguments.first() {
        Some(first) if is_job_file(first) => Some(load(&arguments.remove(0), flags.quiet == Some(true))?),
        _ => None,
    };
    Ok(Input { file, flags: flags.clone(), targets: arguments })
}

/// Whether a command's argument names a job file rather than a target: a file named `*.toml`,
/// `*.fio` or `*.ini`, or a regular file of text whose first line (past comments) is a table
/// header, `[[job]]`, `[[group]]` or a fio `[section]`, or a key and `=` (`qd = 8`). A target named like that is given with
/// `--target`.
pub fn is_job_file(path: &Path) -> bool {
    let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if matches!(extension.as_deref(), Some("toml" | "fio" | "ini")) {
        return true;
    }
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    // The first 4 KiB decide; a data file (a target) is rarely text, and never all of it.
    let mut head = Vec::new();
    let Ok(file) = iolab_spec::user_file::open(path, "job file") else { return false };
    if file.take(4096).read_to_end(&mut head).is_err() || head.contains(&0) {
        return false;
    }
    let text = match std::str::from_utf8(&head) {
        Ok(text) => text,
        // Cut inside a character at the 4 KiB mark is still text; bad bytes before it are not.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => return false,
    };
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with(['#', ';']));
    first.is_some_and(|line| {
        let code = line.split('#').next().unwrap_or("").trim();
        let header = code.starts_with('[') && code.ends_with(']');
        header || is_key_assignment(code)
    })
}

/// `qd = 8`, `engine="uring"`: a TOML key (letters, digits, `_`, `-`) and `=`, as a job file
/// without tables begins.
fn is_key_assignment(line: &str) -> bool {
    let Some((key, _)) = line.split_once('=') else { return false };
    let key = key.trim();
    key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_file_is_told_from_a_target_by_name_or_first_line() {
        let dir = tempfile::tempdir().expect("dir");
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).expect("write");
            path
        };
        assert!(is_job_file(Path::new("missing.toml")), "named so: read (and refused) as a job file");
        assert!(is_job_file(&write("vms", b"# 44 VMs\n\n[[group]]\nname = \"vm01\"\n")));
        assert!(is_job_file(&write("load", b"; fio\n[global]  # defaults\nrw=randread\n")));
        assert!(is_job_file(&write("keys-only", b"qd = 8\n[[group]]\n")), "a key first: a job file");
        assert!(!is_job_file(&write("notes", b"some text = not a key\n")), "prose is a target");
        assert!(!is_job_file(&write("data", b"[\x00\x01\x02 random data]\n")), "binary data is a target");
        assert!(!is_job_file(&write("latin", b"[\xff\xfe]\n")), "not UTF-8: a target");
        let mut cut = b"[[group]]\n# ".to_vec();
        // 12 + 4083 bytes, then a two-byte character across the 4096th.
        cut.extend(std::iter::repeat_n(b'x', 4083));
        cut.extend("é".as_bytes());
        assert!(is_job_file(&write("long", &cut)), "a character cut at 4 KiB is still text");
        assert!(!is_job_file(Path::new("/dev/null")));
        assert!(!is_job_file(dir.path()), "a directory is a target");
    }
}
