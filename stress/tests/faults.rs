//! Fault injection really injects: every kind is counted by the server itself, as
//! exactly what it was, while the well-formed load stays correct.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zerorx_stress::faults::FaultKind;
use zerorx_stress::report::Report;

const BIN: &str = env!("CARGO_BIN_EXE_zerorx-stress");

#[test]
fn every_fault_kind_is_injected_and_counted_server_side() {
    let json =
        std::env::temp_dir().join(format!("zerorx-stress-faults-{}.json", std::process::id()));
    let t0 = Instant::now();
    let out = Command::new(BIN)
        .args([
            "-d",
            "3s",
            "-c",
            "4",
            "--client-threads",
            "1",
            "--server-threads",
            "2",
        ])
        .args([
            "--faults",
            "all:3/s",
            "--fault-hold",
            "300ms",
            "--burst-conns",
            "40",
        ])
        .args(["--timeout", "5s", "-q", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run harness");
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
        assert!(c.ok && c.rule == "exact", "{c:?}");
    }
    // Everyone else stayed correct.
    assert!(r.errors.is_empty(), "{:?}", r.error_samples);
    assert!(r.requests.ok > 0 && r.requests.ok == r.requests.sent);
    assert!(stdout.contains("each counted by the server"), "{stdout}");
}
