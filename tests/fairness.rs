//! One stream whose task stops reading must not starve the other streams of its
//! worker: its multishot receive is stopped once it holds its share of the pool
//! (`Builder::recv_hold_limit`), so TCP flow control pushes back on that one peer, and
//! receives that found the pool dry wait for buffers instead of spinning.

mod common;

use bytes::Bytes;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zcrx::CopyPoolConfig;
use zerorx::net::{TcpListener, TcpStream};
use zerorx::{spawn, Runtime, WorkerMetricsSnapshot};

/// Echo connections served next to the stalled one.
const ECHO_CONNS: usize = 6;
/// Round trips per echo connection.
const ROUNDS: usize = 150;
/// Bytes per echo request.
const MSG: usize = 1500;
/// Generous bound for one round trip on a loaded 2-vCPU box.
const RTT_LIMIT: Duration = Duration::from_secs(2);

/// The byte the stalled stream's peer sends at stream offset `i`.
fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 9)) as u8
}

async fn echo(stream: TcpStream) {
    // Replies may go out in two pieces (a message can straddle two pool buffers):
    // without NODELAY the second waits for the client's delayed ACK.
    let _ = stream.set_nodelay(true);
    while let Ok(Some(buf)) = stream.recv().await {
        if stream.send(buf.into_bytes()).await.is_err() {
            return;
        }
    }
}

/// The stalled stream's server task: arms its receive with one `recv`, then reads
/// nothing until `go` is set; then reads to EOF, checking every byte. Returns how many
/// bytes it got.
async fn stalled(stream: TcpStream, go: Arc<AtomicBool>) -> Result<u64, String> {
    let mut got = 0u64;
    let check = |b: &[u8], got: &mut u64| -> Result<(), String> {
        for (k, &byte) in b.iter().enumerate() {
            let at = *got + k as u64;
            if byte != pattern(at) {
                return Err(format!("stalled stream: wrong byte at offset {at}"));
            }
        }
        *got += b.len() as u64;
        Ok(())
    };
    match stream.recv().await {
        Ok(Some(b)) => check(&b, &mut got)?,
        other => return Err(format!("stalled stream: first recv gave {other:?}")),
    }
    while !go.load(Ordering::Acquire) {
        zerorx::sleep(Duration::from_millis(5)).await;
    }
    loop {
        let next = zerorx::timeout(Duration::from_secs(10), stream.recv())
            .await
            .map_err(|_| format!("stalled stream: no progress after {got} bytes"))?;
        match next {
            Ok(Some(b)) => check(&b, &mut got)?,
            Ok(None) => return Ok(got),
            Err(e) => return Err(format!("stalled stream: recv failed after {got}: {e}")),
        }
    }
}

/// The stalled stream's peer: sends the pattern until `stop`, then half-closes;
/// sets `blocked` once a write makes no progress (the server stopped taking bytes).
/// Returns how many bytes the kernel took.
fn flood(addr: SocketAddr, stop: Arc<AtomicBool>, blocked: Arc<AtomicBool>) -> u64 {
    let mut s = std::net::TcpStream::connect(addr).expect("flood connect");
    s.set_write_timeout(Some(Duration::from_millis(50)))
        .expect("write timeout");
    let mut sent = 0u64;
    let mut chunk = vec![0u8; 16 * 1024];
    while !stop.load(Ordering::Acquire) {
        for (k, b) in chunk.iter_mut().enumerate() {
            *b = pattern(sent + k as u64);
        }
        match s.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                blocked.store(true, Ordering::Release);
            }
            Err(e) => panic!("flood write: {e}"),
        }
    }
    s.shutdown(std::net::Shutdown::Write).expect("half-close");
    // Keep the socket open until the server has read everything (it sees EOF first).
    let mut rest = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    let _ = s.read_to_end(&mut rest);
    sent
}

/// One well-behaved client: `ROUNDS` round trips, every byte compared. Returns the
/// slowest round trip.
fn echo_client(addr: SocketAddr, seed: u64) -> Result<Duration, String> {
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    // Bounds the test when the server stalls (without the fix it does, for good).
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut rng = common::Rng(seed);
    let mut worst = Duration::ZERO;
    let mut back = vec![0u8; MSG];
    for round in 0..ROUNDS {
        let msg: Vec<u8> = (0..MSG).map(|_| rng.next() as u8).collect();
        let t = Instant::now();
        s.write_all(&msg)
            .map_err(|e| format!("round {round}: {e}"))?;
        s.read_exact(&mut back)
            .map_err(|e| format!("round {round}: no echo within 5 s ({e})"))?;
        worst = worst.max(t.elapsed());
        if back != msg {
            return Err(format!("round {round}: echo differs"));
        }
    }
    Ok(worst)
}

struct Outcome {
    worst_rtt: Vec<Result<Duration, String>>,
    flooded: u64,
    stalled_got: Result<u64, String>,
    metrics: WorkerMetricsSnapshot,
}

/// One server worker with a 16 × 4 KiB pool: the stalled stream is accepted first,
/// its peer floods it; then `ECHO_CONNS` clients do their round trips on the same
/// worker. Once they are done the stalled stream reads everything.
fn run(rt: Runtime) -> Outcome {
    let h = rt.handle().clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = Arc::new(AtomicBool::new(false));
    let go = Arc::new(AtomicBool::new(false));
    let blocked = Arc::new(AtomicBool::new(false));
    let flooder = {
        let stop = stop.clone();
        let blocked = blocked.clone();
        std::thread::spawn(move || flood(addr, stop, blocked))
    };
    let (echo_tx, echo_rx) = crossbeam_channel::unbounded();
    let clients = std::thread::spawn(move || {
        // The echo clients start once the flood is held back: whatever the stalled
        // stream may take of the pool, it has taken.
        let since = Instant::now();
        while !blocked.load(Ordering::Acquire) && since.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let joins: Vec<_> = (0..ECHO_CONNS as u64)
            .map(|i| std::thread::spawn(move || echo_client(addr, i * 7919 + 1)))
            .collect();
        for j in joins {
            let r = j.join().unwrap_or_else(|_| Err("client panicked".into()));
            let _ = echo_tx.send(r);
        }
    });
    let stalled_got = {
        let go = go.clone();
        rt.block_on(async move {
            let l = TcpListener::from_std(listener).expect("listener");
            let (first, _) = l.accept().await.expect("accept the flood");
            let stalled_task = spawn(stalled(first, go.clone()));
            let server = spawn(async move {
                for _ in 0..ECHO_CONNS {
                    match l.accept().await {
                        Ok((s, _)) => drop(spawn(echo(s))),
                        Err(e) => panic!("accept: {e}"),
                    }
                }
            });
            // The clients run on their own threads; poll for them here so the
            // worker keeps serving.
            while !clients.is_finished() {
                zerorx::sleep(Duration::from_millis(10)).await;
            }
            stop.store(true, Ordering::Release);
            go.store(true, Ordering::Release);
            let got = stalled_task.await.expect("stalled task");
            drop(server);
            got
        })
    };
    let flooded = flooder.join().expect("flooder");
    let worst_rtt = echo_rx.try_iter().collect();
    Outcome {
        worst_rtt,
        flooded,
        stalled_got,
        metrics: h.metrics()[0],
    }
}

fn rt(incremental: bool) -> Runtime {
    Runtime::builder()
        .threads(1)
        .pool_size(16 * 4096)
        .chunk_size(4096)
        .incremental_buffers(incremental)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime")
}

fn check(incremental: bool) {
    let _g = common::fd_lock();
    let out = run(rt(incremental));
    let m = out.metrics;
    eprintln!(
        "incremental {incremental}: worst round trips {:?}, flooded {} B, stalled got {:?}, \
         ENOBUFS re-arms {}, stopped at the hold limit {}",
        out.worst_rtt, out.flooded, out.stalled_got, m.recv_enobufs, m.rearms.budget
    );
    assert_eq!(out.worst_rtt.len(), ECHO_CONNS);
    for (i, r) in out.worst_rtt.iter().enumerate() {
        match r {
            Ok(worst) => assert!(
                *worst < RTT_LIMIT,
                "echo connection {i}: a round trip took {worst:?} next to the stalled stream"
            ),
            Err(e) => panic!("echo connection {i} starved next to the stalled stream: {e}"),
        }
    }
    assert_eq!(
        out.stalled_got.as_ref().copied(),
        Ok(out.flooded),
        "the stalled stream gets every byte its peer sent, in order"
    );
    assert!(
        out.flooded > 16 * 4096,
        "the flood sent more than the pool holds ({} B)",
        out.flooded
    );
    assert!(m.rearms.budget > 0, "the stalled stream was paused: {m:?}");
    assert!(
        m.recv_enobufs < 5_000,
        "receives waited for buffers instead of spinning on ENOBUFS: {m:?}"
    );
}

#[test]
fn stalled_reader_does_not_starve_its_worker() {
    check(false);
}

#[test]
fn stalled_reader_does_not_starve_its_worker_incremental_pool() {
    check(true);
}

/// A pool the application holds: receives that found it dry wait without re-arming,
/// and each buffer that comes back wakes one of them, not every one (which would fail
/// all but one again at once with ENOBUFS).
#[test]
fn receives_waiting_for_buffers_are_woken_one_per_returned_buffer() {
    let _g = common::fd_lock();
    const WAITERS: usize = 6;
    let rt = Runtime::builder()
        .threads(1)
        .copy_pool(Some(CopyPoolConfig {
            buffers: 8,
            buffer_size: 4096,
            incremental: false,
            ..CopyPoolConfig::default()
        }))
        .build()
        .expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        let pair = || async {
            let c = TcpStream::connect(addr).await.expect("connect");
            let (s, _) = l.accept().await.expect("accept");
            (c, s)
        };
        // Take every buffer of the pool and keep them.
        let (hc, hs) = pair().await;
        hc.send(Bytes::from(vec![0xAA; 8 * 4096]))
            .await
            .expect("send");
        let mut held = Vec::new();
        while held.len() < 8 {
            let b = zerorx::timeout(Duration::from_secs(5), hs.recv())
                .await
                .expect("holder receives")
                .expect("recv")
                .expect("data");
            assert!(b.iter().all(|&x| x == 0xAA));
            held.push(b);
        }
        let mut clients = Vec::new();
        let mut tasks = Vec::new();
        for i in 0..WAITERS {
            let (c, s) = pair().await;
            tasks.push(spawn(async move {
                let b = s.recv().await.expect("recv").expect("data");
                (b.to_vec(), s)
            }));
            zerorx::yield_now().await;
            c.send(Bytes::from(vec![i as u8; 100])).await.expect("send");
            clients.push(c);
        }
        let dry = Instant::now();
        while h.metrics()[0].recv_enobufs < WAITERS as u64 {
            assert!(
                dry.elapsed() < Duration::from_secs(5),
                "{:?}",
                h.metrics()[0]
            );
            zerorx::sleep(Duration::from_millis(5)).await;
        }
        // Nothing comes back for a while: nobody re-arms.
        zerorx::sleep(Duration::from_millis(100)).await;
        assert_eq!(h.metrics()[0].recv_enobufs, WAITERS as u64, "no spinning");
        // Buffers come back one at a time.
        while let Some(b) = held.pop() {
            drop(b);
            zerorx::sleep(Duration::from_millis(20)).await;
        }
        for (i, t) in tasks.into_iter().enumerate() {
            let (got, _s) = zerorx::timeout(Duration::from_secs(5), t)
                .await
                .expect("every waiter got its bytes")
                .expect("task");
            assert_eq!(got, vec![i as u8; 100], "waiter {i}");
        }
        let m = h.metrics()[0];
        assert!(
            m.recv_enobufs <= WAITERS as u64 + 2,
            "each returned buffer woke one waiter: {m:?}"
        );
        drop((clients, hc));
    });
}
