use super::*;
use std::ffi::CString;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn dir_fd(path: &Path) -> OwnedFd {
    open_directory(path).expect("open the allowed directory")
}

/// Swaps the names `a` and `b` in one step (`renameat2(RENAME_EXCHANGE)`).
fn exchange(a: &Path, b: &Path) {
    let (a, b) = (
        CString::new(a.as_os_str().as_bytes()).expect("path"),
        CString::new(b.as_os_str().as_bytes()).expect("path"),
    );
    // SAFETY: both paths are NUL-terminated and alive for the call; no other memory is passed.
    unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
}

#[test]
fn open_beneath_refuses_links_and_paths_that_leave_the_directory() {
    let allowed = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"keep").expect("victim");
    std::os::unix::fs::symlink(&victim, allowed.path().join("link")).expect("symlink");
    std::os::unix::fs::symlink(outside.path(), allowed.path().join("dirlink")).expect("symlink");
    std::fs::write(allowed.path().join("plain"), b"data").expect("file");
    let dir = dir_fd(allowed.path());
    let open =
        |rel: &str, access| OpenedTarget::open_beneath(dir.as_fd(), Path::new(rel), Path::new(rel), access);
    for (rel, access) in [
        ("link", Access::Write),
        ("link", Access::Create),
        ("dirlink/victim", Access::Write),
        ("dirlink/new", Access::Create),
        ("../x", Access::Create),
        ("/etc/passwd", Access::Read),
    ] {
        assert!(open(rel, access).is_err(), "{rel} {access:?} must be refused");
    }
    let names = [&[][..], &[OsStr::new("dirlink"), OsStr::new("victim")][..]];
    assert!(
        walk_beneath(dir.as_fd(), names[1], libc::O_RDWR).is_err(),
        "the walk refuses a linked directory"
    );
    assert!(
        walk_beneath(dir.as_fd(), &[OsStr::new("link")], libc::O_RDWR).is_err(),
        "the walk refuses a link"
    );
    let plain = open("plain", Access::Write).expect("a plain file beneath");
    assert!(plain.writable && !plain.created());
    let new = open("new", Access::Create).expect("a new file beneath");
    assert!(new.created());
    assert!(open("new", Access::Create).is_err(), "create refuses what is there");
    new.remove_created();
    assert!(!allowed.path().join("new").exists());
    assert_eq!(std::fs::read(&victim).expect("victim"), b"keep");
}

/// The defect: a target was checked by name, then opened again by name, following links. A
/// thread swapping `race.dat` between a file and a link to an outside file, and exchanging a
/// subdirectory with a link to an outside directory, made writes land outside. Opened once
/// beneath the directory, with either resolver, nothing outside changes.
#[test]
fn allow_write_symlink_race_never_escapes_the_allowed_directory() {
    let allowed = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"outside data").expect("victim");
    let (a, out) = (allowed.path().to_path_buf(), outside.path().to_path_buf());
    std::fs::create_dir(a.join("sub")).expect("sub");
    std::os::unix::fs::symlink(&out, a.join("sublink")).expect("sublink");
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (stop, a, victim) = (Arc::clone(&stop), a.clone(), victim.clone());
        std::thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let tmp = a.join("race.tmp");
                let _ = std::fs::remove_file(&tmp);
                if round % 2 == 0 {
                    let _ = std::fs::write(&tmp, b"inside");
                } else {
                    let _ = std::os::unix::fs::symlink(&victim, &tmp);
                }
                let _ = std::fs::rename(&tmp, a.join("race.dat"));
                exchange(&a.join("sub"), &a.join("sublink"));
                round += 1;
            }
        })
    };
    let dir = dir_fd(&a);
    let cancel = AtomicBool::new(false);
    for i in 0..2_000 {
        let display = a.join("race.dat");
        if let Ok(target) =
            OpenedTarget::open_beneath(dir.as_fd(), Path::new("race.dat"), &display, Access::Write)
        {
            let size = target.file.metadata().expect("stat").len() + 16;
            let _ = crate::target::lay_out(&target, size, &cancel);
        }
        let name = format!("new-{i}");
        let rel = Path::new("sub").join(&name);
        if let Ok(mut target) = OpenedTarget::open_beneath(dir.as_fd(), &rel, &a.join(&rel), Access::Create) {
            let _ = target.file.write_all(b"x");
        }
        // The fallback resolver, on kernels without openat2.
        let names = [OsStr::new("race.dat")];
        if let Ok(fd) = walk_beneath(dir.as_fd(), &names, libc::O_RDWR | libc::O_APPEND) {
            let _ = File::from(fd).write_all(b"w");
        }
        let names = [OsStr::new("sub"), OsStr::new(name.as_str())];
        let _ = walk_beneath(dir.as_fd(), &names, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL);
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().expect("racer");
    assert_eq!(std::fs::read(&victim).expect("victim"), b"outside data", "a byte outside changed");
    let listed: Vec<_> =
        std::fs::read_dir(&out).expect("list").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(listed, [OsString::from("victim")], "a file was created outside");
}

#[test]
fn run_flags_set_direct_where_the_filesystem_can() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("f");
    std::fs::write(&path, [1u8; 4096]).expect("file");
    let target = OpenedTarget::open_path(&path, Access::Read).expect("open");
    set_run_flags(&target.file, false).expect("buffered always works");
    match set_run_flags(&target.file, true) {
        Ok(()) => {
            // SAFETY: F_GETFL reads the flags of an open descriptor.
            let flags = unsafe { libc::fcntl(target.file.as_raw_fd(), libc::F_GETFL) };
            assert_ne!(flags & libc::O_DIRECT, 0);
        }
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}"),
    }
}
