//! Zero-copy queued sends (`SendZeroCopy`): `SEND_ZC`/`SENDMSG_ZC` with usage reports,
//! and the adaptive policy. On loopback the kernel copies every zero-copy send, which
//! these tests use: the default policy sends plain to this host from the start, the
//! `always` policy sends zero-copy anyway (every notification reporting the copy), a
//! Unix socket refuses and goes plain. Every byte is checked, every pool buffer must
//! come back after its notification, and cancelling or shutting down with zero-copy
//! sends in flight ends in time without leaking an op or an fd.

mod common;

use bytes::Bytes;
use common::{join_peer, random};
use std::time::Duration;
use zerorx::net::UnixStream;
use zerorx::runtime::{RegisteredBuf, REGISTERED_CHUNK};
use zerorx::{spawn, timeout, Runtime, SendZeroCopy, WorkerMetricsSnapshot};

/// One worker, the small pool, and `policy`.
fn rt(policy: SendZeroCopy) -> Runtime {
    common::small_pool_builder()
        .send_zero_copy(policy)
        .build()
        .expect("runtime")
}

fn metrics(h: &zerorx::Handle) -> WorkerMetricsSnapshot {
    h.metrics()[0]
}

/// Queues `data` in pieces of growing odd sizes (many above the threshold, many
/// below), flushes, closes, and returns what the peer read.
async fn send_in_pieces(data: &Bytes) -> Vec<u8> {
    let (l, addr) = common::loopback_listener();
    let peer = common::reader(addr);
    let (s, _) = l.accept().await.expect("accept");
    for piece in common::odd_pieces(data.len()) {
        let at = piece.end;
        s.queue_send(data.slice(piece)).expect("queue");
        if at % 3 == 0 {
            // Some sends go alone, some gathered behind one in flight.
            zerorx::yield_now().await;
        }
    }
    timeout(Duration::from_secs(30), s.flush_sends())
        .await
        .expect("flushed in time")
        .expect("every queued send succeeded");
    assert_eq!(s.send_backlog(), 0);
    drop(s);
    join_peer(peer).await
}

#[test]
fn the_default_policy_sends_to_this_host_plain_from_the_start() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::default());
    let h = rt.handle().clone();
    let data = Bytes::from(random(11, 4 << 20));
    let got = rt.block_on(send_in_pieces(&data));
    assert!(got == data, "the bytes arrived changed or out of order");
    let m = metrics(&h);
    assert_eq!(m.send_zc, 0, "a zero-copy send to this host: {m:?}");
    assert_eq!(
        m.send_zc_off, 1,
        "the socket was not switched to plain: {m:?}"
    );
}

#[test]
fn the_always_policy_sends_zero_copy_and_counts_every_copy_the_kernel_made() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always {
        threshold: 16 << 10,
    });
    let h = rt.handle().clone();
    let data = Bytes::from(random(12, 8 << 20));
    let got = rt.block_on(send_in_pieces(&data));
    assert!(got == data, "the bytes arrived changed or out of order");
    let m = metrics(&h);
    assert!(m.send_zc > 0, "no zero-copy send: {m:?}");
    // Loopback copies every one, and each notification says so.
    assert_eq!(m.send_zc_copied, m.send_zc, "{m:?}");
    assert_eq!(m.send_zc_off, 0, "`always` kept sending zero-copy: {m:?}");
    // The state dump says the same (worker 0 answers while a thread is in block_on).
    let dump = rt.block_on(async { h.dump() });
    assert_eq!(dump.workers[0].sends.zero_copy, m.send_zc, "{dump}");
    let text = dump.to_string();
    let line = format!(
        "zero-copy sends: {} ({} copied by the kernel), 0 sockets sending plain",
        m.send_zc, m.send_zc_copied
    );
    assert!(text.contains(&line), "{line:?} not in:\n{text}");
}

#[test]
fn a_zero_copy_echo_of_received_buffers_is_byte_exact_and_returns_every_buffer() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always { threshold: 0 });
    let h = rt.handle().clone();
    // 16 pool buffers: a received buffer sent zero-copy stays out of the pool until
    // its notification, which the flush waits for.
    common::queued_echo_round_trip(&rt, 0, 13);
    let m = metrics(&h);
    assert!(m.send_zc > 0 && m.send_zc_copied == m.send_zc, "{m:?}");
}

#[test]
fn a_unix_socket_refuses_zero_copy_and_its_sends_go_plain() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always { threshold: 0 });
    let h = rt.handle().clone();
    rt.block_on(async {
        let (a, b) = UnixStream::pair().expect("pair");
        let data = Bytes::from(random(14, 1 << 20));
        for piece in data.chunks(100_000) {
            a.queue_send(data.slice_ref(piece)).expect("queue");
        }
        let reading = spawn(async move {
            let mut got = Vec::new();
            while got.len() < 1 << 20 {
                match b.recv().await.expect("recv") {
                    Some(buf) => got.extend_from_slice(&buf),
                    None => break,
                }
            }
            got
        });
        timeout(Duration::from_secs(30), a.flush_sends())
            .await
            .expect("flushed in time")
            .expect("the sends went plain");
        let got = reading.await.expect("reader");
        assert!(got == data[..], "got {} bytes", got.len());
    });
    let m = metrics(&h);
    assert_eq!(
        m.send_zc_off, 1,
        "the refusal did not switch the socket: {m:?}"
    );
}

#[test]
fn cancelling_zero_copy_sends_stuck_behind_a_peer_that_does_not_read_lets_the_socket_go() {
    common::cancelled_stuck_sends_let_the_socket_go(|| rt(SendZeroCopy::Always { threshold: 0 }));
}

#[test]
fn a_runtime_shut_down_with_zero_copy_sends_in_flight_ends_in_time_without_leaking() {
    common::shutdown_with_a_stuck_send_is_clean(
        || rt(SendZeroCopy::Always { threshold: 0 }),
        |_| {},
    );
}

/// Chunks of worker 0's registered arena not handed out, and in all.
fn arena_chunks() -> (usize, usize) {
    zerorx::runtime::registered_chunks().expect("the arena was made")
}

#[test]
fn registered_buffers_go_out_zero_copy_and_return_to_the_arena_after_the_notification() {
    let _fds = common::fd_lock();
    let mut b = common::small_pool_builder();
    b.send_zero_copy(SendZeroCopy::Always { threshold: 0 })
        .send_arena(4 * REGISTERED_CHUNK);
    let rt = b.build().expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        let data = random(31, 5 * REGISTERED_CHUNK + 1000);
        // One at a time: each a single SEND_ZC naming the registered buffer.
        for piece in data[..2 * REGISTERED_CHUNK].chunks(REGISTERED_CHUNK) {
            let mut buf = RegisteredBuf::new().expect("registers").expect("a chunk");
            buf.extend_from_slice(piece).expect("fits");
            s.queue_send(buf).expect("queue");
            s.flush_sends().await.expect("sent");
            assert_eq!(arena_chunks(), (4, 4), "the chunk is back after the notification");
        }
        // Then four queued together (gathered into one SENDMSG_ZC).
        let mut sent = 2 * REGISTERED_CHUNK;
        for piece in data[sent..].chunks(REGISTERED_CHUNK) {
            let mut buf = RegisteredBuf::new()
                .expect("the arena registers")
                .expect("a free chunk");
            assert_eq!(buf.capacity(), REGISTERED_CHUNK);
            buf.extend_from_slice(piece).expect("fits");
            if piece.len() == REGISTERED_CHUNK {
                let e = buf.extend_from_slice(&[0]).expect_err("a full chunk refuses more");
                assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            }
            s.queue_send(buf).expect("queue");
            sent += piece.len();
        }
        assert_eq!(sent, data.len());
        // Four chunks in all, all handed out: the next asks for more than there is.
        assert_eq!(arena_chunks(), (0, 4));
        assert!(RegisteredBuf::new().expect("no error").is_none(), "the arena is full");
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("sent");
        // After the flush (which waits for the notifications) every chunk is back.
        assert_eq!(arena_chunks(), (4, 4));
        drop(s);
        let got = join_peer(peer).await;
        let first_diff = got.iter().zip(&data).position(|(a, b)| a != b);
        assert!(
            got == data,
            "the bytes arrived changed or out of order: got {} of {}, first difference at {first_diff:?}",
            got.len(),
            data.len()
        );
    });
    let m = metrics(&h);
    assert!(m.send_zc >= 1, "{m:?}");
}

#[test]
fn an_arena_of_size_zero_hands_out_nothing_and_compat_writes_still_go() {
    use futures_util::io::AsyncWriteExt;
    let _fds = common::fd_lock();
    let mut b = common::small_pool_builder();
    b.send_zero_copy(SendZeroCopy::Always { threshold: 0 })
        .send_arena(0);
    b.build().expect("runtime").block_on(async {
        assert!(RegisteredBuf::new().expect("no error").is_none());
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        let data = random(32, 300_000);
        let mut w = s.compat();
        w.write_all(&data).await.expect("write");
        w.close().await.expect("close");
        drop(w);
        assert!(join_peer(peer).await == data);
    });
}

#[test]
fn compat_writes_that_go_zero_copy_use_the_registered_arena() {
    use futures_util::io::AsyncWriteExt;
    let _fds = common::fd_lock();
    let mut b = common::small_pool_builder();
    b.send_zero_copy(SendZeroCopy::Always {
        threshold: 16 << 10,
    })
    .send_arena(8 * REGISTERED_CHUNK);
    b.build().expect("runtime").block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        let data = random(33, 1 << 20);
        let mut w = s.compat();
        w.write_all(&data[..1000]).await.expect("a small write");
        w.write_all(&data[1000..]).await.expect("large writes");
        // Large writes took registered chunks (the arena exists now).
        let (_, all) = arena_chunks();
        assert_eq!(all, 8);
        w.close().await.expect("close");
        assert_eq!(arena_chunks(), (8, 8), "every chunk back after the flush");
        drop(w);
        assert!(join_peer(peer).await == data, "the bytes arrived changed");
    });
}
