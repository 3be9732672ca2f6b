//! The tests never touch the user's home or default results database: every run of the binary
//! goes through `common::iolab` (or `iolab_via`), which gives it a home and a database in the
//! target directory. Pinned after `cargo test` as root, run after `cargo run -- run` had made
//! root's default database, ran iolab as nobody with root's HOME and failed on that database.

mod common;

use std::path::{Path, PathBuf};

use common::{iolab, stderr, test_db, test_home};

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_test_runs_iolab_but_through_the_helper_that_isolates_it() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/mod.rs");
    // Split so that this file does not name it.
    let needle = concat!("CARGO_BIN_", "EXE_");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("the crates").flatten() {
        sources(&krate.path().join("tests"), &mut files);
        sources(&krate.path().join("src"), &mut files);
    }
    assert!(files.len() > 20, "the sources were found under {}", crates.display());
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| {
            !f.ends_with("tests/common/mod.rs") || f.canonicalize().ok() != helper.canonicalize().ok()
        })
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|text| text.contains(needle)))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "these run the binary themselves, with the caller's HOME and database: use common::iolab() or \
         common::iolab_via() (and common::IOLAB for its path): {offenders:?}"
    );
}

#[test]
fn the_helper_gives_iolab_a_home_and_a_database_of_the_tests_own() {
    let command = iolab();
    let envs: Vec<(String, Option<String>)> = command
        .get_envs()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned())))
        .collect();
    let value = |name: &str| envs.iter().find(|(k, _)| k == name).and_then(|(_, v)| v.clone());
    let home = test_home().display().to_string();
    assert_eq!(value("HOME"), Some(home.clone()));
    assert!(value("XDG_DATA_HOME").is_some_and(|d| d.starts_with(&home)), "{envs:?}");
    assert_eq!(value("IOLAB_DB"), Some(test_db().display().to_string()));
    assert!(home.starts_with(env!("CARGO_TARGET_TMPDIR")), "{home}");
    // The caller's own settings (IOLAB_SSH, ...) are not passed on.
    for (name, _) in std::env::vars() {
        if name.starts_with("IOLAB_") && name != "IOLAB_DB" {
            assert!(envs.contains(&(name.clone(), None)), "{name} is passed on");
        }
    }

    // Without IOLAB_DB, the default database is the tests' home's, not the user's.
    let dir = tempfile::tempdir().expect("dir");
    let out = iolab().env_remove("IOLAB_DB").args(["results", "list"]).current_dir(dir.path()).output();
    let out = out.expect("iolab runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    if let Some(real) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| !h.starts_with(&home)) {
        assert!(!said.contains(&real.join(".local").display().to_string()), "{said}");
    }
    if !out.status.success() {
        assert!(said.contains(&format!("{home}/.local/share/iolab/results.db")), "{said}");
    }
}
