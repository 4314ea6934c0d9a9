//! Fabric latency and bandwidth, every provider of this build side by side, with
//! libfabric's own `fi_pingpong` (Debian `libfabric-bin`, provider `tcp;ofi_rxm`) as
//! the outside reference measured in the same run.
//!
//! `cargo bench -p zerorx-bench --bench fabric` (add `--features libfabric` for the libfabric
//! providers through this API). Each cell is the median of `ZERORX_BENCH_REPS` runs
//! (default 3), runs interleaved across contenders so load changes hit all of them.
//! Latency is one way (half a round trip), as `fi_pingpong` reports it; pingpong
//! bandwidth is size / one-way time, the same formula as `fi_pingpong`'s MB/sec.

use zerorx_bench::fabric_engine as engine;

use engine::{Node, Plan, Report, Sample};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const REFERENCE: &str = "tcp;ofi_rxm";
const PINGPONG: [(usize, usize); 4] = [(64, 5000), (4096, 5000), (65536, 2000), (1 << 20, 300)];
const STREAM: [usize; 2] = [65536, 1 << 20];

type Error = Box<dyn std::error::Error>;

/// Runs `plan` between two endpoints of `provider`, each on its own runtime thread.
fn measure(provider: &str, plan: &Plan) -> Result<Report, Error> {
    let (to_client, from_server) = mpsc::channel::<Vec<u8>>();
    let (to_server, from_client) = mpsc::channel::<Vec<u8>>();
    let (p, sp) = (provider.to_string(), plan.clone());
    let server = std::thread::spawn(move || -> Result<(), String> {
        let rt = zerorx::Runtime::builder()
            .threads(1)
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let node = Node::open(&p, &sp).map_err(|e| e.to_string())?;
            to_client.send(node.address()).map_err(|e| e.to_string())?;
            let theirs = from_client
                .recv_timeout(Duration::from_secs(30))
                .map_err(|e| e.to_string())?;
            let peer = node.connect(&theirs).await.map_err(|e| e.to_string())?;
            engine::server(&node, peer, &sp).await
        })
    });
    let rt = zerorx::Runtime::builder().threads(1).build()?;
    let report = rt.block_on(async {
        let node = Node::open(provider, plan)?;
        to_server.send(node.address())?;
        let theirs = from_server.recv_timeout(Duration::from_secs(30))?;
        let peer = node.connect(&theirs).await?;
        Ok::<_, Error>(engine::client(&node, peer, plan).await?)
    });
    let served = server.join().map_err(|_| "server thread panicked")?;
    let report = report?;
    served?;
    Ok(report)
}

/// One `fi_pingpong` run: (one-way µs, MB/s) from its result line.
fn fi_pingpong(size: usize, iters: usize) -> Result<Sample, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port()
        .to_string();
    let common = [
        "-p",
        REFERENCE,
        "-e",
        "rdm",
        "-I",
        &iters.to_string(),
        "-S",
        &size.to_string(),
    ];
    let mut server = Command::new("fi_pingpong")
        .args(common)
        .args(["-B", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("fi_pingpong server: {e}"))?;
    std::thread::sleep(Duration::from_millis(300));
    let mut client = Command::new("fi_pingpong")
        .args(common)
        .args(["-P", &port, "127.0.0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("fi_pingpong client: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        match client.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if Instant::now() > deadline => break Err("timed out after 180 s".to_string()),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(e.to_string()),
        }
    };
    if status.is_err() {
        let _ = client.kill();
    }
    let _ = server.kill();
    let _ = server.wait();
    let out = client.wait_with_output().map_err(|e| e.to_string())?;
    let status = status?;
    if !status.success() {
        return Err(format!("fi_pingpong client exited with {status}"));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rfind(|l| l.split_whitespace().count() == 8 && !l.starts_with("bytes"))
        .ok_or_else(|| format!("no result line in {text:?}"))?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    let mbps: f64 = cols[5].parse().map_err(|_| format!("MB/sec in {line:?}"))?;
    let usec: f64 = cols[6]
        .parse()
        .map_err(|_| format!("usec/xfer in {line:?}"))?;
    Ok(Sample { size, usec, mbps })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{x:.1}"))
}

fn size_name(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// The 1-minute load average, to print next to the numbers (shared machines).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let load_before = load();
    let reps: usize = std::env::var("ZERORX_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let have_fi = Command::new("fi_pingpong")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !have_fi {
        println!(
            "fi_pingpong not found: the outside reference is skipped. Install it with \
             `sudo apt-get install libfabric-bin` (Debian/Ubuntu) and run again."
        );
    }
    let providers = zerorx_fabric::Fabric::providers();
    let mut rows: Vec<String> = providers.clone();
    if have_fi {
        rows.push(format!("fi_pingpong {REFERENCE}"));
    }
    // [row][size] -> samples
    let mut ping: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); PINGPONG.len()]; rows.len()];
    let mut stream: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); STREAM.len()]; providers.len()];
    let mut failures = Vec::new();
    for rep in 0..reps {
        for (si, &(size, iters)) in PINGPONG.iter().enumerate() {
            for (ri, row) in rows.iter().enumerate() {
                let r = if ri < providers.len() {
                    let plan = Plan {
                        pingpong: vec![size],
                        iters,
                        warmup: iters / 10,
                        stream: Vec::new(),
                        stream_bytes: 0,
                        check: false,
                    };
                    measure(row, &plan)
                        .map_err(|e| e.to_string())
                        .and_then(|r| {
                            r.pingpong
                                .first()
                                .copied()
                                .ok_or_else(|| "no sample".into())
                        })
                } else {
                    fi_pingpong(size, iters)
                };
                match r {
                    Ok(s) => {
                        eprintln!(
                            "run {}/{reps} {row:<24} pingpong {:>8}: {:>9.1} µs {:>8.1} MB/s",
                            rep + 1,
                            size_name(s.size),
                            s.usec,
                            s.mbps
                        );
                        ping[ri][si].push(s);
                    }
                    Err(e) => failures.push(format!("run {rep}: {row} {}: {e}", size_name(size))),
                }
            }
        }
        for (si, &size) in STREAM.iter().enumerate() {
            for (pi, p) in providers.iter().enumerate() {
                let plan = Plan {
                    pingpong: Vec::new(),
                    iters: 0,
                    warmup: 0,
                    stream: vec![size],
                    stream_bytes: 256 << 20,
                    check: false,
                };
                match measure(p, &plan) {
                    Ok(r) => stream[pi][si].extend(r.stream.iter().map(|s| s.mbps)),
                    Err(e) => {
                        failures.push(format!("run {rep}: {p} stream {}: {e}", size_name(size)))
                    }
                }
            }
        }
    }

    let lat = |ri: usize, si: usize| median(ping[ri][si].iter().map(|s| s.usec).collect());
    let bw = |ri: usize, si: usize| median(ping[ri][si].iter().map(|s| s.mbps).collect());
    println!(
        "\nfabric benchmark: median of {reps} interleaved runs on loopback; zerorx providers run \
         each side on its own runtime thread, fi_pingpong runs two processes"
    );
    println!(
        "load average {load_before} before, {} after, on {} CPUs: busy-polling peers \
         (fi_pingpong) suffer most when the CPUs are oversubscribed",
        load(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("\none-way latency, µs (lower is better)");
    println!("  {:<32} {:>10} {:>10}", "", size_name(64), size_name(4096));
    for (ri, row) in rows.iter().enumerate() {
        println!(
            "  {:<32} {:>10} {:>10}",
            row,
            cell(lat(ri, 0)),
            cell(lat(ri, 1))
        );
    }
    println!("\npingpong bandwidth, MB/s (higher is better)");
    println!(
        "  {:<32} {:>10} {:>10}",
        "",
        size_name(65536),
        size_name(1 << 20)
    );
    for (ri, row) in rows.iter().enumerate() {
        println!(
            "  {:<32} {:>10} {:>10}",
            row,
            cell(bw(ri, 2)),
            cell(bw(ri, 3))
        );
    }
    println!(
        "\nstreaming bandwidth, MB/s ({} sends in flight; fi_pingpong has no streaming mode)",
        16
    );
    println!(
        "  {:<32} {:>10} {:>10}",
        "",
        size_name(STREAM[0]),
        size_name(STREAM[1])
    );
    for (pi, p) in providers.iter().enumerate() {
        println!(
            "  {:<32} {:>10} {:>10}",
            p,
            cell(median(stream[pi][0].clone())),
            cell(median(stream[pi][1].clone()))
        );
    }
    if have_fi {
        let fi = rows.len() - 1;
        println!("\nratios against fi_pingpong {REFERENCE} (> 1: uring-tcp is better)");
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
            _ => "—".into(),
        };
        println!(
            "  latency 64 B {}   4 KiB {}   bandwidth 64 KiB {}   1 MiB {}",
            ratio(lat(fi, 0), lat(0, 0)),
            ratio(lat(fi, 1), lat(0, 1)),
            ratio(bw(0, 2), bw(fi, 2)),
            ratio(bw(0, 3), bw(fi, 3)),
        );
    }
    if !failures.is_empty() {
        println!("\nfailed runs:");
        for f in &failures {
            println!("  {f}");
        }
        std::process::exit(1);
    }
}
