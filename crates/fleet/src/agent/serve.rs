//! Accepting connections, within limits. `axum::serve` reads a request head for as long as
//! the peer takes and accepts every connection: a thousand peers sending half a header each
//! held every descriptor the agent had, and no coordinator got through. Here each connection
//! is served by hyper's HTTP/1 machinery with a header-read timeout (an idle keep-alive
//! connection, or one that never finishes its head, is closed), the body read is timed in
//! `body.rs`, and connections are counted per peer address and in all: one over either limit
//! is answered 503 and closed at once, before it can hold a descriptor. When all connections
//! are taken, the oldest one that has not yet sent the token makes room for the new one, so
//! peers spread over many addresses cannot shut a coordinator out either. Only reading a
//! request is timed; an answer (a live NDJSON stream) takes as long as it takes. The metrics
//! port (`metrics_port.rs`) is served here too, with limits of its own.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tower_service::Service;

use super::lock;
use super::refusal_log::{RefusalLog, WINDOW};

/// How long reading a request may take, and how many connections may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From the connection's first byte (or the end of its last answer) to the end of the
    /// request head.
    pub header_read: Duration,
    /// Reading a request body, from the end of its head.
    pub body_read: Duration,
    /// Open connections in all (`--max-connections`).
    pub max_connections: usize,
    /// Open connections from one address (`--max-connections-per-peer`).
    pub max_connections_per_peer: usize,
}

impl Default for Limits {
    /// A coordinator holds a few connections (requests, a live stream, a netbench push) and
    /// sends a head in one packet; 256 in all stays far below the usual 1,024 descriptors.
    fn default() -> Self {
        Limits {
            header_read: Duration::from_secs(10),
            body_read: Duration::from_secs(30),
            max_connections: 256,
            max_connections_per_peer: 32,
        }
    }
}

/// Which of the agent's listeners a connection came to: named in the refusals logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// The protocol's API, behind the token.
    Api,
    /// `--metrics`: no token, a few connections (`metrics_port.rs`).
    Metrics,
}

impl Port {
    /// What bounds the connections from one address, and all of them, as the operator sets it.
    fn limit_names(self) -> (&'static str, &'static str) {
        match self {
            Port::Api => ("--max-connections-per-peer", "--max-connections"),
            Port::Metrics => ("the metrics port's limit", "the metrics port's limit"),
        }
    }

    fn to_whom(self) -> &'static str {
        match self {
            Port::Api => "",
            Port::Metrics => " to the metrics port",
        }
    }
}

/// Connections the kernel queues before the agent accepts them. A flood that fills the queue
/// makes the kernel drop a coordinator's connection request, which its TCP then sends again
/// only a second later; a queue longer than the flood keeps it in line (the kernel caps it at
/// `net.core.somaxconn`, 4,096 by default).
const LISTEN_BACKLOG: u32 = 4096;

/// Binds the listening socket, with a backlog of `LISTEN_BACKLOG`.
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket =
        if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The body-read limit, put on every request for `body.rs`.
#[derive(Debug, Clone, Copy)]
pub struct BodyReadTimeout(pub Duration);

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
    next_id: u64,
    /// Connections that have not yet sent a request with the token, oldest first: when all
    /// connections are taken, the oldest of these makes room for a new one (a coordinator
    /// sends its head and token at once, so its new connection is never the oldest for long,
    /// and its connections once proven are never the ones to go).
    unproven: BTreeMap<u64, (Arc<Notify>, IpAddr)>,
}

/// One admitted connection: counted until dropped.
#[derive(Debug)]
struct Admission {
    counts: Arc<Mutex<Counts>>,
    peer: IpAddr,
    id: u64,
    /// Notified when the connection must make room for a newer one.
    evict: Arc<Notify>,
}

/// Put on every request: the auth layer calls `proven` when the request carries the token.
#[derive(Debug, Clone)]
pub struct ConnectionProof(Arc<Admission>);

impl ConnectionProof {
    /// The connection sent the token: it no longer makes room for newer ones.
    pub fn proven(&self) {
        lock(&self.0.counts).unproven.remove(&self.0.id);
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        counts.unproven.remove(&self.id);
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_peer.get_mut(&self.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.per_peer.remove(&self.peer);
            }
        }
    }
}

/// Admits a connection from `peer`, with the address of the one closed to make room, if any.
fn admit(
    counts: &Arc<Mutex<Counts>>,
    peer: IpAddr,
    limits: &Limits,
    port: Port,
) -> Result<(Admission, Option<IpAddr>), String> {
    let (per_peer_limit, total_limit) = port.limit_names();
    let mut held = lock(counts);
    let from_peer = held.per_peer.get(&peer).copied().unwrap_or(0);
    let mut evicted = None;
    if from_peer >= limits.max_connections_per_peer {
        return Err(format!(
            "it has {from_peer} connections open, the most one address may ({per_peer_limit})"
        ));
    }
    if held.total >= limits.max_connections {
        // The oldest connection still sending its first head goes (its task closes it at
        // once); with none, the new one is refused.
        let Some((_, (oldest, its_peer))) = held.unproven.pop_first() else {
            return Err(format!(
                "all {} connections the agent takes are open and serving ({total_limit})",
                limits.max_connections
            ));
        };
        oldest.notify_one();
        evicted = Some(its_peer);
    }
    held.total += 1;
    *held.per_peer.entry(peer).or_default() += 1;
    held.next_id += 1;
    let (id, evict) = (held.next_id, Arc::new(Notify::new()));
    held.unproven.insert(id, (Arc::clone(&evict), peer));
    Ok((Admission { counts: Arc::clone(counts), peer, id, evict }, evicted))
}

/// Serves `router` on `listener` (the agent's `port`) until `shutdown` completes, then lets open
/// connections end their answers (the caller bounds how long).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    (port, limits): (Port, Limits),
    log: Arc<RefusalLog>,
    shutdown: impl Future<Output = ()>,
) {
    let counts = Arc::new(Mutex::new(Counts::default()));
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection holds a sender: all are gone when the receiver hears `None`.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let mut flush = tokio::time::interval(WINDOW);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            _ = flush.tick() => {
                log.flush();
                continue;
            }
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_per_connection(&e) => continue,
                Err(e) => {
                    // Out of descriptors (EMFILE, ENFILE) or memory: wait for some to free up.
                    log.refused(|| format!("a connection: cannot accept it ({e}); raise the open-file limit (ulimit -n) or lower --max-connections"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let to_whom = port.to_whom();
        match admit(&counts, peer.ip(), &limits, port) {
            Ok((admission, evicted)) => {
                if let Some(evicted) = evicted {
                    log.refused(|| {
                        format!("a connection from {evicted}{to_whom}: closed to make room, all connections being taken and it had not sent the token (--max-connections)")
                    });
                }
                let connection =
                    Connection { peer, limits, admission: Arc::new(admission), _alive: alive_tx.clone() };
                tokio::spawn(connection.serve(stream, router.clone(), stop_rx.clone()));
            }
            Err(why) => {
                turn_away(&stream);
                log.refused(|| format!("a connection from {peer}{to_whom}: {why}"));
            }
        }
    }
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = alive_rx.recv().await;
}

/// Errors of one connection that came and went before it was accepted: nothing to wait for.
fn is_per_connection(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// A 503 written only if the socket takes it at once, then the connection is closed.
fn turn_away(stream: &TcpStream) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 93\r\n\r\n{\"error\":\"this agent has too many open connections; close some, or try again in a few seconds\"}";
    let _ = stream.try_write(BUSY);
}

struct Connection {
    peer: SocketAddr,
    limits: Limits,
    admission: Arc<Admission>,
    _alive: mpsc::Sender<()>,
}

impl Connection {
    async fn serve(self, stream: TcpStream, router: Router, mut stop: watch::Receiver<bool>) {
        let _ = stream.set_nodelay(true);
        let (peer, body_read) = (self.peer, BodyReadTimeout(self.limits.body_read));
        let proof = ConnectionProof(Arc::clone(&self.admission));
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(proof.clone());
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(body_read);
            router.clone().call(request)
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(self.limits.header_read);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let evict = Arc::clone(&self.admission.evict);
        tokio::select! {
            _ = connection.as_mut() => {}
            () = evict.notified() => {}
            _ = stop.changed() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_limited_per_peer_and_in_all() {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let limits = Limits { max_connections: 3, max_connections_per_peer: 2, ..Limits::default() };
        let (a, b, c): (IpAddr, IpAddr, IpAddr) = (
            "127.0.0.2".parse().expect("ip"),
            "127.0.0.3".parse().expect("ip"),
            "127.0.0.4".parse().expect("ip"),
        );
        let (first, _) = admit(&counts, a, &limits, Port::Api).expect("first");
        let (second, _) = admit(&counts, a, &limits, Port::Api).expect("second");
        assert!(admit(&counts, a, &limits, Port::Api)
            .expect_err("third from a")
            .contains("--max-connections-per-peer"));
        let (other, _) = admit(&counts, b, &limits, Port::Api).expect("another peer");
        // All taken: the oldest that has not sent a whole head makes room for the new one.
        let (newest, evicted) = admit(&counts, c, &limits, Port::Api).expect("room made");
        assert_eq!(evicted, Some(a), "the oldest, from a, makes room");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        let told = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), first.evict.notified()).await });
        assert!(told.is_ok(), "the oldest was told to go");
        drop(first);
        let proofs: Vec<ConnectionProof> =
            [second, other, newest].into_iter().map(|a| ConnectionProof(Arc::new(a))).collect();
        for proof in &proofs {
            proof.proven();
        }
        let refused = admit(&counts, c, &limits, Port::Api).expect_err("every one has sent the token");
        assert!(refused.contains("--max-connections"), "{refused}");
    }
}
