//! A TCP proxy whose data path never touches the payload: each connection to LISTEN
//! is joined to a new connection to UPSTREAM with `net::forward_both`, which queues
//! every received buffer, as it is, on the other connection. The runtime's send policy
//! (`ZERORX_SEND_ZC`, default `auto,16K`) sends zero-copy where the kernel does not
//! copy anyway; with a zero-copy receive pool the bytes leave from the pages the NIC
//! wrote. `--register-pools` registers each worker's receive pools with its ring for
//! sends (`runtime::register_receive_pools`), so zero-copy sends of received buffers
//! name the registration and the kernel pins nothing per send (not the default: see
//! its documentation).
//!
//! ```text
//! cargo run --release --example proxy -- --listen 127.0.0.1:7100 --upstream 127.0.0.1:7000 \
//!     [--threads N] [--secs S] [--register-pools]
//! ```
//! Prints each worker's send counters when it stops (after `--secs`, or on Ctrl-C).

use std::net::SocketAddr;
use std::time::Duration;
use zerorx::net::{forward_both, TcpListener, TcpStream, FORWARD_BACKLOG};
use zerorx::{spawn, Runtime};

struct Opts {
    listen: SocketAddr,
    upstream: SocketAddr,
    threads: usize,
    secs: Option<f64>,
    register_pools: bool,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        listen: "127.0.0.1:7100".parse().expect("address"),
        upstream: "127.0.0.1:7000".parse().expect("address"),
        threads: 1,
        secs: None,
        register_pools: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--listen" => o.listen = value(a)?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--upstream" => {
                o.upstream = value(a)?.parse().map_err(|e| format!("--upstream: {e}"))?
            }
            "--threads" => o.threads = value(a)?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--secs" => o.secs = Some(value(a)?.parse().map_err(|e| format!("--secs: {e}"))?),
            "--register-pools" => o.register_pools = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(o)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = parse(&args)?;
    let rt = Runtime::builder().threads(o.threads).build()?;
    let h = rt.handle().clone();
    let (listen, upstream, register_pools) = (o.listen, o.upstream, o.register_pools);
    // Every worker listens on the address (SO_REUSEPORT spreads the connections).
    drop(h.spawn_on_each(move |worker| async move {
        if register_pools {
            match zerorx::runtime::register_receive_pools() {
                Ok(n) => println!("worker {worker}: {n} receive pool areas registered for sends"),
                Err(e) => eprintln!("worker {worker}: {e} (its sends go unregistered)"),
            }
        }
        let l = match TcpListener::bind(listen) {
            Ok(l) => l,
            Err(e) => return eprintln!("listen on {listen}: {e}"),
        };
        loop {
            let Ok((client, _)) = l.accept().await else {
                continue;
            };
            spawn(async move {
                let server = match TcpStream::connect(upstream).await {
                    Ok(s) => s,
                    Err(e) => return eprintln!("connect to {upstream}: {e}"),
                };
                if let Err(e) = forward_both(&client, &server, FORWARD_BACKLOG).await {
                    eprintln!("a proxied connection ended: {e}");
                }
            });
        }
    }));
    println!("proxying {listen} -> {upstream}");
    rt.block_on(async {
        match o.secs {
            Some(s) => zerorx::sleep(Duration::from_secs_f64(s)).await,
            None => {
                let _ = zerorx::signal::ctrl_c().await;
            }
        }
    });
    for m in h.metrics() {
        println!(
            "worker {}: {} zero-copy sends, {} copied by the kernel, {} sockets sending plain",
            m.worker, m.send_zc, m.send_zc_copied, m.send_zc_off
        );
    }
    Ok(())
}
