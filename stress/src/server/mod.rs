//! The harness's server (`zerorx-stress serve`) on every worker of a zerorx runtime:
//! either its own frames ([`crate::wire`]: echo and sink, counting every way a
//! connection can go wrong) or the Thrift `Bench` service of `zerorx_thrift`. The harness starts it as a child
//! process (so its memory is measured apart and a crash cannot take the harness down)
//! and talks to it over stdin/stdout: it prints one `listening` line, then answers
//! each `stats` line with one JSON snapshot and each `dump` line with the runtime's
//! state dump, and exits when stdin closes. `SIGUSR2` prints a dump on stderr.

mod conn;
pub mod stats;

use serde::{Deserialize, Serialize};
use stats::{Counters, ModeInfo, RpcCounters, RpcFigures, ServerSnapshot, WorkerFigures};
use std::io::{self, BufRead, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use zerorx::net::TcpListener;
use zerorx::{Handle, Runtime};
use zerorx_cli::bench::{self, BenchState};
use zerorx_thrift::Server as RpcServer;

/// What the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// The harness's own frames ([`crate::wire`]): echo, sink.
    Frames,
    /// Apache Thrift: the `Bench` service of `bench.thrift` from `zerorx_thrift` (what
    /// `zerorx serve` runs).
    Rpc,
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// What it speaks.
    pub service: Service,
    /// Address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Worker threads.
    pub threads: usize,
    /// Largest request payload accepted.
    pub max_frame: u32,
    /// Close connections idle this long.
    pub idle: Option<Duration>,
    /// Thrift: close connections whose send makes no progress this long.
    pub write_timeout: Option<Duration>,
    /// Receive pool: buffer count and size (`None`: the runtime's default).
    pub pool: Option<(u16, u32)>,
    /// How received bytes reach the server.
    pub receive_mode: zerorx::ReceiveMode,
    /// Take commands on stdin and answer on stdout (for the harness).
    pub control: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

/// The first line the server prints on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listening {
    /// The bound address.
    pub addr: SocketAddr,
    /// The server's process id.
    pub pid: u32,
    /// Worker threads.
    pub threads: usize,
    /// How it receives, and why.
    pub receive_mode: ModeInfo,
}

/// A line on the control channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ControlLine {
    /// The server is ready.
    Listening(Listening),
    /// The answer to a `stats` command (boxed: it is by far the largest line).
    Stats(Box<ServerSnapshot>),
    /// The answer to a `dump` command.
    Dump(zerorx::runtime::RuntimeDump),
}

/// Runs the server until stdin closes (with `control`), the duration passes, SIGTERM
/// or SIGINT arrives (a clean stop, as when stdin closes), or the process is killed.
pub fn serve(cfg: &ServeConfig) -> io::Result<()> {
    let threads = cfg.threads.max(1);
    // Before the runtime's threads start, so they inherit the blocked signal.
    let dump_signal = zerorx::runtime::DumpSignal::block()?;
    let mut b = Runtime::builder();
    b.threads(threads)
        .shutdown_timeout(Duration::from_secs(5))
        .receive_mode(cfg.receive_mode.clone());
    if let Some((buffers, size)) = cfg.pool {
        b.copy_pool(Some(zcrx::CopyPoolConfig {
            buffers,
            buffer_size: size,
            ..zcrx::CopyPoolConfig::default()
        }));
    }
    let rt = b.build()?;
    dump_signal.start(rt.handle().clone(), None)?;
    match cfg.service {
        Service::Frames => serve_frames(&rt, cfg)?,
        Service::Rpc => serve_rpc(&rt, cfg)?,
    }
    rt.shutdown(Duration::from_secs(5))
}

/// Makes a snapshot of the server's figures, from the control thread.
type Snapshotter = Box<dyn Fn() -> ServerSnapshot + Send>;

fn serve_frames(rt: &Runtime, cfg: &ServeConfig) -> io::Result<()> {
    let handle = rt.handle().clone();
    let threads = handle.threads();
    let counters: Arc<Vec<Counters>> =
        Arc::new((0..threads).map(|_| Counters::default()).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mode = receive_mode(&handle);
    let started = Instant::now();
    rt.block_on(async {
        let addr = start_listeners(&handle, cfg, &counters).await?;
        let (h, c, m) = (handle.clone(), counters.clone(), mode.clone());
        let snap: Snapshotter = Box::new(move || snapshot(&h, &c, &m, None));
        stop_on_signals(&stop)?;
        announce(cfg, addr, &handle, &mode, &stop, snap)?;
        wait_for_stop(cfg, &stop, started).await;
        Ok::<(), io::Error>(())
    })
}

fn serve_rpc(rt: &Runtime, cfg: &ServeConfig) -> io::Result<()> {
    let handle = rt.handle().clone();
    let threads = handle.threads();
    let state = Arc::new(BenchState::default());
    let mut builder = bench::register(RpcServer::builder(), state.clone())
        .addr(cfg.listen)
        .max_frame(cfg.max_frame as usize);
    if cfg.idle.is_some() {
        builder = builder.idle_timeout(cfg.idle);
    }
    if cfg.write_timeout.is_some() {
        builder = builder.write_timeout(cfg.write_timeout);
    }
    let server = builder.start(&handle)?;
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let mode = receive_mode(&handle);
    let started = Instant::now();
    let counters: Arc<Vec<Counters>> =
        Arc::new((0..threads).map(|_| Counters::default()).collect());
    let (h, m, stats) = (handle.clone(), mode.clone(), server.stats_handle());
    let max_in_flight = server.config().max_in_flight;
    let snap: Snapshotter = Box::new(move || {
        let metrics = h.metrics();
        // `TcpListener::accept` closes and skips connections reset in the accept
        // queue; the runtime counts them (the Thrift server never sees them).
        let accept_reset = metrics.iter().map(|m| m.accept_reset).sum();
        let rpc = RpcFigures {
            counters: RpcCounters::new(&stats.snapshot(), accept_reset),
            fired: state.fired(),
            max_in_flight,
        };
        snapshot(&h, &counters, &m, Some(rpc))
    });
    // The listeners' tasks live on worker 0, whose loop the block_on below runs.
    rt.block_on(async { stop_on_signals(&stop) })?;
    announce(cfg, addr, &handle, &mode, &stop, snap)?;
    let shutdown = server.shutdown_handle();
    rt.block_on(async {
        wait_for_stop(cfg, &stop, started).await;
        shutdown.shutdown(Duration::from_secs(2));
        server.stopped().await
    })
}

/// Prints the `listening` line and starts the control thread (or says where it
/// listens, standalone).
fn announce(
    cfg: &ServeConfig,
    addr: SocketAddr,
    handle: &Handle,
    mode: &ModeInfo,
    stop: &Arc<AtomicBool>,
    snap: Snapshotter,
) -> io::Result<()> {
    let threads = handle.threads();
    let line = ControlLine::Listening(Listening {
        addr,
        pid: std::process::id(),
        threads,
        receive_mode: mode.clone(),
    });
    print_line(&line)?;
    if cfg.control {
        let stop = stop.clone();
        let handle = handle.clone();
        std::thread::Builder::new()
            .name("control".into())
            .spawn(move || control(&*snap, &handle, &stop))?;
    } else {
        let what = match cfg.service {
            Service::Frames => "harness frames",
            Service::Rpc => "Thrift (bench.thrift)",
        };
        eprintln!(
            "zerorx-stress server: {what} on {addr} with {threads} workers ({} receive: {})",
            mode.mode, mode.reason
        );
    }
    Ok(())
}

/// Listens for SIGTERM and SIGINT (before the server says it is up, so none is lost):
/// the first one stops the server as closing stdin does.
fn stop_on_signals(stop: &Arc<AtomicBool>) -> io::Result<()> {
    let kinds = [
        zerorx::signal::SignalKind::terminate(),
        zerorx::signal::SignalKind::interrupt(),
    ];
    let signals = zerorx_cli::signals::listen(&kinds)?;
    let stop = stop.clone();
    zerorx_cli::signals::on_first(signals, move |_| stop.store(true, Ordering::SeqCst));
    Ok(())
}

async fn wait_for_stop(cfg: &ServeConfig, stop: &AtomicBool, started: Instant) {
    while !stop.load(Ordering::SeqCst) && cfg.duration.is_none_or(|d| started.elapsed() < d) {
        zerorx::sleep(Duration::from_millis(50)).await;
    }
}

/// Binds the port on every worker (`SO_REUSEPORT`) and starts their accept loops.
async fn start_listeners(
    handle: &Handle,
    cfg: &ServeConfig,
    counters: &Arc<Vec<Counters>>,
) -> io::Result<SocketAddr> {
    let first = TcpListener::bind(cfg.listen)?;
    let addr = first.local_addr()?;
    let (tx, rx) = mpsc::channel::<Result<(), String>>();
    for w in 1..handle.threads() {
        let (tx, counters, cfg) = (tx.clone(), counters.clone(), cfg.clone());
        handle.spawn_on_with(w, move || async move {
            match TcpListener::bind(addr) {
                Ok(l) => {
                    let _ = tx.send(Ok(()));
                    accept_loop(l, counters, w, cfg).await;
                }
                Err(e) => {
                    let _ = tx.send(Err(format!("worker {w} cannot bind {addr}: {e}")));
                }
            }
        });
    }
    drop(tx);
    zerorx::spawn(accept_loop(first, counters.clone(), 0, cfg.clone()));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ready = 1;
    while ready < handle.threads() {
        match rx.try_recv() {
            Ok(Ok(())) => ready += 1,
            Ok(Err(e)) => return Err(io::Error::other(e)),
            Err(mpsc::TryRecvError::Disconnected) => {
                return Err(io::Error::other("a worker stopped before binding"))
            }
            Err(mpsc::TryRecvError::Empty) if Instant::now() > deadline => {
                return Err(io::Error::other("workers did not bind within 10 s"))
            }
            Err(mpsc::TryRecvError::Empty) => zerorx::sleep(Duration::from_millis(1)).await,
        }
    }
    Ok(addr)
}

async fn accept_loop(l: TcpListener, counters: Arc<Vec<Counters>>, w: usize, cfg: ServeConfig) {
    loop {
        match l.accept().await {
            Ok((stream, _)) => {
                let counters = counters.clone();
                let (max, idle) = (cfg.max_frame, cfg.idle);
                zerorx::spawn(async move { conn::serve(stream, &counters[w], max, idle).await });
            }
            // ECONNABORTED from the kernel, or ENOTCONN from `accept` reading the peer
            // address of a connection that was reset while queued.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ECONNABORTED | libc::ENOTCONN)) => {
                counters[w]
                    .aborted_before_accept
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err(_) => {
                counters[w]
                    .accept_errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Out of fds or similar: give closing connections a moment.
                zerorx::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Answers `stats` and `dump` lines until stdin closes or says `quit`.
fn control(snap: &dyn Fn() -> ServerSnapshot, handle: &Handle, stop: &AtomicBool) {
    let stdin = io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "stats" if print_line(&ControlLine::Stats(Box::new(snap()))).is_err() => break,
            "dump" if print_line(&ControlLine::Dump(handle.dump())).is_err() => break,
            "quit" => break,
            _ => {}
        }
    }
    stop.store(true, Ordering::SeqCst);
}

fn print_line(line: &ControlLine) -> io::Result<()> {
    let json = serde_json::to_string(line).map_err(io::Error::other)?;
    let mut out = io::stdout().lock();
    writeln!(out, "{json}")?;
    out.flush()
}

/// The server's figures now.
pub fn snapshot(
    handle: &Handle,
    counters: &[Counters],
    mode: &ModeInfo,
    rpc: Option<RpcFigures>,
) -> ServerSnapshot {
    let metrics = handle.metrics();
    let pools = handle.pool_stats();
    let zc_pools = handle.zc_pool_stats();
    let zc_instances = handle.zc_instances();
    ServerSnapshot {
        pid: std::process::id(),
        receive_mode: mode.clone(),
        rpc,
        workers: counters
            .iter()
            .enumerate()
            .map(|(i, c)| WorkerFigures {
                worker: i,
                counters: {
                    // `TcpListener::accept` closes and skips connections reset in the
                    // accept queue; the runtime counts them.
                    let mut s = c.snapshot();
                    s.aborted_before_accept += metrics.get(i).map_or(0, |m| m.accept_reset);
                    s
                },
                runtime: metrics.get(i).copied().map(Into::into).unwrap_or_default(),
                pool: pools.get(i).copied().flatten().map(Into::into),
                zc_pool: match zc_instances.get(i) {
                    Some(Some(z)) if !z.imported => zc_pools[i].map(Into::into),
                    _ => None,
                },
            })
            .collect(),
    }
}

/// How this server's runtime receives, and why (resolved by the runtime against the
/// kernel probe).
pub fn receive_mode(handle: &Handle) -> ModeInfo {
    let r = handle.receive_mode();
    ModeInfo {
        mode: r.mode.to_string(),
        reason: r.reason.clone(),
        tuning: handle.tuning().iter().map(ToString::to_string).collect(),
    }
}
