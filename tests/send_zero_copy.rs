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
use std::sync::Arc;
use std::time::Duration;
use zerorx::net::UnixStream;
use zerorx::runtime::{
    register_send_memory, IoUringOp, OpState, RegisteredBuf, SendMemory, REGISTERED_CHUNK,
    SEND_REGISTRATIONS,
};
use zerorx::{spawn, timeout, Runtime, SendZeroCopy, WorkerMetricsSnapshot};

/// One worker, the small pool, and `policy`.
fn rt(policy: SendZeroCopy) -> Runtime {
    common::small_pool_builder()
        .send_zero_copy(policy)
        .build()
        .expect("runtime")
}

/// [`rt`] with a registered send arena of `chunks` chunks.
fn arena_rt(policy: SendZeroCopy, chunks: usize) -> Runtime {
    common::small_pool_builder()
        .send_zero_copy(policy)
        .send_arena(chunks * REGISTERED_CHUNK)
        .build()
        .expect("runtime")
}

/// Asserts the peer got `want`, saying where it first differs if not.
fn assert_arrived(got: &[u8], want: &[u8]) {
    let first_diff = got.iter().zip(want).position(|(a, b)| a != b);
    assert!(
        got == want,
        "the bytes arrived changed or out of order: got {} of {}, first difference at {first_diff:?}",
        got.len(),
        want.len()
    );
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
        "zero-copy sends: {} ({} copied by the kernel, 0 naming registered memory), \
         0 sockets sending plain",
        m.send_zc, m.send_zc_copied
    );
    assert!(text.contains(&line), "{line:?} not in:\n{text}");
}

#[test]
fn a_zero_copy_echo_of_received_buffers_is_byte_exact_and_returns_every_buffer() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always { threshold: 0 });
    let h = rt.handle().clone();
    // The pool's area registered for sends: every send of received buffers (one, or
    // several gathered) names it.
    let n = rt.block_on(async { zerorx::runtime::register_receive_pools() });
    assert_eq!(n.expect("registers"), 1, "the copy pool's area");
    // 16 pool buffers: a received buffer sent zero-copy stays out of the pool until
    // its notification, which the flush waits for.
    common::queued_echo_round_trip(&rt, 0, 13);
    let m = metrics(&h);
    assert!(m.send_zc > 0 && m.send_zc_copied == m.send_zc, "{m:?}");
    assert_eq!(m.send_zc_registered, m.send_zc, "{m:?}");
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
    let rt = arena_rt(SendZeroCopy::Always { threshold: 0 }, 4);
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
            assert_eq!(
                arena_chunks(),
                (4, 4),
                "the chunk is back after the notification"
            );
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
                let e = buf
                    .extend_from_slice(&[0])
                    .expect_err("a full chunk refuses more");
                assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            }
            s.queue_send(buf).expect("queue");
            sent += piece.len();
        }
        assert_eq!(sent, data.len());
        // Four chunks in all, all handed out: the next asks for more than there is.
        assert_eq!(arena_chunks(), (0, 4));
        assert!(
            RegisteredBuf::new().expect("no error").is_none(),
            "the arena is full"
        );
        timeout(Duration::from_secs(30), s.flush_sends())
            .await
            .expect("flushed in time")
            .expect("sent");
        // After the flush (which waits for the notifications) every chunk is back.
        assert_eq!(arena_chunks(), (4, 4));
        drop(s);
        assert_arrived(&join_peer(peer).await, &data);
    });
    let m = metrics(&h);
    // Two single sends and one gathered send of four chunks, each naming the
    // registration.
    assert_eq!((m.send_zc, m.send_zc_registered), (3, 3), "{m:?}");
}

#[test]
fn an_arena_of_size_zero_hands_out_nothing_and_compat_writes_still_go() {
    use futures_util::io::AsyncWriteExt;
    let _fds = common::fd_lock();
    arena_rt(SendZeroCopy::Always { threshold: 0 }, 0).block_on(async {
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
    arena_rt(
        SendZeroCopy::Always {
            threshold: 16 << 10,
        },
        8,
    )
    .block_on(async {
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

#[test]
fn an_awaited_send_to_this_host_goes_plain_under_the_default_policy() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::default());
    let h = rt.handle().clone();
    let data = Bytes::from(random(41, 1 << 20));
    let got = rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        s.send(data.clone()).await.expect("send");
        s.send_vectored(&[data.slice(..1000), data.slice(1000..)])
            .await
            .expect("vectored send");
        drop(s);
        join_peer(peer).await
    });
    assert!(got[..data.len()] == data[..] && got[data.len()..] == data[..]);
    let m = metrics(&h);
    assert_eq!(m.send_zc, 0, "a zero-copy send to this host: {m:?}");
    assert_eq!(
        m.send_zc_off, 1,
        "the socket was not switched to plain: {m:?}"
    );
}

/// A peer on this host with a receive buffer of `rcvbuf` bytes that reads nothing
/// until `go` says so; then `read` reads (with a 60 s timeout per read).
fn slow_peer<T: Send + 'static>(
    addr: std::net::SocketAddr,
    rcvbuf: usize,
    read: impl FnOnce(&mut std::net::TcpStream) -> T + Send + 'static,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<T>) {
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let peer = std::thread::spawn(move || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        s.set_recv_buffer_size(rcvbuf).expect("SO_RCVBUF");
        s.connect(&addr.into()).expect("connect");
        let mut c = std::net::TcpStream::from(s);
        let _ = wait.recv_timeout(Duration::from_secs(30));
        c.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        read(&mut c)
    });
    (go, peer)
}

/// Reads `c` to its end.
fn read_to_end(c: &mut std::net::TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    std::io::Read::read_to_end(c, &mut got).expect("read to the end");
    got
}

/// Waits (up to 60 s: a loopback retransmission backoff can hold a notification
/// ~30 s) until `done` holds, yielding to the runtime meanwhile.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} did not happen in 60 s"
        );
        zerorx::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn an_awaited_zero_copy_send_is_done_at_its_result_and_keeps_its_buffers_until_the_notification() {
    let _fds = common::fd_lock();
    let rt = arena_rt(
        SendZeroCopy::Always {
            threshold: 16 << 10,
        },
        4,
    );
    let h = rt.handle().clone();
    let data = random(42, 4 * REGISTERED_CHUNK + 1000);
    let got = rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        // A receive window well under the send, but no smaller than a loopback
        // segment: with a 4 KiB buffer the receiver drops zero-copy segments and the
        // notification can take ~30 s of retransmissions (docs/performance.md).
        let (go, peer) = slow_peer(addr, 64 << 10, read_to_end);
        let (s, _) = l.accept().await.expect("accept");
        // Room in the sender's buffer for the whole send: the result comes at once.
        s.socket().set_send_buffer_size(4 << 20).expect("SO_SNDBUF");
        // Below the policy's size: plain.
        s.send(Bytes::copy_from_slice(&data[..1000]))
            .await
            .expect("small send");
        assert_eq!(metrics(&h).send_zc, 0);
        let chunks = data[1000..].chunks(REGISTERED_CHUNK).map(|piece| {
            let mut buf = RegisteredBuf::new().expect("registers").expect("a chunk");
            buf.extend_from_slice(piece).expect("fits");
            zerorx::net::SendBuf::from(buf)
        });
        timeout(
            Duration::from_secs(10),
            s.send_vectored_owned(chunks.collect()),
        )
        .await
        .expect("the send is done at its result, not at the notification")
        .expect("sent");
        let m = metrics(&h);
        assert_eq!((m.send_zc, m.send_zc_registered), (1, 1), "{m:?}");
        // The peer has read nothing and its window holds a fraction of the send, so
        // the kernel still holds the pages: no chunk is back in the arena, and the
        // state dump lists the send.
        assert_eq!(
            arena_chunks(),
            (0, 4),
            "a chunk came back before the notification"
        );
        let dump = h.dump();
        let waiting = dump.workers[0]
            .ops
            .iter()
            .find(|o| o.opcode == IoUringOp::SendMsgZc);
        let waiting = waiting.unwrap_or_else(|| panic!("no SENDMSG_ZC op in the dump: {dump}"));
        assert_eq!(waiting.state, OpState::WaitingForNotification, "{dump}");
        let _ = go.send(());
        until("the chunks' return after the notification", || {
            arena_chunks() == (4, 4)
        })
        .await;
        // Loopback copies: the notification said so, and the `always` policy counted
        // it without switching the socket.
        let m = metrics(&h);
        assert_eq!((m.send_zc_copied, m.send_zc_off), (1, 0), "{m:?}");
        drop(s);
        join_peer(peer).await
    });
    assert_arrived(&got, &data);
}

#[test]
fn vectored_zero_copy_sends_name_the_registration_only_when_every_buffer_lies_in_it() {
    let _fds = common::fd_lock();
    let rt = arena_rt(SendZeroCopy::Always { threshold: 0 }, 4);
    let h = rt.handle().clone();
    let data = random(43, 3 * REGISTERED_CHUNK);
    let chunk = |range: std::ops::Range<usize>| {
        let mut buf = RegisteredBuf::new().expect("registers").expect("a chunk");
        buf.extend_from_slice(&data[range]).expect("fits");
        zerorx::net::SendBuf::from(buf)
    };
    let got = rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        let c = REGISTERED_CHUNK;
        // Two registered chunks: one SENDMSG_ZC naming the registration.
        s.send_vectored_owned(vec![chunk(0..c), chunk(c..2 * c)])
            .await
            .expect("registered vectored send");
        let m = metrics(&h);
        assert_eq!((m.send_zc, m.send_zc_registered), (1, 1), "{m:?}");
        // A registered chunk and heap bytes: zero-copy, but naming nothing.
        let heap = Bytes::copy_from_slice(&data[2 * c + 100..]);
        s.send_vectored_owned(vec![chunk(2 * c..2 * c + 100), heap.into()])
            .await
            .expect("mixed vectored send");
        let m = metrics(&h);
        assert_eq!((m.send_zc, m.send_zc_registered), (2, 1), "{m:?}");
        until("every chunk's return", || arena_chunks() == (4, 4)).await;
        drop(s);
        join_peer(peer).await
    });
    assert_arrived(&got, &data);
    let m = metrics(&h);
    assert_eq!(
        m.send_zc_copied, m.send_zc,
        "loopback copies every one: {m:?}"
    );
}

#[test]
fn an_awaited_send_a_unix_socket_refuses_zero_copy_goes_again_plain() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always { threshold: 0 });
    let h = rt.handle().clone();
    rt.block_on(async {
        let (a, b) = UnixStream::pair().expect("pair");
        let data = Bytes::from(random(44, 300_000));
        let reading = spawn(async move {
            let mut got = Vec::new();
            while let Some(buf) = b.recv().await.expect("recv") {
                got.extend_from_slice(&buf);
            }
            got
        });
        a.send(data.clone())
            .await
            .expect("sent plain after the refusal");
        let e = a
            .send_zc(data.slice(..10))
            .await
            .expect_err("an explicit zero-copy send reports the refusal");
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
        drop(a);
        let got = reading.await.expect("reader");
        assert!(got == data[..], "got {} bytes", got.len());
    });
    let m = metrics(&h);
    assert_eq!((m.send_zc, m.send_zc_off), (0, 1), "{m:?}");
}

/// Memory the tests register for sending.
struct Blob(Box<[u8]>);

// SAFETY: the boxed slice neither moves nor changes length while the value lives.
unsafe impl SendMemory for Blob {
    fn range(&self) -> (*const u8, usize) {
        (self.0.as_ptr(), self.0.len())
    }
}

/// Shared bytes viewing `range` of a blob, keeping it alive.
fn view(blob: &Arc<Blob>, range: std::ops::Range<usize>) -> Bytes {
    struct View(Arc<Blob>, std::ops::Range<usize>);
    impl AsRef<[u8]> for View {
        fn as_ref(&self) -> &[u8] {
            &self.0 .0[self.1.clone()]
        }
    }
    Bytes::from_owner(View(blob.clone(), range))
}

fn blob(seed: u64, len: usize) -> Arc<Blob> {
    Arc::new(Blob(random(seed, len).into()))
}

#[test]
fn sends_of_registered_memory_name_it_and_short_runs_around_them_go_plain() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always {
        threshold: 16 << 10,
    });
    let h = rt.handle().clone();
    let (got, want) = rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let peer = common::reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        let b = blob(51, 1 << 20);
        assert!(register_send_memory(&b).expect("registers"));
        assert!(
            register_send_memory(&b).expect("again"),
            "a second call finds it"
        );
        let registrations = || h.dump().workers[0].sends.registered_memory;
        assert_eq!(registrations(), 1);
        let k = 1 << 10;
        let heap = |n: usize| Bytes::from(random(n as u64, n));
        let mut want = Vec::new();
        // Awaited, all of it in the registration: named.
        s.send(view(&b, 0..256 * k)).await.expect("send");
        want.extend_from_slice(&b.0[..256 * k]);
        let m = metrics(&h);
        assert_eq!((m.send_zc, m.send_zc_registered), (1, 1), "{m:?}");
        // Queued between small heap buffers: the header and trailer go plain, the
        // registered run alone and named.
        let parts = [heap(100), view(&b, 256 * k..512 * k), heap(101)];
        parts.iter().for_each(|p| want.extend_from_slice(p));
        s.queue_send_vectored(parts.into_iter().map(Into::into))
            .expect("queue");
        s.flush_sends().await.expect("flush");
        let m = metrics(&h);
        assert_eq!((m.send_zc, m.send_zc_registered), (2, 2), "{m:?}");
        // A registered run under 64 KiB between large heap buffers rides along
        // unregistered: one zero-copy send naming nothing.
        let parts = [heap(20 * k), view(&b, 512 * k..542 * k), heap(100)];
        parts.iter().for_each(|p| want.extend_from_slice(p));
        s.queue_send_vectored(parts.into_iter().map(Into::into))
            .expect("queue");
        s.flush_sends().await.expect("flush");
        let m = metrics(&h);
        assert_eq!((m.send_zc, m.send_zc_registered), (3, 2), "{m:?}");
        // The sends let go of their views; the blob's owner goes, and with it the
        // registration's match.
        drop(b);
        assert_eq!(registrations(), 0, "the blob's registration still matches");
        drop(s);
        (join_peer(peer).await, want)
    });
    assert_arrived(&got, &want);
}

#[test]
fn a_worker_holds_a_bounded_number_of_registrations_and_reuses_those_whose_owner_went() {
    let _fds = common::fd_lock();
    let e = register_send_memory(&blob(60, 10)).expect_err("off a worker");
    assert!(e.to_string().contains("runtime"), "{e}");
    rt(SendZeroCopy::default()).block_on(async {
        assert!(
            !register_send_memory(&blob(61, 0)).expect("no error"),
            "empty memory"
        );
        let mut held: Vec<_> = (0..SEND_REGISTRATIONS)
            .map(|i| blob(62 + i as u64, 4096))
            .collect();
        for b in &held {
            assert!(register_send_memory(b).expect("registers"));
        }
        let extra = blob(99, 4096);
        assert!(
            !register_send_memory(&extra).expect("no error"),
            "over the bound"
        );
        held.pop();
        assert!(
            register_send_memory(&extra).expect("registers"),
            "the slot of a registration whose owner went was not reused"
        );
    });
}

#[test]
fn a_connection_set_to_reset_on_close_resets_at_its_drop_with_zero_copy_sends_in_flight() {
    let _fds = common::fd_lock();
    let rt = rt(SendZeroCopy::Always { threshold: 0 });
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        // What arrives before the connection ends, and how it ends.
        let (go, peer) = slow_peer(addr, 4096, |c| {
            let (mut got, mut buf) = (0, vec![0u8; 64 << 10]);
            loop {
                match std::io::Read::read(c, &mut buf) {
                    Ok(0) => return (got, None),
                    Ok(n) => got += n,
                    Err(e) => return (got, Some(e)),
                }
            }
        });
        let (s, _) = l.accept().await.expect("accept");
        s.socket().set_send_buffer_size(4 << 20).expect("SO_SNDBUF");
        // Done at its result; the notification waits for the peer, which reads nothing.
        let data = Bytes::from(random(46, 1 << 20));
        timeout(Duration::from_secs(10), s.send(data))
            .await
            .expect("done at its result")
            .expect("sent");
        s.socket()
            .set_linger(Some(Duration::ZERO))
            .expect("SO_LINGER");
        drop(s);
        let _ = go.send(());
        let (got, ended) = join_peer(peer).await;
        let e = ended.expect("the peer saw a reset, not an end of stream");
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
        // The reset came at the drop, discarding what the socket still held, not once
        // the send was through.
        assert!(got < 1 << 20, "all {got} bytes arrived before the reset");
    });
}
