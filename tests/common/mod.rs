//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;
use zerorx::{Runtime, WakeMode};

pub const MODES: [WakeMode; 2] = [WakeMode::EventFd, WakeMode::MsgRing];

pub fn rt(threads: usize, mode: WakeMode) -> Runtime {
    Runtime::builder()
        .threads(threads)
        .wake(mode)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime")
}

/// `len` pseudo-random bytes from `seed` (any seed; xorshift needs a non-zero state).
pub fn random(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// Joins a peer thread without blocking the worker (which must keep running for the
/// peer to finish: it serves the other end), failing after 30 s; a panic in the peer
/// is resumed here.
pub async fn join_peer<T>(peer: std::thread::JoinHandle<T>) -> T {
    let start = std::time::Instant::now();
    while !peer.is_finished() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the peer thread did not finish"
        );
        zerorx::sleep(Duration::from_millis(5)).await;
    }
    match peer.join() {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e),
    }
}

/// A std client on its own thread: writes `data` to the echo server at `addr` in
/// `chunk`-byte writes while a second thread reads the echo and checks every byte,
/// then shuts its write half (the server sees the end of stream).
pub fn std_echo_client(
    addr: std::net::SocketAddr,
    data: Vec<u8>,
    chunk: usize,
) -> std::thread::JoinHandle<()> {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut reader = c.try_clone().expect("clone");
        let expect = data.clone();
        let read = std::thread::spawn(move || {
            let mut got = vec![0u8; expect.len()];
            reader.read_exact(&mut got).expect("read the echo");
            assert!(got == expect, "the echo differs from what was sent");
        });
        for piece in data.chunks(chunk) {
            c.write_all(piece).expect("write");
        }
        read.join().expect("reader");
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
    })
}

/// Copy-pool buffers of worker 0 not back in the pool.
pub fn in_use(h: &zerorx::Handle) -> u64 {
    h.pool_stats()[0]
        .expect("the runtime has a copy pool")
        .in_use
}

/// Waits (bounded) until every buffer of worker 0's pool is back; fails with the
/// last count.
pub async fn pool_drained(h: &zerorx::Handle) {
    let start = std::time::Instant::now();
    while in_use(h) != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "pool buffers still held: {:?}",
            h.pool_stats()[0]
        );
        zerorx::sleep(Duration::from_millis(5)).await;
    }
}

/// One worker with a 16 × 4 KiB copy pool: small enough that a test can hold, count
/// and run out of its buffers.
pub fn small_pool_rt() -> Runtime {
    small_pool_builder().build().expect("runtime")
}

/// [`small_pool_rt`]'s builder, for a test to set more.
pub fn small_pool_builder() -> zerorx::Builder {
    let mut b = Runtime::builder();
    b.threads(1)
        .copy_pool(Some(zcrx::CopyPoolConfig {
            buffers: 16,
            buffer_size: 4096,
            ..zcrx::CopyPoolConfig::default()
        }))
        .shutdown_timeout(Duration::from_secs(5));
    b
}

/// A listener on a free loopback port, and its address (on a worker thread).
pub fn loopback_listener() -> (zerorx::net::TcpListener, std::net::SocketAddr) {
    let l = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let addr = l.local_addr().expect("addr");
    (l, addr)
}

/// A peer that connects, reads everything until end of stream and returns it.
pub fn reader(addr: std::net::SocketAddr) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut c, &mut got).expect("read to the end");
        got
    })
}

/// Open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// Tests that count fds must not overlap with tests that open fds: one at a time.
pub static FD_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn fd_lock() -> std::sync::MutexGuard<'static, ()> {
    FD_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A deterministic pseudo-random sequence (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A connected loopback pair on the current worker: (client, server side).
pub async fn connected_pair() -> (zerorx::net::TcpStream, zerorx::net::TcpStream) {
    let l = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let c = zerorx::net::TcpStream::connect(l.local_addr().expect("addr"))
        .await
        .expect("connect");
    let (s, _) = l.accept().await.expect("accept");
    (c, s)
}

/// Sends `data` to an echo server over `s` in `chunk`-byte pieces from a task of its
/// own while this task receives the echo, checking every byte in order (`who` names
/// the connection in a failure). Returns the bytes received.
pub async fn echo_verified(
    s: std::rc::Rc<zerorx::net::TcpStream>,
    data: bytes::Bytes,
    chunk: usize,
    who: &str,
) -> usize {
    let writer = {
        let (s, data) = (s.clone(), data.clone());
        zerorx::spawn(async move {
            for piece in data.chunks(chunk) {
                s.send(data.slice_ref(piece)).await.expect("send");
            }
        })
    };
    let mut got = 0;
    while got < data.len() {
        let buf = s.recv().await.expect("recv").expect("no early EOF");
        assert_eq!(&buf[..], &data[got..got + buf.len()], "{who} at {got}");
        got += buf.len();
    }
    writer.await.expect("writer");
    got
}

/// A `nodev_*` test: run where the kernel has device-less ZCRX (`missing` is `None`),
/// else listed as ignored, or failed with the reason when `ZERORX_REQUIRE_NODEV` is set
/// (the guest suite sets it, so a kernel without it cannot pass quietly).
pub fn nodev_trial(
    name: &str,
    case: fn() -> Result<(), libtest_mimic::Failed>,
    missing: &Option<String>,
) -> libtest_mimic::Trial {
    use libtest_mimic::Trial;
    match missing {
        Some(reason) if std::env::var_os("ZERORX_REQUIRE_NODEV").is_some() => {
            let reason = format!("ZERORX_REQUIRE_NODEV is set but {reason}");
            Trial::test(name, move || Err(reason.into()))
        }
        _ => Trial::test(name, case).with_ignored_flag(missing.is_some()),
    }
}

/// 1 MiB from a std client through [`queued_echo_server`] on `rt` (worker 0, its copy
/// pool), every echoed byte checked; then every pool buffer must be back.
pub fn queued_echo_round_trip(rt: &Runtime, flush_past: usize, seed: u64) {
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (l, addr) = loopback_listener();
        let server = queued_echo_server(l, flush_past);
        let client = std_echo_client(addr, random(seed, 1 << 20), 5_003);
        let echoed = zerorx::timeout(Duration::from_secs(30), server)
            .await
            .expect("the server finished in time")
            .expect("server task");
        assert_eq!(echoed, 1 << 20);
        join_peer(client).await;
        pool_drained(&h).await;
    });
}

/// A queued echo on one accepted connection of `l`: every received buffer is queued
/// back as it is, and past `flush_past` bytes waiting to be sent the task waits for
/// them (a small pool has few buffers to lend). Returns the bytes echoed.
pub fn queued_echo_server(
    l: zerorx::net::TcpListener,
    flush_past: usize,
) -> zerorx::JoinHandle<usize> {
    zerorx::spawn(async move {
        let (s, _) = l.accept().await.expect("accept");
        let mut echoed = 0usize;
        while let Some(buf) = s.recv().await.expect("recv") {
            echoed += buf.len();
            s.queue_send(buf).expect("queue the RxBuf");
            if s.send_backlog() > flush_past {
                s.flush_sends().await.expect("flush");
            }
        }
        s.flush_sends().await.expect("the last sends");
        echoed
    })
}

/// A send stuck behind a peer that reads nothing, on the runtime `make` builds (under
/// the fd lock): 16 MiB and a few bytes behind them queued, `inspect` called with the
/// runtime's handle while they are stuck, the connection kept by a task; then the
/// runtime is dropped, and the shutdown must end within 5 s, leak no op's memory and
/// leave no fd open.
pub fn shutdown_with_a_stuck_send_is_clean(
    make: impl FnOnce() -> Runtime,
    inspect: impl FnOnce(&zerorx::Handle),
) {
    let _fds = fd_lock();
    let before = fd_count();
    let rt = make();
    let h = rt.handle().clone();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let inner = h.clone();
    let peer = rt.block_on(async move {
        let (l, addr) = loopback_listener();
        // Never reads until the runtime is gone.
        let peer = std::thread::spawn(move || {
            let c = std::net::TcpStream::connect(addr).expect("connect");
            let _ = wait.recv_timeout(Duration::from_secs(30));
            drop(c);
        });
        let (s, _) = l.accept().await.expect("accept");
        queue_more_than_a_socket_holds(&s);
        zerorx::sleep(Duration::from_millis(100)).await;
        inspect(&inner);
        // The stream stays with the runtime's task; the send holds the socket.
        zerorx::spawn(async move {
            let _keep = s;
            std::future::pending::<()>().await
        });
        peer
    });
    let start = std::time::Instant::now();
    drop(rt);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        start.elapsed()
    );
    let _ = go.send(());
    peer.join().expect("peer");
    assert_eq!(h.metrics()[0].leaked_ops, 0, "an op's memory was leaked");
    // The handle keeps the runtime's eventfd.
    drop(h);
    let fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(fd_count(), before, "an fd leaked: {fds:?}");
}

/// Queues 16 MiB and a small send behind it on `s`: more than the socket's buffers
/// hold, so with a peer that reads nothing the first send stays in flight.
fn queue_more_than_a_socket_holds(s: &zerorx::net::TcpStream) {
    s.queue_send(bytes::Bytes::from(vec![1u8; 16 << 20]))
        .expect("queue");
    s.queue_send(bytes::Bytes::from_static(b"behind it"))
        .expect("queue");
}

/// Sends queued behind a peer that reads nothing, then cancelled (`cancel_sends`) on
/// the runtime `make` builds (under the fd lock, so no other test counts its fds): the
/// flush and every later call fail with `ECANCELED`, nothing is left
/// queued, the socket closes once dropped (the peer reaches the end of stream before
/// the whole send) and no fd stays open.
pub fn cancelled_stuck_sends_let_the_socket_go(make: impl FnOnce() -> Runtime) {
    let _fds = fd_lock();
    let before = fd_count();
    make().block_on(async {
        let (l, addr) = loopback_listener();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let peer = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            // Reads nothing until told to, then sees the end of stream soon.
            let _ = wait.recv_timeout(Duration::from_secs(30));
            c.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            let mut sink = Vec::new();
            std::io::Read::read_to_end(&mut c, &mut sink).expect("read to the end")
        });
        let (s, _) = l.accept().await.expect("accept");
        queue_more_than_a_socket_holds(&s);
        zerorx::sleep(Duration::from_millis(50)).await;
        assert!(s.send_backlog() > 0, "the peer reads nothing");
        s.cancel_sends();
        let flushed = zerorx::timeout(Duration::from_secs(5), s.flush_sends())
            .await
            .expect("the cancelled send ended");
        assert_eq!(
            flushed.expect_err("cancelled").raw_os_error(),
            Some(libc::ECANCELED)
        );
        let again = s
            .queue_send(bytes::Bytes::from_static(b"more"))
            .expect_err("failed");
        assert_eq!(again.raw_os_error(), Some(libc::ECANCELED));
        assert_eq!(s.send_backlog(), 0);
        drop(s);
        drop(l);
        let _ = go.send(());
        // The socket closed: the peer reaches the end of what was sent.
        let got = join_peer(peer).await;
        assert!(
            got < 16 << 20,
            "the cancelled send stopped early ({got} bytes)"
        );
    });
    assert_eq!(fd_count(), before, "an fd stayed open");
}

/// `0..len` cut into pieces of odd, growing and falling sizes (1 byte to ~150 KB):
/// some below any send threshold, some far above it.
pub fn odd_pieces(len: usize) -> Vec<std::ops::Range<usize>> {
    let mut pieces = Vec::new();
    let (mut at, mut size) = (0, 1);
    while at < len {
        let end = (at + size).min(len);
        pieces.push(at..end);
        at = end;
        size = size * 7 % 150_001 + 1;
    }
    pieces
}
