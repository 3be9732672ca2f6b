//! What users and remote hosts write reaches the terminal shown, never obeyed: control
//! characters in names, values and paths are escaped on stderr and in text reports; and a
//! stderr or stdout on a full disk (/dev/full) ends with an exit code, never a panic.

mod common;

use std::path::Path;
use std::process::{Output, Stdio};

use common::{dir_with_target, iolab, stderr};

/// The home of the tests' runs: nothing is read from or written to the user's.
fn in_dir(dir: &Path, args: &[&str]) -> Output {
    iolab().args(args).current_dir(dir).env("HOME", dir).output().expect("iolab runs")
}

/// No byte that a terminal obeys: C0 controls (line feeds aside) and DEL.
fn assert_no_raw_controls(text: &[u8], what: &str) {
    let raw: Vec<u8> = text.iter().copied().filter(|&b| (b < 0x20 && b != b'\n') || b == 0x7f).collect();
    assert!(raw.is_empty(), "{what} holds raw control bytes {raw:?}: {}", String::from_utf8_lossy(text));
}

fn assert_one_escaped_error(out: &Output, expect: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("iolab: error: "), "{err}");
    assert_no_raw_controls(&out.stderr, "stderr");
    for part in expect {
        assert!(err.contains(part), "expected {part} in: {err}");
    }
}

#[test]
fn terminal_escape_in_a_job_file_value_is_shown_not_obeyed() {
    let dir = dir_with_target();
    std::fs::write(dir.path().join("j.toml"), "rw = \"\\u001b]0;pwned\\u0007\"\n").expect("job file");
    let out = in_dir(dir.path(), &["run", "j.toml", "--no-store"]);
    assert_one_escaped_error(&out, &["line 1 (rw): '\\u{1b}]0;pwned\\u{7}' is not an access pattern"]);
}

#[test]
fn line_feed_in_a_job_name_keeps_the_error_on_one_line() {
    let dir = dir_with_target();
    let file = "name = \"a\\nb\\u001b[31m\"\ntarget = \"t\"\nqd = 0\n";
    std::fs::write(dir.path().join("j.toml"), file).expect("job file");
    let out = in_dir(dir.path(), &["run", "j.toml", "--no-store"]);
    assert_one_escaped_error(&out, &["job 'a\\nb\\u{1b}[31m'", "--qd must be 1 or more"]);
}

#[test]
fn control_characters_in_a_target_path_are_escaped_in_the_error() {
    let dir = dir_with_target();
    let out = in_dir(
        dir.path(),
        &["run", "--no-store", "--target", "missing/\u{1b}]0;pwned\u{7}\nx", "--bs", "4q"],
    );
    assert_one_escaped_error(&out, &["4q"]);
    let out =
        in_dir(dir.path(), &["run", "--no-store", "--engine", "null", "--target", "no-dir/\u{1b}[2J\r\nx"]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert_no_raw_controls(&out.stderr, "stderr");
    assert!(err.contains("no-dir/\\u{1b}[2J\\r\\nx"), "{err}");
}

#[test]
fn job_name_and_target_path_in_the_text_report_are_escaped() {
    let dir = dir_with_target();
    let target = "t\u{1b}]0;pwned\u{7}";
    std::fs::copy(dir.path().join("t"), dir.path().join(target)).expect("target with a control character");
    let file =
        "name = \"x\\u001b]0;pwned\\u0007\\ny\\u202e\"\nengine = \"null\"\nruntime = \"300ms\"\nramp = 0\n";
    std::fs::write(dir.path().join("j.toml"), file).expect("job file");
    let out = in_dir(dir.path(), &["run", "j.toml", "--no-store", "-q", "--target", target]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_no_raw_controls(&out.stdout, "stdout");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("job 'x\\u{1b}]0;pwned\\u{7}\\ny\\u{202e}': "), "{text}");
    assert!(text.contains("-> t\\u{1b}]0;pwned\\u{7}"), "{text}");
    assert!(!text.contains('\u{202e}'), "{text}");
}

/// Issue 32: `results export --format csv` wrote raw ESC bytes from a job's name and target.
#[test]
fn a_job_name_and_target_in_the_csv_export_are_escaped() {
    let dir = dir_with_target();
    let target = "t\u{1b}[31m";
    std::fs::copy(dir.path().join("t"), dir.path().join(target)).expect("target with a control character");
    let file = "name = \"lab\\u001b[31mel\\ttab\"\nengine = \"null\"\nruntime = \"300ms\"\nramp = 0\n";
    std::fs::write(dir.path().join("j.toml"), file).expect("job file");
    let out = in_dir(dir.path(), &["run", "j.toml", "-q", "--target", target, "--db", "r.db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in
        [&["results", "export", "1", "--format", "csv"][..], &["results", "show", "1"], &["results", "list"]]
    {
        let out = in_dir(dir.path(), &[args, &["--db", "r.db"][..]].concat());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_no_raw_controls(&out.stdout, &format!("{args:?}"));
    }
    let csv = in_dir(dir.path(), &["results", "export", "1", "--format", "csv", "--db", "r.db"]);
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.contains("lab\\u{1b}[31mel\\ttab") && text.contains("t\\u{1b}[31m"), "{text}");
}

#[test]
fn clap_errors_escape_the_value_they_quote() {
    // clap strips escape sequences from its own rendering; a line feed it keeps, and the one
    // line shows it escaped.
    let dir = dir_with_target();
    let out = in_dir(dir.path(), &["run", "--no-store", "--qd", "\u{1b}[31m\u{7}x\n1"]);
    assert_one_escaped_error(&out, &["--qd", "x\\n1"]);
}

/// /dev/full: every write fails with ENOSPC.
fn dev_full() -> Option<std::fs::File> {
    match std::fs::OpenOptions::new().write(true).open("/dev/full") {
        Ok(file) => Some(file),
        Err(e) => {
            common::skip!(common::Missing::Other, "no /dev/full here ({e})");
            None
        }
    }
}

#[test]
fn stderr_on_a_full_disk_is_not_a_panic() {
    let Some(full) = dev_full() else { return };
    let dir = dir_with_target();
    let run = |args: &[&str], full: &std::fs::File| {
        iolab()
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .stdout(Stdio::null())
            .stderr(full.try_clone().expect("dup /dev/full"))
            .status()
            .expect("iolab runs")
    };
    // Notes, the report's problems and the one-line error all go to stderr.
    let ok = run(
        &["run", "--no-store", "--engine", "null", "--target", "t", "--runtime", "300ms", "--ramp", "0"],
        &full,
    );
    assert_eq!(ok.code(), Some(0), "a finished run keeps its exit code");
    let bad = run(&["run", "--no-store", "--target", "t", "--qd", "0"], &full);
    assert_eq!(bad.code(), Some(2), "a refused run keeps its exit code");
    let clap = run(&["run", "--no-such-flag"], &full);
    assert_eq!(clap.code(), Some(2));
}

#[test]
fn stdout_on_a_full_disk_is_exit_1_not_a_panic() {
    let Some(full) = dev_full() else { return };
    let dir = dir_with_target();
    let run = |args: &[&str]| {
        iolab()
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .stdout(full.try_clone().expect("dup /dev/full"))
            .output()
            .expect("iolab runs")
    };
    let out = run(&[
        "run",
        "--no-store",
        "-q",
        "--engine",
        "null",
        "--target",
        "t",
        "--runtime",
        "300ms",
        "--ramp",
        "0",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write the results"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(1), "{}", stderr(&help));
    assert!(!stderr(&help).contains("panicked"));
}

#[test]
fn stdout_closed_early_is_still_quiet() {
    // `iolab run | head -c0`: a broken pipe is not an error (as before this change).
    let dir = dir_with_target();
    let mut child = iolab()
        .args([
            "run",
            "--no-store",
            "-q",
            "--engine",
            "null",
            "--target",
            "t",
            "--runtime",
            "300ms",
            "--ramp",
            "0",
        ])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iolab starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("iolab ends");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}
