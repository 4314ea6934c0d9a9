//! Fault injection really injects: every kind is counted by the server itself, as
//! exactly what it was, while the well-formed load stays correct.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zerorx_stress::faults::FaultKind;
use zerorx_stress::report::Report;

const BIN: &str = env!("CARGO_BIN_EXE_zerorx-stress");

/// Fault runs load two cores hard: one at a time, so a slow box does not turn into
/// timeouts.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `scenario` for 3 s on 4 connections (2 server workers) with every fault kind
/// at 3/s, writing the JSON report to `json`.
fn run_all_faults(scenario: &str, json: &std::path::Path) -> std::process::Output {
    Command::new(BIN)
        .args(["-s", scenario, "-d", "3s", "-c", "4"])
        .args(["--client-threads", "1", "--server-threads", "2"])
        .args(["--faults", "all:3/s", "--fault-hold", "300ms"])
        .args(["--burst-conns", "40", "--timeout", "5s", "-q", "--json"])
        .arg(json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run harness")
}

#[test]
fn every_fault_kind_is_injected_and_counted_server_side() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("faults.json");
    let t0 = Instant::now();
    let out = run_all_faults("stream", &json);
    assert!(
        t0.elapsed() < Duration::from_secs(90),
        "took {:?}",
        t0.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Report =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("report");

    assert_eq!(r.faults.len(), FaultKind::ALL.len());
    for f in &r.faults {
        assert!(
            f.counts.as_expected >= 1,
            "{:?} never injected: {:?}",
            f.kind,
            f.counts
        );
        assert_eq!(
            f.counts.unexpected, 0,
            "{:?}: {:?}",
            f.kind, r.fault_samples
        );
    }
    let done = |k: FaultKind| {
        r.faults
            .iter()
            .find(|f| f.kind == k)
            .map_or(0, |f| f.counts.as_expected)
    };
    // The server's own counters, read directly.
    let t = &r.server.as_ref().expect("server figures").totals;
    assert_eq!(t.malformed, done(FaultKind::Malformed));
    assert_eq!(t.oversized, done(FaultKind::Oversized));
    assert_eq!(t.bad_checksum, done(FaultKind::Corrupt));
    assert_eq!(
        t.truncated + t.resets + t.send_errors + t.aborted_before_accept,
        done(FaultKind::Reset) + done(FaultKind::SlowRead)
    );
    assert!(t.silent >= done(FaultKind::Idle));
    // And the harness compared all of them exactly.
    assert!(!r.server_checks.is_empty());
    for c in &r.server_checks {
        assert!(
            c.ok && c.rule == zerorx_stress::report::checks::CheckRule::Exact,
            "{c:?}"
        );
    }
    // Everyone else stayed correct.
    assert!(r.errors.is_empty(), "{:?}", r.error_samples);
    assert!(r.requests.ok > 0 && r.requests.ok == r.requests.sent);
    assert!(stdout.contains("each counted by the server"), "{stdout}");
}

#[test]
fn thrift_faults_are_counted_by_the_rpc_server() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("rpc-faults.json");
    let out = run_all_faults("rpc", &json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Report =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("report");
    let done = |k: FaultKind| {
        r.faults
            .iter()
            .find(|f| f.kind == k)
            .map_or(0, |f| f.counts.as_expected)
    };
    for f in &r.faults {
        assert!(
            f.counts.as_expected >= 1,
            "{:?} never injected: {:?}",
            f.kind,
            f.counts
        );
    }
    let rpc = r
        .server
        .as_ref()
        .and_then(|s| s.rpc.as_ref())
        .expect("rpc counters");
    assert_eq!(
        rpc.counters.protocol_errors,
        done(FaultKind::Malformed) + done(FaultKind::Corrupt)
    );
    assert_eq!(rpc.counters.frames_too_large, done(FaultKind::Oversized));
    for c in &r.server_checks {
        assert!(
            c.ok && c.rule == zerorx_stress::report::checks::CheckRule::Exact,
            "{c:?}"
        );
    }
    assert!(r.errors.is_empty(), "{:?}", r.error_samples);
}
