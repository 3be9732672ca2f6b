use super::*;
use iolab_test_support::Missing;

fn job(text: &str) -> JobSpec {
    let options = iolab_spec::jobfile::parse(text).expect("parses");
    iolab_spec::resolve(Some(&options), &iolab_spec::Options::default()).expect("resolves").jobs.remove(0)
}

#[test]
fn relative_and_traversing_paths_are_refused() {
    let allow = AllowList::default();
    for target in ["data.bin", "/tmp/../etc/passwd"] {
        let mut j = job(&format!("engine = \"null\"\ntarget = \"{target}\""));
        let failure = check(&mut j, &allow).expect_err(target);
        assert_eq!(failure.status, StatusCode::BAD_REQUEST, "{target}");
    }
}

#[test]
fn writes_land_only_under_allow_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inside = dir.path().join("a.bin");
    let text = |p: &Path| {
        format!("engine = \"null\"\nrw = \"randwrite\"\nallow_destroy = true\ntarget = \"{}\"", p.display())
    };
    let none = AllowList::default();
    let failure = check(&mut job(&text(&inside)), &none).expect_err("outside");
    assert_eq!(failure.status, StatusCode::FORBIDDEN);
    assert!(failure.message.contains("--allow-write"), "{}", failure.message);
    let allow = AllowList::new(&[dir.path().to_path_buf()], 1 << 30).expect("exists");
    std::fs::write(&inside, [0u8; 4096]).expect("file");
    let mut j = job(&text(&inside));
    check(&mut j, &allow).expect("inside");
    assert!(j.groups[0].target.allow_destroy);
    let mut read =
        job(&format!("engine = \"null\"\nallow_destroy = true\ntarget = \"{}\"", inside.display()));
    check(&mut read, &none).expect("reads go anywhere");
    assert!(!read.groups[0].target.allow_destroy);
}

/// A read of a missing or short file would lay it out: a write, refused outside the list.
#[test]
fn reads_that_would_create_or_extend_a_file_count_as_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = AllowList::default();
    let missing = dir.path().join("new.bin");
    let mut j = job(&format!("engine = \"null\"\nsize = \"8m\"\ntarget = \"{}\"", missing.display()));
    let failure = check(&mut j, &none).expect_err("creates");
    assert_eq!(failure.status, StatusCode::FORBIDDEN);
    assert!(failure.message.contains("create or extend"), "{}", failure.message);
    let short = dir.path().join("short.bin");
    std::fs::write(&short, [0u8; 4096]).expect("file");
    let mut j = job(&format!("engine = \"null\"\nsize = \"8m\"\ntarget = \"{}\"", short.display()));
    assert_eq!(check(&mut j, &none).expect_err("extends").status, StatusCode::FORBIDDEN);
    let mut j = job(&format!("engine = \"null\"\nsize = \"4k\"\ntarget = \"{}\"", short.display()));
    check(&mut j, &none).expect("a read within the file");
    assert!(!missing.exists() && std::fs::metadata(&short).expect("file").len() == 4096);
}

/// A scratch file beyond --max-scratch is refused; one within it is allowed.
#[test]
fn scratch_files_stay_within_max_scratch() {
    let allow = AllowList::new(&[], 1 << 30).expect("no paths");
    let mut big = job("engine = \"null\"\nsize = \"2g\"");
    let failure = check(&mut big, &allow).expect_err("too big");
    assert_eq!(failure.status, StatusCode::FORBIDDEN);
    assert!(failure.message.contains("--max-scratch"), "{}", failure.message);
    check(&mut job("engine = \"null\"\nsize = \"512m\""), &allow).expect("within");
    check(&mut job("engine = \"null\""), &allow).expect("the default 1 GiB");
}

/// A dangling link is refused; a link to a file is replaced by the file it names.
#[test]
fn links_are_resolved_before_anything_is_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let allow = AllowList::new(&[dir.path().to_path_buf()], 1 << 30).expect("exists");
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink("/nonexistent-iolab-test/x", &dangling).expect("symlink");
    let mut j = job(&format!("engine = \"null\"\nrw = \"write\"\ntarget = \"{}\"", dangling.display()));
    assert_eq!(check(&mut j, &allow).expect_err("dangling").status, StatusCode::BAD_REQUEST);
    let real = dir.path().join("real.bin");
    std::fs::write(&real, [0u8; 4096]).expect("file");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let mut j = job(&format!("engine = \"null\"\nsize = \"4k\"\ntarget = \"{}\"", link.display()));
    check(&mut j, &allow).expect("a link to a file");
    assert_eq!(j.groups[0].target.paths, [real.canonicalize().expect("exists")]);
}

/// The defect: the agent checked a path, then the runner opened it again by name, following
/// links. A thread swapping `race.dat` between a file and a link to an outside file, and a
/// subdirectory with a link to an outside directory, got writes (and a new file) outside
/// within a few prepares. Each check opens its targets once, beneath the allowed directory,
/// and the layout writes through those descriptors: 2,000 prepares change nothing outside.
#[test]
fn allow_write_symlink_race_never_writes_outside() {
    use std::os::unix::fs::symlink;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let allowed = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"outside data").expect("victim");
    let a = allowed.path().canonicalize().expect("canonical");
    std::fs::create_dir(a.join("sub")).expect("sub");
    std::fs::write(a.join("race.dat"), [7u8; 4096]).expect("race.dat");
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (stop, a, victim, out) =
            (Arc::clone(&stop), a.clone(), victim.clone(), outside.path().to_path_buf());
        std::thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let tmp = a.join("race.tmp");
                let _ = std::fs::remove_file(&tmp);
                let _ =
                    if round % 2 == 0 { std::fs::write(&tmp, [7u8; 4096]) } else { symlink(&victim, &tmp) };
                let _ = std::fs::rename(&tmp, a.join("race.dat"));
                // The subdirectory steps aside for a link to the outside directory, and back.
                if std::fs::rename(a.join("sub"), a.join("sub.real")).is_ok() {
                    let _ = symlink(&out, a.join("sub"));
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(a.join("sub"));
                    let _ = std::fs::rename(a.join("sub.real"), a.join("sub"));
                }
                round += 1;
            }
        })
    };
    let allow = AllowList::new(std::slice::from_ref(&a), 1 << 30).expect("exists");
    let cancel = AtomicBool::new(false);
    for i in 0..2_000 {
        let text = format!(
            "engine = \"null\"\nrw = \"randwrite\"\nsize = \"8k\"\ntarget = \"{}\"\n[[group]]\nname = \"new\"\nsize = \"4k\"\ntarget = \"{}\"",
            a.join("race.dat").display(),
            a.join("sub").join(format!("new-{i}")).display()
        );
        let Ok(mut j) = iolab_spec::jobfile::parse(&text)
            .map_err(|e| e.to_string())
            .and_then(|o| {
                iolab_spec::resolve(Some(&o), &iolab_spec::Options::default()).map_err(|e| e.to_string())
            })
            .map(|mut plan| plan.jobs.remove(0))
        else {
            continue;
        };
        if let Ok(opened) = check(&mut j, &allow) {
            for (group, targets) in j.groups.iter().zip(&opened) {
                let size = group.target.size.map_or(0, |s| s.0);
                for target in targets {
                    let _ = iolab_engine::target::lay_out(target, size, &cancel);
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().expect("racer");
    assert_eq!(std::fs::read(&victim).expect("victim"), b"outside data", "a byte outside changed");
    let listed: Vec<_> =
        std::fs::read_dir(outside.path()).expect("list").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(listed, ["victim"], "a file was created outside");
}

/// A hard link inside the allowed directory to an outside file was written through. Files
/// with more than one link are refused for writing unless the operator allows them.
#[test]
fn allow_write_refuses_hard_links_to_outside_files() {
    let allowed = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, [1u8; 4096]).expect("victim");
    let link = allowed.path().join("hard");
    if std::fs::hard_link(&victim, &link).is_err() {
        iolab_test_support::skip!(
            Missing::Other,
            "the two temporary directories are on different filesystems"
        );
        return;
    }
    let text = |rw: &str| {
        format!("engine = \"null\"\nrw = \"{rw}\"\nsize = \"4k\"\ntarget = \"{}\"", link.display())
    };
    let allow = AllowList::new(&[allowed.path().to_path_buf()], 1 << 30).expect("exists");
    let failure = check(&mut job(&text("randwrite")), &allow).expect_err("a hard link");
    assert_eq!(failure.status, StatusCode::FORBIDDEN);
    assert!(failure.message.contains("--allow-hardlinks"), "{}", failure.message);
    check(&mut job(&text("randread")), &allow).expect("reading it writes nothing");
    let lenient =
        AllowList::new(&[allowed.path().to_path_buf()], 1 << 30).expect("exists").allowing_hardlinks(true);
    check(&mut job(&text("randwrite")), &lenient).expect("the operator allows it");
}

/// A block device named by --allow-write, or a device node in an allowed directory, still
/// opens for writing (as the device it was at startup).
#[test]
fn allow_write_still_takes_block_devices() {
    let Some(loop_dev) = LoopDevice::new() else { return };
    let dev = loop_dev.path.clone();
    let text = |p: &Path| format!("engine = \"null\"\nrw = \"randwrite\"\ntarget = \"{}\"", p.display());
    let allow = AllowList::new(std::slice::from_ref(&dev), 1 << 30).expect("the device exists");
    let opened = check(&mut job(&text(&dev)), &allow).expect("the allowed device");
    use std::os::unix::fs::FileTypeExt;
    assert!(opened[0][0].file.metadata().expect("stat").file_type().is_block_device());
    assert!(opened[0][0].writable);
    let dir = tempfile::tempdir().expect("tempdir");
    let node = dir.path().join("disk");
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(&dev).expect("stat").rdev();
    let (major, minor) = ((rdev >> 8) & 0xfff, (rdev & 0xff) | ((rdev >> 12) & 0xfff00));
    let made = std::process::Command::new("mknod")
        .arg(&node)
        .args(["b", &major.to_string(), &minor.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        iolab_test_support::skip!(
            Missing::Other,
            "(the node part) mknod cannot make a block device node here"
        );
        return;
    }
    let allow = AllowList::new(&[dir.path().to_path_buf()], 1 << 30).expect("exists");
    let opened = check(&mut job(&text(&node)), &allow).expect("a device node in an allowed directory");
    assert!(opened[0][0].file.metadata().expect("stat").file_type().is_block_device());
}

/// A loop device over a small temporary file, detached when dropped; `None` (with the reason
/// printed) where the test cannot make one.
struct LoopDevice {
    path: PathBuf,
    _backing: tempfile::NamedTempFile,
}

impl LoopDevice {
    fn new() -> Option<LoopDevice> {
        let backing = tempfile::NamedTempFile::new().ok()?;
        backing.as_file().set_len(8 << 20).ok()?;
        let out = std::process::Command::new("losetup").args(["-f", "--show"]).arg(backing.path()).output();
        match out {
            Ok(out) if out.status.success() => {
                let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
                Some(LoopDevice { path, _backing: backing })
            }
            _ => {
                iolab_test_support::skip!(Missing::Loop, "needs root and losetup to make a loop device");
                None
            }
        }
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// A FIFO swapped in for a target made the open wait for a writer, forever; a character
/// device is refused without being opened at all.
#[test]
fn fifos_and_character_devices_are_refused_without_waiting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    let allow = AllowList::new(&[dir.path().to_path_buf()], 1 << 30).expect("exists");
    if made {
        for rw in ["randread", "randwrite"] {
            let text = format!("engine = \"null\"\nrw = \"{rw}\"\ntarget = \"{}\"", fifo.display());
            let failure = check(&mut job(&text), &allow).expect_err("a FIFO");
            assert_eq!(failure.status, StatusCode::BAD_REQUEST, "{}", failure.message);
        }
    } else {
        iolab_test_support::skip!(Missing::Other, "(the FIFO part) mkfifo is not available");
    }
    let text = "engine = \"null\"\ntarget = \"/dev/null\"";
    let failure = check(&mut job(text), &allow).expect_err("a character device");
    assert_eq!(failure.status, StatusCode::BAD_REQUEST, "{}", failure.message);
}
