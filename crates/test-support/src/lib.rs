//! Skipping a test that this machine cannot run, visibly. cargo shows a test's stderr only when
//! it fails, so a skip said only there is invisible: nobody knows what did not run. `skip!`
//! says the reason on stderr as before and also appends a line (test, what is missing, reason)
//! to a file of this process under `target/test-skips/`, which `scripts/test` lists at the end
//! of the run and, under CI, fails on when the missing thing is one CI provides.
//!
//! A dev-dependency only: nothing here reaches the `iolab` binary.

use std::io::Write;
use std::path::PathBuf;

/// The environment variable naming the directory for the skip files (`scripts/test` sets it);
/// without it, `test-skips` in the target directory of the running test binary.
pub const SKIPS_DIR_ENV: &str = "IOLAB_TEST_SKIPS";

/// What the machine lacks for a test to run: the kinds CI provides (root, fio, chromium, a loop
/// device, kubernetes-validate, prometheus-client) must never be the reason of a skip there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Root,
    Fio,
    Chromium,
    Loop,
    Fuse,
    Netns,
    KubernetesValidate,
    /// The Prometheus Python client's parsers (the metrics exposition tests).
    PrometheusClient,
    /// Anything else: a kernel feature (zram, io_uring, NVMe), a filesystem, a tool CI lacks.
    Other,
}

impl Missing {
    /// The word in the skip file and the summary.
    pub fn name(self) -> &'static str {
        match self {
            Missing::Root => "root",
            Missing::Fio => "fio",
            Missing::Chromium => "chromium",
            Missing::Loop => "loop",
            Missing::Fuse => "fuse",
            Missing::Netns => "netns",
            Missing::KubernetesValidate => "kubernetes-validate",
            Missing::PrometheusClient => "prometheus-client",
            Missing::Other => "other",
        }
    }
}

/// Records that the running test (or a part of it) is skipped because `Missing` is missing,
/// with the reason as `format!` arguments. The caller returns right after.
///
/// ```text
/// if !is_root() {
///     return iolab_test_support::skip!(Missing::Root, "needs root to mount a tmpfs");
/// }
/// ```
#[macro_export]
macro_rules! skip {
    ($missing:expr, $($reason:tt)+) => {
        $crate::record($missing, module_path!(), &format!($($reason)+))
    };
}

/// What `skip!` does: the reason on stderr and a line in this process's skip file.
pub fn record(missing: Missing, module: &str, reason: &str) {
    eprintln!("skipped: {reason}");
    let test = test_name(module, std::thread::current().name());
    let line = format!("{test}\t{}\t{}\n", missing.name(), one_line(reason));
    let Some(dir) = skips_dir() else { return };
    // One write of one short line to a file opened for appending: lines from the test threads
    // of this process never interleave.
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let file = dir.join(format!("{}.txt", std::process::id()));
        std::fs::OpenOptions::new().create(true).append(true).open(file)?.write_all(line.as_bytes())
    });
    if let Err(e) = written {
        eprintln!("warning: the skip was not recorded in {}: {e}", dir.display());
    }
}

/// `crate::path::to::test`: libtest names each test's thread after the test's path inside its
/// crate; `module_path!()` gives the crate (an integration test file is a crate of its own).
fn test_name(module: &str, thread: Option<&str>) -> String {
    let krate = module.split("::").next().unwrap_or(module);
    match thread {
        Some(name) if name != "main" => format!("{krate}::{name}"),
        // A test run on the main thread (--test-threads=1 on some platforms): the module is
        // all that is known.
        _ => module.to_string(),
    }
}

fn one_line(reason: &str) -> String {
    reason.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `$IOLAB_TEST_SKIPS`, else `test-skips` in the target directory: a test binary lives in
/// `<target>/<profile>/deps/`.
fn skips_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(SKIPS_DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("test-skips"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_named_after_its_crate_and_test() {
        assert_eq!(
            test_name("bad_input", Some("no_permission_is_explained")),
            "bad_input::no_permission_is_explained"
        );
        assert_eq!(
            test_name("iolab_engine::uring::tests", Some("uring::tests::x")),
            "iolab_engine::uring::tests::x"
        );
        assert_eq!(test_name("iolab_engine::uring::tests", Some("main")), "iolab_engine::uring::tests");
    }

    #[test]
    fn a_reason_is_one_line() {
        assert_eq!(one_line("losetup failed:\n\tno free device "), "losetup failed: no free device");
    }
}
