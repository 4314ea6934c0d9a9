//! Small-message echo: `conns` connections doing 64-byte ping-pong against a one-worker
//! zerorx server (pooled `recv`, zero-copy echo of the received buffer); the client is
//! a second zerorx runtime on another thread. Prints requests/s and the server's
//! syscalls and completions per request (from `Handle::metrics`).
//!
//! `cargo run --release --example echo_bench [conns] [seconds] [buffers] [buffer_size]
//! [msg_size]` (the pool of each runtime, default 64 × 64 KiB; message size default 64).

use bytes::Bytes;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use zerorx::net::{TcpListener, TcpStream};
use zerorx::{spawn, Runtime};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let conns: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let mut pool = zcrx::CopyPoolConfig::default();
    if let Some(n) = args.next().and_then(|s| s.parse().ok()) {
        pool.buffers = n;
    }
    if let Some(n) = args.next().and_then(|s| s.parse().ok()) {
        pool.buffer_size = n;
    }
    let msg_size: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let pool2 = pool.clone();

    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(
        move || -> std::io::Result<Vec<zerorx::WorkerMetricsSnapshot>> {
            let rt = Runtime::builder()
                .threads(1)
                .copy_pool(Some(pool2))
                .build()?;
            let h = rt.handle().clone();
            rt.block_on(async move {
                let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr"))?;
                addr_tx.send(l.local_addr()?).expect("send addr");
                spawn(async move {
                    while let Ok((s, _)) = l.accept().await {
                        let _ = s.set_nodelay(true);
                        spawn(async move {
                            while let Ok(Some(b)) = s.recv().await {
                                if s.send(b.into_bytes()).await.is_err() {
                                    break;
                                }
                            }
                        });
                    }
                });
                while stop_rx.try_recv().is_err() {
                    zerorx::sleep(Duration::from_millis(10)).await;
                }
                Ok::<_, std::io::Error>(())
            })?;
            Ok(h.metrics())
        },
    );
    let addr = addr_rx.recv().expect("server address");

    let client = Runtime::builder()
        .threads(1)
        .copy_pool(Some(pool))
        .build()?;
    let (requests, elapsed, before) = client.block_on(async move {
        let done = Rc::new(Cell::new(0u64));
        let stop = Rc::new(Cell::new(false));
        let mut joins = Vec::new();
        for _ in 0..conns {
            let s = TcpStream::connect(addr).await.expect("connect");
            s.set_nodelay(true).expect("nodelay");
            let (done, stop) = (done.clone(), stop.clone());
            joins.push(spawn(async move {
                let msg = Bytes::from(vec![b'x'; msg_size]);
                while !stop.get() {
                    s.send(msg.clone()).await.expect("send");
                    let mut got = 0;
                    while got < msg_size {
                        got += s.recv().await.expect("recv").expect("data").len();
                    }
                    done.set(done.get() + 1);
                }
            }));
        }
        zerorx::sleep(Duration::from_millis(500)).await; // warm-up
        let (d0, t0) = (done.get(), Instant::now());
        zerorx::sleep(Duration::from_secs(secs)).await;
        let (d1, t1) = (done.get(), t0.elapsed());
        stop.set(true);
        for j in joins {
            let _ = j.await;
        }
        (d1 - d0, t1, d0)
    });
    stop_tx.send(()).expect("stop server");
    let m = server.join().expect("server thread")?;
    let total = requests + before;
    let w = &m[0];
    let rps = requests as f64 / elapsed.as_secs_f64();
    println!(
        "{conns} conns x {msg_size} B: {rps:.0} req/s ({:.2} GB/s each way) over {:.1} s",
        rps * msg_size as f64 / 1e9,
        elapsed.as_secs_f64()
    );
    println!(
        "server (whole run, {} req): {:.3} enters/req, {:.2} CQEs/req, {:.2} CQEs/enter, {:.2} loop turns/req, enobufs {}",
        total,
        w.enter_calls as f64 / total as f64,
        w.cqes as f64 / total as f64,
        w.cqes as f64 / w.enter_calls.max(1) as f64,
        w.loop_turns as f64 / total as f64,
        w.recv_enobufs
    );
    Ok(())
}
