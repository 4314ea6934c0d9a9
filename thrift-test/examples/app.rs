//! A small service as an application writes it on zerorx: `#[zerorx::main]`, its
//! config read with `zerorx::fs`, one Thrift service (`idl/app.thrift`) served on TCP
//! and on a Unix socket, request bodies hashed on the blocking pool, and a clean exit
//! on SIGTERM or SIGINT: calls in flight are answered, then the process exits 0.
//!
//! ```sh
//! printf 'tcp = 127.0.0.1:9090\nunix = /tmp/zerorx-app.sock\n' > /tmp/app.conf
//! cargo run --release -p zerorx-thrift-test --example app -- /tmp/app.conf
//! ```
//!
//! It prints `listening on tcp ADDRESS and unix PATH` once both servers accept, and
//! `stopped after N calls` when it exits. `thrift-test/tests/app.rs` runs it that way.

use std::process::ExitCode;
use std::time::{Duration, Instant};
use zerorx::signal::SignalKind;
use zerorx_thrift::Server;
use zerorx_thrift_test::app::{AppConfig, Hasher};
use zerorx_thrift_test::generated::app::DigestServer;

#[zerorx::main(threads = 2)]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("app: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: app CONFIG_FILE (see the top of examples/app.rs)")?;
    let text = zerorx::fs::read(&path)
        .await
        .map_err(|e| format!("reading the config: {e}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("{path}: not UTF-8"))?;
    let config = AppConfig::parse(&text).map_err(|e| format!("{path}: {e}"))?;

    // Listen before the servers say they are up, so a signal sent as soon as the
    // line below is printed is not lost.
    let signals = zerorx_cli::signals::listen(&[SignalKind::terminate(), SignalKind::interrupt()])
        .map_err(|e| format!("signals: {e}"))?;
    let handle = zerorx::Handle::try_current().ok_or("not on a zerorx runtime")?;
    let hasher = Hasher::default();
    let tcp = Server::builder()
        .addr(config.tcp)
        .service(DigestServer::new(hasher.clone()))
        .start(&handle)
        .map_err(|e| format!("serving on tcp {}: {e}", config.tcp))?;
    let unix = Server::builder()
        .unix(&config.unix)
        .service(DigestServer::new(hasher.clone()))
        .start(&handle)
        .map_err(|e| format!("serving on unix {}: {e}", config.unix.display()))?;
    println!(
        "listening on tcp {} and unix {}",
        tcp.local_addr(),
        config.unix.display()
    );

    // On the first signal of either kind, both servers stop accepting, answer what
    // is in flight (up to the grace period) and close.
    let (tcp_stop, unix_stop) = (tcp.shutdown_handle(), unix.shutdown_handle());
    let began = std::rc::Rc::new(std::cell::Cell::new(None));
    let grace = config.grace;
    zerorx_cli::signals::on_first(signals, {
        let began = began.clone();
        move |kind| {
            began.set(Some(Instant::now()));
            eprintln!("app: {kind:?}: answering the calls in flight, then stopping");
            tcp_stop.shutdown(grace);
            unix_stop.shutdown(grace);
        }
    });
    tcp.stopped()
        .await
        .map_err(|e| format!("stopping tcp: {e}"))?;
    unix.stopped()
        .await
        .map_err(|e| format!("stopping unix: {e}"))?;
    let took = began.get().map_or(Duration::ZERO, |t| t.elapsed());
    println!(
        "stopped after {} calls ({} ms after the signal)",
        hasher.served(),
        took.as_millis()
    );
    Ok(())
}
