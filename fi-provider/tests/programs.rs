//! Unmodified libfabric programs over the provider: `fi_info` lists it, and
//! `fi_pingpong` (Debian's `libfabric-bin`) runs RDM ping-pongs over it, untagged
//! and tagged, with every byte checked (`-c`).

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "{name} is not installed: `apt-get install libfabric-bin` (scripts/test does)"
    );
    let mut c = Command::new(name);
    c.env("FI_PROVIDER_PATH", common::provider_dir())
        .env("FI_LOG_LEVEL", "warn");
    c
}

/// Waits for `child` at most `limit`, killing it past that.
fn wait(mut child: std::process::Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waiting for the child").is_some() {
            return child.wait_with_output().expect("collecting its output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collecting its output");
            panic!(
                "{what} did not finish in {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn fi_info_lists_the_provider_with_rdm_endpoints() {
    let out = tool("fi_info").args(["-p", "zerorx"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "fi_info failed: {text}");
    assert!(text.contains("provider: zerorx"), "{text}");
    assert!(text.contains("FI_EP_RDM"), "{text}");
    let verbose = tool("fi_info")
        .args(["-p", "zerorx", "-v"])
        .output()
        .unwrap();
    let v = String::from_utf8_lossy(&verbose.stdout);
    for cap in [
        "FI_MSG",
        "FI_TAGGED",
        "FI_THREAD_SAFE",
        "FI_PROGRESS_AUTO",
        "FI_SOCKADDR_IN",
    ] {
        assert!(v.contains(cap), "fi_info -v does not show {cap}:\n{v}");
    }
}

/// One `fi_pingpong` server and client pair on a free port; both must exit 0.
fn pingpong(extra: &[&str]) -> String {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port().to_string()
    };
    let common = ["-p", "zerorx", "-e", "rdm", "-I", "200", "-c"];
    let server = tool("fi_pingpong")
        .args(common)
        .args(["-B", &port])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let client = tool("fi_pingpong")
        .args(common)
        .args(["-P", &port])
        .args(extra)
        .arg("127.0.0.1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let c = wait(client, Duration::from_secs(60), "the fi_pingpong client");
    let s = wait(server, Duration::from_secs(10), "the fi_pingpong server");
    let text = format!(
        "client stdout:\n{}\nclient stderr:\n{}\nserver stderr:\n{}",
        String::from_utf8_lossy(&c.stdout),
        String::from_utf8_lossy(&c.stderr),
        String::from_utf8_lossy(&s.stderr)
    );
    assert!(
        c.status.success() && s.status.success(),
        "fi_pingpong failed\n{text}"
    );
    assert!(
        !text.contains("[error]"),
        "fi_pingpong reported an error\n{text}"
    );
    String::from_utf8_lossy(&c.stdout).into_owned()
}

#[test]
fn fi_pingpong_runs_untagged_messages_with_every_byte_checked() {
    let out = pingpong(&[]);
    // Every size of the default run, up to 1 MiB, went through.
    for size in ["64 ", "4k ", "64k ", "1m "] {
        assert!(
            out.lines().any(|l| l.starts_with(size)),
            "no {size}row in\n{out}"
        );
    }
}

#[test]
fn fi_pingpong_runs_tagged_messages_with_every_byte_checked() {
    let out = pingpong(&["-m", "tagged"]);
    assert!(
        out.lines().any(|l| l.starts_with("1m ")),
        "no 1m row in\n{out}"
    );
}
