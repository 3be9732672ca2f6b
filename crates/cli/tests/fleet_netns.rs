//! Fleet mode across network namespaces: each agent is a "host" with its own network stack and
//! address, joined to the others by veth pairs on a bridge, as machines on a switch. Needs root
//! and `ip`; skips with the reason otherwise. Everything made here is removed at the end.

mod common;

use std::process::Command;

use common::fleet::{token_file, Agent};
use common::{dir_with_target, is_root, json, run_in, skip, stderr, Missing};

/// The namespaces and bridge of one test, removed on drop.
struct Network {
    bridge: String,
    namespaces: Vec<String>,
    /// Each namespace's address.
    addresses: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Network {
    fn new(hosts: usize) -> Result<Network, String> {
        let id = std::process::id() % 200 + 20;
        let mut network =
            Network { bridge: format!("iolbr{id}"), namespaces: Vec::new(), addresses: Vec::new() };
        ip(&["link", "add", &network.bridge, "type", "bridge"])?;
        ip(&["link", "set", &network.bridge, "up"])?;
        for n in 0..hosts {
            let ns = format!("iolab-t{id}-{n}");
            ip(&["netns", "add", &ns])?;
            network.namespaces.push(ns.clone());
            let outside = format!("iolv{id}x{n}");
            ip(&["link", "add", &outside, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
            ip(&["link", "set", &outside, "master", &network.bridge, "up"])?;
            let address = format!("10.211.{id}.{}", n + 10);
            ip(&["-n", &ns, "addr", "add", &format!("{address}/24"), "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            network.addresses.push(address);
        }
        // The coordinator stays in the root namespace, on the bridge.
        ip(&["addr", "add", &format!("10.211.{id}.1/24"), "dev", &network.bridge])?;
        Ok(network)
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

#[test]
fn agents_in_their_own_network_namespaces_run_one_job_and_measure_their_links() {
    if !is_root() {
        return skip!(Missing::Root, "network namespaces need root");
    }
    let network = match Network::new(3) {
        Ok(network) => network,
        Err(e) => return skip!(Missing::Netns, "cannot build the test network: {e}"),
    };
    let dir = dir_with_target();
    let agents: Vec<Agent> = network
        .namespaces
        .iter()
        .zip(&network.addresses)
        .map(|(ns, address)| {
            let command = common::iolab_via("ip", &["netns", "exec", ns]);
            Agent::start_with(command, dir.path(), &format!("{address}:7878"), &[])
        })
        .collect();
    let list = agents.iter().map(|a| a.address.as_str()).collect::<Vec<_>>().join(",");
    assert!(list.contains("10.211."), "{list}");
    let token = token_file(dir.path());
    let target = dir.path().join("t");
    let args = [
        "fleet",
        "--hosts",
        &list,
        "--token-file",
        token.to_str().unwrap(),
        "--netbench",
        "--netbench-time",
        "500ms",
        "--target",
        target.to_str().unwrap(),
        "--engine",
        "psync",
        "--runtime",
        "1s",
        "--ramp",
        "0",
        "--json",
    ];
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let hosts = report["jobs"][0]["fleet"]["hosts"].as_array().unwrap().clone();
    assert_eq!(hosts.len(), 3);
    for host in &hosts {
        assert_eq!(host["status"], "ok", "{host}");
        let link = host["link_mb_s"].as_f64().unwrap_or(0.0);
        assert!(link > 0.0, "every host's link was measured: {host}");
    }
    assert!(stderr(&out).contains("network "), "the measured links are said: {}", stderr(&out));
}
