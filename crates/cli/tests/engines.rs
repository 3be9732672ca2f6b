//! The engines and their tuning on real files: what ran is what the report says ran, and the
//! CPU lands in the right thread class.

mod common;

use common::{json, run_in, stderr};

/// A temporary directory (on the root filesystem, so O_DIRECT works) with files `a` and `b`
/// of 4 MiB each.
fn two_targets() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temp dir");
    for name in ["a", "b"] {
        std::fs::write(dir.path().join(name), vec![5u8; 4 << 20]).expect("target");
    }
    dir
}

fn run_json(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let base = ["run", "--runtime", "600ms", "--ramp", "0s", "--json", "-q"];
    let out = run_in(dir, &[&base[..], args].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    json(&out)
}

fn class<'a>(job: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    job["cpu"]["threads"].as_array().expect("threads").iter().find(|t| t["class"] == name)
}

#[test]
fn aio_engine_reads_and_writes_asynchronously() {
    let dir = two_targets();
    let report = run_json(
        dir.path(),
        &["--target", "a", "--engine", "aio", "--rw", "randrw", "--qd", "8", "--allow-destroy"],
    );
    let job = &report["jobs"][0];
    assert!(job["read"]["ios"].as_u64().expect("reads") > 0);
    assert!(job["write"]["ios"].as_u64().expect("writes") > 0);
    assert_eq!(job["errors"]["count"], 0);
    assert_eq!(job["groups"][0]["engine"], "aio");
    assert_eq!(job["groups"][0]["threads"], 1, "one thread holds QD 8 with AIO");
    assert_eq!(job["groups"][0]["engine_setup"][0], "o_direct");
}

#[test]
fn uring_setup_is_what_was_asked_and_granted() {
    let dir = two_targets();
    let plain = run_json(
        dir.path(),
        &["--target", "a", "--ring-setup", "plain", "--fixed-files", "off", "--fixed-buffers", "off"],
    );
    assert_eq!(plain["jobs"][0]["groups"][0]["engine_setup"], serde_json::json!([]));
    let tuned = run_json(dir.path(), &["--target", "a"]);
    let setup: Vec<&str> = tuned["jobs"][0]["groups"][0]["engine_setup"]
        .as_array()
        .expect("setup")
        .iter()
        .map(|v| v.as_str().expect("name"))
        .collect();
    assert!(setup.contains(&"fixed_files") && setup.contains(&"fixed_buffers"), "{setup:?}");
    assert!(
        setup.contains(&"defer_taskrun") || setup.contains(&"coop_taskrun") || setup.is_empty(),
        "probed flags only: {setup:?}"
    );
}

#[test]
fn a_completion_watch_is_granted_said_and_judged_as_busy_by_design() {
    let dir = two_targets();
    let report = run_json(dir.path(), &["--target", "a", "--qd", "4", "--completion-watch", "15us"]);
    let job = &report["jobs"][0];
    let setup = job["groups"][0]["engine_setup"].as_array().expect("setup");
    assert!(setup.iter().any(|s| s == "completion_watch"), "{setup:?}");
    assert!(job["total"]["ios"].as_u64().expect("ios") > 0);
    assert_ne!(
        job["verdict"]["cause"], "submitting_cpu",
        "a watching lane is busy by design: {}",
        job["verdict"]
    );
    let refused =
        run_in(dir.path(), &["run", "--target", "a", "--completion-watch", "15us", "--sqpoll", "-q"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("--completion-watch"), "{}", stderr(&refused));
}

#[test]
fn sqpoll_time_is_reported_in_its_own_class() {
    let dir = two_targets();
    let report = run_json(dir.path(), &["--target", "a", "--sqpoll"]);
    let job = &report["jobs"][0];
    let setup = job["groups"][0]["engine_setup"].as_array().expect("setup");
    assert!(setup.iter().any(|s| s == "sqpoll"), "{setup:?}");
    let sqpoll = class(job, "sqpoll").expect("the SQPOLL thread's CPU is reported");
    let busy = sqpoll["user_s"].as_f64().expect("u") + sqpoll["system_s"].as_f64().expect("s");
    // How much it polls is the machine's business (a busy one gives it less): that it is counted is iolab's.
    assert!(busy > 0.0, "the SQPOLL thread polls while I/O runs: {busy} s");
    let workers = class(job, "workers").expect("workers");
    assert!(workers["threads"] == 1);
}

#[test]
fn threads_are_pinned_to_the_cpus_given() {
    let dir = two_targets();
    let report = run_json(dir.path(), &["--target", "a", "--workers", "2", "--cpus", "0"]);
    let group = &report["jobs"][0]["groups"][0];
    assert_eq!(group["cpus"], serde_json::json!([0]));
    assert!(report["jobs"][0]["total"]["ios"].as_u64().expect("ios") > 0);
}

#[test]
fn striped_targets_share_the_load_and_add_up() {
    let dir = two_targets();
    let report = run_json(dir.path(), &["--target", "a", "--target", "b", "--stripe", "64k", "--qd", "8"]);
    let job = &report["jobs"][0];
    let group = &job["groups"][0];
    assert_eq!(group["stripe_bytes"], 65536);
    let targets = group["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2);
    let ios: Vec<u64> = targets.iter().map(|t| t["total"]["ios"].as_u64().expect("ios")).collect();
    assert_eq!(ios.iter().sum::<u64>(), job["total"]["ios"].as_u64().expect("total"), "targets add up");
    let (low, high) = (ios[0].min(ios[1]) as f64, ios[0].max(ios[1]) as f64);
    assert!(low > high * 0.8, "random I/O over two equal stripes is even: {ios:?}");
    assert!(targets[0]["path"].as_str().expect("path").ends_with('a'));
}

#[test]
fn targets_in_turn_get_one_io_each_in_turn() {
    let dir = two_targets();
    let report = run_json(
        dir.path(),
        &["--target", "a", "--target", "b", "--rw", "read", "--qd", "1", "--io-limit", "1001ios"],
    );
    let targets = report["jobs"][0]["groups"][0]["targets"].as_array().expect("targets").clone();
    let ios: Vec<u64> = targets.iter().map(|t| t["total"]["ios"].as_u64().expect("ios")).collect();
    assert!(ios[0].abs_diff(ios[1]) <= 1, "strictly alternating: {ios:?}");
}

/// Shrinks `b` under a read workload over `a` and `b`: its short reads must be reported
/// against `b`, and the run stops on them.
#[test]
fn short_reads_name_the_target_they_hit() {
    let dir = two_targets();
    let child = common::iolab()
        .args(["run", "--target", "a", "--target", "b", "--buffered", "--runtime", "20s", "--ramp", "0s"])
        .args(["--json", "-q", "--qd", "4"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // 700 ms from the moment iolab holds `b` open, however slowly a busy machine got there.
    common::wait_until_open(child.id(), &dir.path().join("b"));
    std::thread::sleep(std::time::Duration::from_millis(700));
    std::fs::File::options().write(true).open(dir.path().join("b")).expect("b").set_len(0).expect("truncate");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let first = &job["errors"]["first"][0];
    assert!(first["target"].as_str().expect("target").ends_with('b'), "{first}");
    let targets = job["groups"][0]["targets"].as_array().expect("targets");
    assert!(targets[0]["total"]["ios"].as_u64().expect("a") > 0, "a kept its results");
}
