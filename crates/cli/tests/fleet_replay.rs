//! `iolab fleet ... replay` end to end: real agents on loopback ports, each in a directory of
//! its own whose target `t` has its own size (the job names `/proc/self/cwd/t`), and the real
//! coordinator sending each host its own trace.

mod common;

use std::path::{Path, PathBuf};

use common::fleet::{agents_with_targets, hosts, token_file, Agent};
use common::{json, run_in, stderr, u64_at};

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces").join(name)
}

/// A fio iolog v3 of 40 reads of 8 KiB and 10 writes of 16 KiB, 100 us apart, within 2 MiB.
fn small_iolog(dir: &Path) -> PathBuf {
    let mut text = String::from("fio version 3 iolog\n0 /dev/sdz add\n0 /dev/sdz open\n");
    for i in 0..50u64 {
        let (op, len) = if i % 5 == 4 { ("write", 16384) } else { ("read", 8192) };
        text.push_str(&format!("{} /dev/sdz {op} {} {len}\n", 100 * (i + 1), (i * 40_960) % (2 << 20)));
    }
    text.push_str("5200 /dev/sdz close\n");
    let path = dir.join("small.iolog");
    std::fs::write(&path, text).expect("iolog");
    path
}

/// (reads, read bytes, writes, write bytes) of a fio iolog.
fn iolog_counts(path: &Path) -> (u64, u64, u64, u64) {
    let text = std::fs::read_to_string(path).expect("iolog");
    let mut counts = (0, 0, 0, 0);
    for fields in text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()) {
        let len = fields.get(4).and_then(|l| l.parse::<u64>().ok());
        match (fields.get(2), len) {
            (Some(&"read"), Some(len)) => (counts.0, counts.1) = (counts.0 + 1, counts.1 + len),
            (Some(&"write"), Some(len)) => (counts.2, counts.3) = (counts.2 + 1, counts.3 + len),
            _ => {}
        }
    }
    counts
}

fn fleet_replay(dir: &Path, agents: &[Agent], traces: &[&Path], extra: &[&str]) -> std::process::Output {
    let (list, token) = (hosts(agents), token_file(dir));
    let db = dir.join("results.db");
    let mut args = vec!["--db", utf8(&db), "fleet", "--hosts", &list, "--token-file", utf8(&token), "replay"];
    args.extend(traces.iter().map(|t| utf8(t)));
    args.extend(["--target", "/proc/self/cwd/t", "--allow-destroy"]);
    args.extend(extra);
    run_in(dir, &args)
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[test]
fn each_host_replays_its_own_trace_on_its_own_target_and_the_fidelity_merges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = agents_with_targets(dir.path(), &[8, 4], true);
    // Host 0 gets the kernel's records of a fio run over a 1 GiB device (wrapped onto its
    // 8 MiB); host 1 a small iolog that fits its 4 MiB as it is.
    let (blktrace, small) = (fixture("fio-mixed.blktrace.0"), small_iolog(dir.path()));
    let out = fleet_replay(dir.path(), &agents, &[&blktrace, &small], &["--fit", "wrap", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.replay/1");
    let job = &report["run"]["jobs"][0];
    // Each host did exactly its own trace's reads and writes (the blktrace records are the
    // requests of fio-mixed.iolog).
    let expected = [iolog_counts(&fixture("fio-mixed.iolog")), iolog_counts(&small)];
    let per_host = job["fleet"]["hosts"].as_array().expect("a fleet job");
    assert_eq!(per_host.len(), 2);
    for (host, (reads, read_bytes, writes, write_bytes)) in per_host.iter().zip(expected) {
        let got = (
            u64_at(&host["read"], "ios"),
            u64_at(&host["read"], "bytes"),
            u64_at(&host["write"], "ios"),
            u64_at(&host["write"], "bytes"),
        );
        assert_eq!(got, (reads, read_bytes, writes, write_bytes), "{}", host["host"]);
    }
    // The fleet's replay: every request of both traces, the fits and sources of both.
    let merged = &job["groups"][0]["replay"];
    let all = expected.iter().map(|c| c.0 + c.2).sum::<u64>();
    assert_eq!((u64_at(merged, "requests"), u64_at(merged, "completed")), (all, all), "{merged}");
    assert_eq!(merged["fit"], "wrap");
    let source = merged["source"].as_str().unwrap();
    assert!(source.contains("fio-mixed.blktrace.0") && source.contains("small.iolog"), "{source}");
    // Kept times: the lag is the union of the hosts' (its most is the worst host's).
    assert!(merged["lag"]["percentiles"].is_array() && merged["late_pct"].is_number(), "{merged}");
    let hosts = report["summary"]["hosts"].as_array().expect("each host's replay");
    let most = hosts.iter().map(|h| u64_at(&h["replay"], "max_lag_ns")).max().unwrap();
    assert_eq!(u64_at(merged, "max_lag_ns"), most);
    // Each host's own: its trace, its fit, and its latencies beside that trace's service times
    // (the blktrace records carry them; an iolog does not).
    let traces: Vec<&str> = hosts.iter().map(|h| h["trace"].as_str().unwrap()).collect();
    assert!(traces[0].ends_with("fio-mixed.blktrace.0") && traces[1].ends_with("small.iolog"), "{traces:?}");
    assert_eq!(
        (&hosts[0]["replay"]["fit"], &hosts[1]["replay"]["fit"]),
        (&"wrap".into(), &serde_json::Value::Null)
    );
    for (host, (reads, _, writes, _)) in hosts.iter().zip(expected) {
        assert_eq!(u64_at(&host["replay"], "completed"), reads + writes, "{host}");
    }
    assert_eq!(hosts[0]["versus_capture"].as_array().map(Vec::len), Some(2), "{}", hosts[0]);
    assert_eq!(hosts[1]["versus_capture"].as_array().map(Vec::len), Some(0), "{}", hosts[1]);
    // The targets kept their sizes: the wrapped trace stayed inside host 0's 8 MiB.
    for (i, mib) in [8, 4].into_iter().enumerate() {
        let len = std::fs::metadata(dir.path().join(format!("host{i}/t"))).expect("target").len();
        assert_eq!(len, mib * MIB);
    }
}

#[test]
fn one_trace_goes_to_every_host_and_a_count_that_matches_neither_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = agents_with_targets(dir.path(), &[4, 4], true);
    let small = small_iolog(dir.path());
    let out = fleet_replay(dir.path(), &agents, &[&small, &small, &small], &["--speed", "max"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("3 traces for 2 hosts"), "{}", stderr(&out));

    let out = fleet_replay(dir.path(), &agents, &[&small], &["--speed", "max", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let (reads, _, writes, _) = iolog_counts(&small);
    for host in report["summary"]["hosts"].as_array().unwrap() {
        assert!(host["trace"].as_str().unwrap().ends_with("small.iolog"));
        assert_eq!(u64_at(&host["replay"], "completed"), reads + writes, "{host}");
        assert!(host["replay"]["lag"].is_null(), "as fast as possible keeps no times: {host}");
    }
    assert_eq!(u64_at(&report["run"]["jobs"][0]["groups"][0]["replay"], "requests"), 2 * (reads + writes));
}
