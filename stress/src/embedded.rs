//! The embedded server: this same binary started as `zerorx-stress serve --control`
//! in a child process, driven over its stdin/stdout.
//!
//! A child rather than a thread: its memory (RSS) is measured on its own, a crash or
//! a kill shows up as a clear exit status instead of taking the harness down, and the
//! two runtimes cannot share state by accident. The child exits when its stdin closes,
//! so it never outlives the harness; dropping [`EmbeddedServer`] also kills it.

use crate::server::stats::{ModeInfo, ServerSnapshot};
use crate::server::{ControlLine, Listening};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A running child server.
#[derive(Debug)]
pub struct EmbeddedServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    listening: Listening,
    exited: Option<String>,
}

impl EmbeddedServer {
    /// Starts `zerorx-stress serve --control` with `args` and waits for it to listen.
    pub fn start(args: &[String], startup: Duration) -> Result<EmbeddedServer, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this program to start the server: {e}"))?;
        let mut child = Command::new(&exe)
            .arg("serve")
            .arg("--control")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the server's stdout was not captured".into());
        };
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("server-stdout".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start the server reader thread: {e}"))?;
        let mut server = EmbeddedServer {
            child,
            stdin,
            lines,
            listening: Listening {
                addr: SocketAddr::from(([127, 0, 0, 1], 0)),
                pid: 0,
                threads: 0,
                receive_mode: ModeInfo::default(),
            },
            exited: None,
        };
        match server.next_line(startup)? {
            ControlLine::Listening(l) => {
                server.listening = l;
                Ok(server)
            }
            ControlLine::Stats(_) | ControlLine::Dump(_) => {
                Err("the server spoke before it listened".into())
            }
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.listening.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its worker threads.
    pub fn threads(&self) -> usize {
        self.listening.threads
    }

    /// How it receives, as it said when it started.
    pub fn receive_mode(&self) -> &ModeInfo {
        &self.listening.receive_mode
    }

    /// `Some(how)` once the child has exited.
    pub fn exited(&mut self) -> Option<String> {
        if self.exited.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exited = Some(describe(status));
            }
        }
        self.exited.clone()
    }

    /// Asks for the server's figures.
    pub fn stats(&mut self, timeout: Duration) -> Result<ServerSnapshot, String> {
        self.ask("stats", "its figures", timeout, |line| match line {
            ControlLine::Stats(s) => Some(*s),
            _ => None,
        })
    }

    /// Asks for the server runtime's state dump.
    pub fn dump(&mut self, timeout: Duration) -> Result<zerorx::runtime::RuntimeDump, String> {
        self.ask("dump", "a state dump", timeout, |line| match line {
            ControlLine::Dump(d) => Some(d),
            _ => None,
        })
    }

    /// Sends `command` and waits for the answer `pick` takes.
    fn ask<T>(
        &mut self,
        command: &str,
        what: &str,
        timeout: Duration,
        pick: fn(ControlLine) -> Option<T>,
    ) -> Result<T, String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("the server's control channel is closed".into());
        };
        stdin
            .write_all(format!("{command}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| self.gone(&format!("cannot ask the server for {what}: {e}")))?;
        loop {
            if let Some(answer) = pick(self.next_line(timeout)?) {
                return Ok(answer);
            }
        }
    }

    fn next_line(&mut self, timeout: Duration) -> Result<ControlLine, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match serde_json::from_str::<ControlLine>(&line) {
                    Ok(l) => return Ok(l),
                    // Not ours (e.g. something printed by a library): skip it.
                    Err(_) => continue,
                },
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.gone(&format!("the server did not answer within {timeout:?}")))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // Give the exit status a moment to be reaped.
                    let t = Instant::now();
                    while self.exited().is_none() && t.elapsed() < Duration::from_secs(2) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    return Err(self.gone("the server closed its output"));
                }
            }
        }
    }

    fn gone(&mut self, what: &str) -> String {
        match self.exited() {
            Some(how) => format!("{what}: the embedded server {how}"),
            None => what.to_owned(),
        }
    }

    /// Closes the control channel (the server drains and exits) and waits for it,
    /// killing it after `timeout`.
    pub fn stop(mut self, timeout: Duration) -> Result<(), String> {
        drop(self.stdin.take());
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!("the embedded server {}", describe(status)))
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "the embedded server did not exit within {timeout:?} and was killed"
                    ));
                }
                Err(e) => return Err(format!("cannot wait for the embedded server: {e}")),
            }
        }
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// "exited with status 3", "was killed by signal 9 (SIGKILL)".
pub fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(sig) => format!("was killed by signal {sig}{}", signal_name(sig)),
        None => format!("ended ({status})"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGBUS => " (SIGBUS)",
        _ => "",
    }
}
