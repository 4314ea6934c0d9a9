//! `cargo bench -p zerorx-bench --bench rpc -- [--smoke | --quick] [options]`: the
//! zerorx RPC server against a tokio server doing the same work, the `thrift` crate's
//! threaded server, Apache Thrift C++ `TNonblockingServer` and volo-thrift, all serving
//! bench.thrift over framed binary Thrift, under the same client load, rounds
//! interleaved; prints req/s, latency percentiles and zerorx's ratios against each
//! peer with the goals. `--help` lists the options.

mod rpc_peers;

use load::{Check, Load};
use report::Cell;
use rpc_peers::{load, report, servers, tnonblocking, volo};
use servers::{Kind, Server, Setup};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use zerorx_bench::count;
use zerorx_cli::bench::AddArgs;
use zerorx_thrift::{encode_message, DecodeLimits, MessageReader, MessageType, Protocol, Returns};

const USAGE: &str = "\
usage: cargo bench -p zerorx-bench --bench rpc -- [options]

  --smoke             short run with small loads; every reply is checked byte for byte
                      and every server must answer `add`; exits 1 on any failure
  --quick             3 rounds of 2 s
  --rounds N          interleaved rounds (default 3)
  --secs S            measured seconds per cell (default 5)
  --warmup S          warm-up seconds per cell (default 1)
  --connections C     client connections (default 64)
  --depth D           calls in flight per connection for the 64 B workload (default 4;
                      the 64 KiB workload uses 1)
  --threads N         server event-loop threads (default 1; the thrift crate server
                      gets one worker per connection instead)
  --client-threads N  load generator threads (default 1)
  --servers LIST      comma-separated subset of zerorx,tokio,thrift-crate,tnonblocking,volo
                      (default all five), plus on request frame-echo (a reference
                      server doing no Thrift work: echoes each frame as its reply) and
                      zerorx-alt (see --alt-exe)
  --workloads LIST    comma-separated subset of 64B,64KiB (default both)
  --zerorx-args ARGS  extra `zerorx serve` options for the zerorx server, space-separated
                      (e.g. \"--chunk-kib 128 --pool-kib 2048\")
  --alt-exe PATH      the benchmark binary the zerorx-alt server comes from (another
                      build, e.g. the baseline of a change; default this one); name
                      zerorx-alt in --servers to measure it against zerorx in the same
                      rounds (its ratios print as a peer's)
  --alt-env 'VAR=VAL ...'  the ZERORX_* environment of the zerorx-alt server
  --json FILE         also write every cell, the ratios and the goals as JSON
  --profile           sample each server with perf during every measured window and
                      print where its CPU goes per request (see benches/src/profile.rs)
";

#[derive(Clone, Debug)]
struct Options {
    smoke: bool,
    rounds: usize,
    secs: f64,
    warmup: f64,
    connections: usize,
    depth: usize,
    threads: usize,
    client_threads: usize,
    servers: Vec<Kind>,
    /// Payload sizes to run (`echo-64B`, `echo-64KiB`).
    payloads: Vec<usize>,
    zerorx_args: Vec<String>,
    alt_exe: Option<PathBuf>,
    alt_env: Vec<(String, String)>,
    json: Option<String>,
    profile: bool,
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        smoke: false,
        rounds: 3,
        secs: 5.0,
        warmup: 1.0,
        connections: 64,
        depth: 4,
        threads: 1,
        client_threads: 1,
        servers: Kind::ALL.to_vec(),
        payloads: vec![64, 64 * 1024],
        zerorx_args: Vec::new(),
        alt_exe: None,
        alt_env: Vec::new(),
        json: None,
        profile: false,
    };
    let mut it = args.iter().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let num = |v: String| {
            v.parse::<f64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            // `cargo bench` passes `--bench` to every benchmark binary.
            "--bench" => {}
            "--smoke" => {
                o.smoke = true;
                o.rounds = 1;
                o.secs = 0.5;
                o.warmup = 0.2;
                o.connections = 4;
                o.depth = 2;
            }
            "--quick" => {
                o.secs = 2.0;
                o.warmup = 0.5;
            }
            "--rounds" => o.rounds = num(value()?)?.max(1.0) as usize,
            "--secs" => o.secs = num(value()?)?,
            "--warmup" => o.warmup = num(value()?)?,
            "--connections" => o.connections = num(value()?)?.max(1.0) as usize,
            "--depth" => o.depth = num(value()?)?.max(1.0) as usize,
            "--threads" => o.threads = num(value()?)?.max(1.0) as usize,
            "--client-threads" => o.client_threads = num(value()?)?.max(1.0) as usize,
            "--servers" => {
                o.servers = value()?
                    .split(',')
                    .map(|s| Kind::parse(s.trim()).ok_or_else(|| format!("unknown server {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--workloads" => {
                o.payloads = value()?
                    .split(',')
                    .map(|s| match s.trim() {
                        "64B" => Ok(64),
                        "64KiB" => Ok(64 * 1024),
                        other => Err(format!("unknown workload {other} (64B or 64KiB)")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--zerorx-args" => {
                o.zerorx_args = value()?.split_whitespace().map(str::to_owned).collect();
            }
            "--alt-exe" => {
                let p = PathBuf::from(value()?);
                if !p.is_file() {
                    return Err(format!("--alt-exe: {} is not a file", p.display()));
                }
                o.alt_exe = Some(p);
            }
            "--alt-env" => o.alt_env = zerorx_bench::parse_alt_env(&value()?)?,
            "--json" => o.json = Some(value()?),
            "--profile" => o.profile = true,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !(o.secs > 0.0 && o.warmup >= 0.0) {
        return Err("--secs must be positive and --warmup not negative".into());
    }
    if o.profile {
        zerorx_bench::profile::check_available()?;
    }
    Ok(Some(o))
}

struct Workload {
    name: String,
    payload: usize,
    depth: usize,
}

fn workloads(o: &Options) -> Vec<Workload> {
    o.payloads
        .iter()
        .map(|&payload| match payload {
            64 => Workload {
                name: "echo-64B".into(),
                payload,
                depth: o.depth,
            },
            _ => Workload {
                name: "echo-64KiB".into(),
                payload,
                depth: 1,
            },
        })
        .collect()
}

/// The servers `--count` counts unless `--servers` names others.
const COUNT_SERVERS: [Kind; 3] = [Kind::Zerorx, Kind::Tokio, Kind::Volo];

/// `--count`: the `echo` call with a `payload`-byte argument, counted per request for
/// each server.
fn count_rpc(c: &count::cli::Args, setup: &Setup, servers: &[Kind], payload: usize) -> i32 {
    let targets: Vec<count::Target<'_>> = servers
        .iter()
        .map(|&kind| count::Target {
            name: kind.name().to_owned(),
            launch: Box::new(move || {
                let port = zerorx_bench::free_port()?;
                Ok(count::Launch {
                    command: servers::command(kind, setup, port)?,
                    ready: count::Ready::Accepts(SocketAddr::from(([127, 0, 0, 1], port))),
                    stop: count::Stop::Sigterm,
                })
            }),
        })
        .collect();
    let (request, len) = load::echo_call(payload);
    let exchange = count::Exchange {
        request,
        reply: count::Reply::Framed { len },
        ahead: 1,
    };
    let name = if payload >= 1024 {
        format!("RPC-{}KiB", payload / 1024)
    } else {
        format!("RPC-{payload}B")
    };
    count::cli::main(c, &name, exchange, &targets, Kind::Tokio.name())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--serve") {
        std::process::exit(servers::serve_child(&args[1..]));
    }
    std::process::exit(run(&args));
}

fn run(args: &[String]) -> i32 {
    let mut args = args.to_vec();
    let count = match count::cli::take(&mut args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rpc bench: {e}");
            return 2;
        }
    };
    let mut o = match parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!(
                "{USAGE}\n--count (RPC 64 B, or --workloads 64B,64KiB; zerorx, tokio and volo unless --servers):\n{}",
                count::cli::USAGE
            );
            return 0;
        }
        Err(e) => {
            eprintln!("rpc bench: {e}\n\n{USAGE}");
            return 2;
        }
    };
    if count.is_some() && !args.iter().any(|a| a == "--servers") {
        o.servers = COUNT_SERVERS.to_vec();
    }
    if let Err(e) = zerorx_bench::procfs::raise_fd_limit() {
        eprintln!("rpc bench: could not raise the fd limit: {e}");
    }
    let mut unavailable: Vec<(Kind, String)> = Vec::new();
    let cpp = if o.servers.contains(&Kind::TNonblocking) {
        println!("building the Apache Thrift C++ TNonblockingServer peer (cached in target/rpc-peers)...");
        match tnonblocking::build(zerorx_cli::bench::IDL) {
            Ok(bin) => Some(bin),
            Err(e) => {
                unavailable.push((Kind::TNonblocking, e));
                None
            }
        }
    } else {
        None
    };
    let volo = if o.servers.contains(&Kind::Volo) {
        println!("building the volo-thrift peer (cached in target/rpc-peers; the first build takes minutes)...");
        match volo::build(zerorx_cli::bench::IDL) {
            Ok(bin) => Some(bin),
            Err(e) => {
                unavailable.push((Kind::Volo, e));
                None
            }
        }
    } else {
        None
    };
    for (kind, why) in &unavailable {
        println!("PEER UNAVAILABLE: {}: {why}", kind.name());
    }
    let servers: Vec<Kind> = o
        .servers
        .iter()
        .copied()
        .filter(|k| !unavailable.iter().any(|(u, _)| u == k))
        .collect();
    let setup = Setup {
        threads: o.threads,
        thrift_workers: o.connections,
        cpp,
        volo,
        log_dir: tnonblocking::work_dir().join("logs"),
        zerorx_args: o.zerorx_args.clone(),
        alt_exe: o.alt_exe.clone(),
        alt_env: o.alt_env.clone(),
    };
    if let Some(c) = count {
        let payloads = if args.iter().any(|a| a == "--workloads") {
            o.payloads.clone()
        } else {
            vec![64]
        };
        return payloads
            .iter()
            .map(|&p| count_rpc(&c, &setup, &servers, p))
            .max()
            .unwrap_or(0);
    }
    let wls = workloads(&o);
    println!(
        "rpc bench: {} round(s) x {} workload(s) x {} server(s), {}s warm-up + {}s measured per cell; \
         {} connections, {} client thread(s), server threads {} (thrift crate: {} workers); \
         load average {:.2}",
        o.rounds,
        wls.len(),
        servers.len(),
        o.warmup,
        o.secs,
        o.connections,
        o.client_threads,
        o.threads,
        o.connections,
        zerorx_bench::procfs::load_average().unwrap_or(f64::NAN)
    );

    // (server, what failed)
    let mut failures: Vec<(&'static str, String)> = unavailable
        .iter()
        .map(|(k, why)| (k.name(), format!("unavailable: {why}")))
        .collect();
    if o.smoke {
        // frame-echo answers `echo` only; its echo replies are checked byte for byte
        // in the smoke cells like everyone's.
        for &kind in servers.iter().filter(|k| **k != Kind::FrameEcho) {
            if let Err(e) = smoke_calls(kind, &setup) {
                failures.push((kind.name(), e));
            }
        }
    }

    let mut cells = Vec::new();
    for round in 0..o.rounds {
        for w in &wls {
            // A different server goes first each round, so none always runs on the
            // machine the previous one left.
            for i in 0..servers.len() {
                let kind = servers[(i + round) % servers.len()];
                let cell = measure(&o, &setup, kind, w, round);
                match &cell.error {
                    Some(e) => {
                        println!("  round {round} {:<11} {:<13} FAILED: {e}", w.name, kind.name());
                        failures.push((kind.name(), format!("{}: {e}", w.name)));
                    }
                    None => println!(
                        "  round {round} {:<11} {:<13} {:>10.0} req/s  p99 {:>8.0}µs  server CPU {:>4.0}%  client CPU {:>4.0}%",
                        w.name,
                        kind.name(),
                        cell.req_per_s,
                        cell.p99_us,
                        cell.server_cpu_pct,
                        cell.client_cpu_pct
                    ),
                }
                cells.push(cell);
            }
        }
    }

    let names: Vec<String> = wls.iter().map(|w| w.name.clone()).collect();
    let server_names: Vec<&'static str> = servers.iter().map(|k| k.name()).collect();
    print!("{}", report::tables(&cells, &names, &server_names));
    if o.profile {
        print!("{}", report::attribution(&cells, &names, &server_names));
    }
    let peers: Vec<&'static str> = o
        .servers
        .iter()
        .filter(|k| **k != Kind::Zerorx)
        .map(|k| k.name())
        .collect();
    let ratios = report::ratios(&cells, &names, &peers);
    let (text, summary) = if o.servers.contains(&Kind::Zerorx) {
        report::goals(&ratios, o.connections)
    } else {
        (String::new(), serde_json::Value::Null)
    };
    print!("{text}");
    for (kind, why) in &unavailable {
        println!("  [    n/a] {} was unavailable: {why}", kind.name());
    }
    if cells
        .iter()
        .any(|c| c.error.is_none() && c.client_cpu_pct > 90.0)
    {
        println!(
            "\nnote: the load generator used over 90% of its thread(s) in some cells; \
             add --client-threads to make sure it is not what limits the faster servers"
        );
    }
    println!(
        "\nmachine: {} CPUs, load average now {:.2}; numbers from a shared VM are noisy: compare ratios, not absolutes",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        zerorx_bench::procfs::load_average().unwrap_or(f64::NAN)
    );

    if let Some(path) = &o.json {
        let doc = serde_json::json!({
            "unix_time": SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            "options": {
                "rounds": o.rounds, "secs": o.secs, "warmup": o.warmup,
                "connections": o.connections, "depth_64B": o.depth, "threads": o.threads,
                "client_threads": o.client_threads,
            },
            "unavailable": unavailable.iter().map(|(k, why)| serde_json::json!({"server": k.name(), "why": why})).collect::<Vec<_>>(),
            "cells": cells.iter().map(Cell::to_json).collect::<Vec<_>>(),
            "summary": summary,
        });
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("rpc bench: cannot write {path}: {e}");
            return 1;
        }
        println!("wrote {path}");
    }

    if o.smoke {
        let failed = o
            .servers
            .iter()
            .filter(|k| failures.iter().any(|(s, _)| *s == k.name()))
            .count();
        for (server, what) in &failures {
            println!("  FAILED {server}: {what}");
        }
        println!(
            "\nrpc smoke: {} passed, {failed} failed",
            o.servers.len() - failed
        );
        return i32::from(failed > 0);
    }
    0
}

/// Runs one cell: a fresh server, the workload's load, the server's CPU over the
/// measured window.
fn measure(o: &Options, setup: &Setup, kind: Kind, w: &Workload, round: usize) -> Cell {
    let mut cell = Cell {
        round,
        workload: w.name.clone(),
        server: kind.name(),
        server_threads: if kind == Kind::ThriftCrate {
            setup.thrift_workers
        } else {
            setup.threads
        },
        req_per_s: 0.0,
        server_cpu_pct: 0.0,
        client_cpu_pct: 0.0,
        p50_us: 0.0,
        p99_us: 0.0,
        p999_us: 0.0,
        error: None,
        profile: None,
    };
    if let Err(e) = measure_into(o, setup, kind, w, &mut cell) {
        cell.error = Some(e);
    }
    cell
}

fn measure_into(
    o: &Options,
    setup: &Setup,
    kind: Kind,
    w: &Workload,
    cell: &mut Cell,
) -> Result<(), String> {
    let mut server = Server::start(kind, setup)?;
    let load = Load {
        connections: o.connections,
        depth: w.depth,
        payload: w.payload,
        threads: o.client_threads,
    };
    let check = if o.smoke { Check::Full } else { Check::Header };
    let start = Instant::now();
    let warm_end = start + Duration::from_secs_f64(o.warmup);
    let end = warm_end + Duration::from_secs_f64(o.secs);
    let mut running = load::start(server.addr(), load, check, warm_end, end);
    std::thread::sleep(warm_end.saturating_duration_since(Instant::now()));
    let cpu0 = server.cpu_secs()?;
    let t0 = Instant::now();
    let recording = if o.profile {
        let secs = end.saturating_duration_since(t0).as_secs_f64();
        let dir = tnonblocking::work_dir().join("profiles");
        let name = format!("{}-{}-{}", kind.name(), w.name, cell.round);
        Some(
            zerorx_bench::profile::Recording::start(server.pid(), secs, &dir, &name)
                .map_err(|e| format!("perf record: {e}"))?,
        )
    } else {
        None
    };
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let cpu1 = server.cpu_secs()?;
    if let Some(r) = recording {
        cell.profile = Some(r.finish().map_err(|e| format!("profile: {e}"))?);
    }
    let window = t0.elapsed().as_secs_f64();
    let alive = server.check_alive();
    let outcome = match running.finish(end + load::GRACE) {
        Some(out) => out,
        None => {
            // Stopping the server ends the connections that still wait on it.
            server.stop();
            let out = running.finish(Instant::now() + load::GRACE);
            return Err(match out {
                Some(out) => format!(
                    "calls still unanswered {:?} after the end ({} errors: {:?})",
                    load::GRACE,
                    out.errors.len(),
                    out.errors.first()
                ),
                None => "the load generator did not stop".into(),
            });
        }
    };
    alive?;
    server.stop();
    if let Some(e) = outcome.errors.first() {
        return Err(format!(
            "{} connection error(s), first: {e}",
            outcome.errors.len()
        ));
    }
    if outcome.replies == 0 {
        return Err("no replies in the measured window".into());
    }
    let total = (end - start).as_secs_f64();
    cell.req_per_s = outcome.replies as f64 / (end - warm_end).as_secs_f64();
    cell.server_cpu_pct = 100.0 * (cpu1 - cpu0) / window;
    cell.client_cpu_pct =
        100.0 * outcome.client_cpu_secs / (total * o.client_threads.min(o.connections) as f64);
    let q = |p: f64| outcome.latency.value_at_quantile(p) as f64 / 1000.0;
    cell.p50_us = q(0.50);
    cell.p99_us = q(0.99);
    cell.p999_us = q(0.999);
    Ok(())
}

/// One blocking framed binary call; returns the reply frame's body.
fn call(addr: SocketAddr, name: &[u8], args: &AddArgs) -> Result<MessageReader, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let frame = encode_message(
        Protocol::Binary,
        true,
        usize::MAX,
        name,
        MessageType::Call,
        41,
        args,
    )
    .map_err(|e| e.to_string())?;
    for seg in &frame {
        s.write_all(seg).map_err(|e| format!("write: {e}"))?;
    }
    let mut len = [0u8; 4];
    s.read_exact(&mut len).map_err(|e| format!("read: {e}"))?;
    let mut body = vec![0u8; u32::from_be_bytes(len).min(1 << 20) as usize];
    s.read_exact(&mut body).map_err(|e| format!("read: {e}"))?;
    let mut r = MessageReader::new(Protocol::Binary, body.into(), DecodeLimits::default());
    let h = r.read_header().map_err(|e| e.to_string())?;
    if h.seqid != 41 || &h.name[..] != name {
        return Err(format!("reply header {h:?}"));
    }
    Ok(r)
}

/// The smoke run's extra checks: `add` wraps on overflow, and an unknown method gets a
/// `TApplicationException`.
fn smoke_calls(kind: Kind, setup: &Setup) -> Result<(), String> {
    let server = Server::start(kind, setup)?;
    let mut r = call(server.addr(), b"add", &AddArgs { a: i64::MAX, b: 2 })?;
    let Returns(sum) = r
        .decode::<Returns<i64>>()
        .map_err(|e| format!("add: {e}"))?;
    if sum != i64::MIN + 1 {
        return Err(format!("add(i64::MAX, 2) returned {sum}"));
    }
    let mut r = call(server.addr(), b"no_such_method", &AddArgs { a: 1, b: 1 })?;
    let e = r
        .decode::<zerorx_thrift::ApplicationException>()
        .map_err(|e| format!("unknown method: {e}"))?;
    if e.kind != zerorx_thrift::ApplicationExceptionKind::UnknownMethod {
        return Err(format!("unknown method answered with {e}"));
    }
    server.stop();
    Ok(())
}
