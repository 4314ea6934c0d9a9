//! `zerorx serve` as a child process for the tests that talk to the binary.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `zerorx serve` as a child process, killed (SIGKILL) if a test fails before it
/// stops it: the child, its TCP address on loopback (`0.0.0.0:0` when it serves on a
/// Unix socket only) and every `listening on` line's address, in order.
pub struct Served(pub Child, pub SocketAddr, pub Vec<String>);

impl Served {
    /// Starts `zerorx serve ARGS` and waits for its `listening on` line (a TCP
    /// address).
    pub fn start(args: &[&str]) -> Served {
        Served::start_listing(args, 1)
    }

    /// Starts `zerorx serve ARGS` and waits for `lines` lines saying where it
    /// listens: with `--port` and `--unix`, the TCP address, then `unix:PATH`.
    pub fn start_listing(args: &[&str], lines: usize) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zerorx"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn zerorx serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut listening = Vec::new();
        for _ in 0..lines {
            let mut line = String::new();
            stdout.read_line(&mut line).expect("a line");
            let at = line
                .trim()
                .strip_prefix("listening on ")
                .unwrap_or_else(|| panic!("unexpected line {line:?} (listening on {listening:?})"));
            listening.push(at.to_owned());
        }
        let tcp = listening
            .iter()
            .find_map(|at| at.parse::<SocketAddr>().ok())
            .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |a| {
                SocketAddr::from(([127, 0, 0, 1], a.port()))
            });
        Served(child, tcp, listening)
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
