//! `iolab fleet files`: two real agents on loopback ports, each with its own --allow-write
//! directory standing for its host's disk, the fileset run on both phase by phase, its counts
//! merged exactly; and what an agent refuses with nothing touched (a DIR outside
//! --allow-write, one reached through a symbolic link, a foreign non-empty one).

mod common;

use std::path::{Path, PathBuf};

use common::fleet::{hosts, token_file, Agent};
use common::tmpfs::Tmpfs;
use common::{json, needs_root_and, run_in, skip, stderr};

/// Two agents, each allowed to write only its own directory `host<i>` of `dir`.
fn two_agents(dir: &Path) -> (Vec<Agent>, Vec<PathBuf>) {
    let allowed: Vec<PathBuf> = (0..2).map(|i| dir.join(format!("host{i}"))).collect();
    let agents = allowed
        .iter()
        .map(|path| {
            std::fs::create_dir(path).expect("the allowed directory");
            Agent::start(dir, "127.0.0.1:0", &["--allow-write", path.to_str().expect("utf-8")])
        })
        .collect();
    (agents, allowed)
}

/// `iolab fleet --hosts AGENTS --token-file T [fleet] files [rest]`'s arguments, run in `dir`.
fn fleet_files_args(dir: &Path, agents: &[Agent], fleet: &[&str], rest: &[&str]) -> Vec<String> {
    let token = token_file(dir);
    let mut args = vec!["fleet".to_string(), "--hosts".into(), hosts(agents), "--token-file".into()];
    args.push(token.to_str().expect("utf-8").to_string());
    args.extend(fleet.iter().map(|a| a.to_string()));
    args.push("files".into());
    args.extend(rest.iter().map(|a| a.to_string()));
    args
}

fn fleet_files(dir: &Path, agents: &[Agent], rest: &[&str]) -> std::process::Output {
    let args = fleet_files_args(dir, agents, &[], rest);
    run_in(dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn every_phase_runs_on_every_host_and_merges_to_the_plan_times_the_hosts() {
    let temp = tempfile::tempdir().expect("temp dir");
    let (agents, allowed) = two_agents(temp.path());
    let job = temp.path().join("small.toml");
    std::fs::write(
        &job,
        "files = 300\ndirs_per_dir = 3\nsizes = \"1k:3,4k:1\"\nthreads = 2\nengine = \"sync\"\n\
         phases = [\"mkdir\", \"create\", \"stat\", \"read\", \"rename\", \"unlink\", \"rmdir\"]\n",
    )
    .expect("job file");
    // Host n builds its tree in its own allowed directory: `{n}` is its place in the list.
    let dir = format!("{}/host{{n}}/tree", temp.path().display());
    let db = temp.path().join("results.db");
    let out = fleet_files(
        temp.path(),
        &agents,
        &[job.to_str().expect("utf-8"), &dir, "--json", "--db", db.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.files/1");
    let hosts = report["fleet"]["hosts"].as_array().expect("per host");
    assert_eq!(hosts.len(), 2);
    assert!(hosts.iter().all(|h| h["status"] == "ok"), "{hosts:?}");
    for (i, host) in hosts.iter().enumerate() {
        assert!(host["dir"].as_str().expect("its dir").ends_with(&format!("host{i}/tree")), "{host}");
    }
    let phases = report["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases.iter().map(|p| p["phase"].as_str().expect("name")).collect();
    assert_eq!(names, ["mkdir", "create", "stat", "read", "rename", "unlink", "rmdir"]);
    // 2 threads x (1 + 3) directories, 300 files, on each of two hosts.
    let planned_per_host = [8u64, 300, 300, 300, 300, 300, 8];
    for (i, phase) in phases.iter().enumerate() {
        let done = phase["done"].as_u64().expect("done");
        assert_eq!(phase["planned"].as_u64(), Some(2 * planned_per_host[i]), "{}", names[i]);
        assert_eq!(done, 2 * planned_per_host[i], "{}: the plan times the hosts", names[i]);
        let per_host: Vec<&serde_json::Value> = hosts.iter().map(|h| &h["phases"][i]).collect();
        let host_done: u64 = per_host.iter().map(|p| p["done"].as_u64().expect("done")).sum();
        assert_eq!(done, host_done, "{}: the merged count is the hosts' sum", names[i]);
        // Every kind's merged histogram counts every host's operations of that kind.
        for kind in phase["kinds"].as_array().expect("kinds") {
            let name = &kind["kind"];
            let ios: u64 = per_host
                .iter()
                .flat_map(|p| p["kinds"].as_array().expect("kinds"))
                .filter(|k| &k["kind"] == name)
                .map(|k| k["summary"]["ios"].as_u64().expect("ios"))
                .sum();
            assert_eq!(kind["summary"]["ios"].as_u64(), Some(ios), "{}: kind {name}", names[i]);
            assert!(
                kind["summary"]["latency"]["percentiles"].is_array()
                    || kind["summary"]["latency"].is_object()
            );
        }
        let main = &phase["kinds"][0];
        assert_eq!(main["summary"]["ios"].as_u64(), Some(done), "{}: its own kind first", names[i]);
        let rates: f64 = per_host.iter().map(|p| p["ops_per_s"].as_f64().expect("rate")).sum();
        let rate = phase["ops_per_s"].as_f64().expect("rate");
        assert!((rate - rates).abs() <= 1e-9 * rates.max(1.0), "{}: rates summed", names[i]);
        let series: u64 =
            phase["series"].as_array().expect("series").iter().map(|s| s["ops"].as_u64().unwrap()).sum();
        assert_eq!(series, done, "{}: the series counts every operation", names[i]);
        let first = phase["stonewall"]["first_done_s"].as_f64().expect("stonewall");
        assert!(first <= phase["elapsed_s"].as_f64().expect("elapsed") + 1e-9);
    }
    // Each phase's start skew is measured (its size is the machine's business, not the test's).
    let skews = report["fleet"]["phases"].as_array().expect("per phase");
    assert_eq!(skews.len(), 7);
    assert!(skews.iter().all(|p| p["start_skew_ms"].as_f64().is_some_and(|ms| ms >= 0.0)), "{skews:?}");
    // The bytes written are the same on both hosts (same seed, same sizes).
    let bytes: Vec<u64> = hosts.iter().map(|h| h["phases"][1]["bytes"].as_u64().expect("bytes")).collect();
    assert!(bytes[0] > 0 && bytes[0] == bytes[1], "{bytes:?}");
    // Each agent removed its tree and the directory it made.
    for path in &allowed {
        assert_eq!(entries(path), 0, "{} is left with entries", path.display());
    }
    // Kept as one run of kind `fleet files`, a point per phase.
    let shown = run_in(temp.path(), &["results", "show", "1", "--json", "--db", db.to_str().expect("utf-8")]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown = json(&shown);
    let text = shown.to_string();
    assert!(text.contains("fleet files"), "{text}");
    assert!(text.contains("files rmdir"), "{text}");
    // The HTML report draws a panel per phase for it.
    let html = temp.path().join("report.html");
    let args = ["report", "1", "--db", db.to_str().expect("utf-8"), "-o", html.to_str().expect("utf-8")];
    let out = run_in(temp.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).expect("the report");
    assert_eq!(page.matches("class=\"files-phase\"").count(), 7, "a panel per phase");
}

#[test]
fn a_dir_outside_allow_write_is_refused_with_nothing_created() {
    let temp = tempfile::tempdir().expect("temp dir");
    let (agents, allowed) = two_agents(temp.path());
    let outside = temp.path().join("elsewhere");
    let out = fleet_files(
        temp.path(),
        &agents,
        &["--files", "100", "--engine", "sync", "--no-store", outside.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("may not write"), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing was started"), "{}", stderr(&out));
    assert!(!outside.exists(), "nothing made outside --allow-write");
    // One host allowed, the other not: nothing runs on either, and the one that made its
    // directory ready removes it.
    let dir = format!("{}/tree", allowed[0].display());
    let out = fleet_files(temp.path(), &agents, &["--files", "100", "--engine", "sync", "--no-store", &dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&agents[1].address), "the refusing host is named: {}", stderr(&out));
    for agent in &agents {
        agent.wait_idle(std::time::Duration::from_secs(10)).expect("sessions closed");
    }
    assert_eq!(entries(&allowed[0]), 0, "the prepared host removed its tree");
}

#[test]
fn a_symbolic_link_under_allow_write_or_a_foreign_dir_is_refused_untouched() {
    let temp = tempfile::tempdir().expect("temp dir");
    let (agents, allowed) = two_agents(temp.path());
    let outside = temp.path().join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    for path in &allowed {
        std::os::unix::fs::symlink(&outside, path.join("link")).expect("symlink");
    }
    let dir = format!("{}/host{{n}}/link/tree", temp.path().display());
    let out = fleet_files(temp.path(), &agents, &["--files", "100", "--engine", "sync", "--no-store", &dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(entries(&outside), 0, "nothing made through the link");
    // The link itself as DIR: refused too.
    let dir = format!("{}/host{{n}}/link", temp.path().display());
    let out = fleet_files(temp.path(), &agents, &["--files", "100", "--engine", "sync", "--no-store", &dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(entries(&outside), 0, "nothing made through the link");
    // A directory holding someone's files (and no iolab marker) is refused, its files kept.
    for path in &allowed {
        std::fs::create_dir(path.join("data")).expect("mkdir");
        std::fs::write(path.join("data/precious"), b"keep").expect("write");
    }
    let dir = format!("{}/host{{n}}/data", temp.path().display());
    let out = fleet_files(temp.path(), &agents, &["--files", "100", "--engine", "sync", "--no-store", &dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    for agent in &agents {
        agent.wait_idle(std::time::Duration::from_secs(10)).expect("sessions closed");
    }
    for path in &allowed {
        assert_eq!(entries(&path.join("data")), 1);
        assert_eq!(std::fs::read(path.join("data/precious")).expect("kept"), b"keep");
    }
}

/// Two agents, host 1's directory on a tmpfs mounted with `options`; the tmpfs first, so that a
/// caller's binding drops it (unmounts) after the agents that work in it.
fn roomy_and_small(temp: &Path, options: &str) -> (Tmpfs, Vec<Agent>, PathBuf, PathBuf) {
    let roomy = temp.join("host0");
    let small = temp.join("host1");
    std::fs::create_dir(&roomy).expect("mkdir");
    std::fs::create_dir(&small).expect("mkdir");
    let small_fs = Tmpfs::mount(&small, options);
    let agents: Vec<Agent> = [&roomy, &small]
        .iter()
        .map(|path| Agent::start(temp, "127.0.0.1:0", &["--allow-write", path.to_str().expect("utf-8")]))
        .collect();
    (small_fs, agents, roomy, small)
}

/// The tree fits host 1's filesystem when the hosts check it; once its create has begun there,
/// host 1's agent is stopped, its filesystem filled, and let go on into a full filesystem.
fn fleet_files_filled(temp: &Path, agents: &[Agent], small: &Path, rest: &[&str]) -> std::process::Output {
    let args = fleet_files_args(temp, agents, &[], rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let coordinator = common::spawn_in(temp, &args);
    let begun = std::time::Instant::now();
    // Host 1's first file: its create has begun, every directory is made.
    while !small.join("tree/t0/d0/f0").exists() {
        assert!(begun.elapsed() < std::time::Duration::from_secs(60), "host 1's create never began");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let agent = agents[1].child.id() as i32;
    // SAFETY: kill has no memory preconditions; the agent is ours and running.
    assert_eq!(unsafe { libc::kill(agent, libc::SIGSTOP) }, 0);
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(small.join("filler")).expect("the filler");
        while filler.write_all(&[7u8; 64 << 10]).is_ok() {}
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(agent, libc::SIGCONT) }, 0);
    common::output_unless_hung(coordinator, "a fleet run on a filled filesystem")
}

#[test]
fn a_host_whose_filesystem_fills_stops_the_fleet_after_that_phase_and_every_tree_goes() {
    if let Some((missing, why)) = needs_root_and(&["mount"]) {
        return skip!(missing, "{why}");
    }
    // On tmpfs, both hosts: host 0 makes and removes 20,000 files, which on a disk another
    // writer keeps busy took over 300 s (busy run 30).
    let temp = common::tmpfs::shm_dir();
    let (_small_fs, agents, roomy, small) = roomy_and_small(temp.path(), "size=96m");
    let dir = format!("{}/host{{n}}/tree", temp.path().display());
    let args = [
        "--files",
        "20000",
        "--sizes",
        "4k",
        "--engine",
        "sync",
        "--phases",
        "mkdir,create,stat,unlink,rmdir",
    ];
    let rest = [&args[..], &["--json", "--no-store", &dir]].concat();
    let out = fleet_files_filled(temp.path(), &agents, &small, &rest);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message.contains(&agents[1].address) && message.contains("(the filesystem is full)"),
        "{message}"
    );
    // The create is the last phase; host 1 failed in it, host 0 not.
    let report = json(&out);
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 2, "no phase after the create");
    let create = &phases[1];
    assert_eq!(create["failure"]["errno"], 28, "{create}");
    let path = create["failure"]["path"].as_str().expect("path");
    assert!(path.starts_with(&format!("{}:t0/d", agents[1].address)), "{path}");
    let hosts = report["fleet"]["hosts"].as_array().expect("hosts");
    assert_eq!(hosts[0]["phases"][1]["done"].as_u64(), Some(20_000));
    assert!(hosts[1]["phases"][1]["failure"].is_object());
    let done: u64 = hosts.iter().map(|h| h["phases"][1]["done"].as_u64().expect("done")).sum();
    assert_eq!(create["done"].as_u64(), Some(done));
    // Host 0 removes 20,000 files on a busy machine: over 10 s in busy run 29, so the room is
    // the other removal tests'.
    for agent in &agents {
        agent.wait_idle(std::time::Duration::from_secs(300)).expect("sessions closed");
    }
    assert_eq!(entries(&roomy), 0, "the host that did not fail removed its tree too");
    assert_eq!(entries(&small), 1, "the full host removed its tree (the filler is the test's)");
}

/// A tree one host's filesystem cannot hold is refused by that host before any host starts.
#[test]
fn a_tree_too_big_for_one_host_is_refused_before_any_host_starts() {
    if let Some((missing, why)) = needs_root_and(&["mount"]) {
        return skip!(missing, "{why}");
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let (_small_fs, agents, roomy, small) = roomy_and_small(temp.path(), "size=1m");
    let dir = format!("{}/host{{n}}/tree", temp.path().display());
    let out = fleet_files(temp.path(), &agents, &["--files", "1000", "--sizes", "8k", "--no-store", &dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains(&agents[1].address), "{message}");
    assert!(
        message.contains("the tree's files need 7.81MiB") && message.contains("nothing was started"),
        "{message}"
    );
    for agent in &agents {
        agent.wait_idle(std::time::Duration::from_secs(10)).expect("sessions closed");
    }
    assert_eq!((entries(&roomy), entries(&small)), (0, 0), "no tree on any host");
}

#[test]
fn a_coordinator_that_vanishes_mid_run_leaves_no_tree_on_any_host() {
    let temp = tempfile::tempdir().expect("temp dir");
    let (agents, allowed) = two_agents(temp.path());
    let dir = format!("{}/host{{n}}/tree", temp.path().display());
    let rest = ["--files", "400000", "--threads", "2", "--engine", "sync", "--no-store", &dir];
    let args = fleet_files_args(temp.path(), &agents, &["--lease", "1s"], &rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut coordinator = common::spawn_in(temp.path(), &args);
    // Killed once both hosts made their trees ready (whenever that is, the end is the same).
    let markers: Vec<PathBuf> = allowed.iter().map(|p| p.join("tree/.iolab-files")).collect();
    let began = std::time::Instant::now();
    while !markers.iter().all(|m| m.exists()) && began.elapsed() < std::time::Duration::from_secs(60) {
        if coordinator.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = coordinator.kill();
    let _ = coordinator.wait();
    for agent in &agents {
        agent
            .wait_idle(std::time::Duration::from_secs(30))
            .expect("the lease ran out and the session closed");
    }
    for path in &allowed {
        assert_eq!(entries(path), 0, "{} keeps a tree after its coordinator vanished", path.display());
    }
}

#[test]
fn a_host_lost_mid_run_stops_the_fleet_and_the_others_remove_their_trees() {
    let temp = tempfile::tempdir().expect("temp dir");
    let (mut agents, allowed) = two_agents(temp.path());
    let dir = format!("{}/host{{n}}/tree", temp.path().display());
    let rest = ["--files", "50000", "--threads", "2", "--engine", "sync", "--no-store", "--json", &dir];
    let args = fleet_files_args(temp.path(), &agents, &[], &rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let coordinator = common::spawn_in(temp.path(), &args);
    // Killed once its first phase began (its first tree's root is there): in that phase, or
    // in the next, which starts at least 300 ms later; long before the last of six.
    let started = allowed[1].join("tree/t0");
    let began = std::time::Instant::now();
    while !started.exists() && began.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    agents[1].kill();
    let out = coordinator.wait_with_output().expect("the coordinator ends");
    assert_eq!(out.status.code(), Some(3), "a lost host is a partial result: {}", stderr(&out));
    assert!(stderr(&out).contains(&format!("{} dropped out", agents[1].address)), "{}", stderr(&out));
    let report = json(&out);
    let hosts = report["fleet"]["hosts"].as_array().expect("hosts");
    assert_eq!((hosts[0]["status"].as_str(), hosts[1]["status"].as_str()), (Some("ok"), Some("failed")));
    let phases = report["phases"].as_array().expect("phases");
    let lost_in = phases.len() - 1;
    assert!(phases.len() < 6, "the fleet stopped early: {} phases", phases.len());
    assert_eq!(
        hosts[1]["phases"].as_array().expect("its phases").len(),
        lost_in,
        "no phase after the one it was lost in"
    );
    assert_eq!(phases[lost_in]["done"], hosts[0]["phases"][lost_in]["done"], "only the host that ended it");
    // The session closes once the agent has removed its tree: tens of thousands of files on a
    // disk another writer keeps busy took over a minute in busy run 21, so the room is generous.
    let idle = agents[0].wait_idle(std::time::Duration::from_secs(300));
    assert!(idle.is_ok(), "{idle:?}; agent log: {}", agents[0].log());
    assert_eq!(entries(&allowed[0]), 0, "the host still there removed its tree");
}
