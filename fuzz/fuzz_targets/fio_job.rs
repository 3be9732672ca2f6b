//! fio job files as `iolab run FILE.fio` and `iolab fio-job FILE --print` read them: any text to
//! `iolab_fiojob::translate_text`, then the iolab job file it becomes read back as
//! `job_source::load` reads it (`Translation::options`), resolved, expanded as a sweep, and sent
//! over the fleet wire as the `jobfile` target does.
//!
//! Found: a panic; a translation whose text is not a valid iolab job file, whether the
//! translation says so itself ("... please report this", what a user would see) or accepts it
//! and the reading back fails; a translated job that iolab refuses, or that cannot travel to an
//! agent. Two are open, reported for crates/fiojob (fuzz/README.md, Results): a zero block size
//! panics, and a control character in a note makes the translation invalid TOML.
//!
//! `include FILE` reads files: the text is named as a file in an empty directory of our own, so
//! a relative include is looked for there and fails to read, and an input whose include could
//! reach a real file (a name with '/' or '${', or one that exists in the working directory) is
//! skipped.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

use iolab_spec::{resolve, wire, Options};

/// `${TARGET}` and `${DEV}` are set (the fixtures and tests use them); any other is unset.
fn env(name: &str) -> Option<String> {
    matches!(name, "TARGET" | "DEV").then(|| "fuzz-target".to_string())
}

/// The fuzzed file's name: `job.fio` in an empty directory, made once and never written to.
fn job_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join("iolab-fuzz-fio_job-empty");
        std::fs::create_dir_all(&dir).expect("create the fuzzer's empty include directory");
        let mut entries = std::fs::read_dir(&dir).expect("list the fuzzer's include directory");
        assert!(entries.next().is_none(), "{} must stay empty: includes would read it", dir.display());
        dir.join("job.fio")
    })
}

/// Whether an `include` line (as the fio reader cuts comments and blanks) could name a real
/// file: with '/' or '${' in the name it could leave the empty directory, and a name that
/// exists in the working directory is read from there.
fn may_include_a_real_file(text: &str) -> bool {
    text.lines().any(|raw| {
        let end = raw.find([';', '#']).unwrap_or(raw.len());
        let Some(rest) = raw[..end].trim().strip_prefix("include") else { return false };
        let name = rest.trim();
        name.contains('/') || name.contains("${") || (!name.is_empty() && Path::new(name).exists())
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if may_include_a_real_file(text) {
        return;
    }
    let path = job_path();
    let file = path.display().to_string();
    let translation = match iolab_fiojob::translate_text(text, path, &env) {
        Ok(translation) => translation,
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains("please report this"), "{message}\n--- fio job file:\n{text}");
            return;
        }
    };
    let options = match translation.options(&file) {
        Ok(options) => options,
        Err(e) => panic!("{e}\n--- fio job file:\n{text}\n--- translation:\n{}", translation.text),
    };
    let _ = iolab_spec::sweep::expand(&options);
    let plan = match resolve(Some(&options), &Options::default()) {
        Ok(plan) => plan,
        Err(e) => panic!(
            "iolab refuses the translation it accepted: {e}\n--- fio job file:\n{text}\n--- translation:\n{}",
            translation.text
        ),
    };
    for job in &plan.jobs {
        let sent = match wire::job_file_text(job) {
            Ok(sent) => sent,
            Err(e) => panic!(
                "job '{}' translated from a fio job file cannot travel: {e}\n--- file:\n{text}",
                job.name
            ),
        };
        if let Err(e) = wire::job_from_text(&sent) {
            panic!("the agent refuses what was sent: {e}\n--- sent:\n{sent}");
        }
    }
});
