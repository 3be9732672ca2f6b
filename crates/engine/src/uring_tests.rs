//! The io_uring engine against sockets and the clock: waits that end at a deadline or a
//! completion, and the registered ring entered by index on its own thread only.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::*;

/// A tuned ring over one end of a socket pair (whose reads stay in flight until the other
/// end writes), with both ends; `None` (said on stderr) where io_uring is not available.
fn socket_engine() -> Option<(UringEngine, UnixStream, UnixStream)> {
    socket_engine_with(UringSpec::tuned())
}

/// As `socket_engine`, with the ring tuned as `uring` says.
fn socket_engine_with(uring: UringSpec) -> Option<(UringEngine, UnixStream, UnixStream)> {
    let (socket, peer) = UnixStream::pair().expect("socket pair");
    let config = EngineConfig {
        files: vec![socket.as_raw_fd()],
        qd: 2,
        max_len: 4096,
        seed: 1,
        origin: None,
        content: Default::default(),
        uring,
        verify: false,
    };
    match UringEngine::new(config) {
        Ok(engine) => Some((engine, socket, peer)),
        Err(e) => {
            iolab_test_support::skip!(iolab_test_support::Missing::Other, "no io_uring here ({e})");
            None
        }
    }
}

/// A lane that watches the completion queue returns with the completion it waited for, whether
/// it came while the lane watched or only after, while it slept; the setup says it watches.
#[test]
fn a_completion_watch_returns_with_the_completion_found_watching_or_sleeping() {
    let spec = UringSpec { completion_watch: iolab_spec::Nanos(20_000), ..UringSpec::tuned() };
    let Some((mut engine, _socket, mut peer)) = socket_engine_with(spec) else { return };
    assert!(engine.setup().contains(&"completion_watch"), "{:?}", engine.setup());
    let read = IoRequest { slot: 0, op: Op::Read, file: 0, offset: 0, len: 8 };
    let mut out = Vec::new();

    assert_eq!(engine.queue(read), Queued::Accepted);
    peer.write_all(b"12345678").expect("write");
    engine.commit(1).expect("a completion found while watching");
    engine.reap(&mut out);
    assert_eq!((out.len(), out[0].result), (1, 8));

    out.clear();
    assert_eq!(engine.queue(read), Queued::Accepted);
    let writer = std::thread::spawn(move || {
        // Long past any watch: the lane is asleep in the kernel by now.
        std::thread::sleep(Duration::from_millis(50));
        peer.write_all(b"abcdefgh").expect("write");
        peer
    });
    engine.commit(1).expect("a completion slept for after the watch");
    engine.reap(&mut out);
    assert_eq!((out.len(), out[0].result), (1, 8));
    assert_eq!(engine.data(0, 8), Some(&b"abcdefgh"[..]));
    writer.join().expect("writer");
}

/// A read of a socket stays in flight until the other end writes: the wait must end at the
/// deadline with nothing reaped, then at the completion, both with the timeout in the enter
/// call (EXT_ARG) and with the timer request older kernels get.
#[test]
fn commit_until_ends_at_the_deadline_or_at_a_completion() {
    for (ext_arg, watch_ns) in [(true, 0), (false, 0), (true, 20_000), (false, 20_000)] {
        let spec = UringSpec { completion_watch: iolab_spec::Nanos(watch_ns), ..UringSpec::tuned() };
        let Some((mut engine, _socket, mut peer)) = socket_engine_with(spec) else { return };
        engine.ext_arg &= ext_arg;
        let ext_arg = format!("{ext_arg}, watch {watch_ns} ns");
        let read = IoRequest { slot: 0, op: Op::Read, file: 0, offset: 0, len: 8 };
        assert_eq!(engine.queue(read), Queued::Accepted);
        let start = Instant::now();
        engine.commit_until(1, 50_000_000).expect("wait");
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(40), "ext_arg {ext_arg}: returned early, {waited:?}");
        assert!(waited < Duration::from_secs(2), "ext_arg {ext_arg}: the deadline was missed, {waited:?}");
        let mut out = Vec::new();
        engine.reap(&mut out);
        assert!(out.is_empty(), "ext_arg {ext_arg}: a timer is not an I/O: {out:?}");
        assert_eq!(engine.in_flight(), 1);

        peer.write_all(b"12345678").expect("write");
        let start = Instant::now();
        while out.is_empty() && start.elapsed() < Duration::from_secs(5) {
            engine.commit_until(1, 10_000_000_000).expect("wait");
            engine.reap(&mut out);
        }
        assert!(start.elapsed() < Duration::from_secs(4), "ext_arg {ext_arg}: the completion ends the wait");
        assert_eq!((out.len(), out[0].slot, out[0].result), (1, 0, 8));
        assert_eq!(engine.in_flight(), 0);

        if watch_ns > 0 {
            // A wait no longer than the watch is all watch: no timer, on any kernel.
            assert_eq!(engine.queue(read), Queued::Accepted);
            let timers = engine.timers_pending;
            engine.commit_until(1, watch_ns).expect("a wait within the watch");
            assert_eq!(
                engine.timers_pending, timers,
                "ext_arg {ext_arg}: a wait within the watch arms no timer"
            );
            assert_eq!(engine.in_flight(), 1);
        }
    }
}

/// A lane that asked for it (a replay) watches the queue and the clock for waits up to its
/// bound: no timer request is armed (on a kernel without EXT_ARG the sleeping wait arms one),
/// the wait still ends at the deadline, and a completion still ends it sooner.
#[test]
fn longer_waits_spin_where_the_lane_asked() {
    let Some((mut engine, _socket, mut peer)) = socket_engine() else { return };
    engine.ext_arg = false;
    engine.spin_waits_up_to(100_000_000);
    let read = IoRequest { slot: 0, op: Op::Read, file: 0, offset: 0, len: 8 };
    assert_eq!(engine.queue(read), Queued::Accepted);
    let start = Instant::now();
    engine.commit_until(1, 50_000_000).expect("wait");
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(40) && waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(engine.timers_pending, 0, "a spinning wait arms no timer");
    peer.write_all(b"12345678").expect("write");
    let mut out = Vec::new();
    let start = Instant::now();
    while out.is_empty() && start.elapsed() < Duration::from_secs(5) {
        engine.commit_until(1, 50_000_000).expect("wait");
        engine.reap(&mut out);
    }
    assert_eq!((out.len(), out[0].slot, out[0].result), (1, 0, 8));
    // Past the bound, the wait sleeps in the kernel again (here: with a timer request).
    assert_eq!(engine.queue(read), Queued::Accepted);
    engine.commit_until(1, 200_000_000).expect("wait");
    assert!(engine.timers_pending > 0, "a long wait armed a timer");
}

/// The ring is registered with the thread that made it, and enters by its index there. On
/// another thread the index would name that thread's ring (or none): the engine enters by
/// its descriptor instead, and leaves the other thread's registrations alone when dropped.
#[test]
fn a_registered_ring_enters_by_index_on_its_own_thread_only() {
    let Some((mut engine, _socket, mut peer)) = socket_engine() else { return };
    if engine.registered.is_none() {
        return iolab_test_support::skip!(
            iolab_test_support::Missing::Other,
            "this kernel does not register ring descriptors (5.18+)"
        );
    }
    let read = IoRequest { slot: 0, op: Op::Read, file: 0, offset: 0, len: 8 };
    assert_eq!(engine.queue(read), Queued::Accepted);
    engine.commit(0).expect("submit by index");
    peer.write_all(b"12345678").expect("write");
    engine.commit(1).expect("wait by index");
    let mut out = Vec::new();
    engine.reap(&mut out);
    assert_eq!((out.len(), out[0].result), (1, 8));
    drop(engine);

    // A plain ring (no single issuer) may be handed to another thread, where the same
    // index names that thread's own ring (the kernel gives each thread's first ring 0).
    let plain = || {
        let (socket, peer) = UnixStream::pair().expect("socket pair");
        let spec = UringSpec { ring_setup: RingSetup::Plain, ..UringSpec::tuned() };
        let config = EngineConfig {
            files: vec![socket.as_raw_fd()],
            qd: 2,
            max_len: 4096,
            seed: 1,
            origin: None,
            content: Default::default(),
            uring: spec,
            verify: false,
        };
        (UringEngine::new(config).expect("plain ring"), socket, peer)
    };
    let exchange = move |engine: &mut UringEngine, peer: &mut UnixStream| {
        assert_eq!(engine.queue(read), Queued::Accepted);
        peer.write_all(b"12345678").expect("write");
        engine.commit(1).expect("enter");
        let mut out = Vec::new();
        engine.reap(&mut out);
        assert_eq!((out.len(), out[0].result), (1, 8));
    };
    let (mut moved, _socket, mut moved_peer) = plain();
    assert!(moved.registered.is_some());
    std::thread::spawn(move || {
        let (mut local, _socket, mut local_peer) = plain();
        assert!(local.registered.is_some(), "this thread's own registration");
        exchange(&mut moved, &mut moved_peer);
        drop(moved);
        exchange(&mut local, &mut local_peer);
    })
    .join()
    .expect("other thread");
}

/// A wait short enough to spin ends no earlier than its deadline with nothing reaped, and
/// sees a completion whose task work the kernel deferred (it has to be run by an enter call).
#[test]
fn a_short_wait_spins_to_the_deadline_or_to_a_completion() {
    let Some((mut engine, _socket, mut peer)) = socket_engine() else { return };
    let read = IoRequest { slot: 0, op: Op::Read, file: 0, offset: 0, len: 8 };
    assert_eq!(engine.queue(read), Queued::Accepted);
    let mut out = Vec::new();
    for _ in 0..100 {
        let start = Instant::now();
        engine.commit_until(1, SPIN_NS).expect("wait");
        assert!(start.elapsed() >= Duration::from_nanos(SPIN_NS), "returned early");
        engine.reap(&mut out);
        assert!(out.is_empty(), "nothing has completed: {out:?}");
    }
    peer.write_all(b"12345678").expect("write");
    let start = Instant::now();
    while out.is_empty() && start.elapsed() < Duration::from_secs(5) {
        engine.commit_until(1, SPIN_NS).expect("wait");
        engine.reap(&mut out);
    }
    assert_eq!((out.len(), out[0].slot, out[0].result), (1, 0, 8));
    assert_eq!(engine.in_flight(), 0);
}
