//! A results database this user cannot write. The default one (nobody named it) only costs the
//! keeping: one warning that says how to keep runs, the run, its usual exit code. One named with
//! --db or $IOLAB_DB is the user's to fix: exit 2 before anything runs. Pinned after the default
//! database made by root's first `cargo run -- run` failed a later run as another user with
//! "attempt to write a readonly database", exit 1.
//!
//! As root the runs are made as user nobody (setpriv), since root may write anything; as another
//! user, the files are made read-only for their owner.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{is_root, skip, stderr, Missing};

const RUN: [&str; 10] =
    ["run", "--engine", "null", "--size", "1m", "--runtime", "100ms", "--ramp", "0", "-q"];

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A home whose default database holds one run, made by this user.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn with_a_run() -> Home {
        let dir = tempfile::tempdir().expect("home");
        chmod(dir.path(), 0o755);
        let home = Home { dir };
        let work = tempfile::tempdir().expect("work dir");
        let out = home
            .isolated(&mut common::iolab())
            .args(RUN)
            .args(["--target", "t"])
            .current_dir(work.path())
            .output();
        let out = out.expect("iolab runs");
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(home.runs(), 1, "{}", stderr(&out));
        home
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join(".local/share/iolab")
    }

    fn db(&self) -> PathBuf {
        self.data_dir().join("results.db")
    }

    /// `command` with this home and no database named: the default one is used.
    fn isolated<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command
            .env_remove("IOLAB_DB")
            .env("HOME", self.dir.path())
            .env("XDG_DATA_HOME", self.dir.path().join(".local/share"))
    }

    /// The runs the database holds, read from the file alone (`immutable`): a reader would
    /// leave SQLite's -wal and -shm files behind, through which this user could then write
    /// even in a directory it may not. Every iolab that wrote it has ended and checkpointed.
    fn runs(&self) -> i64 {
        use rusqlite::{Connection, OpenFlags};
        let uri = format!("file:{}?immutable=1", self.db().display());
        let conn =
            Connection::open_with_flags(uri, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI)
                .expect("the database opens");
        conn.query_row("SELECT count(*) FROM runs", [], |row| row.get(0)).expect("runs counted")
    }
}

impl Drop for Home {
    /// Writable again, so that the temporary directory can be removed.
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(self.data_dir(), std::fs::Permissions::from_mode(0o755));
    }
}

/// iolab as a user who cannot write what this user made: nobody when this is root, else this
/// user (the files are then made read-only for their owner too).
fn other_user() -> Command {
    if is_root() {
        common::iolab_via("setpriv", &["--reuid=65534", "--regid=65534", "--clear-groups"])
    } else {
        common::iolab()
    }
}

/// A directory the other user may write, for the target.
fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("work dir");
    chmod(dir.path(), 0o777);
    dir
}

fn means() -> Option<()> {
    if is_root() && !common::have("setpriv") {
        skip!(Missing::Other, "needs setpriv to run iolab as another user than root");
        return None;
    }
    Some(())
}

/// The run went ahead, kept nothing, and said so once with the ways to keep it.
fn ran_without_keeping(out: &Output, home: &Home) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!out.stdout.is_empty(), "the results were printed: {err}");
    assert_eq!(err.matches("this run is not kept").count(), 1, "warned once: {err}");
    assert!(
        err.contains("cannot write the results database") && err.contains(&home.db().display().to_string()),
        "{err}"
    );
    assert!(err.contains("give --db PATH") && err.contains("writable"), "says how to keep it: {err}");
    assert!(!err.contains("error"), "{err}");
    assert_eq!(home.runs(), 1, "nothing was kept");
}

#[test]
fn a_default_database_another_user_cannot_write_is_warned_about_not_an_internal_error() {
    if means().is_none() {
        return;
    }
    let home = Home::with_a_run();
    chmod(&home.db(), 0o444);
    chmod(&home.data_dir(), 0o555);
    let work = work_dir();
    let out =
        home.isolated(&mut other_user()).args(RUN).args(["--target", "t"]).current_dir(work.path()).output();
    ran_without_keeping(&out.expect("iolab runs"), &home);
}

#[test]
fn a_default_database_in_a_directory_another_user_cannot_write_is_warned_about() {
    if means().is_none() {
        return;
    }
    // The file itself is writable, but SQLite keeps its write-ahead log beside it.
    let home = Home::with_a_run();
    chmod(&home.db(), 0o666);
    chmod(&home.data_dir(), 0o555);
    let work = work_dir();
    let out =
        home.isolated(&mut other_user()).args(RUN).args(["--target", "t"]).current_dir(work.path()).output();
    ran_without_keeping(&out.expect("iolab runs"), &home);
}

#[test]
fn a_default_database_on_a_read_only_filesystem_is_warned_about() {
    if let Some((missing, why)) = common::needs_root_and(&["mount", "umount"]) {
        return skip!(missing, "{why} to mount a read-only filesystem");
    }
    let home = Home::with_a_run();
    let data = home.data_dir();
    common::sh(&format!("mount -t tmpfs -o size=8m iolab-test-ro {}", data.display()));
    let unmount = Unmount(data.clone());
    // The tmpfs hides the home's database: a run is kept on it, then it is made read-only.
    let made = home
        .isolated(&mut common::iolab())
        .args(RUN)
        .args(["--target", "t"])
        .current_dir(work_dir().path())
        .output();
    assert!(made.expect("iolab runs").status.success());
    common::sh(&format!("mount -o remount,ro {}", data.display()));
    let work = work_dir();
    let out = home
        .isolated(&mut common::iolab())
        .args(RUN)
        .args(["--target", "t"])
        .current_dir(work.path())
        .output();
    ran_without_keeping(&out.expect("iolab runs"), &home);

    // Named, it is refused before anything runs: the target is never laid out.
    let out = common::iolab()
        .args(RUN)
        .args(["--target", "new"])
        .arg("--db")
        .arg(home.db())
        .current_dir(work.path())
        .output();
    let out = out.expect("iolab runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot write the results database"), "{}", stderr(&out));
    assert!(!work.path().join("new").exists(), "nothing ran");
    drop(unmount);
}

struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_named_database_another_user_cannot_write_is_refused_before_anything_runs() {
    if means().is_none() {
        return;
    }
    let home = Home::with_a_run();
    chmod(&home.db(), 0o444);
    chmod(&home.data_dir(), 0o555);
    let work = work_dir();
    let by_flag = other_user()
        .args(RUN)
        .args(["--target", "new"])
        .arg("--db")
        .arg(home.db())
        .current_dir(work.path())
        .output();
    let by_env = other_user()
        .args(RUN)
        .args(["--target", "new"])
        .env("IOLAB_DB", home.db())
        .current_dir(work.path())
        .output();
    for out in [by_flag, by_env] {
        let out = out.expect("iolab runs");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("cannot write the results database") && err.contains("give --db PATH"), "{err}");
        assert!(!work.path().join("new").exists(), "refused before the target was laid out: {err}");
    }
    assert_eq!(home.runs(), 1);
}
