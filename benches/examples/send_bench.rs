//! CPU per GB of a sender, zerorx's send ways against tokio in the same run: one
//! connection on loopback to a sink that reads and discards, 256 KiB awaited sends
//! from a 4 MiB buffer. The senders run as child processes of this binary (so
//! `/proc/PID` shows the sender's CPU alone, the kernel's share of the send included)
//! and are measured in interleaved rounds:
//!
//! - `plain`: zerorx with `ZERORX_SEND_ZC=off`;
//! - `zc`: `always,16K`, every send zero-copy from heap memory (the kernel pins its
//!   pages per send, then copies at delivery, as loopback does);
//! - `zc-registered`: the same from memory registered with the ring
//!   (`register_send_memory`): no pinning per send, the same copy;
//! - `tokio`: a current-thread tokio runtime, `write_all` of the same pieces.
//!
//! ```text
//! cargo run --release -p zerorx-bench --example send_bench -- [--gb 2] [--rounds 5]
//! ```
//! Prints, per sender, the median [min-max] of CPU seconds per GB and GB/s, each
//! zerorx sender's per-round ratio to tokio, and the zero-copy counters of its last
//! round. Loopback shows what registration saves on the sending side (the pinning);
//! it cannot show what zero-copy saves on a NIC (there the kernel's copy goes too).

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;
use zerorx_bench::cpu_rounds::{discard_sink, CpuRounds};
use zerorx_bench::procfs::process_cpu_secs;

type Error = Box<dyn std::error::Error>;

const SENDERS: [&str; 4] = ["plain", "zc", "zc-registered", "tokio"];
const BLOB: usize = 4 << 20;
const PIECE: usize = 256 << 10;

/// The memory the `zc-registered` sender registers.
struct Blob(Box<[u8]>);

// SAFETY: the boxed slice neither moves nor changes length while the value lives.
unsafe impl zerorx::runtime::SendMemory for Blob {
    fn range(&self) -> (*const u8, usize) {
        (self.0.as_ptr(), self.0.len())
    }
}

/// A view of `range` of a blob, keeping it alive.
fn view(blob: &Arc<Blob>, range: std::ops::Range<usize>) -> bytes::Bytes {
    struct View(Arc<Blob>, std::ops::Range<usize>);
    impl AsRef<[u8]> for View {
        fn as_ref(&self) -> &[u8] {
            &self.0 .0[self.1.clone()]
        }
    }
    bytes::Bytes::from_owner(View(blob.clone(), range))
}

/// Waits for the parent's go (a line on stdin).
fn wait_for_go() -> Result<(), Error> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(())
}

/// A sender child: connects to `sink`, prints `ready`, sends `bytes` once told to,
/// prints `done` with its counters, and exits when its stdin closes.
fn child(kind: &str, sink: SocketAddr, bytes: u64) -> Result<(), Error> {
    let pieces = (0..bytes.div_ceil(PIECE as u64)).map(move |i| {
        let at = (i as usize * PIECE) % BLOB;
        let n = (bytes - i * PIECE as u64).min(PIECE as u64) as usize;
        at..at + n
    });
    if kind == "tokio" {
        use tokio::io::AsyncWriteExt;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return rt.block_on(async move {
            let mut s = tokio::net::TcpStream::connect(sink).await?;
            let heap = vec![7u8; BLOB];
            println!("ready");
            wait_for_go()?;
            for r in pieces {
                s.write_all(&heap[r]).await?;
            }
            println!("done");
            wait_for_go()?;
            Ok(())
        });
    }
    let rt = zerorx::Runtime::builder().threads(1).build()?;
    let h = rt.handle().clone();
    rt.block_on(async move {
        let s = zerorx::net::TcpStream::connect(sink).await?;
        let blob = Arc::new(Blob(vec![7u8; BLOB].into()));
        let heap = bytes::Bytes::from(vec![7u8; BLOB]);
        if kind == "zc-registered" && !zerorx::runtime::register_send_memory(&blob)? {
            return Err("the blob was not registered".into());
        }
        println!("ready");
        wait_for_go()?;
        for r in pieces {
            let piece = match kind {
                "zc-registered" => view(&blob, r),
                _ => heap.slice(r),
            };
            s.send(piece).await?;
        }
        let m = h.metrics()[0];
        println!(
            "done zero-copy {} registered {} copied {}",
            m.send_zc, m.send_zc_registered, m.send_zc_copied
        );
        wait_for_go()?;
        Ok::<(), Error>(())
    })
}

/// One round of `kind`: (CPU s per GB, GB/s, the child's `done` line).
fn round(kind: &str, sink: SocketAddr, bytes: u64) -> Result<(f64, f64, String), Error> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["--child", kind, &sink.to_string(), &bytes.to_string()]);
    cmd.env(
        "ZERORX_SEND_ZC",
        if kind == "plain" { "off" } else { "always,16K" },
    );
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let mut out = BufReader::new(child.stdout.take().ok_or("child stdout")?);
    let mut stdin = child.stdin.take().ok_or("child stdin")?;
    let mut line = String::new();
    out.read_line(&mut line)?;
    if line.trim() != "ready" {
        return Err(format!("{kind}: unexpected first line {line:?}").into());
    }
    let pid = child.id();
    let cpu0 = process_cpu_secs(pid)?;
    let t0 = Instant::now();
    writeln!(stdin, "go")?;
    line.clear();
    out.read_line(&mut line)?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = process_cpu_secs(pid)? - cpu0;
    if !line.starts_with("done") {
        return Err(format!("{kind}: unexpected line {line:?}").into());
    }
    writeln!(stdin, "stop")?;
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("{kind}: the sender failed ({status})").into());
    }
    let gb = bytes as f64 / 1e9;
    Ok((cpu / gb, gb / wall, line.trim().to_string()))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let usage = "--child KIND SINK BYTES";
        let kind = args.get(1).ok_or(usage)?;
        let sink = args.get(2).ok_or(usage)?.parse()?;
        let bytes = args.get(3).ok_or(usage)?.parse()?;
        return child(kind, sink, bytes);
    }
    let (mut gb, mut rounds) = (2.0f64, 5usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--gb" => gb = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    if rounds == 0 || gb <= 0.0 {
        return Err("--rounds and --gb must be positive".into());
    }
    let sink = discard_sink()?;
    let bytes = (gb * 1e9) as u64;
    let mut results = CpuRounds::new(&SENDERS);
    for r in 0..rounds {
        for (i, kind) in SENDERS.iter().enumerate() {
            let (c, g, done) = round(kind, sink, bytes)?;
            println!("round {r} {kind:<14} {c:.3} CPU-s/GB {g:.2} GB/s  {done}");
            results.push(i, c, g);
        }
    }
    print!("\n{}", results.table("sender"));
    println!(
        "\n{bytes} bytes per round in {PIECE}-byte sends, loopback: the kernel copies at delivery either way"
    );
    Ok(())
}
