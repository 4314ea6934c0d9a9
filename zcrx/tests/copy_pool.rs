//! The copy pool end to end on loopback TCP against the real kernel: many connections,
//! a known byte pattern, every byte verified, every buffer back in the pool.

use io_uring::types::{SubmitArgs, Timespec};
use io_uring::{cqueue, IoUring};
use std::collections::VecDeque;
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use zcrx::{CopyPool, CopyPoolConfig, PoolError, RearmReason, RecvEnd, RecvTracker, RxBuf};

/// Byte `i` of connection `id`'s stream (after its 4-byte id header).
fn pat(id: u32, i: u64) -> u8 {
    (i.wrapping_mul(131) ^ (id as u64).wrapping_mul(17) ^ (i >> 12)) as u8
}

/// What the receiving side does with each buffer.
#[derive(Clone, Copy)]
enum Consumer {
    /// Drop at once on the ring's thread.
    DropNow,
    /// Hand to another thread that drops it.
    OtherThread,
    /// Hold up to `n` buffers for `turns` loop turns before dropping (a slow reader).
    Slow { hold: usize, turns: u32 },
}

struct Conn {
    stream: TcpStream,
    header: Vec<u8>,
    id: Option<u32>,
    offset: u64,
    tracker: RecvTracker,
    done: bool,
    error: Option<i32>,
}

impl Conn {
    /// Checks bytes in stream order; returns how many payload bytes were verified.
    fn verify(&mut self, mut bytes: &[u8]) -> u64 {
        if self.id.is_none() {
            let need = 4 - self.header.len();
            let take = need.min(bytes.len());
            self.header.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.header.len() == 4 {
                self.id = Some(u32::from_le_bytes(
                    self.header[..4].try_into().expect("4 bytes"),
                ));
            }
        }
        let Some(id) = self.id else { return 0 };
        for (k, &b) in bytes.iter().enumerate() {
            let i = self.offset + k as u64;
            assert_eq!(b, pat(id, i), "connection {id}: byte {i} corrupted");
        }
        self.offset += bytes.len() as u64;
        bytes.len() as u64
    }
}

struct Outcome {
    verified: u64,
    per_conn: Vec<u64>,
    errors: Vec<i32>,
    stats: zcrx::PoolStatsSnapshot,
    rearmed: u64,
}

/// Receives every connection to its end through one pool on one ring.
fn drive(
    conns: Vec<TcpStream>,
    config: &CopyPoolConfig,
    consumer: Consumer,
    bundles: bool,
) -> Outcome {
    // Field order matters: the ring is dropped (closed) before the pool.
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(4096)
        .build(256)
        .expect("io_uring (is io_uring enabled? see `zerorx doctor`)");
    // SAFETY: `ring` is dropped before `pool` at the end of this function.
    let pool = unsafe { CopyPool::register(&ring.submitter(), config) }.expect("register pool");
    let stats = pool.stats_handle();
    let mut conns: Vec<Conn> = conns
        .into_iter()
        .map(|stream| Conn {
            stream,
            header: Vec::new(),
            id: None,
            offset: 0,
            tracker: RecvTracker::new(0),
            done: false,
            error: None,
        })
        .collect();
    let arm = |ring: &mut IoUring, pool: &CopyPool, idx: usize, fd: i32| {
        let sqe = if bundles {
            pool.recv_multishot_bundle(fd)
        } else {
            pool.recv_multishot(fd)
        };
        // SAFETY: the buffers come from the registered pool; the fd outlives the ring
        // (the connections are dropped after it).
        unsafe { ring.submission().push(&sqe.user_data(idx as u64)) }.expect("sq space");
    };
    for (i, c) in conns.iter().enumerate() {
        arm(&mut ring, &pool, i, c.stream.as_raw_fd());
    }
    let (tx, rx) = crossbeam_channel::unbounded::<RxBuf>();
    let dropper = std::thread::spawn(move || {
        let mut n = 0u64;
        for buf in rx {
            assert!(!buf.is_empty());
            n += 1;
        }
        n
    });
    let mut held: VecDeque<(RxBuf, u32)> = VecDeque::new();
    let mut starved: Vec<usize> = Vec::new();
    let mut verified = 0;
    let mut rearmed = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut turn = 0u32;
    while conns.iter().any(|c| !c.done) {
        assert!(
            Instant::now() < deadline,
            "receive did not finish in 60 s: bytes lost or hang"
        );
        turn += 1;
        let ts = Timespec::new().nsec(5_000_000);
        match ring
            .submitter()
            .submit_with_args(1, &SubmitArgs::new().timespec(&ts))
        {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => panic!("io_uring_enter: {e}"),
        }
        let cqes: Vec<cqueue::Entry> = ring.completion().collect();
        for cqe in cqes {
            let idx = cqe.user_data() as usize;
            let (res, flags) = (cqe.result(), cqe.flags());
            let mut bufs = Vec::new();
            if res > 0 {
                if bundles {
                    pool.take_bundle(res, flags, |b| bufs.push(b))
                        .expect("bundle completion");
                } else {
                    bufs.push(pool.take(res, flags).expect("data completion"));
                }
                conns[idx].tracker.on_data(res as u32);
            }
            for b in bufs {
                assert!(
                    b.len() <= config.buffer_size as usize,
                    "bounded by the completion"
                );
                verified += conns[idx].verify(&b);
                match consumer {
                    Consumer::DropNow => drop(b),
                    Consumer::OtherThread => tx.send(b).expect("dropper alive"),
                    Consumer::Slow { .. } => held.push_back((b, turn)),
                }
            }
            if cqueue::more(flags) {
                continue;
            }
            match conns[idx].tracker.on_end(res) {
                RecvEnd::Eof => conns[idx].done = true,
                RecvEnd::Rearm(RearmReason::NoBuffers) => {
                    stats.record_errno(libc::ENOBUFS);
                    starved.push(idx);
                }
                RecvEnd::Rearm(_) => {
                    stats.record_rearm();
                    rearmed += 1;
                    arm(&mut ring, &pool, idx, conns[idx].stream.as_raw_fd());
                }
                RecvEnd::Failed(f) => {
                    conns[idx].error = Some(match f {
                        zcrx::RecvFailure::Errno(e) => e,
                        other => panic!("unexpected failure {other}"),
                    });
                    conns[idx].done = true;
                }
                other => panic!("unexpected end {other:?}"),
            }
        }
        if let Consumer::Slow { hold, turns } = consumer {
            while held.len() > hold || held.front().is_some_and(|(_, t)| turn - t >= turns) {
                held.pop_front();
            }
        }
        pool.maintain();
        if !starved.is_empty() && pool.available() > 0 {
            for idx in starved.drain(..) {
                stats.record_rearm();
                rearmed += 1;
                arm(&mut ring, &pool, idx, conns[idx].stream.as_raw_fd());
            }
        }
    }
    held.clear();
    drop(tx);
    let dropped_elsewhere = dropper.join().expect("dropper thread");
    if matches!(consumer, Consumer::OtherThread) {
        assert!(dropped_elsewhere > 0);
    }
    pool.maintain();
    let stats_now = pool.stats();
    drop(ring);
    drop(pool);
    Outcome {
        verified,
        per_conn: conns.iter().map(|c| c.offset).collect(),
        errors: conns.iter().filter_map(|c| c.error).collect(),
        stats: stats_now,
        rearmed,
    }
}

/// Opens `n` loopback connections; each client thread sends its id and `bytes` of its
/// pattern in uneven writes, then shuts down its write side.
fn connections(n: u32, bytes: u64) -> (Vec<TcpStream>, Vec<std::thread::JoinHandle<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let clients: Vec<_> = (0..n)
        .map(|id| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).expect("connect");
                s.write_all(&id.to_le_bytes()).expect("header");
                let mut i = 0u64;
                let mut step = 1000 + id as u64 * 37;
                while i < bytes {
                    let len = step.min(bytes - i);
                    let chunk: Vec<u8> = (i..i + len).map(|k| pat(id, k)).collect();
                    s.write_all(&chunk).expect("write");
                    i += len;
                    step = (step * 7 + 13) % 70_000 + 1;
                }
                s.shutdown(Shutdown::Write).expect("shutdown");
            })
        })
        .collect();
    let conns = (0..n)
        .map(|_| listener.accept().expect("accept").0)
        .collect();
    (conns, clients)
}

fn run(n: u32, bytes: u64, config: CopyPoolConfig, consumer: Consumer, bundles: bool) -> Outcome {
    let (conns, clients) = connections(n, bytes);
    let out = drive(conns, &config, consumer, bundles);
    for c in clients {
        c.join().expect("client");
    }
    assert_eq!(
        out.verified,
        n as u64 * bytes,
        "every byte received and verified"
    );
    assert!(
        out.per_conn.iter().all(|&b| b == bytes),
        "{:?}",
        out.per_conn
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.stats.in_use, 0, "all buffers back: {:?}", out.stats);
    assert_eq!(out.stats.returns_pending, 0, "{:?}", out.stats);
    assert_eq!(out.stats.bytes, n as u64 * (bytes + 4));
    assert_eq!(out.stats.copied_bytes, out.stats.bytes);
    out
}

#[test]
fn many_connections_every_byte_verified() {
    let cfg = CopyPoolConfig {
        buffers: 64,
        buffer_size: 16 * 1024,
        ..Default::default()
    };
    let out = run(64, 256 * 1024, cfg, Consumer::DropNow, false);
    assert!(out.stats.high_water > 0);
    assert!(out.stats.completions >= 64);
}

#[test]
fn buffers_dropped_on_another_thread_come_back() {
    let cfg = CopyPoolConfig {
        buffers: 32,
        buffer_size: 8 * 1024,
        group_id: 7,
        ..Default::default()
    };
    let out = run(16, 512 * 1024, cfg, Consumer::OtherThread, false);
    assert!(out.stats.remote_returns > 0, "{:?}", out.stats);
    assert_eq!(out.stats.remote_returns, out.stats.completions);
}

#[test]
fn exhausted_pool_recovers_without_losing_bytes() {
    // Whole-buffer mode: each receive takes a buffer, so 8 slow streams exhaust it.
    let cfg = CopyPoolConfig {
        buffers: 8,
        buffer_size: 4096,
        incremental: false,
        ..Default::default()
    };
    let out = run(
        8,
        256 * 1024,
        cfg,
        Consumer::Slow { hold: 8, turns: 3 },
        false,
    );
    assert!(
        out.stats.enobufs > 0,
        "the slow reader must exhaust the pool: {:?}",
        out.stats
    );
    assert!(out.rearmed > 0);
    assert_eq!(
        out.stats.high_water, 8,
        "never more buffers out than the pool has"
    );
}

#[test]
fn bundles_spread_one_completion_over_several_buffers() {
    let ring = IoUring::new(8).expect("io_uring");
    assert!(
        ring.params().is_feature_recvsend_bundle(),
        "this kernel lacks IORING_FEAT_RECVSEND_BUNDLE (Linux 6.10+): bundles cannot be tested"
    );
    drop(ring);
    // Bundles are not armed on incremental pools.
    let cfg = CopyPoolConfig {
        buffers: 64,
        buffer_size: 4096,
        incremental: false,
        ..Default::default()
    };
    let out = run(8, 1 << 20, cfg, Consumer::DropNow, true);
    assert!(
        out.stats.completions > 0 && out.stats.bytes / out.stats.completions <= 4096,
        "each buffer is its own RxBuf"
    );
}

fn incremental(buffers: u16, buffer_size: u32) -> CopyPoolConfig {
    assert!(
        zcrx::probe::capabilities().buffer_rings.incremental,
        "this kernel lacks IOU_PBUF_RING_INC (Linux 6.12+): incremental pools cannot be tested"
    );
    CopyPoolConfig {
        buffers,
        buffer_size,
        incremental: true,
        ..Default::default()
    }
}

#[test]
fn incremental_pool_receives_every_byte_at_increasing_offsets() {
    let out = run(
        16,
        256 * 1024,
        incremental(16, 64 * 1024),
        Consumer::DropNow,
        false,
    );
    assert!(out.stats.completions > 0);
}

#[test]
fn incremental_pool_takes_back_parts_dropped_on_another_thread() {
    let out = run(
        8,
        512 * 1024,
        incremental(8, 32 * 1024),
        Consumer::OtherThread,
        false,
    );
    assert_eq!(out.stats.remote_returns, out.stats.completions);
}

#[test]
fn incremental_small_receives_share_buffers() {
    // Everything received is held to the end: 4 streams of 16 KiB fit two 64 KiB
    // buffers only because their receives share buffers. A pool handing out a whole
    // buffer per completion would starve (and lose nothing, but end in ENOBUFS).
    let out = run(
        4,
        16 * 1024,
        incremental(2, 64 * 1024),
        Consumer::Slow {
            hold: usize::MAX,
            turns: u32::MAX,
        },
        false,
    );
    assert_eq!(out.stats.enobufs, 0, "{:?}", out.stats);
    assert!(
        out.stats.high_water > 2,
        "more parts held at once than the pool has buffers: {:?}",
        out.stats
    );
}

#[test]
fn incremental_pool_exhausted_by_slow_readers_recovers_without_losing_bytes() {
    let out = run(
        8,
        256 * 1024,
        incremental(4, 8192),
        Consumer::Slow { hold: 12, turns: 3 },
        false,
    );
    assert!(
        out.stats.enobufs > 0,
        "the slow reader must exhaust the pool: {:?}",
        out.stats
    );
    assert!(out.rearmed > 0);
}

#[test]
fn reset_peer_ends_with_an_error_and_leaks_nothing() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let client = std::thread::spawn(move || {
        let s = socket2::Socket::from(TcpStream::connect(addr).expect("connect"));
        let mut w = TcpStream::from(s.try_clone().expect("clone"));
        w.write_all(&0u32.to_le_bytes()).expect("header");
        let chunk: Vec<u8> = (0..10_000).map(|k| pat(0, k)).collect();
        w.write_all(&chunk).expect("write");
        std::thread::sleep(Duration::from_millis(50));
        // Linger 0: close sends RST instead of FIN.
        s.set_linger(Some(Duration::ZERO)).expect("linger");
    });
    let (conn, _) = listener.accept().expect("accept");
    let out = drive(
        vec![conn],
        &CopyPoolConfig::default(),
        Consumer::DropNow,
        false,
    );
    client.join().expect("client");
    assert_eq!(
        out.errors,
        vec![libc::ECONNRESET],
        "a reset is reported, not mistaken for EOF"
    );
    assert_eq!(out.stats.in_use, 0);
    assert_eq!(out.per_conn, vec![10_000]);
}

#[test]
fn bad_configuration_is_refused_with_the_field_named() {
    let ring = IoUring::new(8).expect("io_uring");
    for (cfg, field) in [
        (
            CopyPoolConfig {
                buffers: 3,
                ..Default::default()
            },
            "buffers",
        ),
        (
            CopyPoolConfig {
                buffers: 0,
                ..Default::default()
            },
            "buffers",
        ),
        (
            CopyPoolConfig {
                buffer_size: 0,
                ..Default::default()
            },
            "buffer_size",
        ),
    ] {
        // SAFETY: registration fails before any memory reaches the kernel.
        let err = unsafe { CopyPool::register(&ring.submitter(), &cfg) }.expect_err("invalid");
        match err {
            PoolError::InvalidConfig { field: f, .. } => assert_eq!(f, field),
            other => panic!("expected InvalidConfig, got {other}"),
        }
    }
}

#[test]
fn second_pool_with_the_same_group_id_is_a_kernel_error_with_a_hint() {
    let ring = IoUring::new(8).expect("io_uring");
    let cfg = CopyPoolConfig {
        buffers: 4,
        buffer_size: 4096,
        group_id: 3,
        ..Default::default()
    };
    // SAFETY: the ring is dropped before both pools.
    let first = unsafe { CopyPool::register(&ring.submitter(), &cfg) }.expect("first");
    // SAFETY: as above.
    let err = unsafe { CopyPool::register(&ring.submitter(), &cfg) }.expect_err("duplicate group");
    assert!(matches!(err, PoolError::Kernel { .. }), "{err}");
    assert!(err.to_string().contains("group id"), "{err}");
    assert_eq!(first.stats().chunks_total, 4);
    assert_eq!(first.available(), 4);
    drop(ring);
}

#[test]
fn completions_that_are_not_this_pools_buffers_are_refused() {
    let ring = IoUring::new(8).expect("io_uring");
    let cfg = CopyPoolConfig {
        buffers: 4,
        buffer_size: 4096,
        ..Default::default()
    };
    // SAFETY: the ring is dropped before the pool.
    let pool = unsafe { CopyPool::register(&ring.submitter(), &cfg) }.expect("pool");
    let with_bid = |bid: u32| zcrx::abi::cqe_flags::BUFFER | (bid << 16);
    assert!(pool.take(0, with_bid(0)).is_err(), "EOF has no buffer");
    assert!(pool.take(-libc::ENOBUFS, 0).is_err());
    assert!(pool.take(10, 0).is_err(), "no F_BUFFER");
    assert!(pool.take(10, with_bid(4)).is_err(), "id out of range");
    assert!(
        pool.take(4097, with_bid(1)).is_err(),
        "longer than a buffer"
    );
    assert_eq!(pool.stats().in_use, 0);
    drop(ring);
}

#[test]
fn overflow_buffers_are_counted_until_dropped_on_any_thread_and_wake_the_owner() {
    let ring = IoUring::new(8).expect("io_uring");
    let cfg = CopyPoolConfig {
        buffers: 2,
        buffer_size: 4096,
        ..Default::default()
    };
    // SAFETY: the ring is dropped before the pool.
    let pool = unsafe { CopyPool::register(&ring.submitter(), &cfg) }.expect("pool");
    let woken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let w = woken.clone();
    pool.set_return_notifier(std::sync::Arc::new(move || {
        w.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }));
    assert!(
        pool.overflow_buf(Vec::new()).is_none(),
        "no handle for no bytes"
    );

    let mut data = Vec::with_capacity(65536);
    data.extend((0..1000u32).map(|i| i as u8));
    let buf = pool.overflow_buf(data).expect("bytes");
    assert!(buf.is_overflow());
    assert_eq!(buf.len(), 1000);
    assert!(buf.iter().enumerate().all(|(i, &b)| b == i as u8));
    let kept = pool.overflow_buf(vec![7; 10]).expect("bytes");
    let s = pool.stats();
    assert_eq!(
        (s.overflow_receives, s.overflow_bytes, s.overflow_held),
        (2, 1010, 1010)
    );
    assert_eq!(s.in_use, 0, "overflow bytes hold no pool chunk");
    assert_eq!(pool.available(), 2);

    // Sliced as Bytes and dropped on another thread: freed, and the owner told.
    let bytes = buf.into_bytes().slice(10..20);
    assert_eq!(&bytes[..], &(10..20u8).collect::<Vec<_>>()[..]);
    std::thread::spawn(move || drop(bytes))
        .join()
        .expect("thread");
    assert_eq!(pool.overflow_held(), 10);
    assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Dropped on the owner thread: freed without waking it.
    drop(kept);
    assert_eq!(pool.overflow_held(), 0);
    assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(
        pool.stats().returned_to_kernel,
        0,
        "nothing went to the ring"
    );
    drop(ring);
}
