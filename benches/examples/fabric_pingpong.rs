//! Pingpong and streaming between two processes over `zerorx_fabric`, with the
//! endpoint addresses exchanged over a plain TCP control connection.
//!
//! ```text
//! fabric_pingpong [OPTIONS] server              # prints "control ADDR", serves one client
//! fabric_pingpong [OPTIONS] client ADDR         # connects to the server's control ADDR
//! fabric_pingpong [OPTIONS] selftest            # runs a server child process and the client
//!
//! OPTIONS (both sides must get the same ones; selftest passes them on)
//!   --provider NAME      uring-tcp (default) or a libfabric provider of this build
//!   --sizes A,B,..       pingpong sizes (default 1,64,4096,65536,1048576,8388608)
//!   --stream A,B,..      streaming sizes (default 65536,1048576)
//!   --iters N            timed round trips per size (default 1000; warm-up N/10)
//!   --check              check the data of every round trip (always: first and last)
//!   --send-zc POLICY     the runtime's zero-copy send policy (off, auto, always[,BYTES];
//!                        default auto,16K, which sends to this host plain; uring-tcp)
//!   --control ADDR       server control address (default 127.0.0.1:0)
//! ```
//!
//! `cargo run --release -p zerorx-bench --example fabric_pingpong -- selftest`

use zerorx_bench::fabric_engine as engine;

use engine::{Node, Plan, Report};
use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;
use zerorx::net::{TcpListener, TcpStream};

type Error = Box<dyn std::error::Error>;

struct Args {
    provider: String,
    plan: Plan,
    control: SocketAddr,
    role: String,
    target: Option<SocketAddr>,
    passthrough: Vec<String>,
    send_zc: zerorx::SendZeroCopy,
}

fn sizes(s: &str) -> Result<Vec<usize>, Error> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<usize>()
                .map_err(|e| format!("size {x:?}: {e}").into())
        })
        .collect()
}

fn parse() -> Result<Args, Error> {
    let mut a = Args {
        provider: "uring-tcp".into(),
        plan: Plan {
            pingpong: vec![1, 64, 4096, 65536, 1 << 20, 8 << 20],
            iters: 1000,
            warmup: 100,
            stream: vec![65536, 1 << 20],
            stream_bytes: 256 << 20,
            check: false,
        },
        control: "127.0.0.1:0".parse()?,
        role: String::new(),
        target: None,
        passthrough: Vec::new(),
        send_zc: zerorx::SendZeroCopy::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--provider" => a.provider = value("--provider")?,
            "--sizes" => a.plan.pingpong = sizes(&value("--sizes")?)?,
            "--stream" => a.plan.stream = sizes(&value("--stream")?)?,
            "--iters" => {
                a.plan.iters = value("--iters")?.parse()?;
                a.plan.warmup = (a.plan.iters / 10).max(1);
            }
            "--check" => a.plan.check = true,
            "--send-zc" => a.send_zc = value("--send-zc")?.parse()?,
            "--control" => a.control = value("--control")?.parse()?,
            "server" | "selftest" => a.role = arg,
            "client" => {
                a.role = arg;
                a.target = Some(value("client")?.parse()?);
            }
            "-h" | "--help" => {
                println!("see the comment at the top of benches/examples/fabric_pingpong.rs");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    a.passthrough = passthrough(&a);
    if a.role.is_empty() {
        return Err("give a role: server, client ADDR or selftest".into());
    }
    Ok(a)
}

/// The options a selftest hands to its server process.
fn passthrough(a: &Args) -> Vec<String> {
    let join = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let mut v = vec![
        "--provider".into(),
        a.provider.clone(),
        "--sizes".into(),
        join(&a.plan.pingpong),
        "--stream".into(),
        join(&a.plan.stream),
        "--iters".into(),
        a.plan.iters.to_string(),
    ];
    if a.plan.check {
        v.push("--check".into());
    }
    v.extend(["--send-zc".into(), a.send_zc.to_string()]);
    v
}

/// Sends `mine` length-prefixed and reads the other side's.
async fn exchange(s: &TcpStream, mine: Vec<u8>) -> Result<Vec<u8>, Error> {
    let mut out = (mine.len() as u32).to_le_bytes().to_vec();
    out.extend(mine);
    s.send(bytes::Bytes::from(out)).await?;
    let mut got = Vec::new();
    loop {
        if got.len() >= 4 {
            let n = u32::from_le_bytes([got[0], got[1], got[2], got[3]]) as usize;
            if got.len() >= 4 + n {
                return Ok(got[4..4 + n].to_vec());
            }
        }
        match s.recv().await? {
            Some(b) => got.extend_from_slice(&b),
            None => return Err("control connection closed during the exchange".into()),
        }
    }
}

fn print(provider: &str, plan: &Plan, r: &Report) {
    println!(
        "provider {provider}: {} round trips per size after {} warm-up{}",
        plan.iters,
        plan.warmup,
        if plan.check {
            ", every one data-checked"
        } else {
            ", first and last data-checked"
        }
    );
    println!(
        "{:>10} {:>10} {:>14} {:>10}",
        "pingpong", "size B", "one-way µs", "MB/s"
    );
    for s in &r.pingpong {
        println!(
            "{:>10} {:>10} {:>14.2} {:>10.1}",
            "", s.size, s.usec, s.mbps
        );
    }
    println!(
        "{:>10} {:>10} {:>14} {:>10}",
        "streaming", "size B", "µs/message", "MB/s"
    );
    for s in &r.stream {
        println!(
            "{:>10} {:>10} {:>14.2} {:>10.1}",
            "", s.size, s.usec, s.mbps
        );
    }
}

fn run_server(a: &Args) -> Result<(), Error> {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .send_zero_copy(a.send_zc)
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(a.control)?;
        println!("control {}", listener.local_addr()?);
        use std::io::Write;
        std::io::stdout().flush()?;
        let (ctl, _) = zerorx::time::timeout(Duration::from_secs(60), listener.accept()).await??;
        let node = Node::open(&a.provider, &a.plan)?;
        let theirs = exchange(&ctl, node.address()).await?;
        let peer = node.connect(&theirs).await?;
        engine::server(&node, peer, &a.plan).await?;
        // Wait for the client to hang up so its last completions are not cut off.
        let _ = zerorx::time::timeout(Duration::from_secs(30), ctl.recv()).await;
        Ok(())
    })
}

fn run_client(a: &Args, target: SocketAddr) -> Result<(), Error> {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .send_zero_copy(a.send_zc)
        .build()?;
    rt.block_on(async {
        let ctl = TcpStream::connect_timeout(target, Duration::from_secs(10)).await?;
        let node = Node::open(&a.provider, &a.plan)?;
        let theirs = exchange(&ctl, node.address()).await?;
        let peer = node.connect(&theirs).await?;
        let report = engine::client(&node, peer, &a.plan).await?;
        print(&a.provider, &a.plan, &report);
        Ok(())
    })
}

fn selftest(a: &Args) -> Result<(), Error> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(&a.passthrough)
        .arg("server")
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let mut lines = std::io::BufReader::new(stdout).lines();
    let control = loop {
        match lines.next() {
            Some(l) => {
                if let Some(addr) = l?.strip_prefix("control ") {
                    break addr.parse::<SocketAddr>()?;
                }
            }
            None => {
                let status = child.wait()?;
                return Err(format!("the server exited ({status}) before listening").into());
            }
        }
    };
    let result = run_client(a, control);
    if result.is_err() {
        let _ = child.kill();
    }
    let status = child.wait()?;
    result?;
    if !status.success() {
        return Err(format!("the server process failed: {status}").into());
    }
    println!("selftest: both processes finished cleanly");
    Ok(())
}

fn main() -> Result<(), Error> {
    let a = parse()?;
    match a.role.as_str() {
        "server" => run_server(&a),
        "client" => run_client(&a, a.target.ok_or("client needs ADDR")?),
        _ => selftest(&a),
    }
}
