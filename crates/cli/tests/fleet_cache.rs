//! `iolab fleet cache` end to end: real agents on loopback ports and the real coordinator. Each
//! agent runs in a directory of its own and the job names `/proc/self/cwd/t`, which every agent
//! resolves to its own directory's file: two "hosts" with targets of different sizes on one
//! machine. The null engine keeps it fast; the tier detection itself is tested in
//! crates/analysis (a real cache tier needs root and a memory cgroup: crates/cli/tests/cache.rs).

mod common;

use std::path::Path;

use common::fleet::{agents_with_targets, hosts, token_file, Agent};
use common::{json, run_in, stderr, u64_at};

const MIB: u64 = 1 << 20;

fn fleet_cache(dir: &Path, agents: &[Agent], extra: &[&str]) -> std::process::Output {
    let (list, token) = (hosts(agents), token_file(dir));
    let db = dir.join("results.db");
    let mut args =
        vec!["--db", db.to_str().expect("a UTF-8 path"), "fleet", "--hosts", &list, "--token-file"];
    args.push(token.to_str().expect("a UTF-8 path"));
    args.extend(["cache", "--engine", "null", "--runtime", "100ms", "--ramp", "0", "--promotion-time", "0"]);
    args.extend(["--no-pollution"]);
    args.extend(extra);
    run_in(dir, &args)
}

#[test]
fn each_host_runs_the_ladder_in_its_own_region_and_the_merge_is_exact() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = agents_with_targets(dir.path(), &[4, 8], false);
    let out = fleet_cache(dir.path(), &agents, &["/proc/self/cwd/t", "--sizes", "25%,100%", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.cache/1");
    let summary = &report["summary"];
    let hosts = summary["fleet"]["hosts"].as_array().expect("per-host results");
    assert_eq!(hosts.len(), 2);
    assert_eq!(summary["fleet"]["refinement"], "union");
    // Each host's working sets are shares of its own region.
    for (host, (agent, mib)) in hosts.iter().zip(agents.iter().zip([4u64, 8])) {
        assert_eq!(host["host"].as_str(), Some(agent.address.as_str()));
        assert!(host["failure"].is_null(), "{host}");
        let own = &host["summary"];
        assert_eq!(u64_at(own, "region_bytes"), mib * MIB);
        let asked: Vec<u64> = own["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["refined"] == false)
            .map(|p| u64_at(p, "working_set_bytes"))
            .collect();
        assert_eq!(asked, vec![mib * MIB / 4, mib * MIB], "host of {mib} MiB");
        assert!(own["points"].as_array().unwrap().iter().all(|p| p["iops"].as_f64().unwrap() > 0.0), "{own}");
    }
    // The merged curve: every host's working set summed, at every point the hosts ran.
    assert_eq!(u64_at(summary, "region_bytes"), 12 * MIB);
    let merged: Vec<u64> = summary["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["refined"] == false)
        .map(|p| u64_at(p, "working_set_bytes"))
        .collect();
    assert_eq!(merged, vec![3 * MIB, 12 * MIB]);
    assert_eq!(summary["judged"], false, "the merged curve's tiers are judged per host");
    assert!(!summary["fleet"]["sentences"].as_array().unwrap().is_empty());
    // Every job (warm passes included) is one merged result whose reads are the hosts' sum,
    // counted from each host's exact histogram.
    let jobs = report["run"]["jobs"].as_array().unwrap();
    assert!(jobs.len() >= 4, "a warm pass and a measurement per working set: {}", jobs.len());
    for job in jobs {
        let per_host = job["fleet"]["hosts"].as_array().expect("a fleet job");
        let sum: u64 = per_host.iter().map(|h| u64_at(&h["read"], "ios")).sum();
        assert_eq!(u64_at(&job["read"], "ios"), sum, "job {}", job["name"]);
        assert!(sum > 0, "job {}", job["name"]);
    }
    // The hosts' warm passes read their own working sets: 1 and 2 MiB at 25%.
    let warm = jobs.iter().find(|j| j["name"] == "warm 25%").expect("the first warm pass");
    let bytes: Vec<u64> = warm["fleet"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| u64_at(&h["read"], "ios") * 128 * 1024)
        .collect();
    assert_eq!(bytes, vec![MIB, 2 * MIB]);
    // Each measured point of a host is the host's own figure in the merged job.
    let measured = jobs.iter().find(|j| j["name"] == "working set 100%").expect("the last point");
    for (host, per_host) in hosts.iter().zip(measured["fleet"]["hosts"].as_array().unwrap()) {
        let point = host["summary"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["refined"] == false
                    && u64_at(p, "working_set_bytes") == u64_at(&host["summary"], "region_bytes")
            })
            .expect("the host's 100% point")
            .clone();
        let iops = (point["iops"].as_f64().unwrap() - per_host["read"]["iops"].as_f64().unwrap()).abs();
        assert!(iops < 1e-6, "{point} vs {per_host}");
    }
}

#[test]
fn a_fleet_cache_run_is_kept_as_one_run_that_reports_per_host() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = agents_with_targets(dir.path(), &[2, 4], false);
    let out = fleet_cache(dir.path(), &agents, &["/proc/self/cwd/t", "--sizes", "50%,100%"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("read cache and tiers on a fleet of 2 host(s)"), "{text}");
    for agent in &agents {
        assert!(text.contains(&format!("host {}", agent.address)), "{text}");
    }
    assert!(text.contains("(region 2MiB)") && text.contains("(region 4MiB)"), "{text}");
    assert!(text.contains("fleet, merged"), "{text}");
    // The hosts at a glance: one line each, with its region.
    assert!(text.contains("tiers (capacity: hit / miss)"), "{text}");
    for (agent, region) in agents.iter().zip(["2MiB", "4MiB"]) {
        let line = text.lines().find(|l| l.trim_start().starts_with(agent.address.as_str()));
        assert!(line.is_some_and(|l| l.contains(region)), "{text}");
    }
    let db = dir.path().join("results.db");
    let listed = run_in(dir.path(), &["--db", db.to_str().unwrap(), "results", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("fleet cache"), "{listed}");
    let html = dir.path().join("r.html");
    let out =
        run_in(dir.path(), &["--db", db.to_str().unwrap(), "report", "1", "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).expect("the report");
    for agent in &agents {
        assert!(page.contains(&format!("host {}", agent.address)), "each host's curve is drawn");
    }
}

#[test]
fn a_target_the_agents_would_have_to_write_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = agents_with_targets(dir.path(), &[1, 1], false);
    // Missing on every host and outside any --allow-write: laying it out would be a write.
    let missing = dir.path().join("nothing-here");
    let out = fleet_cache(dir.path(), &agents, &[missing.to_str().unwrap(), "--sizes", "50%"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("nothing was started"), "{err}");
    assert!(agents.iter().any(|a| err.contains(&a.address)), "the refusing host is named: {err}");
    assert!(!missing.exists(), "nothing was created");
    // Without a target each agent would lay out a scratch file anew for every working set.
    let out = fleet_cache(dir.path(), &agents, &["--sizes", "50%"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("needs a target on the hosts"), "{}", stderr(&out));
}

#[test]
fn a_working_set_larger_than_a_hosts_region_names_the_host() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = agents_with_targets(dir.path(), &[1, 4], false);
    let out = fleet_cache(dir.path(), &agents, &["/proc/self/cwd/t", "--sizes", "2m"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&agents[0].address) && err.contains("larger than the region"), "{err}");
}

#[test]
fn a_host_lost_mid_study_keeps_its_working_sets_and_the_others_finish() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut agents = agents_with_targets(dir.path(), &[2, 2], false);
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let db = dir.path().join("results.db");
    let mut args = vec!["--db", db.to_str().unwrap(), "fleet", "--hosts", &list, "--token-file"];
    args.push(token.to_str().unwrap());
    args.extend(["cache", "/proc/self/cwd/t", "--engine", "null", "--runtime", "300ms", "--ramp", "0"]);
    args.extend(["--promotion-time", "0", "--no-pollution", "--json"]);
    args.extend(["--sizes", "10%,20%,30%,40%,50%,60%,70%,80%,90%,100%"]);
    let coordinator = common::spawn_in(dir.path(), &args);
    // Two working sets done (a warm pass and a measurement each).
    common::wait_until_kept(&db, 4);
    agents[1].kill();
    let out = coordinator.wait_with_output().expect("the coordinator ends");
    assert_eq!(out.status.code(), Some(3), "a lost host is a partial result: {}", stderr(&out));
    let report = json(&out);
    let summary = &report["summary"];
    let hosts = summary["fleet"]["hosts"].as_array().unwrap();
    assert!(hosts[0]["failure"].is_null());
    assert!(hosts[1]["failure"].as_str().is_some_and(|r| r.contains("dropped out")), "{}", hosts[1]);
    // The working sets asked for (a busy machine's stall could make the null engine's curve
    // look like a tier and add refined ones).
    let points = |h: &serde_json::Value| {
        h["summary"]["points"].as_array().unwrap().iter().filter(|p| p["refined"] == false).count()
    };
    assert_eq!(points(&hosts[0]), 10, "the host that stayed measured every working set");
    assert!(
        (2..10).contains(&points(&hosts[1])),
        "the lost host keeps what it measured: {}",
        points(&hosts[1])
    );
    // From the loss on, the merged curve is the host that stayed.
    let last = summary["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(u64_at(&last, "working_set_bytes"), 2 * MIB, "{last}");
}

#[test]
fn a_local_and_a_fleet_cache_run_compare_their_working_sets_by_share_of_the_region() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The fleet's first host reads 4 MiB, the local run 8 MiB: "working set 25%" is 1 MiB there,
    // "working set 2MiB" here, and the fleet's 100% is the size of the local 50%.
    let agents = agents_with_targets(dir.path(), &[4, 8], false);
    std::fs::write(dir.path().join("local"), vec![7u8; (8 * MIB) as usize]).expect("target");
    let db = dir.path().join("results.db");
    let db = db.to_str().expect("a UTF-8 path");
    // A rise no curve reaches: no tier, so no refined working set that a busy machine's stall
    // could add beside the ones asked for.
    let study = ["--engine", "null", "--runtime", "100ms", "--ramp", "0", "--promotion-time", "0"];
    let study = [&study[..], &["--no-pollution", "--rise-pct", "1000000", "--sizes"]].concat();
    let mut local = vec!["--db", db, "cache", "local"];
    local.extend(&study);
    local.push("25%,50%,100%");
    let out = run_in(dir.path(), &local);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = fleet_cache(
        dir.path(),
        &agents,
        &["/proc/self/cwd/t", "--rise-pct", "1000000", "--sizes", "25%,100%"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_in(dir.path(), &["--db", db, "compare", "1", "2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let comparison = json(&out);
    assert_eq!(comparison["sides"][1]["matched_by"], "workload", "{comparison}");
    let member = |row: &str| {
        let rows = comparison["rows"].as_array().expect("rows");
        rows.iter().find(|r| r["name"] == row).map(|r| r["members"][1].clone())
    };
    for row in ["warm 2MiB", "working set 2MiB", "warm 8MiB", "working set 8MiB"] {
        assert!(member(row).is_some_and(|m| !m.is_null()), "{row} matched: {comparison}");
    }
    // The local 50% (4 MiB) is the fleet's first host's 100% by size, not by share.
    assert!(member("working set 4MiB").is_none(), "{comparison}");
    let unmatched = comparison["unmatched"].as_array().expect("unmatched");
    assert!(unmatched.iter().any(|u| u["point"] == "working set 4MiB"), "{comparison}");
    let notes = comparison["notes"].to_string();
    assert!(notes.contains("#2's working sets matched to #1's by their share of the region"), "{notes}");
    assert!(
        notes.contains("25% as 2MiB, 100% as 8MiB") || notes.contains("100% as 8MiB, 25% as 2MiB"),
        "{notes}"
    );
}
