//! Helpers shared by the integration tests: running the real binary, skipping what this
//! machine cannot do, and cleaning up devices the tests create.
#![allow(dead_code)]

pub mod ext4;
pub mod faulty_fs;
pub mod fleet;
pub mod memory_cgroup;
pub mod tmpfs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use iolab_test_support::{skip, Missing};

use std::time::{Duration, Instant};

/// The binary under test. Run it through [`iolab`] or [`iolab_via`], never directly: they give
/// it a home and a database of the tests' own (isolation.rs checks that no test does otherwise).
pub const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// The binary, with an environment of the tests' own: HOME and XDG_DATA_HOME in the target
/// directory and its runs kept in a database there (`IOLAB_DB`), never the user's home or
/// default database; the caller's own `IOLAB_*` settings are not passed on.
pub fn iolab() -> Command {
    let mut command = Command::new(IOLAB);
    isolate(&mut command);
    command
}

/// iolab run through `program` and its `args` (`setpriv --reuid=65534 ...`, `ip netns exec ns`),
/// with the same environment as [`iolab`].
pub fn iolab_via(program: &str, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args).arg(IOLAB);
    isolate(&mut command);
    command
}

/// The tests' HOME: a directory of the target dir, shared by the tests and never the user's.
/// One per user, as the database: a suite once run with sudo leaves root's behind.
pub fn test_home() -> PathBuf {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("test-home-{}", euid()));
    std::fs::create_dir_all(&home).expect("the tests' home");
    home
}

/// The database the tests' runs are kept in, unless a test names its own with --db.
pub fn test_db() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tests-results-{}.db", euid()))
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn isolate(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("IOLAB_")) {
            command.env_remove(name);
        }
    }
    let home = test_home();
    command.env("HOME", &home).env("XDG_DATA_HOME", home.join(".local/share")).env("IOLAB_DB", test_db());
}

/// Runs iolab with `args` in `dir` and returns its output.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    iolab().args(args).current_dir(dir).output().expect("iolab runs")
}

/// Starts iolab with `args` in `dir`, its output captured, for a test that signals it or runs
/// several at once.
pub fn spawn_in(dir: &Path, args: &[&str]) -> std::process::Child {
    use std::process::Stdio;
    iolab()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iolab starts")
}

/// The output of `child`, which the defect a test pins made hang: one still running after a
/// minute (far beyond what it needs on busy cores) is killed and fails the test.
pub fn output_unless_hung(mut child: std::process::Child, what: &str) -> Output {
    use std::io::Read;
    // Its output is read while it runs: a report larger than a pipe holds (64 KiB) would block
    // the child in its write, and read as a hang.
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            // Where each of its threads waits, and what it said: a hang beside a busy machine
            // is otherwise a bare name.
            let threads = thread_states(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let said = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).to_string();
            panic!("{what} hung; its threads: {threads}; its stderr: {said}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() }
}

/// "iolab R do_sys_openat2; iolab-files-0 S futex_wait_queue": each thread of `pid`, its state
/// and the kernel function it waits in.
fn thread_states(pid: u32) -> String {
    let read = |path: String| std::fs::read_to_string(path).unwrap_or_default().trim().to_string();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return "gone".into() };
    let mut states = Vec::new();
    for task in tasks.flatten() {
        let dir = task.path().display().to_string();
        let stat = read(format!("{dir}/stat"));
        let state =
            stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').next()).unwrap_or("?").to_string();
        states.push(format!("{} {state} {}", read(format!("{dir}/comm")), read(format!("{dir}/wchan"))));
    }
    states.join("; ")
}

/// How many points (jobs, sweep points, rounds) the database `db` holds; 0 before it exists.
pub fn points_kept(db: &Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row("SELECT count(*) FROM points", [], |row| row.get(0)).unwrap_or(0)
}

/// Waits until `db` holds `points` points: a point is committed the moment it ends, so this is
/// how a test knows a job finished, however slowly a busy machine ran it.
pub fn wait_until_kept(db: &Path, points: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while points_kept(db) < points {
        assert!(
            std::time::Instant::now() < deadline,
            "{points} points not kept in {} after 120 s",
            db.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits until process `pid` holds `path` open.
pub fn wait_until_open(pid: u32, path: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let fds = format!("/proc/{pid}/fd");
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let holds = || {
        std::fs::read_dir(&fds)
            .map(|entries| entries.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == path)))
            .unwrap_or(false)
    };
    while !holds() {
        assert!(Instant::now() < deadline, "{} not opened after 60 s", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (up to 60 s) until process `pid` runs a job: one of its threads is a lane
/// ("iolab-lane0"), which exists only while I/O is issued.
pub fn wait_until_running(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let lane = || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks.flatten().any(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("iolab-lane"))
                })
            })
            .unwrap_or(false)
    };
    while !lane() {
        assert!(Instant::now() < deadline, "process {pid} ran no job after 60 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A temporary directory holding `t`, a 1 MiB file of data to use as a target.
pub fn dir_with_target() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("t"), vec![1u8; 1 << 20]).expect("target");
    dir
}

/// `value[key]` as a whole number; the test fails naming the key and the value without one.
pub fn u64_at(value: &serde_json::Value, key: &str) -> u64 {
    value[key].as_u64().unwrap_or_else(|| panic!("{key} in {value}"))
}

pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stdout: {}; stderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Returns what is missing for the test and why, if it must be skipped.
pub fn needs_root_and(tools: &[&str]) -> Option<(Missing, String)> {
    if !is_root() {
        return Some((Missing::Root, "needs root".into()));
    }
    let tool = tools.iter().find(|t| !have(t))?;
    let missing = if *tool == "losetup" { Missing::Loop } else { Missing::Other };
    Some((missing, format!("needs {tool}")))
}

pub fn sh(command: &str) -> String {
    let out = Command::new("sh").args(["-c", command]).output().expect("sh runs");
    assert!(out.status.success(), "`{command}` failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loop device over a file in /dev/shm, detached and removed on drop.
pub struct LoopDevice {
    pub device: PathBuf,
    backing: PathBuf,
}

impl LoopDevice {
    pub fn new(name: &str, size_mib: u64) -> Self {
        Self::attach(name, size_mib, "")
    }

    /// With direct I/O on its backing file: requests go to tmpfs without a second page cache,
    /// submitted inline and completed by the loop driver's workers, as a fast device's would.
    pub fn direct(name: &str, size_mib: u64) -> Self {
        Self::attach(name, size_mib, "--direct-io=on")
    }

    /// As `direct`, with one partition (MBR, type 83) of `part_sectors` from sector 2048,
    /// `<device>p1`, which the kernel has read.
    pub fn direct_partitioned(name: &str, size_mib: u64, part_sectors: u32) -> Self {
        let device = Self::attach(name, size_mib, "--direct-io=on --partscan");
        let mut mbr = vec![0u8; 512];
        mbr[446 + 4] = 0x83;
        mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
        mbr[446 + 12..446 + 16].copy_from_slice(&part_sectors.to_le_bytes());
        mbr[510..512].copy_from_slice(&[0x55, 0xaa]);
        std::fs::write(&device.device, &mbr).expect("the partition table");
        sh(&format!("partx -a {}", device.path()));
        device
    }

    /// As `direct`, written full of random data first (never-written blocks read faster and
    /// mean nothing).
    pub fn direct_random(name: &str, size_mib: u64) -> Self {
        let device = Self::direct(name, size_mib);
        sh(&format!(
            "dd if=/dev/urandom of={} bs=1M count={size_mib} oflag=direct status=none",
            device.path()
        ));
        device
    }

    fn attach(name: &str, size_mib: u64, flags: &str) -> Self {
        let backing = PathBuf::from(format!("/dev/shm/iolab-test-{name}-{}.img", std::process::id()));
        sh(&format!("truncate -s {size_mib}M {}", backing.display()));
        let device = PathBuf::from(sh(&format!("losetup {flags} -f --show {}", backing.display())));
        LoopDevice { device, backing }
    }

    /// The kernel's name of the device: "loop3".
    pub fn name(&self) -> &str {
        self.device.file_name().and_then(|n| n.to_str()).expect("loop device names are UTF-8")
    }

    pub fn path(&self) -> &str {
        self.device.to_str().expect("loop device paths are UTF-8")
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
        let _ = std::fs::remove_file(&self.backing);
    }
}

/// A device-mapper device, removed on drop.
pub struct DmDevice {
    pub name: String,
}

impl DmDevice {
    pub fn create(name: &str, table: &str) -> Self {
        let name = format!("iolab-test-{name}-{}", std::process::id());
        sh(&format!("dmsetup create {name} --table '{table}'"));
        DmDevice { name }
    }

    pub fn path(&self) -> String {
        format!("/dev/mapper/{}", self.name)
    }
}

impl Drop for DmDevice {
    fn drop(&mut self) {
        let _ = Command::new("dmsetup").args(["resume", &self.name]).status();
        let _ = Command::new("dmsetup").args(["remove", "--retry", &self.name]).status();
    }
}

/// A zram device filled with random data (never-written zram pages read ~3x faster and mean
/// nothing), removed on drop. `None` when this kernel has no zram control.
pub struct ZramDevice {
    pub index: String,
    pub device: PathBuf,
}

impl ZramDevice {
    /// A zram device of `size_mib` filled with random data, for a test that needs root; `None`
    /// (with the reason on stderr, so the test skips) where it cannot be made.
    pub fn for_test(size_mib: u64) -> Option<Self> {
        if let Some((missing, why)) = needs_root_and(&["dd"]) {
            skip!(missing, "{why}");
            return None;
        }
        let zram = ZramDevice::new(size_mib);
        if zram.is_none() {
            skip!(Missing::Other, "no zram on this kernel");
        }
        zram
    }

    pub fn new(size_mib: u64) -> Option<Self> {
        let index = std::fs::read_to_string("/sys/class/zram-control/hot_add").ok()?.trim().to_string();
        let zram = ZramDevice { device: PathBuf::from(format!("/dev/zram{index}")), index };
        std::fs::write(format!("/sys/block/zram{}/disksize", zram.index), format!("{size_mib}M")).ok()?;
        sh(&format!(
            "dd if=/dev/urandom of={} bs=1M count={size_mib} oflag=direct status=none",
            zram.device.display()
        ));
        Some(zram)
    }

    pub fn path(&self) -> &str {
        self.device.to_str().expect("zram device paths are UTF-8")
    }
}

impl Drop for ZramDevice {
    /// Right after an io_uring run the kernel may still hold the device (the ring is torn down
    /// after the process exits) and hot_remove says EBUSY: retry for a while rather than leak it.
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::write("/sys/class/zram-control/hot_remove", &self.index).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!(
            "warning: could not remove {}; remove it with: echo {} > /sys/class/zram-control/hot_remove",
            self.device.display(),
            self.index
        );
    }
}

/// Reads `child`'s stderr until a line gives what `find` looks for (an address it printed),
/// then keeps gathering the rest on a thread; returns what was found and the whole log so far
/// and to come. Panics, with the log, if stderr ends first (`waiting_for` says for what).
pub fn follow_stderr(
    child: &mut std::process::Child,
    waiting_for: &str,
    find: impl Fn(&str) -> Option<String>,
) -> (String, std::sync::Arc<std::sync::Mutex<String>>) {
    use std::io::{BufRead, BufReader};
    let mut lines = BufReader::new(child.stderr.take().expect("stderr"));
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut line = String::new();
    let found = loop {
        line.clear();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("iolab ended before {waiting_for}: {}", log.lock().expect("log"));
        }
        log.lock().expect("log").push_str(&line);
        if let Some(found) = find(&line) {
            break found;
        }
    };
    let gathered = log.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap_or(0) > 0 {
            gathered.lock().expect("log").push_str(&line);
            line.clear();
        }
    });
    (found, log)
}
