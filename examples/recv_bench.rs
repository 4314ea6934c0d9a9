//! Receive-path benchmark: a one-worker zerorx echo server (pooled `recv`, the received
//! buffer sent straight back) driven by a one-worker zerorx client on another thread.
//! Prints throughput, the server thread's CPU per request or per GB, and the server's
//! receive counters, so receive-path levers (pool size, incremental buffers, bundles,
//! batched waits) can be compared before/after on the same machine.
//!
//! ```text
//! cargo run --release --example recv_bench -- [key=value ...]
//!   workload=rr|stream   rr: closed-loop ping-pong of `size` bytes (W2-style);
//!                        stream: every connection writes `size`-byte chunks
//!                        continuously and reads the echo (W4-style)
//!   conns=N              connections (default 64 for rr, 4 for stream)
//!   size=BYTES           message / chunk size (default 64 for rr, 65536 for stream)
//!   secs=S               measured seconds after a 0.5 s warm-up (default 3)
//!   buffers=N buffer_size=BYTES   the server's copy pool (default: the runtime's)
//!   incremental=0|1      incremental buffer consumption in the server's copy pool
//!   bundle=0|1           bundle receives in the server (not with incremental)
//!   batch=N batch_us=U   server waits collect up to N completions, U µs at most
//! ```
//! Numbers from a shared 2-vCPU VM are noisy: compare runs made back to back.

use bytes::Bytes;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use zerorx::net::{TcpListener, TcpStream};
use zerorx::{spawn, Builder, Runtime};

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Rr,
    Stream,
}

struct Args {
    workload: Workload,
    conns: usize,
    size: usize,
    secs: u64,
    buffers: Option<u16>,
    buffer_size: Option<u32>,
    incremental: Option<bool>,
    bundle: Option<bool>,
    batch: Option<u32>,
    batch_us: u64,
}

fn parse() -> Result<Args, String> {
    let mut kv = std::collections::HashMap::new();
    for a in std::env::args().skip(1) {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| format!("expected key=value, got {a:?}"))?;
        kv.insert(k.to_owned(), v.to_owned());
    }
    let num = |k: &str| -> Result<Option<u64>, String> {
        kv.get(k)
            .map(|v| v.parse::<u64>().map_err(|e| format!("{k}={v}: {e}")))
            .transpose()
    };
    let workload = match kv.get("workload").map(String::as_str) {
        None | Some("rr") => Workload::Rr,
        Some("stream") => Workload::Stream,
        Some(other) => return Err(format!("unknown workload {other:?} (rr or stream)")),
    };
    let (conns, size) = match workload {
        Workload::Rr => (64, 64),
        Workload::Stream => (4, 65536),
    };
    Ok(Args {
        workload,
        conns: num("conns")?.map_or(conns, |n| n as usize),
        size: num("size")?.map_or(size, |n| n as usize).max(1),
        secs: num("secs")?.unwrap_or(3),
        buffers: num("buffers")?.map(|n| n as u16),
        buffer_size: num("buffer_size")?.map(|n| n as u32),
        incremental: num("incremental")?.map(|n| n != 0),
        bundle: num("bundle")?.map(|n| n != 0),
        batch: num("batch")?.map(|n| n as u32),
        batch_us: num("batch_us")?.unwrap_or(50),
    })
}

fn server_builder(a: &Args) -> Builder {
    let mut b = Runtime::builder();
    b.threads(1);
    if let (Some(n), Some(size)) = (a.buffers, a.buffer_size) {
        b.pool_size(n as usize * size as usize).chunk_size(size);
    }
    if let Some(on) = a.incremental {
        b.incremental_buffers(on);
    }
    if let Some(on) = a.bundle {
        b.recv_bundles(on);
    }
    if let Some(n) = a.batch {
        b.completion_batch(n, Duration::from_micros(a.batch_us));
    }
    b
}

/// CPU time of a thread, read from any thread through its CPU clock.
struct ThreadCpu(libc::clockid_t);

impl ThreadCpu {
    fn current() -> ThreadCpu {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self is the calling thread; `id` is a valid out pointer.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        assert_eq!(rc, 0, "pthread_getcpuclockid");
        ThreadCpu(id)
    }

    fn now(&self) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out pointer; the clock belongs to a live thread (the
        // server thread outlives every read).
        let rc = unsafe { libc::clock_gettime(self.0, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

fn main() -> std::io::Result<()> {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("recv_bench: {e}");
            std::process::exit(2);
        }
    };
    let builder = server_builder(&a);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || -> std::io::Result<_> {
        let rt = builder.build()?;
        let h = rt.handle().clone();
        rt.block_on(async move {
            let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr"))?;
            addr_tx
                .send((l.local_addr()?, ThreadCpu::current().0))
                .expect("send addr");
            spawn(async move {
                while let Ok((s, _)) = l.accept().await {
                    let _ = s.set_nodelay(true);
                    spawn(async move {
                        loop {
                            match s.recv().await {
                                Ok(Some(b)) => {
                                    if s.send(b.into_bytes()).await.is_err() {
                                        break;
                                    }
                                }
                                Ok(None) => break,
                                Err(e) => {
                                    eprintln!("server receive failed: {e}");
                                    break;
                                }
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
        Ok((h.metrics(), h.pool_stats(), h.receive_mode().clone()))
    });
    let (addr, clock) = addr_rx.recv().expect("server address");
    let cpu = ThreadCpu(clock);

    let client = Runtime::builder().threads(1).build()?;
    let (ops, bytes, elapsed, server_cpu) = client.block_on(async move {
        let done = Rc::new(Cell::new(0u64));
        let bytes = Rc::new(Cell::new(0u64));
        let stop = Rc::new(Cell::new(false));
        let mut joins = Vec::new();
        for _ in 0..a.conns {
            let s = Rc::new(TcpStream::connect(addr).await.expect("connect"));
            s.set_nodelay(true).expect("nodelay");
            let (done, bytes, stop) = (done.clone(), bytes.clone(), stop.clone());
            let msg = Bytes::from(vec![b'x'; a.size]);
            match a.workload {
                Workload::Rr => joins.push(spawn(async move {
                    while !stop.get() {
                        s.send(msg.clone()).await.expect("send");
                        let mut got = 0;
                        while got < msg.len() {
                            got += s.recv().await.expect("recv").expect("data").len();
                        }
                        done.set(done.get() + 1);
                        bytes.set(bytes.get() + got as u64);
                    }
                })),
                Workload::Stream => {
                    let writer = {
                        let (s, stop) = (s.clone(), stop.clone());
                        spawn(async move {
                            while !stop.get() {
                                if s.send(msg.clone()).await.is_err() {
                                    break;
                                }
                            }
                            let _ = s.shutdown(std::net::Shutdown::Write).await;
                        })
                    };
                    joins.push(writer);
                    joins.push(spawn(async move {
                        while let Ok(Some(b)) = s.recv().await {
                            bytes.set(bytes.get() + b.len() as u64);
                            done.set(done.get() + 1);
                        }
                    }));
                }
            }
        }
        zerorx::sleep(Duration::from_millis(500)).await; // warm-up
        let (o0, b0, c0, t0) = (done.get(), bytes.get(), cpu.now(), Instant::now());
        zerorx::sleep(Duration::from_secs(a.secs)).await;
        let (o1, b1, c1, t1) = (done.get(), bytes.get(), cpu.now(), t0.elapsed());
        stop.set(true);
        for j in joins {
            let _ = zerorx::timeout(Duration::from_secs(5), j).await;
        }
        (o1 - o0, b1 - b0, t1, c1 - c0)
    });
    stop_tx.send(()).expect("stop server");
    let (m, pools, mode) = server.join().expect("server thread")?;
    let w = &m[0];
    let secs = elapsed.as_secs_f64();
    let cpu_s = server_cpu.as_secs_f64();
    match a.workload {
        Workload::Rr => println!(
            "rr {} conns x {} B: {:.0} req/s, server CPU {:.2} us/req ({:.0} % of a core)",
            a.conns,
            a.size,
            ops as f64 / secs,
            cpu_s * 1e6 / ops.max(1) as f64,
            cpu_s * 100.0 / secs
        ),
        Workload::Stream => println!(
            "stream {} conns x {} B: {:.2} GB/s echoed, server CPU {:.3} s/GB ({:.0} % of a core), {:.0} B per client recv",
            a.conns,
            a.size,
            bytes as f64 / secs / 1e9,
            cpu_s / (bytes.max(1) as f64 / 1e9),
            cpu_s * 100.0 / secs,
            bytes as f64 / ops.max(1) as f64
        ),
    }
    println!(
        "server: {} receive; {} enters, {} CQEs ({:.1}/enter), {} loop turns",
        mode.mode,
        w.enter_calls,
        w.cqes,
        w.cqes as f64 / w.enter_calls.max(1) as f64,
        w.loop_turns
    );
    println!("server rearms: {:?}", w.rearms);
    if let Some(Some(p)) = pools.first() {
        println!(
            "server pool: {} chunks, high water {}, completions {}, {:.0} B/completion",
            p.chunks_total,
            p.high_water,
            p.completions,
            p.bytes as f64 / p.completions.max(1) as f64
        );
    }
    Ok(())
}
