//! The HTTP benchmark: hyper 1.x on zerorx against hyper on tokio (current_thread),
//! one server thread each and the same handler, loaded by Debian's `wrk` over
//! loopback, rounds interleaved (the order rotates each round). Per server: requests
//! per second, server CPU per request and requests per server CPU-second, p50 and p99
//! latency as wrk reports them, and the server's memory per idle keep-alive connection.
//! Ratios are zerorx over tokio within each round, then median [min–max] over rounds.

pub mod servers;

use crate::procfs;
use crate::report::Spread;
use servers::Kind;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How the bench starts its server children (itself, with this flag and a kind).
pub const SERVE_FLAG: &str = "--serve-http";

/// Whether `args` make this process one of the bench's server children.
pub fn is_server(args: &[String]) -> bool {
    args.get(1).map(String::as_str) == Some(SERVE_FLAG)
}

/// Command-line help.
pub const USAGE: &str = "\
http benchmark: hyper on zerorx vs hyper on tokio (one server thread each), wrk as load
cargo bench -p zerorx-bench --bench http -- [options]
  --rounds N         interleaved rounds (default 5; at least 3 for ratios to mean much)
  --secs S           measured window per cell (default 3)
  --connections C    wrk connections (default 64)
  --idle-conns N     idle keep-alive connections for the memory figure (default 1000)
  --smoke            1 round, 1 s, 50 idle connections: checks every answer, no figures
";

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Interleaved rounds.
    pub rounds: usize,
    /// Measured window per cell.
    pub secs: u64,
    /// wrk's connections.
    pub connections: usize,
    /// Idle connections for the memory figure.
    pub idle_conns: usize,
    /// A quick correctness run.
    pub smoke: bool,
}

impl Options {
    /// Parses the arguments after the program name (cargo's `--bench` is ignored).
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            rounds: 5,
            secs: 3,
            connections: 64,
            idle_conns: 1000,
            smoke: false,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut num = |name: &str| -> Result<u64, String> {
                it.next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|&v| v > 0)
                    .ok_or_else(|| format!("{name} takes a positive number"))
            };
            match a.as_str() {
                "--bench" => {}
                "--rounds" => o.rounds = num("--rounds")? as usize,
                "--secs" => o.secs = num("--secs")?,
                "--connections" => o.connections = num("--connections")? as usize,
                "--idle-conns" => o.idle_conns = num("--idle-conns")? as usize,
                "--smoke" => {
                    o.smoke = true;
                    o.rounds = 1;
                    o.secs = 1;
                    o.idle_conns = 50;
                }
                other => return Err(format!("unknown option {other}")),
            }
        }
        Ok(o)
    }
}

/// One server measured once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cell {
    /// Requests per second.
    pub req_per_s: f64,
    /// Server CPU per request, in microseconds.
    pub cpu_us_per_req: f64,
    /// Latency percentiles, in microseconds.
    pub p50_us: f64,
    /// As `p50_us`.
    pub p99_us: f64,
    /// Server memory (VmRSS) per idle keep-alive connection, in bytes.
    pub idle_bytes_per_conn: f64,
}

/// wrk's report of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WrkReport {
    /// Requests completed.
    pub requests: u64,
    /// Requests per second.
    pub req_per_s: f64,
    /// Latency percentiles in microseconds.
    pub p50_us: f64,
    /// As `p50_us`.
    pub p99_us: f64,
    /// Responses that were not 2xx/3xx, plus socket errors.
    pub errors: u64,
}

/// A wrk duration (`520.00us`, `1.20ms`, `2.00s`, `1.50m`) in microseconds.
fn duration_us(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60e6)
    } else {
        return None;
    };
    num.parse::<f64>().ok().map(|v| v * scale)
}

/// Parses `wrk --latency` output.
pub fn parse_wrk(out: &str) -> Result<WrkReport, String> {
    let mut r = WrkReport::default();
    let mut seen = (false, false, false, false);
    for line in out.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["50%", v] => r.p50_us = duration_us(v).ok_or("bad p50")?,
            ["99%", v] => {
                r.p99_us = duration_us(v).ok_or("bad p99")?;
                seen.2 = true;
            }
            ["Requests/sec:", v] => {
                r.req_per_s = v.parse().map_err(|_| "bad Requests/sec")?;
                seen.1 = true;
            }
            [n, "requests", "in", ..] => {
                r.requests = n.parse().map_err(|_| "bad request count")?;
                seen.0 = true;
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                r.errors += n.parse::<u64>().map_err(|_| "bad Non-2xx count")?;
            }
            ["Socket", "errors:", rest @ ..] => {
                seen.3 = true;
                for w in rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok())
                {
                    r.errors += w;
                }
            }
            _ => {}
        }
    }
    if !(seen.0 && seen.1 && seen.2) {
        return Err(format!("wrk printed no request count, rate or p99:\n{out}"));
    }
    Ok(r)
}

/// A server child process, killed when dropped.
struct ServerChild {
    child: Child,
    addr: SocketAddr,
}

impl ServerChild {
    fn start(kind: Kind) -> io::Result<ServerChild> {
        let mut child = Command::new(std::env::current_exe()?)
            .args([SERVE_FLAG, kind.name()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| io::Error::other("no stdout"))?,
        )
        .read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| io::Error::other(format!("{} server said {line:?}", kind.name())))?;
        Ok(ServerChild { child, addr })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wrk(addr: SocketAddr, connections: usize, secs: u64) -> io::Result<WrkReport> {
    let out = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{secs}s"),
            "--latency",
        ])
        .arg(format!("http://{addr}/"))
        .output()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("wrk: {e} (install it: apt-get install wrk; scripts/test does)"),
            )
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "wrk failed: {}\n{text}",
            out.status
        )));
    }
    parse_wrk(&text).map_err(io::Error::other)
}

/// Opens `n` keep-alive connections, each answered once, and returns them (idle).
fn idle_connections(addr: SocketAddr, n: usize) -> io::Result<Vec<std::net::TcpStream>> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = std::net::TcpStream::connect(addr)?;
        c.set_read_timeout(Some(Duration::from_secs(10)))?;
        c.write_all(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")?;
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        while !got.ends_with(b"hello world\n") {
            let k = c.read(&mut buf)?;
            if k == 0 {
                return Err(io::Error::other("the server closed an idle connection"));
            }
            got.extend_from_slice(&buf[..k]);
        }
        conns.push(c);
    }
    Ok(conns)
}

/// Measures `kind` once.
fn measure(kind: Kind, o: &Options) -> io::Result<Cell> {
    let server = ServerChild::start(kind)?;
    if !o.smoke {
        wrk(server.addr, o.connections, 1)?;
    }
    let cpu0 = procfs::process_cpu_secs(server.pid())?;
    let w = wrk(server.addr, o.connections, o.secs)?;
    let cpu1 = procfs::process_cpu_secs(server.pid())?;
    if w.errors > 0 || w.requests == 0 {
        return Err(io::Error::other(format!(
            "{}: {} errors in {} requests",
            kind.name(),
            w.errors,
            w.requests
        )));
    }
    let rss0 = procfs::rss_bytes(server.pid())?.0;
    let idle = idle_connections(server.addr, o.idle_conns)?;
    std::thread::sleep(Duration::from_millis(300));
    let rss1 = procfs::rss_bytes(server.pid())?.0;
    drop(idle);
    Ok(Cell {
        req_per_s: w.req_per_s,
        cpu_us_per_req: (cpu1 - cpu0) * 1e6 / w.requests as f64,
        p50_us: w.p50_us,
        p99_us: w.p99_us,
        idle_bytes_per_conn: rss1.saturating_sub(rss0) as f64 / o.idle_conns as f64,
    })
}

/// Runs the benchmark and prints its table; the process exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    if is_server(&args) {
        return match args.get(2).and_then(|k| Kind::parse(k)) {
            Some(kind) => match servers::serve(kind) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("http server: {e}");
                    1
                }
            },
            None => {
                eprintln!("http server: {SERVE_FLAG} zerorx|tokio");
                2
            }
        };
    }
    let opts = match Options::parse(&args[1.min(args.len())..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("http bench: {e}\n\n{USAGE}");
            return 2;
        }
    };
    if let Err(e) = procfs::raise_fd_limit() {
        eprintln!("http bench: cannot raise the open-file limit: {e}");
    }
    let mut cells: Vec<(usize, Kind, Cell)> = Vec::new();
    for round in 0..opts.rounds {
        let mut order = Kind::ALL;
        order.rotate_left(round % Kind::ALL.len());
        for kind in order {
            match measure(kind, &opts) {
                Ok(c) => {
                    println!(
                        "round {round} {:7} {:>9.0} req/s {:>6.2} CPU-us/req p50 {:>7.0}us p99 {:>7.0}us idle {:>6.0} B/conn",
                        kind.name(),
                        c.req_per_s,
                        c.cpu_us_per_req,
                        c.p50_us,
                        c.p99_us,
                        c.idle_bytes_per_conn
                    );
                    cells.push((round, kind, c));
                }
                Err(e) => {
                    eprintln!("http bench: {} failed: {e}", kind.name());
                    return 1;
                }
            }
        }
    }
    if opts.smoke {
        println!("http smoke: {} cells, every answer 200", cells.len());
        return 0;
    }
    report(&cells, opts.rounds);
    0
}

fn report(cells: &[(usize, Kind, Cell)], rounds: usize) {
    type Metric = (&'static str, fn(&Cell) -> f64, &'static str);
    let metrics: [Metric; 5] = [
        ("req/s", |c| c.req_per_s, ">= 1.0 wanted"),
        (
            "req per server CPU-s",
            |c| 1e6 / c.cpu_us_per_req,
            ">= 1.0 goal",
        ),
        ("p50 latency (us)", |c| c.p50_us, "lower is better"),
        ("p99 latency (us)", |c| c.p99_us, "<= 1.0 goal"),
        ("idle B/conn", |c| c.idle_bytes_per_conn, "lower is better"),
    ];
    println!("\nmedian [min-max] over {rounds} rounds; ratio = zerorx / tokio within a round");
    for (name, f, goal) in metrics {
        let of = |k: Kind| -> Vec<f64> {
            cells
                .iter()
                .filter(|(_, kk, _)| *kk == k)
                .map(|(_, _, c)| f(c))
                .collect()
        };
        let ratios: Vec<f64> = (0..rounds)
            .filter_map(|r| {
                let z = cells
                    .iter()
                    .find(|(rr, k, _)| *rr == r && *k == Kind::Zerorx)?;
                let t = cells
                    .iter()
                    .find(|(rr, k, _)| *rr == r && *k == Kind::Tokio)?;
                (f(&t.2) > 0.0).then(|| f(&z.2) / f(&t.2))
            })
            .collect();
        let (Some(z), Some(t), Some(r)) = (
            Spread::of(&of(Kind::Zerorx)),
            Spread::of(&of(Kind::Tokio)),
            Spread::of(&ratios),
        ) else {
            continue;
        };
        println!(
            "  {name:22} zerorx {:>10.1} [{:.1}-{:.1}]  tokio {:>10.1} [{:.1}-{:.1}]  ratio {:.2}x [{:.2}-{:.2}] ({goal})",
            z.median, z.min, z.max, t.median, t.min, t.max, r.median, r.min, r.max
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_output_parses() {
        let out = "Running 3s test @ http://127.0.0.1:1/\n  1 threads and 64 connections\n  \
                   Latency Distribution\n     50%  520.00us\n     75%  600.00us\n     \
                   90%  700.00us\n     99%    1.20ms\n  123456 requests in 3.00s, 12.34MB read\n\
                   Requests/sec:  41152.00\nTransfer/sec:      4.12MB\n";
        let r = parse_wrk(out).expect("parses");
        assert_eq!(r.requests, 123_456);
        assert_eq!(r.req_per_s, 41_152.0);
        assert_eq!(r.p50_us, 520.0);
        assert!((r.p99_us - 1200.0).abs() < 1e-6);
        assert_eq!(r.errors, 0);
        let bad = format!("{out}  Non-2xx or 3xx responses: 5\n  Socket errors: connect 0, read 2, write 0, timeout 1\n");
        assert_eq!(parse_wrk(&bad).expect("parses").errors, 8);
        assert!(parse_wrk("nothing here").is_err());
    }

    #[test]
    fn options_parse_and_refuse_bad_ones() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = Options::parse(&a(&["--bench", "--rounds", "3", "--secs", "2"])).expect("ok");
        assert_eq!((o.rounds, o.secs, o.smoke), (3, 2, false));
        assert!(Options::parse(&a(&["--smoke"])).expect("ok").smoke);
        assert!(Options::parse(&a(&["--rounds", "0"])).is_err());
        assert!(Options::parse(&a(&["--frobnicate"])).is_err());
    }
}
