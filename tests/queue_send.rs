//! Queued sends (`Connection::queue_send`, `flush_sends`, `send_backlog`): bytes go out
//! whole and in order through short sends and a slow reader, received buffers go back
//! to the pool once sent, a failure is returned by every later call, a connection
//! dropped with sends queued still delivers them, and a runtime shut down with a send
//! stuck in flight neither hangs nor leaks.
//!
//! The peers are plain std sockets on their own threads. Every test holds the fd lock:
//! one of them counts the process's fds.

mod common;

use bytes::Bytes;
use common::{join_peer, random};
use std::io::Read;
use std::time::{Duration, Instant};
use zerorx::{sleep, timeout};

/// A peer that connects with a small receive buffer (so the server's sends fill the
/// socket and come back short), waits `delay`, then reads until end of stream in
/// small reads with pauses, and returns what it read.
fn slow_reader(addr: std::net::SocketAddr, delay: Duration) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        sock.set_recv_buffer_size(4096).expect("SO_RCVBUF");
        sock.connect(&addr.into()).expect("connect");
        let mut c: std::net::TcpStream = sock.into();
        c.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        std::thread::sleep(delay);
        let mut got = Vec::new();
        let mut chunk = vec![0u8; 7000];
        loop {
            match c.read(&mut chunk).expect("read") {
                0 => return got,
                n => got.extend_from_slice(&chunk[..n]),
            }
            if got.len() % 5 == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    })
}

#[test]
fn queued_sends_reach_a_slow_reader_whole_and_in_order() {
    let _fds = common::fd_lock();
    common::small_pool_rt().block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = slow_reader(addr, Duration::from_millis(100));
        let (s, _) = l.accept().await.expect("accept");
        // 4 MiB in pieces of odd sizes, all queued before the peer reads a byte: most
        // wait behind the send in flight, which comes back short again and again.
        let data = Bytes::from(random(3, 4 << 20));
        for piece in common::odd_pieces(data.len()) {
            s.queue_send(data.slice(piece)).expect("queue");
        }
        assert!(s.send_backlog() > 0, "a slow reader leaves bytes queued");
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("every queued send succeeded");
        assert_eq!(s.send_backlog(), 0);
        // An empty buffer is accepted and sends nothing.
        s.queue_send(Bytes::new()).expect("an empty send");
        s.flush_sends().await.expect("nothing to flush");
        drop(s);
        let got = join_peer(peer).await;
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes arrived changed or out of order");
    });
}

#[test]
fn sends_that_fit_the_socket_go_at_once_and_the_rest_of_a_full_one_through_the_ring() {
    let _fds = common::fd_lock();
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    let at_once = || h.metrics()[0].ops_at_once;
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        // Three sends of one loop turn join one gathered send, which the socket's
        // buffer takes whole: done at once, nothing for the ring to complete.
        let before = at_once();
        for piece in [&b"one "[..], b"two ", b"three "] {
            s.queue_send(Bytes::from_static(piece)).expect("queue");
        }
        // The flush is woken by the send done at once: without that wake-up the worker
        // would wait for a completion that never comes, until the timeout's timer.
        let start = Instant::now();
        timeout(Duration::from_secs(20), s.flush_sends())
            .await
            .expect("flushed")
            .expect("sent");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the flush of a send done at once waited {:?}",
            start.elapsed()
        );
        assert_eq!(at_once() - before, 1, "{:?}", h.metrics()[0]);
        // 32 MiB cannot fit: the first part goes at once, the rest waits in the ring
        // for the peer to read, in order.
        let big = Bytes::from(random(21, 32 << 20));
        s.queue_send(big.clone()).expect("queue");
        assert!(s.send_backlog() > 0);
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("sent");
        assert_eq!(at_once() - before, 2, "{:?}", h.metrics()[0]);
        drop(s);
        let got = join_peer(peer).await;
        assert_eq!(&got[..14], b"one two three ");
        assert!(got[14..] == big[..], "the large send arrived changed");
    });
}

#[test]
fn a_queued_echo_of_received_buffers_is_byte_exact_and_returns_every_buffer() {
    let _fds = common::fd_lock();
    // The pool has 16 buffers: past a few queued, wait for them to go.
    common::queued_echo_round_trip(&common::small_pool_rt(), 4 * 4096, 7);
}

#[test]
fn a_failed_send_is_returned_by_every_later_call() {
    let _fds = common::fd_lock();
    common::small_pool_rt().block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = std::thread::spawn(move || {
            let c = std::net::TcpStream::connect(addr).expect("connect");
            // Closed with unread data and no linger: the kernel resets the connection.
            socket2::SockRef::from(&c)
                .set_linger(Some(Duration::ZERO))
                .expect("SO_LINGER");
            std::thread::sleep(Duration::from_millis(50));
            drop(c);
        });
        let (s, _) = l.accept().await.expect("accept");
        join_peer(peer).await;
        // Sends after the reset fail; the first failure may only show on a later
        // call (the send that met it ran without anyone waiting).
        let piece = Bytes::from(vec![9u8; 64 << 10]);
        let start = Instant::now();
        let first = loop {
            match s.queue_send(piece.clone()) {
                Err(e) => break e,
                Ok(()) => {
                    assert!(
                        start.elapsed() < Duration::from_secs(10),
                        "sends to a reset peer kept succeeding"
                    );
                    sleep(Duration::from_millis(1)).await;
                }
            }
        };
        let errno = first.raw_os_error();
        assert!(
            matches!(errno, Some(libc::ECONNRESET) | Some(libc::EPIPE)),
            "{first:?}"
        );
        for _ in 0..3 {
            let again = s.queue_send(piece.clone()).expect_err("still failed");
            assert_eq!(again.raw_os_error(), errno);
        }
        let flushed = s.flush_sends().await.expect_err("flush reports it");
        assert_eq!(flushed.raw_os_error(), errno);
        assert_eq!(s.send_backlog(), 0, "what was queued is dropped");
    });
}

#[test]
fn a_connection_dropped_with_sends_queued_still_delivers_them() {
    let _fds = common::fd_lock();
    common::small_pool_rt().block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = slow_reader(addr, Duration::from_millis(200));
        let (s, _) = l.accept().await.expect("accept");
        let data = Bytes::from(random(5, 2 << 20));
        for piece in data.chunks(100_000) {
            s.queue_send(data.slice_ref(piece)).expect("queue");
        }
        assert!(s.send_backlog() > 0);
        drop(s);
        // The peer reads everything, then the end of stream: the socket closed once
        // the last queued send was done.
        let got = join_peer(peer).await;
        assert!(got == data, "got {} of {} bytes", got.len(), data.len());
    });
}

#[test]
fn a_runtime_shut_down_with_a_send_stuck_in_flight_ends_in_time_without_leaking() {
    common::shutdown_with_a_stuck_send_is_clean(common::small_pool_rt, |h| {
        let text = h.dump().to_string();
        assert!(
            text.contains("sending, no task waiting"),
            "the dump lists the stuck send:\n{text}"
        );
    });
}

#[test]
fn thousands_of_small_queued_sends_go_out_past_the_iovec_limit() {
    let _fds = common::fd_lock();
    common::small_pool_rt().block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = slow_reader(addr, Duration::from_millis(50));
        let (s, _) = l.accept().await.expect("accept");
        // All queued behind the first: the next send gathers 2,999 buffers, more than
        // one SENDMSG takes (1,024).
        let data = Bytes::from(random(9, 3000 * 10));
        for piece in data.chunks(10) {
            s.queue_send(data.slice_ref(piece)).expect("queue");
        }
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("every queued send succeeded");
        drop(s);
        let got = join_peer(peer).await;
        assert!(got == data, "got {} of {} bytes", got.len(), data.len());
    });
}

#[test]
fn cancelled_sends_stuck_behind_a_peer_that_does_not_read_let_the_socket_go() {
    common::cancelled_stuck_sends_let_the_socket_go(common::small_pool_rt);
}
