//! Framed echo server and client. A request is a 4-byte big-endian length and a body;
//! the server reads it with `FrameReader` (the body stays in the received buffers, no
//! copy) and queues the header and those same buffers back with one
//! `queue_send_vectored` (no task waits for the send).
//! The client checks every echoed byte and prints requests per second.
//!
//! ```text
//! cargo run --release --example echo            # server + client on loopback for 3 s
//! cargo run --release --example echo -- server --port 7000 [--threads N]
//! cargo run --release --example echo -- client --addr 127.0.0.1:7000 \
//!     [--conns 64] [--size 64] [--secs 3] [--threads N]
//! ```

use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::net::{BytesChain, FrameReader, SendBuf, TcpListener, TcpStream};
use zerorx::{spawn, Runtime};

/// Largest frame the server accepts.
const MAX_FRAME: usize = 16 << 20;

#[derive(Debug)]
struct Opts {
    mode: String,
    port: u16,
    addr: Option<SocketAddr>,
    conns: usize,
    size: usize,
    secs: f64,
    threads: usize,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        mode: "both".into(),
        port: 7000,
        addr: None,
        conns: 64,
        size: 64,
        secs: 3.0,
        threads: 1,
    };
    let mut it = args.iter();
    if let Some(m) = args.first().filter(|a| !a.starts_with("--")) {
        o.mode = m.clone();
        it.next();
    }
    if !matches!(o.mode.as_str(), "both" | "server" | "client") {
        return Err(format!("unknown mode {:?} (server, client)", o.mode));
    }
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--port" => o.port = value.parse().map_err(|e| bad(&e))?,
            "--addr" => o.addr = Some(value.parse().map_err(|e| bad(&e))?),
            "--conns" => o.conns = value.parse().map_err(|e| bad(&e))?,
            "--size" => o.size = value.parse().map_err(|e| bad(&e))?,
            "--secs" => o.secs = value.parse().map_err(|e| bad(&e))?,
            "--threads" => o.threads = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.threads == 0 || o.conns == 0 {
        return Err("--threads and --conns must be at least 1".into());
    }
    if o.size > MAX_FRAME {
        return Err(format!("--size is limited to {MAX_FRAME} bytes"));
    }
    if o.mode == "client" && o.addr.is_none() {
        return Err("client needs --addr".into());
    }
    Ok(o)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("echo: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(opts) {
        eprintln!("echo: {e}");
        std::process::exit(1);
    }
}

fn run(o: Opts) -> std::io::Result<()> {
    match o.mode.as_str() {
        "server" => {
            let addr = SocketAddr::from(([0, 0, 0, 0], o.port));
            let never = Arc::new(AtomicBool::new(false));
            serve(addr, o.threads, never, |a| {
                println!("echo server on {a}, {} worker(s)", o.threads)
            })
        }
        "client" => {
            let addr = o
                .addr
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], o.port)));
            client(addr, &o)
        }
        _ => {
            // Self-contained: a server runtime on its own thread, the client here.
            let stop = Arc::new(AtomicBool::new(false));
            let (tx, rx) = std::sync::mpsc::channel();
            let server = {
                let stop = stop.clone();
                let threads = o.threads;
                std::thread::spawn(move || {
                    serve(SocketAddr::from(([127, 0, 0, 1], 0)), threads, stop, |a| {
                        let _ = tx.send(a);
                    })
                })
            };
            let addr = rx
                .recv()
                .map_err(|_| std::io::Error::other("the server did not start"))?;
            let res = client(addr, &o);
            stop.store(true, Ordering::Relaxed);
            server
                .join()
                .map_err(|_| std::io::Error::other("server thread panicked"))??;
            res
        }
    }
}

/// Runs an echo server with one listener per worker on `addr` (`SO_REUSEPORT`) until
/// `stop` is set; `ready` gets the bound address.
fn serve(
    addr: SocketAddr,
    threads: usize,
    stop: Arc<AtomicBool>,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let rt = Runtime::builder().threads(threads).build()?;
    let h = rt.handle().clone();
    rt.block_on(async move {
        let l0 = TcpListener::bind(addr)?;
        let addr = l0.local_addr()?;
        for w in 1..threads {
            // Detached: each worker serves its listener until the runtime stops.
            drop(h.spawn_on_with(w, move || async move {
                match TcpListener::bind(addr) {
                    Ok(l) => accept_loop(l).await,
                    Err(e) => eprintln!("echo: worker {w} cannot listen on {addr}: {e}"),
                }
            }));
        }
        spawn(accept_loop(l0));
        ready(addr);
        while !stop.load(Ordering::Relaxed) {
            zerorx::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    })
}

async fn accept_loop(l: TcpListener) {
    while let Ok((s, _)) = l.accept().await {
        spawn(async move {
            if let Err(e) = echo_conn(s).await {
                eprintln!("echo: connection ended: {e}");
            }
        });
    }
}

/// Echoes frames back: the body goes out as the buffers it arrived in, queued with no
/// task waiting; past [`MAX_BACKLOG`] queued bytes (a client that does not read) the
/// connection waits for them to go.
async fn echo_conn(s: TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut r = FrameReader::new(&s);
    while let Some(body) = r.read_frame(MAX_FRAME).await? {
        let header = Bytes::copy_from_slice(&(body.len() as u32).to_be_bytes());
        let body = body.segments().cloned().map(SendBuf::from);
        s.queue_send_vectored(std::iter::once(header.into()).chain(body))?;
        if s.send_backlog() > MAX_BACKLOG {
            s.flush_sends().await?;
        }
    }
    s.flush_sends().await
}

/// Bytes a connection queues before it waits for its sends.
const MAX_BACKLOG: usize = 1 << 20;

fn client(addr: SocketAddr, o: &Opts) -> std::io::Result<()> {
    let rt = Runtime::builder().threads(o.threads).build()?;
    let h = rt.handle().clone();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (conns, size, secs) = (o.conns, o.size, o.secs);
    let (requests, elapsed) = rt.block_on(async move {
        let joins: Vec<_> = (0..conns)
            .map(|i| {
                let (done, stop) = (done.clone(), stop.clone());
                h.spawn_on_with(i % h.threads(), move || async move {
                    client_conn(addr, i as u64, size, &done, &stop).await
                })
            })
            .collect();
        zerorx::sleep(Duration::from_millis(300)).await; // warm-up
        let (d0, t0) = (done.load(Ordering::Relaxed), Instant::now());
        zerorx::sleep(Duration::from_secs_f64(secs)).await;
        let (d1, elapsed) = (done.load(Ordering::Relaxed), t0.elapsed());
        stop.store(true, Ordering::Relaxed);
        for j in joins {
            j.await
                .map_err(|e| std::io::Error::other(format!("client task: {e:?}")))??;
        }
        Ok::<_, std::io::Error>((d1 - d0, elapsed))
    })?;
    let rps = requests as f64 / elapsed.as_secs_f64();
    println!(
        "{conns} conns x {size} B frames, {} client worker(s): {rps:.0} req/s ({:.3} GB/s each way) over {:.1} s, every byte verified",
        o.threads,
        rps * (size + 4) as f64 / 1e9,
        elapsed.as_secs_f64()
    );
    Ok(())
}

/// One connection: send a frame, read the echo, compare, until `stop`.
async fn client_conn(
    addr: SocketAddr,
    id: u64,
    size: usize,
    done: &AtomicU64,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let mut body = vec![0u8; size];
    let mut x = id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for b in &mut body {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut frame = (size as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    let frame = Bytes::from(frame);
    let mut r = FrameReader::new(&s);
    while !stop.load(Ordering::Relaxed) {
        s.send(frame.clone()).await?;
        let echoed = r.read_frame(MAX_FRAME).await?.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "server closed")
        })?;
        if !same(&echoed, &body) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("connection {id}: echoed bytes differ"),
            ));
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Compares a chain with a slice without gluing the chain together.
fn same(chain: &BytesChain, want: &[u8]) -> bool {
    if chain.len() != want.len() {
        return false;
    }
    let mut off = 0;
    chain.segments().all(|seg| {
        let ok = seg[..] == want[off..off + seg.len()];
        off += seg.len();
        ok
    })
}
