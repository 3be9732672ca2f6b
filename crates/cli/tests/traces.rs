//! Block traces (issue 35): blktrace's records and fio's iologs read, shown and imported;
//! malformed ones refused with the line or byte; a replay on a file issuing every request of
//! its trace, at its times or as fast as possible, fitted onto a smaller target or refused;
//! and, as root on loop devices, a capture that counts what the device counts and a replay
//! whose own capture holds the same requests.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{iolab, is_root, json, needs_root_and, skip, stderr, LoopDevice};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces").join(name)
}

fn iolab_in(dir: &Path, args: &[&str]) -> Output {
    iolab().args(args).current_dir(dir).output().expect("iolab runs")
}

fn show(dir: &Path, trace: &Path) -> serde_json::Value {
    let out = iolab_in(dir, &["trace", "show", "--json", trace.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)
}

/// (op, offset, length) of every request, counted.
fn requests(trace: &Path, dir: &Path) -> BTreeMap<(String, u64, u64), u64> {
    // The iolab trace file is read back through `trace import` + the library's reader.
    let imported = dir.join(format!("{}.read", trace.file_name().expect("name").to_string_lossy()));
    let out = iolab_in(
        dir,
        &["trace", "import", trace.to_str().expect("utf-8"), "-o", imported.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let read = iolab_trace::import::open(&imported).expect("reads back");
    let mut counts = BTreeMap::new();
    for r in read.requests.iter().filter(|r| r.op.moves_data()) {
        *counts.entry((r.op.name().to_string(), r.offset, u64::from(r.len))).or_insert(0) += 1;
    }
    counts
}

#[test]
fn blktrace_records_and_the_fio_iolog_of_one_run_show_the_same_workload() {
    let dir = tempfile::tempdir().expect("dir");
    let blktrace = show(dir.path(), &fixture("fio-mixed"));
    let iolog = show(dir.path(), &fixture("fio-mixed.iolog"));
    assert_eq!(blktrace["schema"], "iolab.trace/1");
    assert_eq!(blktrace["trace"]["source"], "blktrace");
    assert_eq!(iolog["trace"]["source"], "fio_iolog_v3");
    for shape in [&blktrace["shape"], &iolog["shape"]] {
        assert_eq!(shape["requests"], 200);
        assert_eq!(shape["ops"][0]["op"], "read");
        assert_eq!(shape["ops"][0]["requests"], 139);
        let sizes: Vec<u64> = shape["sizes"]
            .as_array()
            .expect("sizes")
            .iter()
            .map(|s| s["bytes"].as_u64().expect("n"))
            .collect();
        assert_eq!(sizes, vec![4096, 65536]);
    }
    assert!(blktrace["shape"]["outstanding"]["max"].as_u64().is_some(), "blktrace has completions");
    assert!(iolog["shape"]["outstanding"].is_null(), "an iolog has none");
    // Every request fio logged is one the block layer issued.
    assert_eq!(
        requests(&fixture("fio-mixed.blktrace.0"), dir.path()),
        requests(&fixture("fio-mixed.iolog"), dir.path())
    );
}

#[test]
fn an_imported_trace_shows_as_its_source_did() {
    let dir = tempfile::tempdir().expect("dir");
    let out_path = dir.path().join("mixed.trace");
    let out = iolab_in(
        dir.path(),
        &["trace", "import", fixture("fio-mixed").to_str().expect("utf-8"), "-o", "mixed.trace"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("200 requests from"), "{}", stderr(&out));
    let (source, imported) = (show(dir.path(), &fixture("fio-mixed")), show(dir.path(), &out_path));
    assert_eq!(source["shape"], imported["shape"]);
}

#[test]
fn malformed_traces_are_refused_with_the_line_or_the_byte() {
    let dir = tempfile::tempdir().expect("dir");
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.path().join(name), bytes).expect("write");
        name.to_string()
    };
    let mut iolog = std::fs::read_to_string(fixture("fio-mixed.iolog")).expect("fixture");
    iolog = iolog.replacen("read 64757760 65536", "read 64757760 lots", 1);
    let blktrace = std::fs::read(fixture("fio-mixed.blktrace.0")).expect("fixture");
    let cases = [
        (
            write("bad.iolog", iolog.as_bytes()),
            "bad.iolog: line 4: the length is not a whole number: '358 /dev/loop0 read 64757760 lots'",
        ),
        (
            write("cut.blktrace.0", &blktrace[..1000]),
            "cut: cut.blktrace.0: byte 984: the file ends 16 bytes into a 48-byte record",
        ),
        (write("notes.txt", b"hello\n"), "notes.txt: not a trace iolab reads"),
    ];
    for (file, want) in cases {
        let out = iolab_in(dir.path(), &["trace", "show", &file]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{file}: {}", stderr(&out));
    }
}

/// An iolog of `n` requests in a 16 MiB file: 4 KiB reads and 64 KiB writes, 100 us apart.
fn small_iolog(dir: &Path, n: u64) -> PathBuf {
    let mut text = String::from("fio version 3 iolog\n0 /data add\n0 /data open\n");
    for i in 0..n {
        let (op, len) = if i % 3 == 2 { ("write", 65536) } else { ("read", 4096) };
        let offset = (i * 7919 % 256) * 65536;
        text += &format!("{} /data {op} {offset} {len}\n", 100 * i);
    }
    let path = dir.join("small.iolog");
    std::fs::write(&path, text).expect("write");
    path
}

fn replay(dir: &Path, trace: &Path, target: &str, extra: &[&str]) -> Output {
    let args =
        [
            &[
                "replay",
                trace.to_str().expect("utf-8"),
                "--target",
                target,
                "--json",
                "--no-store",
                "--quiet",
            ][..],
            extra,
        ]
        .concat();
    iolab_in(dir, &args)
}

#[test]
fn a_replay_issues_every_request_at_its_time_or_as_fast_as_it_can() {
    let dir = tempfile::tempdir().expect("dir");
    let trace = small_iolog(dir.path(), 3000);
    for (speed, paced) in [("1x", true), ("max", false)] {
        let out = replay(dir.path(), &trace, "replayed", &["--speed", speed]);
        assert!(out.status.success(), "{speed}: {}", stderr(&out));
        let report = json(&out);
        assert_eq!(report["schema"], "iolab.replay/1");
        let group = &report["run"]["jobs"][0]["groups"][0];
        let replayed = &group["replay"];
        assert_eq!(
            (replayed["requests"].as_u64(), replayed["completed"].as_u64()),
            (Some(3000), Some(3000)),
            "{speed}"
        );
        assert_eq!(group["read"]["ios"], 2000);
        assert_eq!(group["write"]["ios"], 1000);
        assert_eq!(replayed["lag"].is_object(), paced, "{speed}: {replayed}");
        assert!(group["access"].as_str().expect("access").starts_with("replay of"), "{}", group["access"]);
    }
    let made = std::fs::metadata(dir.path().join("replayed")).expect("made");
    assert_eq!(made.len(), 16 << 20, "the file is made as large as the trace reaches");
}

#[test]
fn a_file_target_is_extended_to_the_trace_or_the_trace_fitted_onto_it() {
    let dir = tempfile::tempdir().expect("dir");
    let trace = small_iolog(dir.path(), 300);
    std::fs::write(dir.path().join("small"), vec![0u8; 4 << 20]).expect("4 MiB target");
    // Its writes land on a file iolab did not lay out: refused as any run's would be.
    let refused = replay(dir.path(), &trace, "small", &["--fit", "wrap", "--speed", "max"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("Pass --allow-destroy"), "{}", stderr(&refused));
    let too_large = replay(dir.path(), &trace, "small", &["--speed", "max", "--allow-destroy"]);
    assert!(too_large.status.success(), "an existing file without --fit is extended: {}", stderr(&too_large));
    std::fs::write(dir.path().join("small"), vec![0u8; 4 << 20]).expect("4 MiB again");
    let out = replay(dir.path(), &trace, "small", &["--fit", "wrap", "--speed", "max", "--allow-destroy"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = &json(&out)["run"]["jobs"][0]["groups"][0]["replay"];
    assert_eq!((replayed["completed"].as_u64(), replayed["fit"].as_str()), (Some(300), Some("wrap")));
    assert_eq!(
        std::fs::metadata(dir.path().join("small")).expect("kept").len(),
        4 << 20,
        "a fitted file keeps its size"
    );
    let bad = replay(dir.path(), &trace, "small", &["--fit", "squash"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("'squash' is not a fit; use scale or wrap"), "{}", stderr(&bad));
}

#[test]
fn capture_needs_root_and_says_so() {
    if !is_root() {
        let out = iolab()
            .args(["capture", "/dev/null", "-o", "x.trace"])
            .current_dir(std::env::temp_dir())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("needs root"), "{}", stderr(&out));
        return;
    }
    if !common::have("setpriv") {
        return skip!(common::Missing::Other, "needs setpriv to run iolab as another user");
    }
    let out = common::iolab_via("setpriv", &["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["capture", "/dev/null", "-o", "/tmp/never.trace"])
        .current_dir("/")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("needs root; run it with sudo"), "{}", stderr(&out));
}

/// A capture of a device in a child, from the moment the kernel records: what runs between
/// `start` and `stop` is in it, however long setting up took on a busy machine.
struct Recording {
    child: std::process::Child,
}

impl Recording {
    /// Starts `iolab capture device -o name` and returns once it says it records.
    fn start(dir: &Path, device: &str, name: &str) -> Recording {
        use std::io::BufRead;
        let mut child = iolab()
            .args(["capture", device, "--for", "600s", "-o", name, "--json"])
            .current_dir(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("capture starts");
        let mut said = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if said.read_line(&mut line).expect("stderr reads") == 0 {
                panic!("the capture ended before it recorded: {seen}");
            }
            seen += &line;
            if line.contains("(recording;") {
                break;
            }
        }
        std::thread::spawn(move || std::io::copy(&mut said, &mut std::io::sink()));
        Recording { child }
    }

    /// Stops it as Ctrl-C would (it keeps what it recorded, exit code 130) and returns what it
    /// showed.
    fn stop(self) -> serde_json::Value {
        // SAFETY: kill takes plain integers; the pid is our own child's, not yet reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let out = common::output_unless_hung(self.child, "the capture");
        assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stdout));
        json(&out)
    }
}

/// Captures `device` into `name` while `iolab run` loads it with `load`, and checks that the
/// capture traced what the device counted, within the few requests at its edges, and lost no
/// event; returns what it showed.
fn capture_beside_load(dir: &Path, device: &str, load: &[&str], name: &str) -> serde_json::Value {
    let recording = Recording::start(dir, device, name);
    let out = iolab()
        .args(["run", "--target", device, "--no-store", "--quiet", "--ramp", "0s"])
        .args(load)
        .current_dir(dir)
        .output()
        .expect("the load runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = recording.stop();
    let cost = &shown["trace"]["capture_cost"];
    let (traced, counted) =
        (cost["captured_completed"].as_u64().expect("n"), cost["device_completed"].as_u64().expect("n"));
    assert!(traced > 1000, "{shown}");
    assert!(traced.abs_diff(counted) <= 2 + counted / 200, "traced {traced}, the device counted {counted}");
    assert_eq!(cost["dropped_events"], 0);
    shown
}

#[test]
fn a_capture_counts_what_the_device_counts_and_its_replay_issues_the_same_requests() {
    if let Some((missing, why)) = needs_root_and(&["losetup"]) {
        return skip!(missing, "{why}");
    }
    if !Path::new("/sys/kernel/tracing/events/block/block_rq_issue").exists() {
        return skip!(common::Missing::Other, "needs the block tracepoints in tracefs");
    }
    let dir = tempfile::tempdir().expect("dir");
    let (source, copy) = (LoopDevice::direct_random("trace-a", 64), LoopDevice::direct("trace-b", 64));
    // A mixed load on the source, all of it captured.
    let load = [
        &["--bs-split", "4k/60,64k/40", "--read-pct", "70", "--qd", "4", "--rate-iops", "3000"][..],
        &["--runtime", "2s", "--allow-destroy"],
    ]
    .concat();
    let shown = capture_beside_load(dir.path(), source.path(), &load, "a.trace");
    let read_pct = shown["shape"]["read_pct"].as_f64().expect("read share");
    assert!((read_pct - 70.0).abs() < 6.0, "{read_pct}");

    // The replay on the copy, captured there: the same requests reach the copy's block layer.
    let capture_b = Recording::start(dir.path(), copy.path(), "b.trace");
    let out = replay(dir.path(), &dir.path().join("a.trace"), copy.path(), &["--allow-destroy"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = &json(&out)["run"]["jobs"][0]["groups"][0]["replay"];
    assert_eq!(replayed["completed"], replayed["requests"], "{replayed}");
    let _ = capture_b.stop();
    let (asked, got) = (
        requests(&dir.path().join("a.trace"), dir.path()),
        requests(&dir.path().join("b.trace"), dir.path()),
    );
    let mut extra = got.clone();
    for (request, n) in &asked {
        let have = extra.get_mut(request).map_or(0, std::mem::take);
        assert_eq!(have, *n, "{request:?}: the replay issued {have} of {n}");
    }
    // Besides the trace's requests, only the target checks' reads.
    let others: u64 = extra.iter().filter(|(k, _)| k.0 == "write").map(|(_, n)| n).sum();
    assert_eq!(others, 0, "writes the trace did not have");
}

#[test]
fn a_traces_job_reads_back_and_a_run_of_it_is_compared_with_the_trace() {
    let dir = tempfile::tempdir().expect("dir");
    let trace = small_iolog(dir.path(), 4000);
    let out = iolab_in(dir.path(), &["trace", "job", trace.to_str().expect("utf-8"), "-o", "job.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("job.toml")).expect("the job");
    assert!(
        text.contains("read_pct = 67") && text.contains("rate_iops = 1000"),
        "a request every 100 us: {text}"
    );
    assert!(text.contains("bs_split = \"4096/667,65536/333\""), "{text}");
    // The job file runs as any other.
    let run = iolab_in(
        dir.path(),
        &["run", "job.toml", "--target", "t", "--runtime", "300ms", "--no-store", "--json", "--quiet"],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    // --check runs it and sets each figure beside the trace's (from the run alone on a file).
    let checked = iolab_in(
        dir.path(),
        &["trace", "job", trace.to_str().expect("utf-8"), "--check", "t", "--no-store", "--json"],
    );
    assert!(checked.status.success(), "{}", stderr(&checked));
    let report = json(&checked);
    assert_eq!(report["schema"], "iolab.trace-job/1");
    assert_eq!(report["summary"]["captured"], false);
    let figures = report["summary"]["figures"].as_array().expect("figures");
    let names: Vec<&str> = figures.iter().map(|f| f["name"].as_str().expect("name")).collect();
    assert_eq!(names, vec!["requests/s", "read share", "mean request size"]);
    let read = &figures[1];
    assert!(read["difference"].as_f64().expect("points").abs() < 5.0, "{read}");
}

/// zram has no requests (it is bio-based): its capture is of the I/Os queued to it.
#[test]
fn a_bio_based_device_is_captured_at_queue() {
    if !Path::new("/sys/kernel/tracing/events/block/block_bio_queue").exists() && is_root() {
        return skip!(common::Missing::Other, "needs the block tracepoints in tracefs");
    }
    let Some(zram) = common::ZramDevice::for_test(64) else { return };
    let dir = tempfile::tempdir().expect("dir");
    let load = ["--rw", "randread", "--qd", "4", "--rate-iops", "5000", "--runtime", "1s"];
    let shown = capture_beside_load(dir.path(), zram.path(), &load, "z.trace");
    assert_eq!(shown["shape"]["read_pct"], 100.0);
}

/// The block layer reports a partition's requests on its disk, at the disk's sectors: a
/// capture of the partition keeps only its own, at offsets from its start.
#[test]
fn a_partition_is_captured_alone_at_its_own_offsets() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "partx"]) {
        return skip!(missing, "{why}");
    }
    if !Path::new("/sys/kernel/tracing/events/block/block_rq_issue").exists() {
        return skip!(common::Missing::Other, "needs the block tracepoints in tracefs");
    }
    let disk = LoopDevice::direct_partitioned("trace-part", 64, 65536);
    let part = format!("{}p1", disk.path());
    let dir = tempfile::tempdir().expect("dir");
    // Reads of the partition's blocks 10..20, and of the disk beyond the partition.
    let recording = Recording::start(dir.path(), &part, "p.trace");
    common::sh(&format!(
        "for i in 1 2 3; do dd if={part} of=/dev/null bs=4k skip=10 count=10 iflag=direct status=none; dd if={} of=/dev/null bs=4k skip=12000 count=10 iflag=direct status=none; done",
        disk.path()
    ));
    let shown = recording.stop();
    assert_eq!(shown["trace"]["device_bytes"], 65536 * 512);
    let mut offsets: Vec<u64> =
        requests(&dir.path().join("p.trace"), dir.path()).into_keys().map(|(_, offset, _)| offset).collect();
    offsets.sort_unstable();
    assert_eq!(
        offsets,
        (10..20).map(|b| b * 4096).collect::<Vec<u64>>(),
        "only the partition's reads, from its start"
    );
}
