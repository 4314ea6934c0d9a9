//! `zerorx serve`: the `Bench` service on every worker until SIGINT/SIGTERM, then a
//! graceful drain.

use super::{register, BenchState};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use zerorx::signal::SignalKind;
use zerorx::Runtime;
use zerorx_thrift::server::{ProtocolChoice, Server, TransportChoice};

/// `zerorx serve` usage.
pub const USAGE: &str = "\
usage: zerorx serve (--port P [--host H] | --unix PATH | both)
                    [--protocol binary|compact|auto]
                    [--transport framed|unframed|auto] [--threads N] [--grace-ms MS]
                    [--pool-kib K] [--chunk-kib K] [--receive-mode MODE]
                    [--dump-file PATH]

Serves the Bench service (bench.thrift) with Apache Thrift's binary or compact
protocol, framed or unframed (auto: told from each connection's first bytes), on
N workers (default: one per CPU), over TCP (--port), a Unix domain socket at PATH
(--unix), or both. Prints `listening on ADDR` once ready (the TCP address first,
then `unix:PATH`). SIGINT or SIGTERM drains: new requests are refused, calls in
flight finish (up to --grace-ms, default 5000), then the server's counters (summed
over TCP and Unix) are printed to stderr.

--unix PATH fails if PATH exists: a socket file left by a server that did not stop
cleanly is named as stale and never removed for you (remove it first). The socket
file is removed when the server stops.

Each worker receives into a pool of --pool-kib (default 8192) in buffers of
--chunk-kib (default 512). A request arrives as views of those buffers and is only
copied when it straddles two of them, so buffers several times the typical request
size keep large requests zero-copy (64 KiB requests: 64 KiB buffers copied every
one of them, 512 KiB buffers about one in eight). An echoed payload is sent from the
receive buffer, so the pool must also hold every connection's request in flight:
64 connections x 64 KiB is 4 MiB, and a 4 MiB pool ran dry (ENOBUFS, re-armed
receives, copies) about once per two requests.

--receive-mode is auto (default: zero-copy where `zerorx doctor` found a queue that
can take it, else copy), copy, device-less:N (N device-less ZCRX instances, Linux
7.1+), or zero-copy:IF:Q[,Q...] (queues Q of interface IF). The mode that runs is
printed with its reason on stderr at start, and the bytes each receive path took
with the counters at the end.

SIGUSR2 prints a state dump (every worker's ring, ops in flight with their age,
fd, socket addresses and waiting task, tasks, timers, receive pools) to stderr, or
appends it to --dump-file.
";

/// Default receive buffer of `zerorx serve`: eight 64 KiB requests fit in one, so
/// about one in eight straddles two buffers and is assembled by copy.
pub const DEFAULT_CHUNK: u32 = 512 * 1024;
/// Default receive pool per worker of `zerorx serve`: twice what 64 connections with
/// a 64 KiB request each hold while their replies (sent from the receive buffers)
/// are in flight. Measured at 64 x 64 KiB echo: no `ENOBUFS` (0.4 per request with
/// 4 MiB) and ~7 % less server CPU per request; the same at 64 B.
pub const DEFAULT_POOL: usize = 8 << 20;

// The sizing rule above, checked when the defaults change.
const _: () =
    assert!(DEFAULT_POOL >= 2 * 64 * 64 * 1024 && DEFAULT_POOL / DEFAULT_CHUNK as usize >= 16);

/// Parsed `zerorx serve` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeArgs {
    /// Listen address.
    pub host: IpAddr,
    /// Listen port (0: any free one, printed); `None`: no TCP listener (`--unix`
    /// only).
    pub port: Option<u16>,
    /// A Unix domain socket path to serve on, beside or instead of TCP.
    pub unix: Option<PathBuf>,
    /// Accepted protocols.
    pub protocol: ProtocolChoice,
    /// Accepted transports.
    pub transport: TransportChoice,
    /// Workers (`None`: one per CPU).
    pub threads: Option<usize>,
    /// Drain time on shutdown.
    pub grace: Duration,
    /// Receive pool bytes per worker.
    pub pool_bytes: usize,
    /// Receive buffer size.
    pub chunk_bytes: u32,
    /// How received bytes reach the server.
    pub receive_mode: zerorx::ReceiveMode,
    /// Where `SIGUSR2` state dumps go (`None`: stderr).
    pub dump_file: Option<std::path::PathBuf>,
}

/// Parses the options after `serve`. `Ok(None)` for `--help`.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<ServeArgs>, String> {
    let mut out = ServeArgs {
        host: IpAddr::from([0, 0, 0, 0]),
        port: None,
        unix: None,
        protocol: ProtocolChoice::Auto,
        transport: TransportChoice::Auto,
        threads: None,
        grace: Duration::from_secs(5),
        pool_bytes: DEFAULT_POOL,
        chunk_bytes: DEFAULT_CHUNK,
        receive_mode: zerorx::ReceiveMode::Auto,
        dump_file: None,
    };
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |what: &str| format!("{flag}: {what}, got {value:?}");
        match flag.as_str() {
            "--port" => {
                out.port = Some(
                    value
                        .parse::<u16>()
                        .map_err(|_| bad("expected a port number"))?,
                )
            }
            "--unix" => {
                if value.is_empty() {
                    return Err(bad("expected a socket path"));
                }
                out.unix = Some(value.into());
            }
            "--host" => out.host = value.parse().map_err(|_| bad("expected an IP address"))?,
            "--protocol" => {
                out.protocol = match value.as_str() {
                    "binary" => ProtocolChoice::Binary,
                    "compact" => ProtocolChoice::Compact,
                    "auto" => ProtocolChoice::Auto,
                    _ => return Err(bad("expected binary, compact or auto")),
                }
            }
            "--transport" => {
                out.transport = match value.as_str() {
                    "framed" => TransportChoice::Framed,
                    "unframed" => TransportChoice::Unframed,
                    "auto" => TransportChoice::Auto,
                    _ => return Err(bad("expected framed, unframed or auto")),
                }
            }
            "--threads" => {
                let n: usize = value.parse().map_err(|_| bad("expected a number"))?;
                if n == 0 {
                    return Err(bad("expected at least 1"));
                }
                out.threads = Some(n);
            }
            "--grace-ms" => {
                out.grace =
                    Duration::from_millis(value.parse().map_err(|_| bad("expected milliseconds"))?)
            }
            "--pool-kib" | "--chunk-kib" => {
                let kib: u32 = value
                    .parse()
                    .ok()
                    .filter(|k| (1..=1 << 20).contains(k))
                    .ok_or_else(|| bad("expected KiB from 1 to 1048576"))?;
                if flag == "--pool-kib" {
                    out.pool_bytes = kib as usize * 1024;
                } else {
                    out.chunk_bytes = kib * 1024;
                }
            }
            "--receive-mode" => out.receive_mode = value.parse()?,
            "--dump-file" => out.dump_file = Some(value.into()),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if out.port.is_none() && out.unix.is_none() {
        return Err("--port is required (0 picks a free port), or --unix PATH".into());
    }
    if out.pool_bytes < out.chunk_bytes as usize {
        return Err(format!(
            "--pool-kib ({}) must hold at least one --chunk-kib ({})",
            out.pool_bytes / 1024,
            out.chunk_bytes / 1024
        ));
    }
    Ok(Some(out))
}

/// Runs `zerorx serve` until a termination signal; prints the address when ready and
/// the counters at the end.
pub fn run(args: &ServeArgs) -> io::Result<()> {
    run_with(args, || {})
}

/// [`run`], calling `on_worker0` on worker 0 once the servers listen (a benchmark
/// spawns its own tasks there).
pub fn run_with(args: &ServeArgs, on_worker0: impl FnOnce()) -> io::Result<()> {
    let dump_signal = zerorx::runtime::DumpSignal::block()?;
    let mut builder = Runtime::builder();
    if let Some(n) = args.threads {
        builder.threads(n);
    }
    builder
        .pool_size(args.pool_bytes)
        .chunk_size(args.chunk_bytes)
        .receive_mode(args.receive_mode.clone());
    let rt = builder.build()?;
    eprintln!("zerorx serve: receive mode {}", rt.handle().receive_mode());
    // One state for both servers: `fired` counts oneway calls over either.
    let state = Arc::new(BenchState::default());
    let builder = || {
        register(Server::builder(), state.clone())
            .protocol(args.protocol)
            .transport(args.transport)
    };
    // A zerorx-thrift server listens on one endpoint, so TCP and Unix are two servers
    // on one runtime, with one state and one drain. The Unix one starts first: a stale
    // socket file fails the command before anything listens.
    let unix = match &args.unix {
        Some(path) => Some((builder().unix(path).start(rt.handle())?, path)),
        None => None,
    };
    let tcp = match args.port {
        Some(port) => Some(
            builder()
                .addr(SocketAddr::new(args.host, port))
                .start(rt.handle())?,
        ),
        None => None,
    };
    dump_signal.start(rt.handle().clone(), args.dump_file.clone())?;
    // Listening before the address is printed: a supervisor may signal at once.
    let stop = crate::signals::listen(&[SignalKind::interrupt(), SignalKind::terminate()])?;
    if let Some(server) = &tcp {
        println!("listening on {}", server.local_addr());
    }
    if let Some((_, path)) = &unix {
        println!("listening on unix:{}", path.display());
    }
    let servers: Vec<Server> = tcp.into_iter().chain(unix.map(|(s, _)| s)).collect();
    let shutdowns: Vec<_> = servers.iter().map(Server::shutdown_handle).collect();
    let stats: Vec<_> = servers.iter().map(Server::stats_handle).collect();
    let grace = args.grace;
    let res = rt.block_on(async move {
        on_worker0();
        crate::signals::on_first(stop, move |kind| {
            eprintln!("zerorx serve: signal {}, draining", kind.as_raw());
            for s in &shutdowns {
                s.shutdown(grace);
            }
        });
        let mut res = Ok(());
        for server in servers {
            let stopped = server.stopped().await;
            res = res.and(stopped);
        }
        res
    });
    let mut totals: Vec<(&str, u64)> = Vec::new();
    for s in &stats {
        for (i, (name, value)) in s.snapshot().fields().into_iter().enumerate() {
            match totals.get_mut(i) {
                Some((_, total)) => *total += value,
                None => totals.push((name, value)),
            }
        }
    }
    for (name, value) in totals {
        eprintln!("{name:>22} {value}");
    }
    // The receive side's counters: how often the pool ran dry or receives re-armed,
    // and the bytes each receive path took.
    let handle = rt.handle();
    let (copy, zc, instances) = (
        handle.pool_stats(),
        handle.zc_pool_stats(),
        handle.zc_instances(),
    );
    for (i, m) in handle.metrics().iter().enumerate() {
        eprintln!(
            "worker {i}: cqes {} enter_calls {} recv_enobufs {} rearms {:?}",
            m.cqes, m.enter_calls, m.recv_enobufs, m.rearms
        );
        let copied = copy[i].map_or(0, |p| p.bytes);
        // An importer reports its owner's pool: count each instance once, at its owner.
        match (zc[i], instances[i].as_ref().map(|z| z.imported)) {
            (Some(z), Some(false)) => eprintln!(
                "worker {i}: received {copied} B through the copy pool, {} B through its \
                 zero-copy instance ({} B placed without a copy, {} B copied by the kernel)",
                z.bytes, z.zero_copy_bytes, z.copied_bytes
            ),
            _ => eprintln!("worker {i}: received {copied} B through the copy pool"),
        }
    }
    res?;
    rt.shutdown(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<ServeArgs>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_every_option() {
        let a = parse(&[
            "--port",
            "9090",
            "--host",
            "127.0.0.1",
            "--protocol",
            "compact",
            "--transport",
            "unframed",
            "--threads",
            "3",
            "--grace-ms",
            "250",
            "--pool-kib",
            "8192",
            "--chunk-kib",
            "512",
            "--receive-mode",
            "device-less:2",
            "--dump-file",
            "/tmp/zerorx-dump.txt",
        ])
        .expect("valid")
        .expect("not help");
        assert_eq!((a.port, a.unix), (Some(9090), None));
        assert_eq!(a.host, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(a.protocol, ProtocolChoice::Compact);
        assert_eq!(a.transport, TransportChoice::Unframed);
        assert_eq!(a.threads, Some(3));
        assert_eq!(a.grace, Duration::from_millis(250));
        assert_eq!((a.pool_bytes, a.chunk_bytes), (8 << 20, 512 << 10));
        assert_eq!(
            a.receive_mode,
            zerorx::ReceiveMode::DeviceLess { instances: 2 }
        );
        assert_eq!(
            a.dump_file.as_deref(),
            Some(std::path::Path::new("/tmp/zerorx-dump.txt"))
        );
        let d = parse(&["--port", "0"]).expect("valid").expect("not help");
        assert_eq!(
            (d.protocol, d.transport, d.threads),
            (ProtocolChoice::Auto, TransportChoice::Auto, None)
        );
        assert_eq!((d.pool_bytes, d.chunk_bytes), (DEFAULT_POOL, DEFAULT_CHUNK));
        assert_eq!(parse(&["--help"]), Ok(None));
        let u = parse(&["--unix", "/run/bench.sock"])
            .expect("valid")
            .expect("not help");
        assert_eq!(
            (u.port, u.unix.as_deref()),
            (None, Some(std::path::Path::new("/run/bench.sock")))
        );
        let both = parse(&["--unix", "/run/b.sock", "--port", "0"])
            .expect("valid")
            .expect("not help");
        assert_eq!((both.port, both.unix.is_some()), (Some(0), true));
    }

    #[test]
    fn rejects_bad_options_with_a_reason() {
        for (args, needle) in [
            (
                &[][..],
                "--port is required (0 picks a free port), or --unix PATH",
            ),
            (&["--unix", ""][..], "expected a socket path"),
            (&["--port"][..], "needs a value"),
            (&["--port", "70000"][..], "port number"),
            (
                &["--port", "1", "--protocol", "json"][..],
                "binary, compact or auto",
            ),
            (&["--port", "1", "--threads", "0"][..], "at least 1"),
            (&["--port", "1", "--bogus", "x"][..], "unknown option"),
            (
                &["--port", "1", "--receive-mode", "fast"][..],
                "receive mode \"fast\": unknown mode",
            ),
            (&["--port", "1", "--chunk-kib", "0"][..], "KiB from 1"),
            (&["--port", "1", "--pool-kib", "lots"][..], "KiB from 1"),
            (
                &["--port", "1", "--pool-kib", "64", "--chunk-kib", "256"][..],
                "at least one",
            ),
        ] {
            let err = parse(args).expect_err("invalid");
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
}
