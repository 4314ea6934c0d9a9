//! The harness as a person runs it: the binary, its exit status, its report files.
//! Every run is bounded in time (a hung harness fails the test instead of hanging it).

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use zerorx_stress::report::Report;

const BIN: &str = env!("CARGO_BIN_EXE_zerorx-stress");

struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Waits for `child` at most `limit`, killing it (and failing) after that.
fn wait_bounded(mut child: Child, limit: Duration) -> Out {
    let deadline = Instant::now() + limit;
    let mut out = child.stdout.take().expect("stdout piped");
    let err = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut err) = err {
            let _ = err.read_to_string(&mut s);
        }
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zerorx-stress did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        status,
        stdout: t_out.join().expect("stdout reader"),
        stderr: t_err.join().expect("stderr reader"),
    }
}

fn harness(args: &[&str], limit: Duration) -> Out {
    let child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zerorx-stress");
    wait_bounded(child, limit)
}

/// Starts `zerorx-stress serve` (1 thread, 60 s at most) with `extra` options and
/// returns it with the address from its first (JSON) line.
fn standalone_server(extra: &[&str]) -> (std::process::Child, String) {
    start_standalone(extra, Stdio::null())
}

/// As [`standalone_server`], with the server's stderr kept for the test to read.
fn standalone_server_with_stderr(extra: &[&str]) -> (std::process::Child, String) {
    start_standalone(extra, Stdio::piped())
}

fn start_standalone(extra: &[&str], stderr: Stdio) -> (std::process::Child, String) {
    let mut server = Command::new(BIN)
        .arg("serve")
        .args(extra)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--duration",
            "60s",
        ])
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start server");
    let mut first = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("listening line");
    let line: serde_json::Value = serde_json::from_str(&first).expect("json line");
    let addr = line["addr"].as_str().expect("addr").to_owned();
    (server, addr)
}

/// Sends `signum` to process `pid` (a server this test started and has not reaped).
/// With libc rather than the `kill` command, which a minimal machine lacks.
fn send_signal(pid: u32, signum: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid fits pid_t");
    // SAFETY: kill(2) takes no pointers; `pid` names a live child of this test or of
    // its harness, so no other process.
    let rc = unsafe { libc::kill(pid, signum) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {signum}): {}",
        std::io::Error::last_os_error()
    );
}

/// A directory for one test's files, removed when the test ends (also when it fails).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zerorx-stress-test-")
        .tempdir()
        .expect("temp dir")
}

fn tmp(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

fn load(path: &PathBuf) -> Report {
    let text = std::fs::read_to_string(path).expect("report written");
    serde_json::from_str(&text).expect("report parses")
}

/// Small runs: few connections and threads, a couple of seconds (the box is shared).
const SMALL: [&str; 6] = ["-c", "4", "--client-threads", "1", "--server-threads", "2"];

#[test]
fn stream_and_churn_pass_and_their_reports_compare() {
    let dir = scratch();
    let (a, b) = (tmp(&dir, "stream.json"), tmp(&dir, "churn.json"));
    let (hist, svg, svg2) = (
        tmp(&dir, "stream.hlog"),
        tmp(&dir, "stream.svg"),
        tmp(&dir, "both.svg"),
    );
    let mut args = vec!["-s", "stream", "-d", "2s", "-q", "--json"];
    args.push(a.to_str().expect("utf-8 path"));
    args.extend([
        "--hist",
        hist.to_str().expect("path"),
        "--plot",
        svg.to_str().expect("path"),
    ]);
    args.extend(SMALL);
    let out = harness(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "stream failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("verdict          PASS"),
        "{}",
        out.stdout
    );
    let ra = load(&a);
    assert!(ra.verdict.pass);
    assert!(
        ra.requests.ok > 0 && ra.requests.ok == ra.requests.sent,
        "{:?}",
        ra.requests
    );
    let server = ra.server.as_ref().expect("embedded server figures");
    assert!(server.totals.requests >= ra.requests.ok);
    assert_eq!(server.workers.len(), 2);
    assert!(server.workers.iter().all(|w| w.pool.is_some()));
    assert_eq!(ra.receive_mode.mode, "copy");
    assert!(!ra.receive_mode.reason.is_empty());
    assert!(ra.latency.p50_us > 0.0 && ra.latency.p50_us <= ra.latency.p99_us);
    assert!(ra.latency.p99_us <= ra.latency.max_us);
    assert!(!ra.timeline.is_empty());
    assert!(ra.rss.server.as_ref().is_some_and(|s| s.peak_kib > 0));

    let log = std::fs::read(&hist).expect("histogram log");
    let intervals = hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&log)
        .filter(|e| {
            matches!(
                e,
                Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(_))
            )
        })
        .count();
    assert!(intervals >= 1, "no interval histograms in the log");
    let svg_text = std::fs::read_to_string(&svg).expect("plot");
    assert!(svg_text.contains("<svg") && svg_text.contains("Latency by percentile"));

    let mut args = vec!["-s", "churn", "-d", "2s", "-q", "--json"];
    args.push(b.to_str().expect("path"));
    args.extend(SMALL);
    let out = harness(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "churn failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    let rb = load(&b);
    assert!(
        rb.connections.opened > 4,
        "churn opened {}",
        rb.connections.opened
    );
    assert_eq!(rb.scenario, zerorx_stress::cli::Scenario::Churn);

    let out = harness(
        &[
            "--compare",
            a.to_str().expect("path"),
            b.to_str().expect("path"),
            "--plot",
            svg2.to_str().expect("path"),
        ],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{}", out.stderr);
    for row in ["requests/s", "latency p99", "stream", "churn", "PASS"] {
        assert!(out.stdout.contains(row), "{row} missing:\n{}", out.stdout);
    }
    assert!(std::fs::read_to_string(&svg2)
        .expect("plot")
        .contains("<svg"));
}

#[test]
fn a_killed_server_is_a_clear_failure_not_a_hang() {
    let mut child = Command::new(BIN)
        .args(["-s", "stream", "-d", "60s", "--timeout", "2s"])
        .args(SMALL)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let pid = loop {
        let line = lines
            .next()
            .expect("harness exited before naming its server")
            .expect("read stderr");
        if let Some(rest) = line.split("embedded server pid ").nth(1) {
            break rest.split_whitespace().next().expect("pid").to_owned();
        }
    };
    // Let the load start, then kill the server outright.
    std::thread::sleep(Duration::from_millis(700));
    send_signal(pid.parse().expect("pid"), libc::SIGKILL);
    let t0 = Instant::now();
    let drain = std::thread::spawn(move || lines.count());
    let out = wait_bounded(child, Duration::from_secs(30));
    let _ = drain.join();
    assert!(
        t0.elapsed() < Duration::from_secs(25),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("FAIL: run aborted: the embedded server was killed by signal 9"),
        "{}",
        out.stdout
    );
}

#[test]
fn connect_loads_a_standalone_server() {
    let dir = scratch();
    let (mut server, addr) = standalone_server(&[]);
    let json = tmp(&dir, "connect.json");
    let out = harness(
        &[
            "-s",
            "stream",
            "--connect",
            &addr,
            "-n",
            "2000",
            "-q",
            "-c",
            "2",
            "--client-threads",
            "1",
            "--mode",
            "mixed",
            "--json",
            json.to_str().expect("path"),
        ],
        Duration::from_secs(60),
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    let r = load(&json);
    assert_eq!(r.requests.ok, 2000);
    assert!(!r.target.embedded);
    assert_eq!(r.receive_mode.mode, "unknown");
    assert!(r.server.is_none());
}

#[test]
fn bad_arguments_and_missing_files_are_named() {
    let dir = scratch();
    let out = harness(&["-c", "0"], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stderr.contains("--connections must be at least 1"),
        "{}",
        out.stderr
    );
    let out = harness(
        &["--sizes", "2M", "--max-frame", "1M"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("over --max-frame"), "{}", out.stderr);
    let out = harness(&["--duration", "soon"], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    let missing = tmp(&dir, "does-not-exist.json");
    let p = missing.to_str().expect("path");
    let out = harness(&["--compare", p, p], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stderr.contains("cannot read"), "{}", out.stderr);
    let out = harness(
        &[
            "--connect",
            "127.0.0.1:1",
            "-d",
            "20s",
            "-q",
            "--timeout",
            "1s",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.contains("cannot connect to 127.0.0.1:1"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_default_rpc_run_checks_every_call_and_the_servers_counts() {
    let dir = scratch();
    let json = tmp(&dir, "rpc.json");
    let mut args = vec!["-d", "2s", "-q", "--json", json.to_str().expect("path")];
    args.extend(SMALL);
    let out = harness(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "rpc failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    let r = load(&json);
    assert_eq!(r.scenario, zerorx_stress::cli::Scenario::Rpc);
    assert!(
        r.requests.ok > 0 && r.requests.oneway > 0,
        "{:?}",
        r.requests
    );
    assert_eq!(r.requests.ok + r.requests.oneway, r.requests.sent);
    let rpc = r
        .server
        .as_ref()
        .and_then(|s| s.rpc.as_ref())
        .expect("Thrift server counters");
    assert_eq!(rpc.fired as u64, r.requests.oneway);
    assert_eq!(rpc.counters.requests, r.requests.sent);
    assert_eq!(rpc.counters.replies, r.requests.ok);
    assert!(
        r.server_checks
            .iter()
            .all(|c| c.ok && c.rule == zerorx_stress::report::checks::CheckRule::Exact),
        "{:?}",
        r.server_checks
    );
    assert!(r.server_checks.iter().any(|c| c.what.contains("fire")));
}

#[test]
fn connect_loads_any_bench_thrift_server() {
    let dir = scratch();
    let (mut server, addr) = standalone_server(&["--service", "rpc"]);
    let json = tmp(&dir, "connect-rpc.json");
    let out = harness(
        &[
            "--connect",
            &addr,
            "-n",
            "1000",
            "-q",
            "-c",
            "2",
            "--client-threads",
            "1",
        ],
        Duration::from_secs(60),
    );
    let out2 = harness(
        &[
            "--connect",
            &addr,
            "-n",
            "500",
            "-q",
            "-c",
            "1",
            "--json",
            json.to_str().expect("path"),
        ],
        Duration::from_secs(60),
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    assert!(out2.status.success(), "{}\n{}", out2.stdout, out2.stderr);
    let r = load(&json);
    assert_eq!(r.requests.sent, 500);
    let fired = r
        .server_checks
        .iter()
        .find(|c| c.what.contains("fired() delta"))
        .expect("fire check through fired()");
    assert!(fired.ok && fired.observed == r.requests.oneway, "{fired:?}");
}

#[test]
fn a_fabric_run_checks_every_message_and_reports_it() {
    let dir = scratch();
    let json = tmp(&dir, "fabric.json");
    let mut args = vec!["-s", "fabric", "-d", "2s", "--mode", "mixed", "--json"];
    args.push(json.to_str().expect("utf-8 path"));
    args.extend(SMALL);
    let out = harness(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "fabric failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.contains("scenario fabric"), "{}", out.stdout);
    assert!(
        out.stdout.contains("errors           none"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("verdict          PASS"),
        "{}",
        out.stdout
    );
    let r = load(&json);
    assert_eq!(r.scenario, zerorx_stress::cli::Scenario::Fabric);
    assert!(r.verdict.pass, "{:?}", r.verdict);
    assert!(
        r.requests.ok > 0 && r.requests.ok == r.requests.sent,
        "{:?}",
        r.requests
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.load.kinds, ["echo", "sink"]);
    assert_eq!(r.receive_mode.mode, "fabric");
    assert!(!r.target.embedded && r.server.is_none());
    assert_eq!(r.connections.opened, 4, "one endpoint pair per connection");
    assert!(r.latency.p50_us > 0.0 && r.latency.p50_us <= r.latency.p99_us);
    assert!(r.throughput.mb_per_s_sent > 0.0 && r.throughput.mb_per_s_received > 0.0);
    assert!(!r.timeline.is_empty());

    for (extra, why) in [
        (["--connect", "127.0.0.1:1"], "--connect does not apply"),
        (["--faults", "reset:1/s"], "takes no --faults"),
    ] {
        let out = harness(
            &[&["-s", "fabric"][..], &extra].concat(),
            Duration::from_secs(10),
        );
        assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(why), "{}", out.stderr);
    }
    for (args, why) in [
        (
            ["-s", "fabric", "--fabric-provider", "nope"],
            "not in this build (it has: uring-tcp",
        ),
        (
            ["-s", "rpc", "--fabric-provider", "uring-tcp2"],
            "applies to --scenario fabric only",
        ),
    ] {
        let out = harness(&args, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(why), "{}", out.stderr);
    }
}

/// The same verified exchange over every libfabric provider in the build (the
/// workspace tests build with `--all-features`).
#[cfg(feature = "libfabric")]
#[test]
fn a_fabric_run_over_each_libfabric_provider_checks_every_message() {
    let dir = scratch();
    let providers: Vec<String> = zerorx_fabric::Fabric::providers()
        .into_iter()
        .filter(|p| p.starts_with("libfabric:"))
        .collect();
    assert!(
        !providers.is_empty(),
        "no libfabric provider in a libfabric build: install libfabric1 (apt)"
    );
    for provider in providers {
        let json = tmp(
            &dir,
            &format!("fabric-{}.json", provider.replace([':', ';'], "-")),
        );
        let mut args = vec![
            "-s",
            "fabric",
            "--fabric-provider",
            &provider,
            "-d",
            "1s",
            "--mode",
            "mixed",
            "--json",
        ];
        args.push(json.to_str().expect("utf-8 path"));
        args.extend(SMALL);
        let out = harness(&args, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "fabric over {provider} failed:\n{}\n{}",
            out.stdout,
            out.stderr
        );
        let r = load(&json);
        assert!(r.verdict.pass, "{provider}: {:?}", r.verdict);
        assert!(
            r.requests.ok > 0 && r.requests.ok == r.requests.sent,
            "{provider}: {:?}",
            r.requests
        );
        assert!(r.errors.is_empty(), "{provider}: {:?}", r.errors);
        assert!(
            r.receive_mode
                .reason
                .starts_with(&format!("{provider} provider")),
            "{:?}",
            r.receive_mode
        );
        assert_eq!(
            r.target.addr,
            format!("{provider} endpoint pairs inside the harness")
        );
    }
}

#[test]
fn the_report_names_the_servers_tuning_and_a_bad_variable_stops_the_run() {
    let dir = scratch();
    let json = tmp(&dir, "tuned.json");
    let child = Command::new(BIN)
        .args(["-s", "stream", "-d", "1s", "-c", "2", "--quiet", "--json"])
        .arg(&json)
        .env("ZERORX_RING_ENTRIES", "128")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zerorx-stress");
    let out = wait_bounded(child, Duration::from_secs(60));
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("server tuning    threads")
            && out.stdout.contains("ring_entries 128 (environment)"),
        "{}",
        out.stdout
    );
    let report = load(&json);
    assert!(report
        .receive_mode
        .tuning
        .iter()
        .any(|s| s == "ring_entries 128 (environment)"));
    let child = Command::new(BIN)
        .args(["-s", "stream", "-d", "1s", "-c", "1", "--quiet"])
        .env("ZERORX_RING_ENTRIES", "many")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zerorx-stress");
    let out = wait_bounded(child, Duration::from_secs(60));
    assert!(!out.status.success());
    assert!(
        out.stderr
            .contains("ZERORX_RING_ENTRIES=\"many\" is not valid"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_control_channel_dumps_state_naming_an_open_connection() {
    use std::io::Write;
    let mut server = Command::new(BIN)
        .args([
            "serve",
            "--control",
            "--service",
            "frames",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--threads", "2", "--duration", "60s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server");
    let mut stdin = server.stdin.take().expect("stdin");
    let mut out = BufReader::new(server.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("listening line");
    let first: serde_json::Value = serde_json::from_str(&line).expect("json line");
    let addr = first["addr"].as_str().expect("addr").to_owned();
    let conn = std::net::TcpStream::connect(&addr).expect("connect");
    let peer = conn.local_addr().expect("local addr");
    std::thread::sleep(Duration::from_millis(200));
    stdin.write_all(b"dump\n").expect("ask");
    stdin.flush().expect("flush");
    line.clear();
    out.read_line(&mut line).expect("dump line");
    let control: zerorx_stress::server::ControlLine =
        serde_json::from_str(&line).expect("a control line");
    let zerorx_stress::server::ControlLine::Dump(dump) = control else {
        panic!("expected a dump, got {line}");
    };
    assert_eq!(dump.workers.len(), 2);
    let named = zerorx_stress::stuck::describe(&dump).expect("the connection is open");
    assert!(
        named.contains(&format!("-> {peer})")) && named.contains("RECV"),
        "{named}"
    );
    drop(stdin);
    let status = server.wait().expect("wait");
    assert!(status.success(), "{status}");
}

/// The Thrift server tells the harness its counters by their names and its in-flight
/// limit, which the hostile run's memory bound is computed from.
#[test]
fn the_rpc_server_reports_its_counters_and_its_in_flight_limit() {
    use std::io::Write;
    let mut server = Command::new(BIN)
        .args(["serve", "--control", "--service", "rpc"])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--duration",
            "60s",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server");
    let mut stdin = server.stdin.take().expect("stdin");
    let mut out = BufReader::new(server.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("listening line");
    stdin.write_all(b"stats\n").expect("ask");
    stdin.flush().expect("flush");
    line.clear();
    out.read_line(&mut line).expect("stats line");
    let stats: serde_json::Value = serde_json::from_str(&line).expect("json line");
    let rpc = &stats["rpc"];
    assert_eq!(
        rpc["max_in_flight"],
        zerorx_thrift::ServerConfig::default().max_in_flight,
        "{line}"
    );
    assert_eq!(rpc["counters"]["connections_active"], 0, "{line}");
    drop(stdin);
    let status = server.wait().expect("wait");
    assert!(status.success(), "{status}");
}

#[test]
fn soak_usage_errors_name_the_option() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["--soak", "30s", "--connect", "127.0.0.1:1"],
            "--connect does not apply",
        ),
        (
            &["--soak", "5s", "--soak-interval", "10s"],
            "--soak-interval must be",
        ),
        (
            &["--soak", "30s", "--soak-fault-rate", "0"],
            "--soak-fault-rate must be above zero",
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(BIN).args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Runs the harness with `args` and `--json FILE`; the parsed report and stdout, once
/// the run has passed.
fn passing_json_run<T: serde::de::DeserializeOwned>(args: &[&str]) -> (T, String) {
    let dir = scratch();
    let json = tmp(&dir, "report.json");
    let out = Command::new(BIN)
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
    (r, text)
}

#[test]
fn a_short_soak_samples_both_servers_after_every_interval() {
    let mut args = vec![
        "--soak",
        "6s",
        "--soak-interval",
        "2s",
        "--soak-fault-rate",
        "5",
    ];
    args.extend(SMALL);
    args.extend(["--fault-hold", "200ms", "--burst-conns", "10", "--quiet"]);
    let (r, text): (zerorx_stress::soak::SoakReport, _) = passing_json_run(&args);
    use zerorx_stress::cli::Scenario;
    use zerorx_stress::soak::SoakServer;
    let scenarios: Vec<Scenario> = r.intervals.iter().map(|i| i.scenario).collect();
    assert_eq!(
        scenarios,
        [Scenario::Rpc, Scenario::Stream, Scenario::Churn]
    );
    for iv in &r.intervals {
        assert!(iv.pass && iv.requests > 0 && iv.faults > 0, "{iv:?}");
        let services: Vec<SoakServer> = iv.servers.iter().map(|s| s.service).collect();
        assert_eq!(services, [SoakServer::Rpc, SoakServer::Frames]);
        for s in &iv.servers {
            let st = &s.state;
            assert!(st.open_fds > 0 && st.tasks > 0 && st.rss_bytes > 0, "{s:?}");
            assert_eq!((st.connections, st.chunks_held), (0, 0), "{s:?}");
        }
    }
    assert_eq!(r.checks.len(), 10, "five per server");
    assert!(r.pass, "{text}");
    assert!(text.contains("verdict          PASS"), "{text}");
}

#[test]
fn hostile_clients_are_held_within_the_bound_and_reclaimed_by_the_timeouts() {
    let mut args = vec!["--hostile", "--slowloris", "300", "--never-read", "2"];
    args.extend(["--hostile-timeout", "3s", "--duration", "1s"]);
    args.extend(SMALL);
    let (r, text): (zerorx_stress::hostile::HostileReport, _) = passing_json_run(&args);
    assert!(r.during.connections >= 302, "{r:?}");
    assert_eq!(r.closed_by_server, 302);
    assert_eq!((r.after.connections, r.after.chunks_held), (0, 0));
    assert!(r.during.rss_bytes <= r.rss_bound);
    assert_eq!(
        r.server_in_flight,
        zerorx_thrift::ServerConfig::default().max_in_flight as u64
    );
    assert!(r.checks.iter().all(|c| c.ok), "{text}");
    assert!(text.contains("verdict          PASS"), "{text}");
}

#[test]
fn hostile_refuses_an_external_server() {
    let out = Command::new(BIN)
        .args(["--hostile", "--connect", "127.0.0.1:1"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--connect does not apply"));
    let out = Command::new(BIN)
        .args(["--hostile", "--duration", "5s", "--hostile-timeout", "5s"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("must be shorter than --hostile-timeout"),
        "{err}"
    );
}

#[test]
fn a_standalone_server_stops_cleanly_on_sigterm_and_sigint() {
    for (signal, signum, service) in [
        ("TERM", libc::SIGTERM, "frames"),
        ("INT", libc::SIGINT, "rpc"),
    ] {
        let (mut server, _addr) = standalone_server_with_stderr(&["--service", service]);
        let sent = std::time::Instant::now();
        send_signal(server.id(), signum);
        let status = loop {
            if let Some(s) = server.try_wait().expect("wait") {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(10),
                "{service} server still running 10 s after SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        if let Some(mut e) = server.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut err).expect("server stderr");
        }
        assert!(
            status.success(),
            "{service} server after SIG{signal}: {status}; its stderr:\n{err}"
        );
    }
}
