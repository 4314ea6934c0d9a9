//! Servers as child processes: the benchmark binary re-executes itself with
//! `--serve KIND`, so `/proc/PID` of the child shows that server's CPU and memory alone.
//!
//! Protocol over the child's stdin/stdout, one line each way:
//! - child → parent, once: `listening ADDR`;
//! - parent → child: `stats` → child: one line of JSON ([`ServerStats`]);
//! - stdin closed (the parent finished or died) → the child exits at once.
//!
//! The child also exits by itself after `life_secs`, so nothing outlives a run.
//! The waiting threads block in `read`/`sleep` and never wake an idle server.

use crate::procfs;
use crate::servers::{self, ServerConfig, ServerKind, ServerStats, StatsFn};
use std::io::{self, BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The command-line flag that turns the benchmark binary into a server.
pub const SERVE_FLAG: &str = "--serve";

/// The command that runs `kind` as a child: this executable with `--serve`. It prints
/// `listening ADDR` on stdout and exits when its stdin closes.
pub fn command(kind: ServerKind, cfg: &ServerConfig) -> io::Result<Command> {
    let mut cmd = Command::new(std::env::current_exe()?);
    if kind == ServerKind::ZerorxAlt {
        cmd.envs(cfg.alt_env.iter().map(|(k, v)| (k, v)));
    }
    cmd.arg(SERVE_FLAG)
        .arg(kind.name())
        .arg(format!("--pool-buffers={}", cfg.pool_buffers))
        .arg(format!("--pool-buffer-size={}", cfg.pool_buffer_size))
        .arg(format!("--life={}", cfg.life_secs));
    Ok(cmd)
}

/// A running server child.
pub struct ServerProcess {
    kind: ServerKind,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
}

impl ServerProcess {
    /// Starts `kind` in a child process (this executable with `--serve`) and waits
    /// until it listens.
    pub fn start(kind: ServerKind, cfg: &ServerConfig) -> io::Result<ServerProcess> {
        let mut child = command(kind, cfg)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("starting {} server: {e}", kind.name()))
            })?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .map(BufReader::new)
            .ok_or_else(|| io::Error::other("child has no stdout"))?;
        let mut p = ServerProcess {
            kind,
            child,
            stdin,
            stdout,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let line = p.read_line()?;
        p.addr = line
            .strip_prefix("listening ")
            .and_then(|a| a.trim().parse().ok())
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{} server said {line:?} instead of its address",
                    kind.name()
                ))
            })?;
        Ok(p)
    }

    /// Which server this is.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds it has used so far: (user, system).
    pub fn cpu_secs(&self) -> io::Result<(f64, f64)> {
        procfs::process_cpu_split(self.pid())
    }

    /// Asks the server for its runtime counters.
    pub fn stats(&mut self) -> io::Result<ServerStats> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::other("server already stopped"))?;
        stdin.write_all(b"stats\n")?;
        stdin.flush()?;
        let line = self.read_line()?;
        serde_json::from_str(&line).map_err(|e| {
            io::Error::other(format!(
                "{} server sent bad stats {line:?}: {e}",
                self.kind.name()
            ))
        })
    }

    fn read_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            let status = self.child.try_wait().ok().flatten();
            return Err(io::Error::other(format!(
                "{} server closed its output (exit status {status:?}); see its message above",
                self.kind.name()
            )));
        }
        Ok(line)
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Closes its stdin, which makes it exit, and reaps it (killing it after 5 s).
    pub fn stop(mut self) -> io::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> io::Result<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                return Err(io::Error::other(format!(
                    "{} server did not exit within 5 s of stdin closing; killed",
                    self.kind.name()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.stop_inner();
        }
    }
}

/// The child side: serves `kind` until stdin closes. Never returns.
pub fn serve_main(kind: ServerKind, cfg: &ServerConfig) -> ! {
    if let Err(e) = procfs::raise_fd_limit() {
        eprintln!("{} server: cannot raise the fd limit: {e}", kind.name());
    }
    let life = Duration::from_secs(cfg.life_secs);
    let name = kind.name();
    let spawned = std::thread::Builder::new()
        .name("life".into())
        .spawn(move || {
            std::thread::sleep(life);
            eprintln!("{name} server: life time of {life:?} is over, exiting");
            std::process::exit(2);
        });
    if let Err(e) = spawned {
        eprintln!("{name} server: {e}");
        std::process::exit(1);
    }
    let ready: servers::Ready = Box::new(move |addr: SocketAddr, stats: StatsFn| {
        let mut out = io::stdout().lock();
        if writeln!(out, "listening {addr}")
            .and_then(|_| out.flush())
            .is_err()
        {
            std::process::exit(1);
        }
        drop(out);
        if let Err(e) = std::thread::Builder::new()
            .name("control".into())
            .spawn(move || control(stats))
        {
            eprintln!("{name} server: {e}");
            std::process::exit(1);
        }
    });
    match servers::run(kind, cfg, ready) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{name} server failed: {e}");
            std::process::exit(1)
        }
    }
}

/// Answers `stats` requests until stdin closes, then ends the process.
fn control(stats: StatsFn) -> ! {
    let stdin = io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => std::process::exit(0),
            Ok(_) => {}
        }
        if line.trim() == "stats" {
            let s = ServerStats {
                heap_bytes: Some(servers::heap_in_use()),
                ..stats()
            };
            let json = serde_json::to_string(&s).unwrap_or_else(|_| "{}".into());
            let mut out = io::stdout().lock();
            if writeln!(out, "{json}").and_then(|_| out.flush()).is_err() {
                std::process::exit(0);
            }
        }
    }
}

/// Parses the child's arguments (`--serve KIND --pool-buffers=N …`), or `None` when
/// this process is not a server child.
pub fn child_args(args: &[String]) -> Option<Result<(ServerKind, ServerConfig), String>> {
    let at = args.iter().position(|a| a == SERVE_FLAG)?;
    Some(parse_child(&args[at + 1..]))
}

fn parse_child(rest: &[String]) -> Result<(ServerKind, ServerConfig), String> {
    let kind_name = rest.first().ok_or("--serve needs a server kind")?;
    let kind =
        ServerKind::parse(kind_name).ok_or_else(|| format!("unknown server {kind_name:?}"))?;
    let mut cfg = ServerConfig::default();
    for a in &rest[1..] {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| format!("bad argument {a:?}"))?;
        let bad = |_| format!("bad value in {a:?}");
        match k {
            "--pool-buffers" => cfg.pool_buffers = v.parse().map_err(bad)?,
            "--pool-buffer-size" => cfg.pool_buffer_size = v.parse().map_err(bad)?,
            "--life" => cfg.life_secs = v.parse().map_err(bad)?,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    Ok((kind, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn child_arguments() {
        assert!(child_args(&strings(&["bench", "--smoke"])).is_none());
        let (k, cfg) = child_args(&strings(&[
            "bench",
            "--serve",
            "monoio",
            "--pool-buffers=32",
            "--pool-buffer-size=4096",
            "--life=9",
        ]))
        .expect("server child")
        .expect("valid");
        assert_eq!(k, ServerKind::Monoio);
        assert_eq!(
            (cfg.pool_buffers, cfg.pool_buffer_size, cfg.life_secs),
            (32, 4096, 9)
        );
        for bad in [
            &["--serve"][..],
            &["--serve", "apache"],
            &["--serve", "zerorx", "--pool-buffers=lots"],
            &["--serve", "zerorx", "--colour=red"],
        ] {
            assert!(
                child_args(&strings(bad)).expect("child").is_err(),
                "{bad:?}"
            );
        }
    }
}
