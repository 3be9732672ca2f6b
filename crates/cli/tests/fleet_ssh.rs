//! `iolab fleet --ssh`: agents started through ssh, reached through its tunnels, stopped when
//! the coordinator ends. `$IOLAB_SSH` points at a stand-in that runs the remote command here.

mod common;

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::fleet::token_file;
use common::{dir_with_target, iolab, json, stderr, IOLAB};

/// Takes ssh's options, skips the tunnel (the agent listens on the very port the tunnel would
/// forward) and runs the remote command here, its stdin still the coordinator's pipe.
const FAKE_SSH: &str = r#"#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-L) shift 2 ;;
    --) shift; break ;;
    *) host="$1"; shift ;;
  esac
done
echo "$host" >> "$SSH_LOG"
exec sh -c "$1"
"#;

#[test]
fn ssh_starts_an_agent_per_host_and_they_end_with_the_coordinator() {
    let dir = dir_with_target();
    let ssh = dir.path().join("fake-ssh");
    std::fs::write(&ssh, FAKE_SSH).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = dir.path().join("ssh.log");
    let token = token_file(dir.path());
    let target = dir.path().join("t");
    let out = iolab()
        .env("IOLAB_SSH", &ssh)
        .env("SSH_LOG", &log)
        .current_dir(dir.path())
        .args(["fleet", "--ssh", "node-a,node-b", "--ssh-iolab", IOLAB])
        .args(["--token-file", token.to_str().unwrap(), "--target", target.to_str().unwrap()])
        .args(["--engine", "null", "--runtime", "300ms", "--ramp", "0", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut reached: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(String::from).collect();
    reached.sort();
    assert_eq!(reached, ["node-a", "node-b"]);
    let report = json(&out);
    let hosts = report["jobs"][0]["fleet"]["hosts"].as_array().unwrap().clone();
    assert_eq!(hosts.len(), 2);
    assert!(hosts.iter().all(|h| h["status"] == "ok"), "{hosts:?}");
    // The agents stop once the coordinator has gone: their ports close.
    for host in &hosts {
        let address = host["host"].as_str().unwrap();
        let started = Instant::now();
        while TcpStream::connect(address).is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the agent at {address} outlived its coordinator"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn an_ssh_host_that_cannot_start_an_agent_is_named() {
    let dir = dir_with_target();
    let ssh = dir.path().join("failing-ssh");
    std::fs::write(&ssh, "#!/bin/sh\necho 'ssh: Could not resolve hostname nowhere' >&2\nexit 255\n")
        .unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let token = token_file(dir.path());
    let out = iolab()
        .env("IOLAB_SSH", &ssh)
        .args(["fleet", "--ssh", "nowhere", "--token-file", token.to_str().unwrap(), "--engine", "null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains("nowhere") && said.contains("Could not resolve hostname"), "{said}");
}
