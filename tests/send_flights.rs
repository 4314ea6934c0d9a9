//! Flights (`send_queue::flight`): a loop turn's single sends on several idle
//! connections go through the ring with no op. These tests make the flights stick in
//! the kernel (each socket's buffer filled beforehand, the peers not reading yet), so
//! what a flight in the air promises can be seen: every query counts it, the state
//! dump lists it, a send queued meanwhile goes after it in order, a cancel ends it with
//! `ECANCELED`, and a runtime shut down with flights in the air ends in time, closing
//! every socket.
//!
//! The peers are plain std sockets on their own threads, held until the test lets them
//! read. Every test holds the fd lock: one of them counts the process's fds.

mod common;

use bytes::Bytes;
use common::join_peer;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use zerorx::runtime::{IoUringOp, OpState};
use zerorx::{sleep, timeout};

/// A peer that connects, waits until `go` says so, then reads to the end of stream.
fn held_reader(
    addr: std::net::SocketAddr,
    go: mpsc::Receiver<()>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        // A dropped sender lets it read too.
        let _ = go.recv();
        let mut got = Vec::new();
        c.read_to_end(&mut got).expect("read to the end");
        got
    })
}

/// Fills `fd`'s send path (its buffer and the peer's receive buffer) with non-blocking
/// sends that bypass the runtime; returns the bytes the socket took.
fn fill(fd: i32, seed: u8) -> Vec<u8> {
    let chunk: Vec<u8> = (0..16_384u32).map(|i| (i as u8) ^ seed).collect();
    let mut sent = Vec::new();
    loop {
        // SAFETY: `chunk` is live for the call; `fd` is an open socket the test owns.
        let n = unsafe {
            libc::send(
                fd,
                chunk.as_ptr().cast(),
                chunk.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n <= 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.raw_os_error(), Some(libc::EAGAIN), "filling: {e}");
            return sent;
        }
        sent.extend_from_slice(&chunk[..n as usize]);
    }
}

/// `n` accepted streams whose peers wait for the returned senders, with every send
/// path filled (the bytes each took).
async fn held_streams(
    n: usize,
) -> (
    Vec<zerorx::net::TcpStream>,
    Vec<Vec<u8>>,
    Vec<mpsc::Sender<()>>,
    Vec<std::thread::JoinHandle<Vec<u8>>>,
) {
    let (l, addr) = common::loopback_listener();
    let (mut go, mut peers) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let (tx, rx) = mpsc::channel();
        go.push(tx);
        peers.push(held_reader(addr, rx));
    }
    let mut streams = Vec::new();
    for _ in 0..n {
        streams.push(l.accept().await.expect("accept").0);
    }
    let filled = streams
        .iter()
        .enumerate()
        .map(|(i, s)| fill(s.as_raw_fd(), i as u8))
        .collect();
    (streams, filled, go, peers)
}

#[test]
fn a_turns_single_sends_on_full_sockets_fly_seen_by_queries_and_the_dump_then_arrive_in_order() {
    let _fds = common::fd_lock();
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async {
        let (streams, filled, go, peers) = held_streams(4).await;
        let before = h.metrics()[0];
        // One turn, one send on each socket: they go through the ring together.
        for (i, s) in streams.iter().enumerate() {
            s.queue_send(Bytes::from(format!("tail {i};")))
                .expect("queue");
        }
        sleep(Duration::from_millis(30)).await;
        let dump = h.dump();
        let sends: Vec<_> = dump.workers[0]
            .ops
            .iter()
            .filter(|op| op.opcode == IoUringOp::Send)
            .collect();
        assert_eq!(sends.len(), 4, "the dump lists every flight:\n{dump}");
        for s in &streams {
            let fd = s.as_raw_fd();
            assert!(
                sends
                    .iter()
                    .any(|op| op.fd == Some(fd) && op.state == OpState::Detached),
                "no flight on fd {fd}:\n{dump}"
            );
            assert_eq!(s.send_backlog(), "tail 0;".len());
            assert!(s.send_progress().is_some(), "a flight is on its way");
            assert!(s.sends_done().is_none(), "a flight in the air is not done");
        }
        let flying = h.metrics()[0];
        assert!(
            flying.ops_in_flight >= 4,
            "the in-flight count includes flights: {flying:?}"
        );
        assert_eq!(
            flying.ops_at_once, before.ops_at_once,
            "several sends of one turn went one syscall each: {flying:?}"
        );
        // Queued while the flights are in the air: each goes after its socket's.
        for (i, s) in streams.iter().enumerate() {
            s.queue_send(Bytes::from(format!("more {i}")))
                .expect("queue");
            assert_eq!(s.send_backlog(), "tail 0;more 0".len());
        }
        drop(go);
        for s in &streams {
            timeout(Duration::from_secs(20), s.flush_sends())
                .await
                .expect("flushed in time")
                .expect("sent");
            assert_eq!(s.send_backlog(), 0);
            assert_eq!(s.send_progress(), None);
        }
        drop(streams);
        let mut got: Vec<Vec<u8>> = Vec::new();
        for peer in peers {
            got.push(join_peer(peer).await);
        }
        // The accepts may pair peers and streams in any order: match by the filler.
        for (i, fill) in filled.iter().enumerate() {
            let want = [&fill[..], format!("tail {i};more {i}").as_bytes()].concat();
            assert!(
                got.contains(&want),
                "no peer got stream {i}'s {} bytes whole and in order",
                want.len()
            );
        }
    });
}

#[test]
fn a_flight_cancelled_in_the_air_reports_the_cancel_and_the_others_arrive() {
    let _fds = common::fd_lock();
    let rt = common::small_pool_rt();
    rt.block_on(async {
        let (streams, filled, go, peers) = held_streams(3).await;
        for (i, s) in streams.iter().enumerate() {
            s.queue_send(Bytes::from(format!("tail {i}")))
                .expect("queue");
        }
        sleep(Duration::from_millis(30)).await;
        assert!(streams[2].sends_done().is_none(), "in the air");
        streams[2].cancel_sends();
        let err = timeout(Duration::from_secs(20), streams[2].flush_sends())
            .await
            .expect("the cancel ends the flight in time")
            .expect_err("the cancel is reported");
        assert_eq!(err.raw_os_error(), Some(libc::ECANCELED));
        let later = streams[2]
            .queue_send(Bytes::from_static(b"never"))
            .expect_err("later sends fail");
        assert_eq!(later.raw_os_error(), Some(libc::ECANCELED));
        drop(go);
        for s in &streams[..2] {
            timeout(Duration::from_secs(20), s.flush_sends())
                .await
                .expect("flushed in time")
                .expect("sent");
        }
        let fds: Vec<i32> = streams.iter().map(|s| s.as_raw_fd()).collect();
        drop(streams);
        let mut got: Vec<Vec<u8>> = Vec::new();
        for peer in peers {
            got.push(join_peer(peer).await);
        }
        for (i, fill) in filled.iter().enumerate().take(2) {
            let want = [&fill[..], format!("tail {i}").as_bytes()].concat();
            assert!(got.contains(&want), "stream {i} (fd {}) lost bytes", fds[i]);
        }
        // The cancelled flight sent nothing or all of its bytes, never a part, and
        // nothing after them.
        let cut = &filled[2];
        assert!(
            got.iter()
                .any(|g| g == cut || *g == [&cut[..], b"tail 2"].concat()),
            "the cancelled stream's peer got something else"
        );
    });
}

#[test]
fn a_runtime_shut_down_with_flights_in_the_air_ends_in_time_and_closes_every_socket() {
    let _fds = common::fd_lock();
    let fds = common::fd_count();
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    let (go, peers) = rt.block_on(async {
        let (streams, _filled, go, peers) = held_streams(3).await;
        for s in &streams {
            s.queue_send(Bytes::from_static(b"stuck")).expect("queue");
        }
        sleep(Duration::from_millis(30)).await;
        assert!(streams.iter().all(|s| s.sends_done().is_none()));
        // Dropped while their sends are in the air: each socket closes once its send
        // ends, which here is the shutdown's cancel.
        drop(streams);
        (go, peers)
    });
    let start = Instant::now();
    drop(rt);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the shutdown took {:?}",
        start.elapsed()
    );
    assert_eq!(h.metrics()[0].leaked_ops, 0, "a flight was leaked");
    // The handle keeps the worker's wake-up fd.
    drop(h);
    drop(go);
    for peer in peers {
        // Every peer sees the end of stream: its socket was closed.
        peer.join().expect("the peer read to the end");
    }
    assert_eq!(common::fd_count(), fds, "an fd leaked");
}
