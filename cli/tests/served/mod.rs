//! `zerorx serve` as a child process for the tests that talk to the binary.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `zerorx serve` as a child process, killed (SIGKILL) if a test fails before it
/// stops it.
pub struct Served(pub Child, pub SocketAddr);

impl Served {
    /// Starts `zerorx serve ARGS` and waits for its `listening on` line.
    pub fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zerorx"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn zerorx serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("first line");
        let addr: SocketAddr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .expect("address");
        Served(child, SocketAddr::from(([127, 0, 0, 1], addr.port())))
    }

    /// SIGTERM, then the exit status and stderr (bounded wait).
    pub fn stop(mut self) -> (std::process::ExitStatus, String) {
        // SAFETY: plain syscall on our own child's pid.
        let rc = unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill");
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(st) = self.0.try_wait().expect("wait") {
                break st;
            }
            assert!(
                Instant::now() < deadline,
                "zerorx serve did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut self.0.stderr.take().expect("stderr"), &mut err)
            .expect("stderr");
        (status, err)
    }
}

/// A counter from the stats `zerorx serve` prints on stderr when it stops.
pub fn count(stderr: &str, name: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix(name)
                .map(|v| v.trim().parse().expect("number"))
        })
        .unwrap_or_else(|| panic!("{name} missing from {stderr}"))
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
