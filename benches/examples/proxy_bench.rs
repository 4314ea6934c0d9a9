//! CPU per GB of a proxy's data path, zerorx against tokio in the same run: a stream
//! from clients through a proxy to a sink, on loopback. The proxies run as child
//! processes of this binary (so `/proc/PID` shows the proxy's CPU alone) and are
//! measured in interleaved rounds:
//!
//! - `zerorx`: `net::forward_both` with the default send policy (`auto,16K`, which
//!   sends to this host plain: loopback copies zero-copy sends anyway);
//! - `zerorx-zc`: the same with `ZERORX_SEND_ZC=always,16K`, every large send
//!   zero-copy and copied by the kernel (what the adaptive policy avoids);
//! - `zerorx-zc-reg`: `zerorx-zc` with the receive pool registered for sends
//!   (`runtime::register_receive_pools`), so the sends of received buffers name it;
//! - `tokio`: a current-thread tokio runtime with `tokio::io::copy_bidirectional`
//!   (`read`/`write` through an 8 KiB buffer per direction).
//!
//! ```text
//! cargo run --release -p zerorx-bench --example proxy_bench -- [--gb 2] [--rounds 3] [--conns 4]
//! ```
//! Prints, per proxy, the median [min-max] of CPU seconds per GB moved and GB/s, and
//! each zerorx proxy's per-round ratio to tokio. Loopback says nothing about what a NIC
//! saves: there the kernel copies every byte in and out whatever the proxy does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zerorx_bench::cpu_rounds::{discard_sink, CpuRounds};
use zerorx_bench::procfs::process_cpu_secs;

type Error = Box<dyn std::error::Error>;

const PROXIES: [&str; 4] = ["zerorx", "zerorx-zc", "zerorx-zc-reg", "tokio"];

/// A proxy child: listens on 127.0.0.1, prints `listening ADDR`, forwards every
/// connection to `upstream` until its stdin closes.
fn child(kind: &str, upstream: SocketAddr) -> Result<(), Error> {
    let stop = || {
        // Exits when the parent closes stdin (or dies).
        let mut sink = String::new();
        let _ = std::io::stdin().read_line(&mut sink);
        std::process::exit(0);
    };
    if kind == "tokio" {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("listening {}", l.local_addr()?);
            std::thread::spawn(stop);
            loop {
                let (mut c, _) = l.accept().await?;
                tokio::spawn(async move {
                    if let Ok(mut s) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut c, &mut s).await;
                    }
                });
            }
        });
    }
    let rt = zerorx::Runtime::builder().threads(1).build()?;
    rt.block_on(async move {
        let l = zerorx::net::TcpListener::bind("127.0.0.1:0".parse()?)?;
        println!("listening {}", l.local_addr()?);
        std::thread::spawn(stop);
        loop {
            let (c, _) = l.accept().await?;
            if kind == "zerorx-zc-reg" {
                zerorx::runtime::register_receive_pools()?;
            }
            zerorx::spawn(async move {
                if let Ok(s) = zerorx::net::TcpStream::connect(upstream).await {
                    let _ = zerorx::net::forward_both(&c, &s, zerorx::net::FORWARD_BACKLOG).await;
                }
            });
        }
    })
}

/// One round of `kind`: `bytes` over `conns` connections; (CPU s per GB, GB/s).
fn round(kind: &str, upstream: SocketAddr, bytes: u64, conns: u64) -> Result<(f64, f64), Error> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["--child", kind, &upstream.to_string()]);
    if kind.starts_with("zerorx-zc") {
        cmd.env("ZERORX_SEND_ZC", "always,16K");
    } else {
        cmd.env_remove("ZERORX_SEND_ZC");
    }
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("child stdout")?).read_line(&mut line)?;
    let addr: SocketAddr = line
        .strip_prefix("listening ")
        .ok_or_else(|| format!("{kind}: unexpected first line {line:?}"))?
        .trim()
        .parse()?;
    let pid = child.id();
    let cpu0 = process_cpu_secs(pid)?;
    let t0 = Instant::now();
    let per_conn = bytes / conns;
    let clients: Vec<_> = (0..conns)
        .map(|_| {
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut c = TcpStream::connect(addr)?;
                let chunk = vec![7u8; 64 << 10];
                let mut left = per_conn;
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    c.write_all(&chunk[..n])?;
                    left -= n as u64;
                }
                c.shutdown(std::net::Shutdown::Write)?;
                // The proxy's end of stream back: everything went through.
                let mut rest = Vec::new();
                c.read_to_end(&mut rest)?;
                Ok(())
            })
        })
        .collect();
    for c in clients {
        c.join().map_err(|_| "a client panicked")??;
    }
    let wall = t0.elapsed().as_secs_f64();
    // The last connections' ends are handled by now; give the counters a moment.
    std::thread::sleep(Duration::from_millis(50));
    let cpu = process_cpu_secs(pid)? - cpu0;
    drop(child.stdin.take());
    let _ = child.wait();
    let gb = (per_conn * conns) as f64 / 1e9;
    Ok((cpu / gb, gb / wall))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let kind = args.get(1).ok_or("--child KIND UPSTREAM")?;
        let upstream = args.get(2).ok_or("--child KIND UPSTREAM")?.parse()?;
        return child(kind, upstream);
    }
    let (mut gb, mut rounds, mut conns) = (2.0f64, 3usize, 4u64);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--gb" => gb = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--conns" => conns = value()?.parse()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let upstream = discard_sink()?;
    let bytes = (gb * 1e9) as u64;
    let mut results = CpuRounds::new(&PROXIES);
    for r in 0..rounds {
        for (i, kind) in PROXIES.iter().enumerate() {
            let (c, g) = round(kind, upstream, bytes, conns)?;
            println!("round {r} {kind:<14} {c:.3} CPU-s/GB {g:.2} GB/s");
            results.push(i, c, g);
        }
    }
    print!("\n{}", results.table("proxy"));
    println!("\n{bytes} bytes per round over {conns} connections, loopback: the kernel copies in and out either way");
    Ok(())
}
