//! `iolab cache` end to end: on the null engine every working set runs and the report, store and
//! HTML carry it; through the page cache of a memory cgroup whose limit the test sets, the
//! study finds that limit and hit and miss latencies that separate `iolab run`s confirm.
mod common;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use common::memory_cgroup::{cold_file, MemoryCgroup};
use common::{iolab_via, is_root, json, run_in, skip, stderr, Missing};
use serde_json::Value;

const MIB: u64 = 1 << 20;

fn tiers(report: &Value) -> &Vec<Value> {
    report["summary"]["tiers"].as_array().expect("tiers")
}

/// `value` without the points' latency distributions (`below`), to read in a failure.
fn brief(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, _)| *k != "below").map(|(k, v)| (k.clone(), brief(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(brief).collect()),
        other => other.clone(),
    }
}

#[test]
fn cache_on_the_null_engine_measures_every_working_set_and_is_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("results.db");
    let db = db.to_str().expect("path");
    let args = ["--db", db, "cache", "t", "--size", "64m", "--engine", "null", "--runtime", "100ms"];
    // A rise no curve reaches: a busy machine's stall cannot read as a tier and add a refined
    // working set beside the ones asked for (busy run 30: 4.4 MiB between 3.1 and 6.4).
    let args = [&args[..], &["--rise-pct", "1000000"]].concat();
    let out = run_in(dir.path(), &[&args[..], &["--json", "-q"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.cache/1");
    let summary = &report["summary"];
    assert_eq!(summary["region_bytes"], 64 * MIB);
    let sizes: Vec<u64> = summary["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["working_set_bytes"].as_u64().expect("size"))
        .collect();
    // 1% of 64 MiB is 655 KiB: rounded down to the 128 KiB grain.
    assert_eq!(sizes, [640 << 10, 1280 << 10, 3200 << 10, 6528 << 10, 13056 << 10, 32 * MIB, 64 * MIB]);
    assert_eq!(summary["judged"], true);
    assert!(tiers(&report).is_empty(), "no I/O, no tier: {summary}");
    assert!(summary["promotion"].is_null() && summary["pollution"].is_null());
    assert!(summary["notes"][0].as_str().expect("note").contains("no tier found"), "{summary}");
    // A warm pass and a measurement per working set, each a job of the run.
    let jobs: Vec<&str> = report["run"]["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["name"].as_str().expect("name"))
        .collect();
    assert_eq!(jobs.len(), 14);
    assert_eq!(jobs[..2], ["warm 640KiB", "working set 640KiB"]);

    let text = run_in(dir.path(), &[&args[..], &["--sizes", "1m,50%", "-q"]].concat());
    assert!(text.status.success(), "{}", stderr(&text));
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(shown.contains("read cache and tiers on t: 4KiB random read, QD 1"), "{shown}");
    assert!(
        shown.contains("working set  region   mean 99%") && shown.contains("     32MiB   50.0%"),
        "{shown}"
    );

    let listed = run_in(dir.path(), &["--db", db, "results", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("cache "), "kept as a cache run");
    let html = dir.path().join("r.html");
    let drawn = run_in(dir.path(), &["--db", db, "report", "1", "2", "-o", html.to_str().expect("path")]);
    assert!(drawn.status.success(), "{}", stderr(&drawn));
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("data-chart=\"cache\""), "the cache chart is drawn");
}

#[test]
fn cache_refuses_what_it_sets_itself_and_bad_rules() {
    let dir = tempfile::tempdir().expect("dir");
    for (args, says) in [
        (&["--rw", "randwrite"][..], "drop --rw"),
        (&["--distribution", "zipf:1.2"][..], "drop --distribution"),
        (&["--working-set", "1m"][..], "drop --working-set"),
        (&["--sizes", "0%"][..], "above 0% and at most 100%"),
        (&["--sizes", "2g"][..], "larger than the region"),
        (&["--rise-pct", "0"][..], "give a percentage above 0"),
        (&["--precision-pct", "0"][..], "from 1 to 100"),
        (&["--promotion-time", "100ms"][..], "too short"),
    ] {
        let base =
            ["cache", "t", "--size", "8m", "--engine", "null", "--runtime", "100ms", "-q", "--no-store"];
        let out = run_in(dir.path(), &[&base[..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn cache_takes_a_job_file_of_one_group_and_refuses_several() {
    let dir = tempfile::tempdir().expect("dir");
    let one = dir.path().join("one.toml");
    std::fs::write(&one, "engine = \"null\"\ntarget = \"t\"\nsize = \"8m\"\nruntime = \"100ms\"\n")
        .expect("job file");
    let out = run_in(
        dir.path(),
        &["cache", one.to_str().expect("path"), "--sizes", "50%,100%", "--json", "-q", "--no-store"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["summary"]["region_bytes"], 8 * MIB, "the file's target and size");
    let two = dir.path().join("two.toml");
    std::fs::write(&two, "engine = \"null\"\ntarget = \"t\"\nsize = \"8m\"\n[[group]]\n[[group]]\n")
        .expect("job file");
    let out = run_in(dir.path(), &["cache", two.to_str().expect("path"), "-q", "--no-store"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("measures one group"), "{}", stderr(&out));
}

impl MemoryCgroup {
    /// iolab with `args`, run in `dir` inside this cgroup.
    fn iolab(&self, dir: &Path, args: &[&str]) -> Output {
        self.iolab_holding(dir, args, None).0
    }

    /// As `iolab`, with the most page cache the cgroup held while it ran (what the limit left
    /// beside iolab's own memory, and less when the machine's own memory pressure reclaims
    /// from every cgroup), and the most of `watched` in the page cache meanwhile.
    fn iolab_holding(&self, dir: &Path, args: &[&str], watched: Option<&Path>) -> (Output, Held) {
        let resident = watched.map(Resident::new);
        let enter = self.enter_then("");
        let mut child = iolab_via("sh", &["-c", &enter, "sh"])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("iolab starts");
        // Read from another thread, so a full pipe cannot stall the child while this one polls.
        let reader = std::thread::spawn(move || {
            let mut out = String::new();
            child.stdout.take().map(|mut s| s.read_to_string(&mut out));
            (child, out)
        });
        let mut most = Held::default();
        while !reader.is_finished() {
            most.cache = most.cache.max(self.cache_bytes());
            if let Some(resident) = &resident {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock");
                most.series.push((now.as_nanos() as u64, resident.bytes()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        most.file = most.series.iter().map(|s| s.1).max().unwrap_or(0);
        let (child, stdout) = reader.join().expect("reader");
        let mut out = child.wait_with_output().expect("iolab ends");
        out.stdout = stdout.into_bytes();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        (out, most)
    }
}

/// The most page cache seen while iolab ran, bytes.
#[derive(Default)]
struct Held {
    /// Charged to the cgroup: the file's pages, and any other file's the cgroup read (iolab's
    /// own binary and libraries among them).
    cache: u64,
    /// Of the file measured.
    file: u64,
    /// The file's bytes in the page cache, every 20 ms: (Unix time ns, bytes).
    series: Vec<(u64, u64)>,
}

impl Held {
    /// The mean of the file's bytes in the page cache during `job` of a report's run (its
    /// measured window); `None` when no sample fell in it.
    fn during(&self, job: &Value) -> Option<f64> {
        let start = job["window_start_unix_ns"].as_u64()?;
        let end = start + (job["measured_s"].as_f64()? * 1e9) as u64;
        let inside: Vec<f64> =
            self.series.iter().filter(|s| s.0 >= start && s.0 <= end).map(|s| s.1 as f64).collect();
        (!inside.is_empty()).then(|| inside.iter().sum::<f64>() / inside.len() as f64)
    }
}

/// How much of a file is in the page cache, by `mincore` over a mapping of it that is never
/// read (so it brings in nothing and charges nothing).
struct Resident {
    addr: *mut libc::c_void,
    len: usize,
}

impl Resident {
    fn new(path: &Path) -> Resident {
        let file = std::fs::File::open(path).expect("file");
        let len = file.metadata().expect("size").len() as usize;
        // The mapping outlives the descriptor, and `drop` unmaps it.
        // SAFETY: a read-only shared mapping of an open file, never read through.
        let addr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0)
        };
        assert!(addr != libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
        Resident { addr, len }
    }

    /// The file's bytes in the page cache now.
    fn bytes(&self) -> u64 {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
        let mut pages = vec![0u8; self.len.div_ceil(page)];
        // `pages` holds one byte for each page of the mapping, as mincore writes.
        // SAFETY: `addr`..`addr + len` is the mapping made in `new`; `pages` is long enough.
        let done = unsafe { libc::mincore(self.addr, self.len, pages.as_mut_ptr()) };
        assert_eq!(done, 0, "mincore: {}", std::io::Error::last_os_error());
        pages.iter().filter(|p| *p & 1 == 1).count() as u64 * page as u64
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// Mean and median read latency of a separate run over `size` bytes of `file`, read once first.
fn separate_run_ns(cgroup: &MemoryCgroup, dir: &Path, size: u64) -> (f64, f64) {
    let size = format!("{}k", size / 1024);
    let common = ["--target", "f", "--size", &size, "--buffered", "--no-store", "-q"];
    cgroup.iolab(
        dir,
        &[
            &[
                "run",
                "--rw",
                "read",
                "--bs",
                "128k",
                "--io-limit",
                &size,
                "--runtime",
                "1h",
                "--ramp",
                "0",
                "--output",
                "/dev/null",
            ][..],
            &common,
        ]
        .concat(),
    );
    let out = cgroup.iolab(
        dir,
        &[&["run", "--rw", "randread", "--qd", "1", "--runtime", "1s", "--ramp", "0", "--json"][..], &common]
            .concat(),
    );
    let latency = &json(&out)["jobs"][0]["read"]["latency"];
    let p50 = latency["percentiles"].as_array().expect("percentiles").iter().find(|p| p["p"] == 50.0);
    (latency["mean_ns"].as_f64().expect("mean"), p50.and_then(|p| p["ns"].as_f64()).expect("p50"))
}

/// Bytes the block device under `path` has written so far (its sysfs stat), if it has one.
fn disk_written_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let stat =
        std::fs::read_to_string(format!("/sys/dev/block/{}:{}/stat", libc::major(dev), libc::minor(dev)))
            .ok()?;
    stat.split_whitespace().nth(6)?.parse::<u64>().ok().map(|sectors| sectors * 512)
}

/// The share of the machine's cores other processes (not iolab, not the kernel) used in a job's
/// window.
fn others_machine_pct(machine: &Value) -> f64 {
    machine["owners"]
        .as_array()
        .map(|owners| {
            owners.iter().filter(|o| o["kind"] == "process").filter_map(|o| o["machine_pct"].as_f64()).sum()
        })
        .unwrap_or(0.0)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Beyond this share of the cores used by other processes, the study's hits and misses are not
/// told apart well enough to hold its capacity to 15%.
const BUSY_MACHINE_PCT: f64 = 50.0;

/// Written by others while the study and its separate runs read the disk (they write nothing)
/// beyond which their latencies are not comparable across runs: an fio writer beside them moved
/// a miss from 33 us in one run to 2.45 ms in another.
const QUIET_DISK_WRITES: u64 = 16 * MIB;

#[test]
fn cache_finds_the_page_cache_a_memory_cgroup_allows() {
    if !is_root() {
        return skip!(Missing::Root, "needs root to create a memory cgroup");
    }
    // Large enough that iolab's own memory (4-6 MiB of a debug build, charged to the cgroup
    // too) and the kernel's for the file (1-2 MiB) are a small share of it; the file four times
    // the limit, so that several working sets lie past twice the page cache, where its capacity
    // is judged.
    let limit = 128 * MIB;
    let cgroup = match MemoryCgroup::new("cache", limit) {
        Ok(cgroup) => cgroup,
        Err(why) => return skip!(Missing::Other, "{why} (cgroup v1 memory controller not writable here)"),
    };
    // On the root disk: tmpfs has no miss tier.
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    let file = dir.path().join("f");
    cold_file(&file, 4 * limit);
    let written_before = disk_written_bytes(&file);
    // A second per working set: past twice the page cache a busy machine reads 3,000-8,000 times
    // a second, and each share of hits is then within 2% (sampling error) rather than 4%.
    let (out, held) = cgroup.iolab_holding(
        dir.path(),
        &[
            "cache",
            "f",
            "--buffered",
            "--runtime",
            "1s",
            "--ramp",
            "300ms",
            "--precision-pct",
            "5",
            "--promotion-time",
            "2s",
            "--no-store",
            "--json",
            "-q",
        ],
        Some(&file),
    );
    let report = json(&out);
    let summary = &report["summary"];
    let tiers = tiers(&report);
    // The page cache first. A virtual disk may show a tier of its own further on (the host's
    // cache of a file just written: random reads over the last part of a 512 MiB file took
    // twice as long as over its first half in one run here), which is not the test's.
    assert!(!tiers.is_empty(), "the page cache, over the disk: {}", brief(summary));
    let tier = &brief(&tiers[0]);
    let figure = |key: &str| tier[key].as_f64().unwrap_or_else(|| panic!("{key} in {tier}"));
    let size = figure("size_bytes");
    let fits = figure("fits_bytes");
    let shares: Vec<String> = tier["hit_shares"]
        .as_array()
        .expect("hit shares")
        .iter()
        .map(|s| {
            format!(
                "{}: {:.3}{}",
                s["working_set_bytes"],
                s["share"],
                if s["used"] == true { "*" } else { "" }
            )
        })
        .collect();
    // What the cgroup held of the file while each working set the capacity is judged on was
    // measured (the limit less iolab's own memory and the kernel's: 122-123 MiB of 128 here),
    // said in a failure's message.
    let judged: Vec<u64> = tier["hit_shares"]
        .as_array()
        .expect("hit shares")
        .iter()
        .filter(|s| s["used"] == true)
        .filter_map(|s| s["working_set_bytes"].as_u64())
        .collect();
    let during: Vec<f64> = report["run"]["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter(|j| j["name"].as_str().is_some_and(|n| n.starts_with("working set")))
        .filter(|j| {
            j["spec"]["groups"][0]["target"]["size_bytes"].as_u64().is_some_and(|w| judged.contains(&w))
        })
        .filter_map(|j| held.during(j))
        .collect();
    assert!(!during.is_empty(), "samples of the page cache while the capacity was measured");
    let mut sorted = during.clone();
    sorted.sort_by(f64::total_cmp);
    let file_held = sorted[sorted.len() / 2];
    let (cache, file_most) = (held.cache as f64, held.file as f64);
    let mib = |b: f64| format!("{:.1} MiB", b / MIB as f64);
    let during_each: Vec<String> = during.iter().map(|&b| mib(b)).collect();
    eprintln!(
        "tier of {} (misses begin above {}); the cgroup held {} of the file while the capacity was measured ({during_each:?}), at most {} of it and {} of page cache in all, under a limit of {}; hit shares (* judged) {shares:?}",
        mib(size),
        mib(fits),
        mib(file_held),
        mib(file_most),
        mib(cache),
        mib(limit as f64)
    );
    // Issue 17's bar: the capacity within 15% of the cgroup's limit. Under random reads the
    // kernel's LRU lists begin to miss at 73-95% of what the cgroup holds; the capacity comes
    // from the share of reads that still hit well beyond that. A hit is told from a miss by its
    // latency, so a hit preempted by other processes past the threshold counts as a miss: with
    // two busy loops and an fio writer beside it, the study found 105 MiB under 128 (18% low).
    // That bar is judged only while other processes left the cores mostly to the study.
    let others_pct = median(
        report["run"]["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .filter(|j| {
                j["spec"]["groups"][0]["target"]["size_bytes"].as_u64().is_some_and(|w| judged.contains(&w))
            })
            .map(|j| others_machine_pct(&j["machine"]))
            .collect(),
    );
    // On a machine that busy the first tier found need not be the page cache at all (busy run
    // 18: a "tier" of 30 MiB whose misses cost 4.3 us against hits of 3.0 us, under a limit of
    // 128 MiB), so none of the tier's figures below is judged there.
    if others_pct > BUSY_MACHINE_PCT {
        skip!(
            Missing::Other,
            "other processes held {others_pct:.0}% of the cores while the capacity was measured (a preempted hit reads as a miss): the tier of {} under a limit of {} is not judged on a machine this busy",
            mib(size),
            mib(limit as f64)
        );
        return;
    }
    assert!(
        (size - limit as f64).abs() <= 0.15 * limit as f64,
        "tier of {size} bytes under a limit of {limit} (the cgroup held {file_held} of the file then): {tier}"
    );
    assert!(size <= 1.15 * cache, "tier of {size} bytes, the cgroup held {cache} in all: {tier}");
    for later in &tiers[1..] {
        assert!(later["size_bytes"].as_f64() > Some(2.0 * size), "past the page cache: {}", brief(summary));
    }
    assert!(fits <= size * 1.15, "misses begin inside the capacity: {tier}");
    assert_eq!(tier["resolved"], true, "{tier}");

    // A separate run well inside the tier (half of it, every read a hit) takes the tier's hit
    // latency; one beyond it, what the study measured there: its share of hits (capacity / W)
    // at the hit latency and the rest at the miss latency the study reported.
    let (hit, miss) = (figure("hit_ns"), figure("miss_ns"));
    assert!(miss > 5.0 * hit, "a miss costs a disk read: {tier}");
    // Hits are compared by the median: a busy machine's stalls move a mean of 2 µs reads several
    // times over (the study judges the mean of the fastest 99% for that reason).
    let (_, inside_run) = separate_run_ns(&cgroup, dir.path(), (size as u64 / 2) / (128 << 10) * (128 << 10));
    let beyond_at = tier["beyond"]["working_set_bytes"].as_u64().expect("beyond");
    let (beyond_run, _) = separate_run_ns(&cgroup, dir.path(), beyond_at);
    let hits = (size / beyond_at as f64).min(1.0);
    let expected_beyond = hit * hits + miss * (1.0 - hits);
    // Within 2.5x for hits, 4x beyond: the root disk is shared, and other loads on it moved a
    // miss from 150 to 450 µs between the study and the separate run.
    // Within one run, a step: whatever else the disk serves, misses cost more than hits.
    assert!(
        beyond_run > 5.0 * inside_run,
        "the separate runs see the step too: {inside_run} vs {beyond_run} ns"
    );
    let others_wrote = written_before.zip(disk_written_bytes(&file)).map(|(a, b)| b.saturating_sub(a));
    let within = |a: f64, b: f64, x: f64| a / b < x && b / a < x;
    let beyond = tier["beyond"]["mean_ns"].as_f64().expect("beyond");
    // Hits are page-cache reads: the disk's load does not reach them.
    assert!(within(hit, inside_run, 2.5), "hits: {hit} ns in the study, a median of {inside_run} ns alone");
    match others_wrote {
        Some(bytes) if bytes > QUIET_DISK_WRITES => skip!(
            Missing::Other,
            "other processes wrote {} MiB to the disk while the study and its separate runs read it: the study's latencies ({hit} ns hits, {beyond} ns beyond) and the separate runs' ({inside_run}, {beyond_run} ns) are not compared across runs on a disk this busy",
            bytes / MIB
        ),
        _ => {
            assert!(
                within(expected_beyond, beyond_run, 4.0),
                "beyond: {expected_beyond} ns from the study, {beyond_run} ns alone"
            );
            assert!(within(beyond, beyond_run, 4.0), "beyond: {beyond} ns in the study, {beyond_run} ns alone");
        }
    }

    let promotion = &summary["promotion"];
    assert_eq!(
        promotion["hot_set_bytes"].as_u64(),
        Some((size as u64 / 2) / (128 << 10) * (128 << 10)),
        "{promotion}"
    );
    assert!(!promotion["samples"].as_array().expect("samples").is_empty(), "{promotion}");
    let pollution = &summary["pollution"];
    assert!(pollution["polluted"].is_boolean() && pollution["scan_bytes"].as_u64() > Some(0), "{pollution}");
}
