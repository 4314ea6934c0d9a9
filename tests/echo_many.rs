//! Framed loopback echo with 256 connections across every worker: one listener per
//! worker on a shared port (`Handle::spawn_on_each`), frames read with `FrameReader`
//! and echoed from the received buffers, every byte of every frame verified by the
//! clients (also on every worker), in bounded time.

mod common;

use bytes::Bytes;
use common::Rng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zerorx::net::{BytesChain, FrameReader, TcpListener, TcpStream};
use zerorx::{spawn, timeout};

const CONNS: u64 = 256;
const FRAMES: u64 = 8;
const MAX: usize = 1 << 20;

async fn echo_conn(s: TcpStream) {
    let mut r = FrameReader::new(&s);
    while let Ok(Some(body)) = r.read_frame(MAX).await {
        let mut parts = vec![Bytes::copy_from_slice(&(body.len() as u32).to_be_bytes())];
        parts.extend(body.segments().cloned());
        drop(body);
        if s.send_vectored(&parts).await.is_err() {
            return;
        }
    }
}

/// Frame `k` of connection `conn`: its length and contents follow from the pair.
fn body(conn: u64, k: u64) -> Vec<u8> {
    let mut rng = Rng((conn << 8 | k) * 0x9e37_79b9 + 1);
    let len = match k % 4 {
        0 => 1,
        1 => (rng.next() % 200) as usize,
        2 => 1000 + (rng.next() % 9000) as usize,
        _ => 20_000 + (rng.next() % 50_000) as usize,
    };
    (0..len).map(|_| rng.next() as u8).collect()
}

fn framed(b: &[u8]) -> Bytes {
    let mut v = (b.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(b);
    Bytes::from(v)
}

fn check(conn: u64, k: u64, got: &BytesChain, want: &[u8]) {
    assert_eq!(got.len(), want.len(), "conn {conn} frame {k} length");
    let mut off = 0;
    for seg in got.segments() {
        if let Some(i) = seg.iter().zip(&want[off..]).position(|(a, b)| a != b) {
            panic!("conn {conn} frame {k} differs at byte {}", off + i);
        }
        off += seg.len();
    }
}

/// Half the frames one at a time, the rest pipelined (several frames per buffer).
async fn client(addr: SocketAddr, conn: u64) -> usize {
    let s = TcpStream::connect(addr).await.expect("connect");
    let mut r = FrameReader::new(&s);
    let mut bytes = 0;
    for k in 0..FRAMES / 2 {
        let want = body(conn, k);
        s.send(framed(&want)).await.expect("send");
        let got = r.read_frame(MAX).await.expect("read").expect("echo");
        check(conn, k, &got, &want);
        bytes += want.len();
    }
    let rest: Vec<Bytes> = (FRAMES / 2..FRAMES)
        .map(|k| framed(&body(conn, k)))
        .collect();
    s.send_vectored(&rest).await.expect("send pipelined");
    for k in FRAMES / 2..FRAMES {
        let want = body(conn, k);
        let got = r.read_frame(MAX).await.expect("read").expect("echo");
        check(conn, k, &got, &want);
        bytes += want.len();
    }
    s.shutdown(std::net::Shutdown::Write)
        .await
        .expect("shutdown");
    assert!(
        r.read_frame(MAX).await.expect("read").is_none(),
        "conn {conn}: the server closes after our FIN"
    );
    bytes
}

#[test]
fn echo_256_connections_on_every_worker_verifies_every_byte() {
    let rt = common::rt(2, zerorx::WakeMode::EventFd);
    let h = rt.handle().clone();
    let workers = h.threads();
    let accepted: Arc<Vec<AtomicUsize>> =
        Arc::new((0..workers).map(|_| AtomicUsize::new(0)).collect());
    let total = rt.block_on({
        let accepted = accepted.clone();
        async move {
            // Pick a port and hold it until every worker listens on it; then let go,
            // so no connection lands in a backlog nobody accepts from.
            let (first, port) = common::loopback_listener();
            let (tx, rx) = crossbeam_channel::bounded(workers);
            let servers = h.spawn_on_each(move |w| {
                let (tx, accepted) = (tx.clone(), accepted.clone());
                async move {
                    let l = TcpListener::bind(port).expect("bind the shared port");
                    tx.send(()).expect("ready");
                    while let Ok((s, _)) = l.accept().await {
                        accepted[w].fetch_add(1, Ordering::Relaxed);
                        spawn(echo_conn(s));
                    }
                }
            });
            for _ in 0..workers {
                timeout(Duration::from_secs(10), async {
                    while rx.try_recv().is_err() {
                        zerorx::sleep(Duration::from_millis(1)).await;
                    }
                })
                .await
                .expect("listeners up");
            }
            drop(first);
            let joins: Vec<_> = (0..CONNS)
                .map(|i| h.spawn_on_with(i as usize % workers, move || client(port, i)))
                .collect();
            let mut total = 0;
            for (i, j) in joins.into_iter().enumerate() {
                total += timeout(Duration::from_secs(60), j)
                    .await
                    .unwrap_or_else(|_| panic!("client {i} in time"))
                    .unwrap_or_else(|e| panic!("client {i}: {e:?}"));
            }
            drop(servers);
            total
        }
    });
    let want: usize = (0..CONNS)
        .map(|c| (0..FRAMES).map(|k| body(c, k).len()).sum::<usize>())
        .sum();
    assert_eq!(total, want);
    let per_worker: Vec<usize> = accepted.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    assert_eq!(per_worker.iter().sum::<usize>(), CONNS as usize);
    assert!(
        per_worker.iter().all(|&n| n > 0),
        "SO_REUSEPORT spread connections to every worker: {per_worker:?}"
    );
}
