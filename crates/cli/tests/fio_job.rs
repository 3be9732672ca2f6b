//! fio job files: `iolab run job.fio` and `iolab fio-job job.fio --print`, on the fixtures in
//! tests/fixtures/fio (one per option family, the classic Iometer and JEDEC mixes, a
//! multi-step file, and files with options iolab refuses). Each fixture is a real fio job
//! file: `fio --parse-only` accepts it (checked when fio is installed).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{have, iolab, json, stderr};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio")
}

/// A temporary directory holding every fixture and the small targets they name.
fn lab() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(fixtures()).expect("fixtures") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    // 2 MiB: target.fio reads 1 MiB from 64 KiB in, and a run never lays out more of a file
    // iolab did not make.
    for name in ["t", "t1", "t:2", "sub/t3"] {
        std::fs::write(dir.path().join(name), vec![1u8; 2 << 20]).expect("target");
    }
    dir
}

/// iolab in `dir`, keeping nothing (a run), with HOME there and TARGET (the classic files'
/// target) set.
fn iolab_in(dir: &Path, args: &[&str]) -> Output {
    // `fio-job` keeps nothing and does not take --no-store.
    let keep_nothing: &[&str] = if args.first() == Some(&"run") { &["--no-store"] } else { &[] };
    iolab()
        .args(args)
        .args(keep_nothing)
        .env("HOME", dir)
        .env("TARGET", "t")
        .current_dir(dir)
        .output()
        .expect("iolab runs")
}

/// Runs a fixture briefly (flags override the file's runtime and ramp) and returns its jobs.
fn run_fixture(dir: &Path, file: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["run", file, "--runtime", "1s", "--ramp", "0s", "--json", "-q"];
    args.extend_from_slice(extra);
    let out = iolab_in(dir, &args);
    assert!(out.status.success(), "{file}: {}", stderr(&out));
    json(&out)["jobs"].as_array().expect("jobs").clone()
}

fn spec_group(job: &Value, index: usize) -> &Value {
    &job["spec"]["groups"][index]
}

fn refused(dir: &Path, args: &[&str], expect: &[&str]) {
    let out = iolab_in(dir, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.starts_with("iolab: error: fio job file "), "{err}");
    for part in expect {
        assert!(err.contains(part), "{args:?}: expected '{part}' in: {err}");
    }
}

#[test]
fn every_fixture_is_a_job_file_fio_accepts() {
    if !have("fio") {
        return common::skip!(
            common::Missing::Fio,
            "fio is not installed, so the fixtures cannot be checked with fio --parse-only"
        );
    }
    let dir = lab();
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).expect("fixtures") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if !name.ends_with(".fio") {
            continue;
        }
        let out = Command::new("fio")
            .args(["--parse-only", &name])
            .env("TARGET", "t")
            .current_dir(dir.path())
            .output()
            .expect("fio runs");
        assert!(out.status.success(), "fio refuses {name}: {}", stderr(&out));
        checked += 1;
    }
    assert!(checked >= 10, "{checked} fixtures");
}

#[test]
fn access_options_translate() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "access.fio", &[]);
    let names: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["seq-read", "rand-mix", "mostly-random-write", "write-share"]);
    let access = |i: usize| &spec_group(&jobs[i], 0)["access"];
    assert_eq!((access(0)["read_pct"].as_u64(), access(0)["random_pct"].as_u64()), (Some(100), Some(0)));
    assert_eq!(access(0)["bs_split"][0]["bs"], 65536);
    assert_eq!((access(1)["read_pct"].as_u64(), access(1)["random_pct"].as_u64()), (Some(70), Some(100)));
    assert_eq!(access(1)["align_bytes"], 4096);
    assert_eq!((access(2)["read_pct"].as_u64(), access(2)["random_pct"].as_u64()), (Some(0), Some(80)));
    assert_eq!(access(2)["bs_split"][0]["bs"], 16384);
    assert_eq!(access(3)["read_pct"], 75);
    let mix: Vec<(u64, u64)> = access(3)["bs_split"]
        .as_array()
        .expect("mix")
        .iter()
        .map(|w| (w["bs"].as_u64().expect("bs"), w["weight"].as_u64().expect("weight")))
        .collect();
    assert_eq!(mix, [(4096, 50), (16384, 25), (65536, 25)], "fio's empty shares split the rest");
    assert!(jobs[1]["read"]["ios"].as_u64() > Some(0) && jobs[1]["write"]["ios"].as_u64() > Some(0));
}

#[test]
fn load_options_translate_and_run_on_each_engine() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "load.fio", &[]);
    let load: Vec<(String, u64, u64, bool)> = jobs
        .iter()
        .map(|j| {
            let g = spec_group(j, 0);
            (
                g["engine"].as_str().expect("engine").to_string(),
                g["qd"].as_u64().expect("qd"),
                g["workers"].as_u64().expect("workers"),
                g["target"]["direct"].as_bool().expect("direct"),
            )
        })
        .collect();
    assert_eq!(
        load,
        [
            ("psync".to_string(), 1, 1, false),
            ("aio".to_string(), 32, 4, true),
            ("uring".to_string(), 64, 1, true),
            ("null".to_string(), 4, 1, false),
        ]
    );
    assert_eq!(spec_group(&jobs[2], 0)["uring"]["fixed_buffers"], true);
    for job in &jobs {
        assert!(job["total"]["ios"].as_u64() > Some(0), "{}", job["name"]);
    }
}

#[test]
fn target_options_translate() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "target.fio", &[]);
    let target = &spec_group(&jobs[0], 0)["target"];
    assert_eq!(target["paths"], serde_json::json!(["t1", "t:2"]));
    assert_eq!(target["size_bytes"], 1 << 20, "fio's size=2m is shared by the two files");
    assert_eq!(target["offset_bytes"], 65536);
    assert_eq!(spec_group(&jobs[1], 0)["target"]["paths"], serde_json::json!(["sub/t3"]));
}

#[test]
fn timing_options_translate() {
    let dir = lab();
    let out = iolab_in(dir.path(), &["fio-job", "timing.fio", "--print"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("runtime = \"60s\"") && text.contains("ramp = \"500ms\""), "{text}");
    assert!(text.contains("io_limit = \"8m\""), "io_size=4m for each of 2 clones: {text}");
    // Flags override the file: the byte limit stays, the runtime is the flag's.
    let jobs = run_fixture(dir.path(), "timing.fio", &[]);
    assert_eq!(jobs[1]["spec"]["io_limit"]["bytes"], 8 << 20);
    assert_eq!(jobs[0]["spec"]["runtime_ns"], 1_000_000_000);
}

#[test]
fn pacing_options_translate() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "pacing.fio", &[]);
    let rate = &spec_group(&jobs[0], 0)["rate"];
    assert_eq!((rate["iops"].as_u64(), rate["arrival"].as_str()), (Some(4096), Some("poisson")));
    let burst = &spec_group(&jobs[1], 0)["access"]["burst"];
    assert_eq!((burst["ios"].as_u64(), burst["idle_ns"].as_u64()), (Some(16), Some(250_000)));
}

#[test]
fn includes_environment_and_dropped_options() {
    let dir = lab();
    let out = iolab_in(dir.path(), &["run", "include.fio", "--runtime", "200ms", "--ramp", "0s", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    assert_eq!(job["name"], "renamed");
    assert_eq!(
        spec_group(job, 0)["target"]["paths"],
        serde_json::json!(["t"]),
        "TARGET from the environment"
    );
    assert_eq!(spec_group(job, 0)["engine"], "null", "from the included file");
    let err = stderr(&out);
    assert!(err.contains("iolab: note: fio job file include.fio: line 6: description="), "{err}");
    let quiet = iolab_in(dir.path(), &["run", "include.fio", "--runtime", "200ms", "--ramp", "0s", "-q"]);
    assert!(!stderr(&quiet).contains("note"), "-q keeps notes off stderr");
    let mut unset = iolab();
    unset
        .args(["fio-job", "include.fio"])
        .env_remove("TARGET")
        .env("HOME", dir.path())
        .current_dir(dir.path());
    let out = unset.output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("include.fio: line 4: environment variable TARGET is not set"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn iometer_file_server_mix_runs() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "iometer-fileserver.fio", &["--engine", "null"]);
    let g = spec_group(&jobs[0], 0);
    assert_eq!((g["access"]["read_pct"].as_u64(), g["access"]["random_pct"].as_u64()), (Some(80), Some(100)));
    let weights: Vec<u64> = g["access"]["bs_split"]
        .as_array()
        .expect("mix")
        .iter()
        .map(|w| w["weight"].as_u64().expect("w"))
        .collect();
    assert_eq!(weights, [10, 5, 5, 60, 2, 4, 4, 10]);
    assert_eq!((g["qd"].as_u64(), g["workers"].as_u64()), (Some(16), Some(4)));
    assert!(g["target"]["direct"].as_bool().expect("direct"));
}

#[test]
fn jedec_endurance_mix_runs_and_its_skew_is_refused() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "jedec-endurance.fio", &["--engine", "null"]);
    let g = spec_group(&jobs[0], 0);
    let mix: Vec<(u64, u64)> = g["access"]["bs_split"]
        .as_array()
        .expect("mix")
        .iter()
        .map(|w| (w["bs"].as_u64().expect("bs"), w["weight"].as_u64().expect("weight")))
        .collect();
    let expected = [
        (512, 4),
        (1024, 1),
        (1536, 1),
        (2048, 1),
        (2560, 1),
        (3072, 1),
        (3584, 1),
        (4096, 67),
        (8192, 10),
        (16384, 7),
        (32768, 3),
        (65536, 3),
    ];
    assert_eq!(mix, expected);
    assert_eq!((g["access"]["read_pct"].as_u64(), g["access"]["random_pct"].as_u64()), (Some(0), Some(100)));
    assert_eq!(g["access"]["align_bytes"], 512);
    let zoned = run_fixture(dir.path(), "jedec-endurance-zoned.fio", &["--engine", "null"]);
    let z = spec_group(&zoned[0], 0);
    assert_eq!(z["access"]["distribution"], "zoned:50/5,30/15,20/80");
    assert_eq!(z["access"]["bs_split"], g["access"]["bs_split"]);
}

#[test]
fn stonewall_and_numjobs_make_steps_of_concurrent_groups() {
    let dir = lab();
    let jobs = run_fixture(dir.path(), "stonewall-numjobs.fio", &[]);
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["name"], "oltp+backup");
    let groups = jobs[0]["groups"].as_array().expect("groups");
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["oltp", "backup"]);
    assert_eq!(spec_group(&jobs[0], 0)["workers"], 2);
    assert!(groups.iter().all(|g| g["total"]["ios"].as_u64() > Some(0)), "both ran");
    assert_eq!(jobs[1]["name"], "scan");
    assert_eq!(spec_group(&jobs[1], 0)["workers"], 4);
}

#[test]
fn unsupported_options_are_refused_with_the_list() {
    let dir = lab();
    let expect = [
        "these 6 options:",
        "random_distribution=normal:5 (fio's normal is the mean of 12 uniform draws hashed over the region; its argument is not the bell's width that iolab's normal:STDDEV_PCT sets) (line 11)",
        "verify=crc32c (iolab does not verify data) (line 12)",
        "fsync=8 (line 13)",
        "bsrange=4k-16k (line 14)",
        "ioengine=sync (iolab has psync, libaio, io_uring and null) (line 18)",
        "thinktime_spin=50 (line 20)",
        "remove them, or write an iolab job file instead (docs/job-file.md)",
    ];
    refused(dir.path(), &["run", "unsupported.fio"], &expect);
    refused(dir.path(), &["fio-job", "unsupported.fio", "--print"], &expect);
}

#[test]
fn bad_values_name_the_file_line_and_option() {
    let dir = lab();
    let cases: [(&str, &[&str]); 5] = [
        (
            "[a]\nfilename=t\nsize=1m\ntime_based\nruntime=1\niodepth=abc\n",
            &["bad.fio: line 6: iodepth=abc:"],
        ),
        ("[a]\nfilename=t\nsize=50%\ntime_based\nruntime=1\n", &["bad.fio: line 3: size=50%:"]),
        ("[a]\nfilename=t\nsize=1m\nruntime=soon\ntime_based\n", &["bad.fio: line 4: runtime=soon:"]),
        ("bs=4k\n[a]\n", &["bad.fio: line 1:", "outside any section"]),
        (
            "[a]\nfilename=t\nsize=1m\n[b]\nfilename=t\nsize=1m\n",
            &["line 4: [b] runs beside [a] without time_based"],
        ),
    ];
    for (text, expect) in cases {
        std::fs::write(dir.path().join("bad.fio"), text).expect("write");
        refused(dir.path(), &["run", "bad.fio"], expect);
        refused(dir.path(), &["fio-job", "bad.fio", "--print"], expect);
    }
    refused(dir.path(), &["fio-job", "missing.fio"], &["missing.fio: cannot read it"]);
}

#[test]
fn the_printed_file_runs_as_the_fio_file_does() {
    let dir = lab();
    let out = iolab_in(dir.path(), &["fio-job", "stonewall-numjobs.fio", "--print"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(dir.path().join("printed.toml"), &out.stdout).expect("write");
    let from_fio = run_fixture(dir.path(), "stonewall-numjobs.fio", &[]);
    let from_toml = run_fixture(dir.path(), "printed.toml", &[]);
    let specs = |jobs: &[Value]| jobs.iter().map(|j| j["spec"].clone()).collect::<Vec<_>>();
    assert_eq!(specs(&from_fio), specs(&from_toml));
}

#[test]
fn a_fio_file_is_known_by_its_first_line_and_flags_override_it() {
    let dir = lab();
    std::fs::copy(dir.path().join("pacing.fio"), dir.path().join("pacing.job")).expect("copy");
    let jobs = run_fixture(dir.path(), "pacing.job", &["--qd", "4", "--bs", "8k"]);
    let g = spec_group(&jobs[1], 0);
    assert_eq!((g["qd"].as_u64(), g["access"]["bs_split"][0]["bs"].as_u64()), (Some(4), Some(8192)));
    let out = iolab_in(dir.path(), &["fio-job", "pacing.fio"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("iolab can run it"));
}
