//! Queued sends (`Connection::queue_send`, `flush_sends`, `send_backlog`): bytes go out
//! whole and in order through short sends and a slow reader, received buffers go back
//! to the pool once sent, a failure is returned by every later call, a connection
//! dropped with sends queued still delivers them, and a runtime shut down with a send
//! stuck in flight neither hangs nor leaks. The first small send of a loop turn's tasks
//! on an idle socket goes at once, as it is queued; a later one waits for the end of its
//! turn with no op (`send_queue::Direct`): every query sees it until then, a cancel in
//! the same turn drops it, several of one turn go through the ring together, and the
//! rest of one the socket takes only in part follows in order.
//!
//! The peers are plain std sockets on their own threads. Every test holds the fd lock:
//! one of them counts the process's fds.

mod common;

use bytes::Bytes;
use common::{join_peer, random};
use std::io::Read;
use std::time::{Duration, Instant};
use zerorx::{sleep, timeout, SendZeroCopy};

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

/// A stream accepted from a peer that reads to the end ([`common::reader`]), on a
/// small-pool runtime: runs `body` with it and the runtime's handle (for the worker's
/// counters), and returns what `body` returned and what the peer read once the stream
/// was dropped.
fn to_a_reader<T, Fut: std::future::Future<Output = T>>(
    body: impl FnOnce(zerorx::net::TcpStream, zerorx::Handle) -> Fut,
) -> (T, Vec<u8>) {
    let _fds = common::fd_lock();
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        let out = body(s, h).await;
        (out, join_peer(peer).await)
    })
}

/// Waits for a loop turn of its own, so the sends that follow are the first of a turn
/// that reaped at most one completion (the rule for a send at once), whatever
/// completions the set-up left for the turn before.
async fn a_quiet_turn() {
    sleep(Duration::from_millis(2)).await;
}

/// The worker's count of sends done at once.
fn at_once(h: &zerorx::Handle) -> u64 {
    h.metrics()[0].ops_at_once
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
    let (big, got) = to_a_reader(|s, h| async move {
        // The turn's first send goes at once as it is queued; the next two join one
        // gathered send at the turn's end, which the socket's buffer takes whole: done
        // at once too, nothing for the ring to complete.
        a_quiet_turn().await;
        let before = at_once(&h);
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
        assert_eq!(at_once(&h) - before, 2, "{:?}", h.metrics()[0]);
        // 32 MiB cannot fit: the first part goes at once, the rest waits in the ring
        // for the peer to read, in order.
        let big = Bytes::from(random(21, 32 << 20));
        a_quiet_turn().await;
        s.queue_send(big.clone()).expect("queue");
        assert!(s.send_backlog() > 0);
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("sent");
        assert_eq!(at_once(&h) - before, 3, "{:?}", h.metrics()[0]);
        big
    });
    assert_eq!(&got[..14], b"one two three ");
    assert!(got[14..] == big[..], "the large send arrived changed");
}

#[test]
fn a_queued_echo_of_received_buffers_is_byte_exact_and_returns_every_buffer() {
    let _fds = common::fd_lock();
    // The pool has 16 buffers: past a few queued, wait for them to go.
    common::queued_echo_round_trip(&common::small_pool_rt(), 4 * 4096, 7);
}

#[test]
fn a_failed_send_is_returned_by_every_later_call() {
    // 64 KiB sends go zero-copy under the default policy, with an op each.
    failed_sends_are_returned(64 << 10, false);
}

#[test]
fn a_failed_small_send_is_returned_by_every_later_call() {
    // A 64 B send that is its turn's first goes at once: the call that queued it
    // returns the failure.
    failed_sends_are_returned(64, false);
}

#[test]
fn a_failed_small_send_waiting_for_its_turns_end_is_returned_by_every_later_call() {
    // Another connection's send takes the turn's send at once: the 64 B send waits for
    // the end of its turn without an op, and meets the failure there.
    failed_sends_are_returned(64, true);
}

/// Sends of `len` bytes to a peer that reset the connection: the failure comes back
/// from a later call, and from every call after it. With `first_elsewhere`, a send to
/// a healthy peer is queued first in each turn.
fn failed_sends_are_returned(len: usize, first_elsewhere: bool) {
    let _fds = common::fd_lock();
    common::small_pool_rt().block_on(async {
        let (l, addr) = common::loopback_listener();
        let healthy = common::reader(addr);
        let (other, _) = l.accept().await.expect("accept");
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
        let piece = Bytes::from(vec![9u8; len]);
        let start = Instant::now();
        let mut elsewhere = 0;
        let first = loop {
            if first_elsewhere {
                a_quiet_turn().await;
                other
                    .queue_send(Bytes::from_static(b"x"))
                    .expect("a healthy peer");
                assert_eq!(other.send_backlog(), 0, "the turn's first went at once");
                elsewhere += 1;
            }
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
        drop(other);
        let got = join_peer(healthy).await;
        assert_eq!(got.len(), elsewhere, "the healthy peer got every send");
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

#[test]
fn a_turns_first_small_send_goes_at_once_and_the_next_waits_for_the_turns_end_seen_by_every_query()
{
    let ((), got) = to_a_reader(|s, h| async move {
        a_quiet_turn().await;
        let before = at_once(&h);
        // The first send of the turn goes as it is queued: nothing is left to see.
        s.queue_send(Bytes::from_static(b"hello ")).expect("queue");
        assert_eq!(at_once(&h) - before, 1, "{:?}", h.metrics()[0]);
        assert_eq!(s.send_backlog(), 0);
        assert_eq!(s.send_progress(), None);
        assert!(matches!(s.sends_done(), Some(Ok(()))));
        // The second one waits until the loop turn ends: every query sees it, and none
        // sends it.
        s.queue_send(Bytes::from_static(b"world ")).expect("queue");
        assert_eq!(s.send_backlog(), 6);
        let progress = s.send_progress().expect("a send on its way");
        assert!(s.sends_done().is_none(), "not sent before the turn ends");
        assert_eq!(s.send_progress(), Some(progress), "a query changes nothing");
        assert_eq!(at_once(&h) - before, 1, "{:?}", h.metrics()[0]);
        timeout(Duration::from_secs(20), s.flush_sends())
            .await
            .expect("flushed")
            .expect("sent");
        // Alone at the turn's end, it went at once there.
        assert_eq!(at_once(&h) - before, 2, "{:?}", h.metrics()[0]);
        assert_eq!(s.send_backlog(), 0);
        assert_eq!(s.send_progress(), None);
        assert!(matches!(s.sends_done(), Some(Ok(()))));
        // The next turn's first send goes as it is queued again; with no query at
        // all, its second goes at the end of the turn.
        a_quiet_turn().await;
        s.queue_send(Bytes::from_static(b"again ")).expect("queue");
        assert_eq!(s.send_backlog(), 0, "sent as it was queued");
        s.queue_send(Bytes::from_static(b"and again"))
            .expect("queue");
        assert_eq!(s.send_backlog(), 9, "waits for the turn's end");
        sleep(Duration::from_millis(20)).await;
        assert_eq!(s.send_backlog(), 0, "sent when its turn ended");
        assert_eq!(at_once(&h) - before, 4, "{:?}", h.metrics()[0]);
    });
    assert_eq!(got, b"hello world again and again");
}

#[test]
fn a_send_that_more_follow_waits_for_the_turns_end_and_the_next_joins_it_in_one_send() {
    let ((), got) = to_a_reader(|s, h| async move {
        a_quiet_turn().await;
        let before = at_once(&h);
        // Would go at once as the turn's first, but more follow: it waits.
        s.queue_send_more(Bytes::from_static(b"one "))
            .expect("queue");
        assert_eq!(s.send_backlog(), 4, "waits for the turn's end");
        assert!(s.sends_done().is_none());
        // The last of them joins it (the socket is no longer idle).
        s.queue_send(Bytes::from_static(b"two")).expect("queue");
        assert_eq!(s.send_backlog(), 7);
        assert_eq!(at_once(&h), before, "nothing went before the turn's end");
        timeout(Duration::from_secs(20), s.flush_sends())
            .await
            .expect("flushed")
            .expect("sent");
        // One gathered send, alone at the turn's end.
        assert_eq!(at_once(&h) - before, 1, "{:?}", h.metrics()[0]);
        assert_eq!(s.send_backlog(), 0);
    });
    assert_eq!(got, b"one two");
}

#[test]
fn a_small_send_cancelled_in_its_own_turn_sends_nothing_and_reports_the_cancel() {
    let ((), got) = to_a_reader(|s, _| async move {
        // The turn's first send goes at once; the second waits for the turn's end.
        a_quiet_turn().await;
        s.queue_send(Bytes::from_static(b"sent ")).expect("queue");
        s.queue_send(Bytes::from_static(b"never sent"))
            .expect("queue");
        assert_eq!(s.send_backlog(), 10);
        s.cancel_sends();
        assert_eq!(s.send_backlog(), 0, "the cancel dropped it");
        let flushed = s.flush_sends().await.expect_err("the cancel is reported");
        assert_eq!(flushed.raw_os_error(), Some(libc::ECANCELED));
        let again = s
            .queue_send(Bytes::from_static(b"nor this"))
            .expect_err("later sends fail");
        assert_eq!(again.raw_os_error(), Some(libc::ECANCELED));
    });
    assert_eq!(got, b"sent ", "a cancelled send reached the peer");
}

#[test]
fn small_sends_of_several_connections_in_one_turn_go_through_the_ring_together() {
    let _fds = common::fd_lock();
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peers: Vec<_> = (0..4).map(|_| common::reader(addr)).collect();
        let mut streams = Vec::new();
        for _ in 0..4 {
            streams.push(l.accept().await.expect("accept").0);
        }
        a_quiet_turn().await;
        let before = h.metrics()[0];
        // One turn: four sockets, two sends each. The turn's first goes at once; the
        // second on that socket waits for the turn's end alone, and on the others it
        // joins the first in an op.
        for (i, s) in streams.iter().enumerate() {
            s.queue_send(Bytes::from(format!("{i}a "))).expect("queue");
            s.queue_send(Bytes::from(format!("{i}b"))).expect("queue");
        }
        for s in &streams {
            timeout(Duration::from_secs(20), s.flush_sends())
                .await
                .expect("flushed")
                .expect("sent");
        }
        let after = h.metrics()[0];
        assert_eq!(
            after.ops_at_once - before.ops_at_once,
            1,
            "sends of one turn went one syscall each: {after:?}"
        );
        drop(streams);
        for (i, peer) in peers.into_iter().enumerate() {
            let got = join_peer(peer).await;
            // The accepts may pair peers and streams in any order: each peer got one
            // stream's two sends, in order.
            let text = String::from_utf8(got).expect("utf-8");
            let n = text.chars().next().expect("bytes arrived");
            assert_eq!(text, format!("{n}a {n}b"), "peer {i}");
        }
    });
}

#[test]
fn a_plain_send_the_socket_takes_in_part_goes_on_through_the_ring_in_order() {
    let _fds = common::fd_lock();
    let mut b = common::small_pool_builder();
    b.send_zero_copy(SendZeroCopy::Off);
    let rt = b.build().expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = slow_reader(addr, Duration::from_millis(100));
        let (s, _) = l.accept().await.expect("accept");
        a_quiet_turn().await;
        let before = h.metrics()[0].ops_at_once;
        // 8 MiB, plain, the turn's first send: the socket takes a part as it is queued,
        // the rest waits in the ring; what the next turn queues follows it.
        let big = Bytes::from(random(11, 8 << 20));
        s.queue_send(big.clone()).expect("queue");
        assert_eq!(h.metrics()[0].ops_at_once - before, 1, "tried at once");
        let left = s.send_backlog();
        assert!(left > 0 && left < big.len(), "{left} of {} left", big.len());
        sleep(Duration::from_millis(1)).await;
        assert!(s.send_backlog() > 0, "a slow reader leaves the rest queued");
        s.queue_send(Bytes::from_static(b"tail")).expect("queue");
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("sent");
        assert_eq!(s.send_backlog(), 0);
        drop(s);
        let got = join_peer(peer).await;
        assert_eq!(got.len(), big.len() + 4);
        assert!(
            got[..big.len()] == big[..],
            "the large send arrived changed"
        );
        assert_eq!(&got[big.len()..], b"tail");
    });
}

#[test]
fn a_runtime_dropped_with_a_small_send_waiting_for_its_turn_closes_the_socket() {
    let _fds = common::fd_lock();
    let fds = common::fd_count();
    let rt = common::small_pool_rt();
    let (l, addr) = rt.block_on(async { common::loopback_listener() });
    let peer = common::reader(addr);
    rt.block_on(async {
        let (s, _) = l.accept().await.expect("accept");
        // The turn's first send goes at once; the second waits for the turn's end, and
        // the task ends right after: it may still wait when the runtime goes.
        a_quiet_turn().await;
        s.queue_send(Bytes::from_static(b"last ")).expect("queue");
        s.queue_send(Bytes::from_static(b"words")).expect("queue");
        assert_eq!(s.send_backlog(), 5, "the second waits for the turn's end");
    });
    drop(l);
    let start = Instant::now();
    drop(rt);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the shutdown took {:?}",
        start.elapsed()
    );
    // The peer sees the end of stream (the socket closed), with the send or without.
    let got = peer.join().expect("the peer read to the end");
    assert!(got == b"last " || got == b"last words", "{got:?}");
    assert_eq!(common::fd_count(), fds, "an fd leaked");
}
