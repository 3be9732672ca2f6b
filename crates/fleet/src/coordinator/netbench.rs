//! `iolab fleet --netbench`: each host's network throughput, measured the way a storage network
//! carries traffic: every host pushes to the next one in a ring, all at once, so every link is
//! loaded in both directions as it is under a fleet-wide job. A fleet of one host has no peer
//! and is not measured.

use std::sync::Arc;
use std::time::Duration;

use iolab_runner::Observer;

use super::client::AgentClient;

/// Per host, the throughput it sent at (10^6 bytes/s); `None` where it could not be measured.
pub fn measure(
    clients: &[Arc<AgentClient>],
    duration: Duration,
    observer: &mut dyn Observer,
) -> Vec<Option<f64>> {
    if clients.len() < 2 {
        observer.note("--netbench needs two hosts or more: a host has no peer to send to");
        return vec![None; clients.len()];
    }
    let measured: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, client)| {
                let peer = &clients[(i + 1) % clients.len()].address;
                scope.spawn(move || client.netbench(peer, duration))
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    measured
        .into_iter()
        .zip(clients)
        .enumerate()
        .map(|(i, (result, client))| {
            let peer = &clients[(i + 1) % clients.len()].address;
            match result {
                Some(Ok(m)) => {
                    observer.note(&format!("network {} -> {peer}: {:.0} MB/s", client.address, m.mb_s));
                    Some(m.mb_s)
                }
                Some(Err(e)) => {
                    observer.note(&format!("network {} -> {peer}: not measured: {e}", client.address));
                    None
                }
                None => None,
            }
        })
        .collect()
}
