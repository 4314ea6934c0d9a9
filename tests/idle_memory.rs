//! What an idle connection costs in user-space memory: 1000 loopback connections to
//! an echo server (each pinged once, then left idle with its multishot receive armed)
//! are counted by a global allocator that tracks every live heap block, charged at
//! the size glibc's malloc really uses for it (header plus 16-byte rounding, so a
//! change that splits one allocation into many small ones cannot hide). The worker
//! must also stay asleep while its connections idle.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::poll_fn;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};
use zerorx::net::{TcpListener, TcpStream};
use zerorx::{spawn, Handle, Runtime};

/// The size of the benchmark's echo future, which the test's echo task is padded to.
const ECHO_FUTURE: usize = 48;
/// Idle connections opened by the test.
const CONNS: usize = 1000;
/// Connections connected and pinged together.
const BATCH: usize = 100;
/// Bytes of each connection's one ping.
const PING: usize = 64;
/// Heap bytes (as malloc chunks) one idle connection may keep: measured 259 (the
/// spawned echo task 96: a 32-byte header and the 48-byte future; the socket with its
/// owner count beside the fd, the stream's receive state and its armed receive op 96;
/// the op's 32-byte slab slot ~33 with its page; the one-word task registry entry ~8
/// with its page; and ~21 of the worker's bounded caches of recycled op boxes and
/// decoded-buffer queues, which 1000 connections fill). The goal is 256 of RSS in the
/// benchmark (issue 3, W7), where those caches weigh less; this bound keeps a regrowth
/// from going unnoticed and is lowered as the cost comes down.
const MAX_BYTES_PER_IDLE_CONN: f64 = 266.0;
/// Heap bytes per connection that may stay after every connection closed: op slab
/// pages, registry capacity and the bounded caches of recycled op boxes and
/// decoded-buffer queues the worker keeps for the next burst (measured 65), never
/// per-connection objects.
const MAX_BYTES_PER_CLOSED_CONN: f64 = 96.0;

/// Size classes of the live-block histogram: 16 bytes each up to 1 KiB, then one per
/// power of two.
const CLASSES: usize = 64 + 24;

fn class(chunk: usize) -> usize {
    if chunk < 1024 {
        chunk / 16
    } else {
        (64 + (chunk.ilog2() as usize - 10)).min(CLASSES - 1)
    }
}

fn class_name(i: usize) -> String {
    if i < 64 {
        format!("{}B", i * 16)
    } else {
        format!("<{}KiB", 1usize << (i - 64))
    }
}

struct Counting;

static LIVE_CHUNK_BYTES: AtomicIsize = AtomicIsize::new(0);
static LIVE_BLOCKS: AtomicIsize = AtomicIsize::new(0);
static BY_CLASS: [AtomicIsize; CLASSES] = [const { AtomicIsize::new(0) }; CLASSES];

/// The bytes glibc's malloc takes for a request of `size`: an 8-byte header, rounded
/// up to 16, at least 32.
fn chunk(size: usize) -> usize {
    ((size + 8 + 15) & !15).max(32)
}

fn count(size: usize, sign: isize) {
    let c = chunk(size);
    LIVE_CHUNK_BYTES.fetch_add(sign * c as isize, Ordering::Relaxed);
    LIVE_BLOCKS.fetch_add(sign, Ordering::Relaxed);
    BY_CLASS[class(c)].fetch_add(sign, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// atomics that allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(layout.size(), -1);
        // SAFETY: `ptr` came from `alloc`/`realloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size(), 1);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded; `ptr` came from this allocator with `layout`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(layout.size(), -1);
            count(new_size, 1);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Clone, Copy)]
struct Snapshot {
    bytes: isize,
    blocks: isize,
    by_class: [isize; CLASSES],
}

fn snapshot() -> Snapshot {
    Snapshot {
        bytes: LIVE_CHUNK_BYTES.load(Ordering::SeqCst),
        blocks: LIVE_BLOCKS.load(Ordering::SeqCst),
        by_class: std::array::from_fn(|i| BY_CLASS[i].load(Ordering::SeqCst)),
    }
}

/// Live blocks gained between two snapshots, per size class: where the bytes went.
fn growth(a: &Snapshot, b: &Snapshot) -> String {
    (0..CLASSES)
        .filter_map(|i| {
            let d = b.by_class[i] - a.by_class[i];
            (d != 0).then(|| format!("{} x {d}", class_name(i)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The echo benchmark's server task (W7 measures that one) is 48 bytes
/// (`an_idle_echo_task_stays_small`); this one is shaped like it (the received buffer
/// is bound before the send, so no `Result` of the receive lives across it) and padded
/// to the same size, so the bound here speaks for W7: see [`ECHO_FUTURE`].
async fn echo(s: TcpStream) {
    let pad = [0u64; 1];
    loop {
        let buf = match s.recv().await {
            Ok(Some(buf)) => buf,
            _ => break,
        };
        if s.send(buf).await.is_err() {
            break;
        }
    }
    std::hint::black_box(pad);
}

async fn accept_loop(l: TcpListener) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                s.set_nodelay(true).expect("nodelay");
                spawn(echo(s));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// The size of the future each connection's task holds.
fn echo_future_size() -> usize {
    fn returned<R>(_: &impl Fn(TcpStream) -> R) -> usize {
        std::mem::size_of::<R>()
    }
    returned(&echo)
}

fn ping(i: usize) -> [u8; PING] {
    std::array::from_fn(|j| (i * 31 + j) as u8)
}

/// Opens `n` more connections into `conns` (which has the capacity), pinging each once
/// and checking the echo.
fn open(addr: SocketAddr, conns: &mut Vec<StdStream>, n: usize) {
    let timeout = Duration::from_secs(5);
    let end = conns.len() + n;
    while conns.len() < end {
        let first = conns.len();
        for _ in 0..BATCH.min(end - first) {
            let s = StdStream::connect_timeout(&addr, timeout).expect("connect");
            s.set_read_timeout(Some(timeout)).expect("timeout");
            s.set_nodelay(true).expect("nodelay");
            conns.push(s);
        }
        for (i, s) in conns[first..].iter_mut().enumerate() {
            s.write_all(&ping(first + i)).expect("ping");
        }
        for (i, s) in conns[first..].iter_mut().enumerate() {
            let mut back = [0u8; PING];
            s.read_exact(&mut back).expect("echo");
            assert_eq!(back, ping(first + i), "connection {}: echo", first + i);
        }
    }
}

/// Loop turns of the only worker.
fn turns(h: &Handle) -> u64 {
    h.metrics().iter().map(|m| m.loop_turns).sum()
}

/// Waits until every closed connection's task has ended (the worker's live ops
/// are back to the listener's accept).
fn settle(h: &Handle, ops: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while h.metrics().iter().map(|m| m.ops_in_flight).sum::<u64>() > ops {
        assert!(Instant::now() < deadline, "closed connections did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Report {
    idle_per_conn: f64,
    idle_blocks_per_conn: f64,
    idle_growth: String,
    idle_turns: u64,
    closed_per_conn: f64,
    closed_growth: String,
}

fn client(addr: SocketAddr, h: Handle) -> Report {
    let mut conns = Vec::with_capacity(CONNS + 1);
    // One connection first, so what the first connection sets up once (pool, queues,
    // slabs) is in the baseline.
    open(addr, &mut conns, 1);
    std::thread::sleep(Duration::from_millis(100));
    let idle_ops = h.metrics().iter().map(|m| m.ops_in_flight).sum::<u64>();
    let before = snapshot();
    open(addr, &mut conns, CONNS);
    std::thread::sleep(Duration::from_millis(200));
    let idle = snapshot();
    let t0 = turns(&h);
    std::thread::sleep(Duration::from_millis(300));
    let idle_turns = turns(&h) - t0;
    let n = CONNS as f64;
    let keep = conns.split_off(1);
    drop(keep);
    // The warm connection's receive is an op too.
    settle(&h, idle_ops);
    std::thread::sleep(Duration::from_millis(100));
    let closed = snapshot();
    Report {
        idle_per_conn: (idle.bytes - before.bytes) as f64 / n,
        idle_blocks_per_conn: (idle.blocks - before.blocks) as f64 / n,
        idle_growth: growth(&before, &idle),
        idle_turns,
        closed_per_conn: (closed.bytes - before.bytes) as f64 / n,
        closed_growth: growth(&before, &closed),
    }
}

/// The tests here count the whole process's heap and fds: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

#[test]
fn an_idle_connection_keeps_little_heap_and_the_worker_asleep() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::builder()
        .threads(1)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime");
    let handle = rt.handle().clone();
    let done: Arc<(AtomicBool, Mutex<Option<Waker>>)> = Arc::default();
    let report = rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        spawn(accept_loop(l));
        let d = done.clone();
        let c = std::thread::spawn(move || {
            let r = client(addr, handle);
            d.0.store(true, Ordering::SeqCst);
            if let Some(w) = d.1.lock().expect("waker").take() {
                w.wake();
            }
            r
        });
        poll_fn(|cx| {
            *done.1.lock().expect("waker") = Some(cx.waker().clone());
            if done.0.load(Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        c.join().expect("client thread")
    });
    println!(
        "echo future: {} B; idle: {:.1} B/conn in {:.2} blocks/conn [{}]; {} loop turns \
         while idle; after close: {:.1} B/conn [{}]",
        echo_future_size(),
        report.idle_per_conn,
        report.idle_blocks_per_conn,
        report.idle_growth,
        report.idle_turns,
        report.closed_per_conn,
        report.closed_growth,
    );
    assert_eq!(
        echo_future_size(),
        ECHO_FUTURE,
        "re-pad the test's echo task to the benchmark's size"
    );
    assert_eq!(
        report.idle_turns, 0,
        "the worker woke while every connection idled"
    );
    assert!(
        report.idle_per_conn <= MAX_BYTES_PER_IDLE_CONN,
        "an idle connection keeps {:.1} heap bytes (bound {MAX_BYTES_PER_IDLE_CONN}); live blocks \
         gained: [{}]",
        report.idle_per_conn,
        report.idle_growth,
    );
    assert!(
        report.closed_per_conn <= MAX_BYTES_PER_CLOSED_CONN,
        "closed connections left {:.1} heap bytes each (bound {MAX_BYTES_PER_CLOSED_CONN}); \
         live blocks gained: [{}]",
        report.closed_per_conn,
        report.closed_growth,
    );
}

/// Connections held by the runtime dropped below: half echo (their receive armed,
/// idle), half took one buffer and then got bytes nobody takes (queued in their armed
/// receive's op, in the socket).
const HELD: usize = 200;

async fn take_one_then_idle(s: TcpStream) {
    let _first = s.recv().await;
    // Whatever comes next stays in the armed receive.
    std::future::pending::<()>().await;
}

/// Opens `HELD` connections to `addr` into `conns`: pings each (the echoed ones wait
/// for their echo), then sends bytes nobody takes to the others.
fn open_held(addr: SocketAddr, conns: &mut Vec<StdStream>) {
    let timeout = Duration::from_secs(5);
    for i in 0..HELD {
        let mut s = StdStream::connect_timeout(&addr, timeout).expect("connect");
        s.set_read_timeout(Some(timeout)).expect("timeout");
        s.write_all(&ping(i)).expect("ping");
        if i % 2 == 0 {
            let mut back = [0u8; PING];
            s.read_exact(&mut back).expect("echo");
        }
        conns.push(s);
    }
    std::thread::sleep(Duration::from_millis(50));
    for s in conns.iter_mut().skip(1).step_by(2) {
        s.write_all(&[9u8; 300]).expect("bytes nobody takes");
    }
}

/// Runs a runtime whose worker holds `HELD` connections from `conns` (opened here) and
/// drops it with all of them open.
fn hold_and_drop(conns: &mut Vec<StdStream>) {
    let rt = Runtime::builder()
        .threads(1)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime");
    let opened = rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let accepted = std::rc::Rc::new(std::cell::Cell::new(0));
        let counted = accepted.clone();
        spawn(async move {
            for i in 0.. {
                let Ok((s, _)) = l.accept().await else { return };
                if i % 2 == 0 {
                    spawn(echo(s));
                } else {
                    spawn(take_one_then_idle(s));
                }
                counted.set(counted.get() + 1);
            }
        });
        let client = std::thread::spawn(move || {
            let mut conns = Vec::with_capacity(HELD);
            open_held(addr, &mut conns);
            conns
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while !client.is_finished() || accepted.get() < HELD {
            assert!(Instant::now() < deadline, "connections were not set up");
            zerorx::sleep(Duration::from_millis(5)).await;
        }
        // Let the last bytes land in the receives.
        zerorx::sleep(Duration::from_millis(50)).await;
        client.join().expect("client")
    });
    conns.extend(opened);
    let t = Instant::now();
    drop(rt);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "drop took {:?}",
        t.elapsed()
    );
}

#[test]
fn dropping_the_runtime_with_idle_connections_frees_their_sockets_and_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A first round, so that what the process sets up once (thread-locals of the
    // test thread, lazily made statics) is in the baseline.
    let mut warm = Vec::new();
    hold_and_drop(&mut warm);
    drop(warm);
    let fds = fd_count();
    let before = snapshot();
    let mut conns = Vec::with_capacity(HELD);
    hold_and_drop(&mut conns);
    // Only the peers' sockets are still open: every server socket was closed with the
    // runtime, its armed receive cancelled and its op freed.
    assert_eq!(fd_count(), fds + HELD, "server sockets leaked");
    let after = snapshot();
    let left = (after.bytes - before.bytes) as f64 / HELD as f64;
    println!(
        "after dropping the runtime: {left:.1} B/conn [{}]",
        growth(&before, &after)
    );
    // The client side's `Vec` is all that should remain (4 bytes a connection); a
    // socket with its receive (112) or a task (128) left behind for even a tenth of
    // the connections would show.
    assert!(
        left < 12.0,
        "dropping the runtime left {left:.1} heap bytes per connection: [{}]",
        growth(&before, &after)
    );
    drop(conns);
    assert_eq!(fd_count(), fds);
}
