//! Fleet mode end to end: real agents on loopback ports, the real coordinator, and the faults a
//! cluster throws at it (a killed agent, a vanished coordinator, a host that refuses).

mod common;

use std::time::Duration;

use common::fleet::{hosts, token_file, Agent};
use common::{dir_with_target, iolab, json, run_in, spawn_in, stderr};

fn fleet_args<'a>(hosts: &'a str, token: &'a str) -> Vec<&'a str> {
    vec!["fleet", "--hosts", hosts, "--token-file", token]
}

/// A short run of the null engine on `target`: what a test that is not about I/O runs.
fn null_workload(target: &std::path::Path) -> [&str; 8] {
    let target = target.to_str().expect("a UTF-8 path");
    ["--target", target, "--engine", "null", "--runtime", "300ms", "--ramp", "0"]
}

fn agents(dir: &std::path::Path, n: usize) -> Vec<Agent> {
    (0..n).map(|_| Agent::start(dir, "127.0.0.1:0", &[])).collect()
}

fn host_results(job: &serde_json::Value) -> Vec<serde_json::Value> {
    job["fleet"]["hosts"].as_array().expect("a fleet job has hosts").clone()
}

#[test]
fn a_fleet_run_merges_every_host_into_one_result() {
    let dir = dir_with_target();
    let agents = agents(dir.path(), 3);
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let target = dir.path().join("t");
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(["--target", target.to_str().unwrap(), "--engine", "psync", "--qd", "2", "--runtime", "1s"]);
    args.extend(["--ramp", "0", "--json"]);
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let job = &report["jobs"][0];
    let hosts = host_results(job);
    assert_eq!(hosts.len(), 3);
    assert!(hosts.iter().all(|h| h["status"] == "ok"), "{hosts:?}");
    let sum: u64 = hosts.iter().map(|h| h["total"]["ios"].as_u64().unwrap()).sum();
    assert_eq!(job["total"]["ios"].as_u64(), Some(sum), "the merged I/Os are every host's");
    assert!(sum > 0);
    let sum_iops: f64 = hosts.iter().map(|h| h["total"]["iops"].as_f64().unwrap()).sum();
    assert!((job["total"]["iops"].as_f64().unwrap() - sum_iops).abs() < 1e-6 * sum_iops.max(1.0));
    // Each host's target shows up once, under its host's name.
    let targets = job["groups"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3);
    assert!(targets.iter().all(|t| t["path"].as_str().unwrap().ends_with("/t")));
    assert!(job["fleet"]["start_skew_ns"].as_u64().is_some());
    assert!(job["verdict"]["summary"].as_str().is_some_and(|s| !s.is_empty()));
    // The text report names the hosts.
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(null_workload(&target));
    let out = run_in(dir.path(), &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("fleet of 3 hosts"), "{text}");
    for agent in &agents {
        assert!(text.contains(&agent.address), "{text}");
    }
}

#[test]
fn a_killed_agent_is_marked_failed_and_the_others_finish_then_it_restarts_cleanly() {
    let dir = dir_with_target();
    let mut agents = agents(dir.path(), 3);
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let target = dir.path().join("t");
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend([
        "--target",
        target.to_str().unwrap(),
        "--engine",
        "psync",
        "--runtime",
        "5s",
        "--ramp",
        "0",
    ]);
    args.extend(["--qd", "1", "--json", "--interval", "250ms"]);
    let coordinator = spawn_in(dir.path(), &args);
    // Killed once every agent runs the job, with a second of it (4 intervals) streamed: a fixed
    // 2.5 s after the coordinator started, a busy machine had not begun it, and nothing was kept.
    agents.iter().for_each(|agent| common::wait_until_running(agent.child.id()));
    std::thread::sleep(Duration::from_millis(1000));
    agents[1].kill();
    let out = coordinator.wait_with_output().expect("the coordinator ends");
    assert_eq!(out.status.code(), Some(3), "a lost host is a partial result: {}", stderr(&out));
    assert!(stderr(&out).contains(&format!("host {} failed", agents[1].address)), "{}", stderr(&out));
    let report = json(&out);
    let job = &report["jobs"][0];
    let hosts = host_results(job);
    assert_eq!(hosts[1]["status"], "failed");
    assert!(hosts[1]["failure"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(!hosts[1]["series"].as_array().unwrap().is_empty(), "what it streamed before it died is kept");
    assert!(hosts[0]["status"] == "ok" && hosts[2]["status"] == "ok");
    let merged: u64 = [&hosts[0], &hosts[2]].iter().map(|h| h["total"]["ios"].as_u64().unwrap()).sum();
    assert_eq!(job["total"]["ios"].as_u64(), Some(merged), "only the finished hosts are merged");

    // The same agent, restarted on its port, serves the next run.
    let address = agents[1].address.clone();
    agents[1] = Agent::start(dir.path(), &address, &[]);
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(null_workload(&target));
    args.push("--json");
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(host_results(&json(&out)["jobs"][0]).iter().all(|h| h["status"] == "ok"));
}

#[test]
fn a_frozen_agent_is_given_up_after_its_silence_and_the_others_finish() {
    let dir = dir_with_target();
    let agents = agents(dir.path(), 2);
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let target = dir.path().join("t");
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(["--target", target.to_str().unwrap(), "--engine", "psync", "--qd", "1"]);
    args.extend(["--runtime", "3s", "--ramp", "0", "--json"]);
    let coordinator = spawn_in(dir.path(), &args);
    // Frozen once both run the job, with a second of it streamed: frozen earlier (a busy machine
    // slow to start it), it held what the other agent waited for beside it on this one machine.
    agents.iter().for_each(|agent| common::wait_until_running(agent.child.id()));
    std::thread::sleep(Duration::from_millis(1000));
    // SIGSTOP: its connections stay open and say nothing, as a hung host's or a cut link's.
    let frozen = agents[1].child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-STOP", &frozen]).status().unwrap().success());
    let out = coordinator.wait_with_output().expect("the coordinator ends");
    let _ = std::process::Command::new("kill").args(["-CONT", &frozen]).status();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let hosts = host_results(&json(&out)["jobs"][0]);
    assert_eq!(hosts[0]["status"], "ok");
    assert_eq!(hosts[1]["status"], "failed");
    assert!(hosts[1]["failure"].as_str().unwrap().contains("said nothing"), "{}", hosts[1]);
}

#[test]
fn agents_stop_the_job_when_the_coordinator_vanishes() {
    let dir = dir_with_target();
    let agents = agents(dir.path(), 2);
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let target = dir.path().join("t");
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(["--lease", "2s", "--target", target.to_str().unwrap(), "--engine", "psync", "--qd", "1"]);
    args.extend(["--runtime", "60s", "--ramp", "0", "--quiet"]);
    let mut coordinator = spawn_in(dir.path(), &args);
    agents.iter().for_each(|agent| common::wait_until_running(agent.child.id()));
    for agent in &agents {
        assert!(!agent.hello().expect("the agent answers")["session"].is_null(), "the job runs");
    }
    coordinator.kill().expect("SIGKILL");
    let _ = coordinator.wait();
    for agent in &agents {
        // The lease (2 s) runs out; the job stops within a second more (room left for a loaded machine).
        let idle = agent.wait_idle(Duration::from_secs(8));
        assert!(idle.is_ok(), "{idle:?}; agent log: {}", agent.log());
        assert!(agent.log().contains("silent"), "the agent says why it stopped: {}", agent.log());
    }
}

#[test]
fn one_refusing_host_means_nothing_starts_anywhere() {
    let dir = dir_with_target();
    let allowed = dir.path().to_str().unwrap().to_string();
    let writer = Agent::start(dir.path(), "127.0.0.1:0", &["--allow-write", &allowed]);
    let reader = Agent::start(dir.path(), "127.0.0.1:0", &[]);
    let list = format!("{},{}", writer.address, reader.address);
    let token = token_file(dir.path());
    let target = dir.path().join("t");
    let before = std::fs::read(&target).unwrap();
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(["--target", target.to_str().unwrap(), "--rw", "randwrite", "--engine", "psync"]);
    args.extend(["--runtime", "1s", "--ramp", "0"]);
    let out = run_in(dir.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains(&reader.address) && said.contains("--allow-write"), "{said}");
    assert!(said.contains("nothing was started"), "{said}");
    assert_eq!(std::fs::read(&target).unwrap(), before, "no host wrote");
}

#[test]
fn a_wrong_token_or_a_missing_agent_is_refused_before_anything_runs() {
    let dir = dir_with_target();
    let agent = Agent::start(dir.path(), "127.0.0.1:0", &[]);
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-token\n").unwrap();
    let out =
        run_in(dir.path(), &["fleet", "--hosts", &agent.address, "--token-file", wrong.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("token"), "{}", stderr(&out));

    let token = token_file(dir.path());
    let list = format!("{},127.0.0.1:1", agent.address);
    let out = run_in(dir.path(), &["fleet", "--hosts", &list, "--token-file", token.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("127.0.0.1:1") && stderr(&out).contains("nothing was started"));
    assert!(agent.hello().unwrap()["session"].is_null(), "the reachable agent's session was closed");
}

#[test]
fn a_sweep_runs_every_point_in_lock_step_across_the_fleet() {
    let dir = dir_with_target();
    let agents = agents(dir.path(), 2);
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let target = dir.path().join("t");
    let mut args = fleet_args(&list, token.to_str().unwrap());
    args.extend(["sweep", "--qd", "1,4", "--json"]);
    args.extend(null_workload(&target));
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let jobs = report["run"]["jobs"].as_array().expect("the sweep's jobs").clone();
    assert_eq!(jobs.len(), 2, "{report}");
    for job in &jobs {
        assert_eq!(host_results(job).len(), 2);
    }
}

#[test]
fn ramps_and_suites_run_across_the_fleet_with_the_rate_shared_by_the_hosts() {
    let dir = dir_with_target();
    let allowed = dir.path().to_str().unwrap().to_string();
    let agents: Vec<Agent> =
        (0..2).map(|_| Agent::start(dir.path(), "127.0.0.1:0", &["--allow-write", &allowed])).collect();
    let (list, token) = (hosts(&agents), token_file(dir.path()));
    let target = dir.path().join("t");
    let fleet = ["fleet", "--hosts", &list, "--token-file", token.to_str().unwrap()];
    let workload = null_workload(&target);
    let mut args: Vec<&str> = fleet.to_vec();
    args.extend(["run", "--rate-iops", "2000", "--json"]);
    args.extend(workload);
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let job = &report["jobs"][0];
    for host in host_results(job) {
        let iops = host["total"]["iops"].as_f64().unwrap();
        assert!(iops < 1500.0, "each host ran half of the fleet's 2000 IOPS: {iops}");
    }
    let rate = &job["groups"][0]["rate"];
    assert_eq!(rate["target_iops"].as_f64(), Some(2000.0), "{rate}");

    let mut args: Vec<&str> = fleet.to_vec();
    args.extend(["ramp", "--levels", "50,100", "--json"]);
    args.extend(workload);
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let jobs = report["run"]["jobs"].as_array().expect("the ramp's jobs");
    assert_eq!(jobs.len(), 3, "the maximum, then two levels");
    assert!(jobs.iter().all(|job| host_results(job).len() == 2));

    let mut args: Vec<&str> = fleet.to_vec();
    args.extend(["suite", "quick", "--json"]);
    args.extend(workload);
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let jobs = json(&out)["run"]["jobs"].as_array().expect("the suite's jobs").clone();
    assert_eq!(jobs.len(), 8);
    assert!(jobs.iter().all(|job| host_results(job).len() == 2));
}

#[test]
fn study_options_go_after_the_subcommand() {
    let dir = dir_with_target();
    let token = token_file(dir.path());
    let out = iolab()
        .args([
            "fleet",
            "--hosts",
            "127.0.0.1:1",
            "--token-file",
            token.to_str().unwrap(),
            "--qd",
            "4",
            "sweep",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("after the subcommand"), "{}", stderr(&out));
}

/// An agent allowed to write a directory still never grows a file there that iolab did not make
/// for a job that reads it (issue 32): the agent opens it for writing to lay it out, and the
/// runner refuses before any byte is written.
#[test]
fn a_read_job_never_grows_a_user_s_file_beneath_allow_write() {
    let dir = dir_with_target();
    let allowed = dir.path().to_str().expect("a UTF-8 path").to_string();
    let agent = Agent::start(dir.path(), "127.0.0.1:0", &["--allow-write", &allowed]);
    let token = token_file(dir.path());
    let target = dir.path().join("t");
    let before = std::fs::read(&target).expect("t");
    let mut args = fleet_args(&agent.address, token.to_str().expect("a UTF-8 path"));
    args.extend(["--target", target.to_str().expect("a UTF-8 path"), "--rw", "randread", "--size", "2m"]);
    args.extend(["--engine", "psync", "--runtime", "300ms", "--ramp", "0"]);
    let out = run_in(dir.path(), &args);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("holds 1MiB, --size asks 2MiB"), "{said}");
    assert!(std::fs::read(&target).expect("t") == before, "t is as it was");
}
