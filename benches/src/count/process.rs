//! A server process for one counted run: started (under a wrapper such as valgrind),
//! waited for until it listens, and stopped the way it stops cleanly.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How to start a server.
pub struct Launch {
    /// The server's own command (without any wrapper).
    pub command: Command,
    /// How to know it listens.
    pub ready: Ready,
    /// How to stop it.
    pub stop: Stop,
}

/// How a server says it is ready.
pub enum Ready {
    /// It prints `listening ADDR` on stdout (the echo benchmark's children).
    ListeningLine,
    /// It accepts connections on this address (the RPC benchmark's servers).
    Accepts(SocketAddr),
}

/// How a server is stopped.
#[derive(Clone, Copy)]
pub enum Stop {
    /// Closing its stdin makes it exit.
    CloseStdin,
    /// SIGTERM.
    Sigterm,
}

/// Valgrind runs servers some 30× slower: start-up alone can take seconds.
const READY_LIMIT: Duration = Duration::from_secs(120);
const EXIT_LIMIT: Duration = Duration::from_secs(120);

/// A running server.
pub(super) struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The process to signal and to read `/proc` of: the server itself.
    pub(super) pid: u32,
    pub(super) addr: SocketAddr,
    stop: Stop,
    /// See [`super::EXIT_PORT_ENV`].
    exit_port: u16,
    log: PathBuf,
    name: String,
}

impl Running {
    /// Starts `launch` under `wrapper` (empty: natively), its stderr into `log`.
    pub(super) fn start(
        name: &str,
        launch: Launch,
        wrapper: &[OsString],
        log: &Path,
    ) -> Result<Running, String> {
        let Launch {
            command,
            ready,
            stop,
        } = launch;
        let exit_port = crate::free_port()?;
        let mut cmd = if wrapper.is_empty() {
            let mut c = Command::new(command.get_program());
            c.args(command.get_args());
            c
        } else {
            let mut c = Command::new(&wrapper[0]);
            c.args(&wrapper[1..])
                .arg(command.get_program())
                .args(command.get_args());
            c
        };
        for (k, v) in command.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.env(super::EXIT_PORT_ENV, exit_port.to_string());
        let stderr = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let mut running = Running {
            child,
            stdin,
            pid,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stop,
            exit_port,
            log: log.to_owned(),
            name: name.to_owned(),
        };
        running.addr = running.wait_ready(ready)?;
        Ok(running)
    }

    fn wait_ready(&mut self, ready: Ready) -> Result<SocketAddr, String> {
        let deadline = Instant::now() + READY_LIMIT;
        match ready {
            Ready::ListeningLine => {
                let out = self.child.stdout.take().ok_or("no stdout")?;
                let mut line = String::new();
                BufReader::new(out)
                    .read_line(&mut line)
                    .map_err(|e| format!("{}: reading its first line: {e}", self.name))?;
                line.strip_prefix("listening ")
                    .and_then(|a| a.trim().parse().ok())
                    .ok_or_else(|| {
                        format!(
                            "{} said {line:?} instead of `listening ADDR`:\n{}",
                            self.name,
                            self.log_tail()
                        )
                    })
            }
            Ready::Accepts(addr) => loop {
                if let Ok(Some(status)) = self.child.try_wait() {
                    return Err(format!(
                        "{} exited ({status}) before it listened:\n{}",
                        self.name,
                        self.log_tail()
                    ));
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Ok(addr);
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "{} did not listen on {addr} within {READY_LIMIT:?}",
                        self.name
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            },
        }
    }

    /// Stops it and waits for it to exit (valgrind writes its figures then).
    pub(super) fn stop(mut self) -> Result<ExitStatus, String> {
        // A zerorx server exits from its worker at this connection; others refuse it
        // and stop as they always do.
        let exit = SocketAddr::from(([127, 0, 0, 1], self.exit_port));
        let _ = TcpStream::connect_timeout(&exit, Duration::from_secs(1));
        drop(self.stdin.take());
        if let Stop::Sigterm = self.stop {
            // A pid from `Child` fits pid_t.
            let pid = self.pid as libc::pid_t;
            // SAFETY: `pid` is this child, not yet reaped, so it names no other process.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + EXIT_LIMIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "{} did not exit within {EXIT_LIMIT:?} of being stopped",
                        self.name
                    ));
                }
                Err(e) => return Err(format!("{}: {e}", self.name)),
            }
        }
    }

    /// The last lines of its stderr, for error messages.
    pub(super) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Never leave a server behind, whatever path the count took.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
