//! `--hostile`: memory held under hostile load. Against the embedded Thrift server
//! (the `zerorx_thrift` server and `Bench` service `zerorx serve` runs) with short idle
//! and write timeouts:
//!
//! 1. a baseline: the rpc load alone, then the server sampled at quiesce;
//! 2. `--slowloris N` connections that each send one byte of a frame header and stop,
//!    and `--never-read M` connections that send echo requests and never read a reply;
//! 3. the rpc load again beside them: every reply correct, p99 beside the baseline's
//!    (reported: a timing is not judged on a shared machine), and the server's RSS
//!    against a bound computed from what each hostile connection may hold;
//! 4. the timeouts reclaim everything: every hostile connection closed by the server,
//!    and its fds, tasks and pool chunks back to the baseline.

use crate::cli::{RunArgs, Scenario};
use crate::embedded::EmbeddedServer;
use crate::faults::wire::{Wire, WireKind};
use crate::quiesce::{self, ServerState};
use crate::report::Report;
use crate::run::{plan, run, server_args, RunError};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// What one slowloris connection may cost the server: its two tasks (reader and
/// reply writer), connection state, op slot and idle timer (about 1 KiB), and the page
/// of the receive buffer its one byte landed in, made resident and held until pool
/// pressure copies the byte out (4 KiB). Measured: about 3.1 KiB.
const SLOWLORIS_BYTES: u64 = 6 * 1024;
/// The payload of a never-reading client's echo requests.
const NEVER_READ_PAYLOAD: usize = 16 * 1024;
/// Allocator and sampling slack on top of the computed bound.
const RSS_SLACK: u64 = 16 << 20;
/// Open fds and tasks the server may hold after the timeouts beyond its baseline.
const SLACK: u64 = 2;

/// A load phase's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Replies checked.
    pub requests: u64,
    /// p99 latency, µs.
    pub p99_us: f64,
    /// The run's verdict.
    pub verdict: String,
    /// Whether it passed.
    pub pass: bool,
}

/// The report of a `--hostile` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostileReport {
    /// Slowloris connections opened.
    pub slowloris: usize,
    /// Never-reading connections opened.
    pub never_read: usize,
    /// The server's idle and write timeout, seconds.
    pub timeout_s: f64,
    /// The load alone.
    pub baseline: Phase,
    /// The server after it, at quiesce.
    pub before: ServerState,
    /// The load beside the hostile connections.
    pub hostile: Phase,
    /// The server while they were open.
    pub during: ServerState,
    /// Requests the server reads per connection before it stops reading (its
    /// in-flight limit, as it reported it): what a never-reading client makes it hold.
    pub server_in_flight: u64,
    /// The RSS bound under hostile load.
    pub rss_bound: u64,
    /// The server after the timeouts.
    pub after: ServerState,
    /// Seconds from the end of the hostile phase until the server had closed every
    /// connection.
    pub reclaimed_after_s: Option<f64>,
    /// Hostile connections the harness saw the server close.
    pub closed_by_server: usize,
    /// Every check, with whether it held.
    pub checks: Vec<HostileCheck>,
    /// Whether every check held.
    pub pass: bool,
}

/// What a hostile run checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostileCheckKind {
    /// The load alone passed.
    BaselineLoad,
    /// The load beside the hostile connections passed.
    LoadBesideHostile,
    /// The server held every hostile connection open.
    HeldOpen,
    /// The server's RSS stayed under the bound.
    RssBound,
    /// The timeouts closed every connection.
    TimeoutsClosedAll,
    /// The harness saw the server close every hostile connection.
    ServerClosedHostile,
    /// Fds, tasks and pool chunks came back to the baseline.
    Reclaimed,
}

/// One check of a hostile run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostileCheck {
    /// Which.
    pub what: HostileCheckKind,
    /// Whether it held.
    pub ok: bool,
    /// It in words, with its figures.
    pub text: String,
}

fn setup(e: impl std::fmt::Display) -> RunError {
    RunError::Setup(e.to_string())
}

/// The server's state, from its counters and its dump.
fn sample(s: &mut EmbeddedServer) -> Result<ServerState, RunError> {
    quiesce::sample(s).map(|(state, _)| state).map_err(setup)
}

/// The server once it counts `n` open connections (or after 10 s, as it is then).
fn accepted(s: &mut EmbeddedServer, n: u64) -> Result<ServerState, RunError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // The counters are cheap to ask for; the dump (an entry per op) once.
        let stats = s.stats(Duration::from_secs(10)).map_err(setup)?;
        if stats.open_connections() >= n || Instant::now() > deadline {
            return sample(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (at most `limit`) until the server is quiet; the time it took.
fn quiet_within(s: &mut EmbeddedServer, limit: Duration) -> Result<Option<Duration>, RunError> {
    let waited = quiesce::quiesce(s, limit, None).map_err(setup)?;
    Ok(waited.quiet.then_some(waited.took))
}

fn phase(r: &Report) -> Phase {
    Phase {
        requests: r.requests.ok,
        p99_us: r.latency.p99_us,
        verdict: r.verdict.line.clone(),
        pass: r.verdict.pass,
    }
}

/// `n` connections that each send the first byte of a frame header and stop.
fn slowloris(addr: SocketAddr, n: usize) -> Result<Vec<TcpStream>, RunError> {
    (0..n)
        .map(|i| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
                .map_err(|e| setup(format!("slowloris connection {i}: {e}")))?;
            s.write_all(&[0])
                .map_err(|e| setup(format!("slowloris connection {i}: {e}")))?;
            Ok(s)
        })
        .collect()
}

/// `m` connections that send echo requests until their sends stall, and never read:
/// at most `requests` each (more than the server reads before it stops reading).
fn never_readers(
    addr: SocketAddr,
    m: usize,
    requests: u64,
    a: &RunArgs,
) -> Result<Vec<TcpStream>, RunError> {
    let p = plan(&RunArgs {
        sizes: Some(vec![NEVER_READ_PAYLOAD]),
        ..a.clone()
    })?;
    (0..m)
        .map(|i| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
                .map_err(|e| setup(format!("never-reading connection {i}: {e}")))?;
            s.set_nonblocking(true).map_err(setup)?;
            let mut wire = Wire::new(WireKind::Thrift, i as u32, p.load.max_frame);
            'requests: for _ in 0..requests {
                let (segs, _) = wire.good(&p.load, NEVER_READ_PAYLOAD);
                for seg in segs {
                    let mut rest = &seg[..];
                    while !rest.is_empty() {
                        match s.write(rest) {
                            Ok(n) => rest = &rest[n..],
                            // The server stopped reading (or its replies fill our
                            // window): this connection is now what it should be.
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break 'requests,
                            Err(e) => {
                                return Err(setup(format!("never-reading connection {i}: {e}")))
                            }
                        }
                    }
                }
            }
            Ok(s)
        })
        .collect()
}

/// Whether the server has closed `s` (end of stream or reset); never blocks.
fn closed_by_server(s: &mut TcpStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return false;
    }
    let mut buf = [0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            // A never-reader's replies: drain them to reach the end.
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Raises this process's fd limit to its hard limit (the embedded server, started
/// after, inherits it); fails naming the need when even that is too low.
fn raise_fd_limit(need: u64) -> Result<(), RunError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write into.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(setup(std::io::Error::last_os_error()));
    }
    if lim.rlim_max < need {
        return Err(RunError::Setup(format!(
            "--hostile needs {need} fds per process and the hard limit is {}: raise it \
             (ulimit -Hn, or LimitNOFILE) or ask for fewer --slowloris connections",
            lim.rlim_max
        )));
    }
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: `lim` is a valid rlimit; raising the soft limit up to the hard one needs
    // no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(setup(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Runs the hostile-load check `a` asks for.
pub fn hostile(a: &RunArgs) -> Result<HostileReport, RunError> {
    if a.connect.is_some() {
        return Err(RunError::Usage(
            "--hostile samples its own embedded server; --connect does not apply".into(),
        ));
    }
    if a.hostile_timeout < Duration::from_secs(1) {
        return Err(RunError::Usage(
            "--hostile-timeout must be at least 1s".into(),
        ));
    }
    let duration = a.duration.unwrap_or(Duration::from_secs(3));
    if duration >= a.hostile_timeout {
        return Err(RunError::Usage(format!(
            "--duration ({duration:?}) must be shorter than --hostile-timeout ({:?}), so the \
             load runs while the hostile connections are still open",
            a.hostile_timeout
        )));
    }
    // Each hostile connection is an fd here and one in the server, beside the load's.
    raise_fd_limit((a.slowloris + a.never_read + a.connections) as u64 + 256)?;
    let rpc = RunArgs {
        scenario: Scenario::Rpc,
        ..a.clone()
    };
    let p = plan(&rpc)?;
    let timeout = format!("{}ms", a.hostile_timeout.as_millis());
    let mut args = server_args(&rpc, &p);
    args.extend(["--idle-timeout".into(), timeout.clone()]);
    args.extend(["--write-timeout".into(), timeout]);
    let mut server =
        EmbeddedServer::start(&args, Duration::from_secs(30)).map_err(RunError::Setup)?;
    let addr = server.addr();
    let load = RunArgs {
        connect: Some(addr.to_string()),
        duration: Some(duration),
        requests: None,
        faults: None,
        quiet: true,
        json: None,
        hist: None,
        plot: None,
        hostile: false,
        ..rpc.clone()
    };
    let say = |what: &str| {
        if !a.quiet {
            eprintln!("zerorx-stress hostile: {what}");
        }
    };

    // What a never-reading connection makes the server hold: the requests it reads
    // before it stops reading, by its own account.
    let server_in_flight = server
        .stats(Duration::from_secs(10))
        .map_err(setup)?
        .rpc
        .ok_or_else(|| setup("the Thrift server reported no Thrift figures"))?
        .max_in_flight as u64;

    say("baseline load");
    let baseline = phase(&run(&load)?);
    quiet_within(&mut server, Duration::from_secs(10))?;
    let before = sample(&mut server)?;

    say(&format!(
        "opening {} slowloris and {} never-reading connections",
        a.slowloris, a.never_read
    ));
    let mut slow = slowloris(addr, a.slowloris)?;
    let mut never = never_readers(addr, a.never_read, 2 * server_in_flight, a)?;
    // The last connects may still wait in the listen queue: give the server a
    // moment to accept them all before sampling.
    let opened = accepted(&mut server, (a.slowloris + a.never_read) as u64)?;
    say("load beside them");
    let hostile = phase(&run(&load)?);
    let after_load = sample(&mut server)?;
    // Connections as they were once all were open; memory at its higher point.
    let during = ServerState {
        rss_bytes: opened.rss_bytes.max(after_load.rss_bytes),
        chunks_held: opened.chunks_held.max(after_load.chunks_held),
        ..opened
    };
    let rss_bound = before.rss_bytes
        + a.slowloris as u64 * SLOWLORIS_BYTES
        + a.never_read as u64 * server_in_flight * (NEVER_READ_PAYLOAD as u64 + 1024)
        + RSS_SLACK;

    say("waiting for the idle and write timeouts");
    let reclaimed = quiet_within(&mut server, a.hostile_timeout * 3 + Duration::from_secs(10))?;
    let after = sample(&mut server)?;
    let closed = slow
        .iter_mut()
        .chain(never.iter_mut())
        .map(closed_by_server)
        .filter(|&closed| closed)
        .count();
    drop((slow, never));
    if let Err(e) = server.stop(Duration::from_secs(10)) {
        return Err(RunError::Setup(e));
    }

    let hostile_conns = a.slowloris + a.never_read;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let check = |what, ok, text: String| HostileCheck { what, ok, text };
    let checks = vec![
        check(
            HostileCheckKind::BaselineLoad,
            baseline.pass,
            format!("the baseline load: {}", baseline.verdict),
        ),
        check(
            HostileCheckKind::LoadBesideHostile,
            hostile.pass,
            format!(
                "the load beside the hostile connections: {}",
                hostile.verdict
            ),
        ),
        check(
            HostileCheckKind::HeldOpen,
            during.connections >= hostile_conns as u64,
            format!(
                "the server held every hostile connection open: {} open with {hostile_conns} \
                 hostile",
                during.connections
            ),
        ),
        check(
            HostileCheckKind::RssBound,
            during.rss_bytes <= rss_bound,
            format!(
                "server RSS {:.1} MiB under the bound {:.1} MiB (baseline {:.1} MiB + {} x {} B \
                 + {} x {} x {} B + {:.0} MiB)",
                mib(during.rss_bytes),
                mib(rss_bound),
                mib(before.rss_bytes),
                a.slowloris,
                SLOWLORIS_BYTES,
                a.never_read,
                server_in_flight,
                NEVER_READ_PAYLOAD + 1024,
                mib(RSS_SLACK)
            ),
        ),
        check(
            HostileCheckKind::TimeoutsClosedAll,
            reclaimed.is_some(),
            match reclaimed {
                Some(t) => format!(
                    "the timeouts closed every connection {:.1} s after the load",
                    t.as_secs_f64()
                ),
                None => format!(
                    "{} connections still open {:.0} s after the load",
                    after.connections,
                    (a.hostile_timeout * 3 + Duration::from_secs(10)).as_secs_f64()
                ),
            },
        ),
        check(
            HostileCheckKind::ServerClosedHostile,
            closed == hostile_conns,
            format!(
                "the harness saw the server close {closed} of {hostile_conns} hostile connections"
            ),
        ),
        check(
            HostileCheckKind::Reclaimed,
            after.open_fds <= before.open_fds + SLACK
                && after.tasks <= before.tasks + SLACK
                && after.chunks_held == 0,
            format!(
                "after the timeouts: {} fds (baseline {}), {} tasks (baseline {}), {} pool \
                 chunks held",
                after.open_fds, before.open_fds, after.tasks, before.tasks, after.chunks_held
            ),
        ),
    ];
    let pass = checks.iter().all(|c| c.ok);
    Ok(HostileReport {
        slowloris: a.slowloris,
        never_read: a.never_read,
        timeout_s: a.hostile_timeout.as_secs_f64(),
        baseline,
        before,
        hostile,
        during,
        server_in_flight,
        rss_bound,
        after,
        reclaimed_after_s: reclaimed.map(|t| t.as_secs_f64()),
        closed_by_server: closed,
        checks,
        pass,
    })
}

/// The report as text.
pub fn render(r: &HostileReport) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let row = |name: &str, s: &ServerState| {
        format!(
            "  {name:<28} {:>7} {:>7} {:>7} {:>7} {:>9.1}\n",
            s.connections,
            s.open_fds,
            s.tasks,
            s.chunks_held,
            mib(s.rss_bytes)
        )
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "zerorx-stress hostile: {} slowloris + {} never-reading connections against the \
         Thrift server (idle and write timeout {:.0} s)",
        r.slowloris, r.never_read, r.timeout_s
    );
    let _ = writeln!(
        o,
        "  {:<28} {:>7} {:>7} {:>7} {:>7} {:>9}",
        "server", "conns", "fds", "tasks", "chunks", "RSS MiB"
    );
    o.push_str(&row("after the baseline load", &r.before));
    o.push_str(&row("beside the hostile load", &r.during));
    o.push_str(&row("after the timeouts", &r.after));
    // Reported, not judged: a latency on a shared machine is no pass/fail figure
    // (the benches compare timings, in interleaved rounds).
    let _ = writeln!(
        o,
        "  load p99: baseline {:.0} µs, beside the hostile connections {:.0} µs ({:.2}x; \
         reported, not judged)",
        r.baseline.p99_us,
        r.hostile.p99_us,
        r.hostile.p99_us / r.baseline.p99_us.max(1.0)
    );
    let hostile = (r.slowloris + r.never_read) as u64;
    let grown = r.during.rss_bytes.saturating_sub(r.before.rss_bytes);
    if let Some(each) = grown.checked_div(hostile) {
        let _ = writeln!(
            o,
            "  server memory per hostile connection: {each} B (RSS beside them over the \
             baseline, divided by {hostile})"
        );
    }
    let _ = writeln!(o, "checks");
    for c in &r.checks {
        let _ = writeln!(o, "  {:<4} {}", if c.ok { "ok" } else { "FAIL" }, c.text);
    }
    let failed: Vec<&str> = r
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.text.as_str())
        .collect();
    let _ = writeln!(
        o,
        "\nverdict          {}",
        if r.pass {
            "PASS: the server held every hostile connection within its memory bound while \
             every other client's reply was correct, and its timeouts reclaimed everything"
                .to_string()
        } else {
            format!("FAIL: {}", failed.join("; "))
        }
    );
    o
}
