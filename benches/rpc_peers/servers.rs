//! The servers under test, each started as a child process so its CPU time can be
//! read from /proc and nothing it does shares the load generator's process.
//!
//! zerorx, tokio and the `thrift` crate server are this benchmark binary re-executed
//! with `--serve KIND`; the Apache Thrift C++ server is the binary `tnonblocking`
//! builds.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `zerorx serve` (the same code, `zerorx_cli::bench::serve::run`).
    Zerorx,
    /// The tokio peer (`tokio_server.rs`).
    Tokio,
    /// The `thrift` crate's threaded `TServer` (`thrift_crate_server.rs`).
    ThriftCrate,
    /// Apache Thrift C++ `TNonblockingServer` (`tnonblocking_server.cpp`).
    TNonblocking,
    /// The reference: frames echoed with no Thrift work (`zerorx_bench::frame_echo`).
    /// Not in [`Kind::ALL`]: it answers `echo` only.
    FrameEcho,
}

impl Kind {
    /// Every compared server, zerorx first (the default `--servers`).
    pub const ALL: [Kind; 4] = [
        Kind::Zerorx,
        Kind::Tokio,
        Kind::ThriftCrate,
        Kind::TNonblocking,
    ];
    /// Every server `--servers` accepts.
    const KNOWN: [Kind; 5] = [
        Kind::Zerorx,
        Kind::Tokio,
        Kind::ThriftCrate,
        Kind::TNonblocking,
        Kind::FrameEcho,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Zerorx => "zerorx",
            Kind::Tokio => "tokio",
            Kind::ThriftCrate => "thrift-crate",
            Kind::TNonblocking => "tnonblocking",
            Kind::FrameEcho => "frame-echo",
        }
    }

    /// The server called `name`.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::KNOWN.into_iter().find(|k| k.name() == name)
    }
}

/// How the servers are configured.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Event-loop threads of zerorx, tokio and TNonblockingServer.
    pub threads: usize,
    /// Threads of the `thrift` crate server as reported: it runs one per connection,
    /// so as many as the client opens.
    pub thrift_workers: usize,
    /// The C++ server binary, when it could be built.
    pub cpp: Option<PathBuf>,
    /// Where servers' stderr goes (`KIND.log`).
    pub log_dir: PathBuf,
    /// Extra `zerorx serve` options (e.g. `--chunk-kib 128`).
    pub zerorx_args: Vec<String>,
}

/// A running server.
pub struct Server {
    kind: Kind,
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind 127.0.0.1:0: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

impl Server {
    /// Starts `kind` and waits (up to 20 s) until it accepts connections.
    pub fn start(kind: Kind, setup: &Setup) -> Result<Server, String> {
        let port = free_port()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let threads = setup.threads;
        let mut cmd = match kind {
            Kind::TNonblocking => {
                let bin = setup.cpp.as_deref().ok_or("the C++ server was not built")?;
                let mut c = Command::new(bin);
                c.arg(port.to_string()).arg(threads.to_string());
                c
            }
            _ => {
                let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
                let mut c = Command::new(exe);
                c.args(["--serve", kind.name(), "--port", &port.to_string()]);
                c.args(["--threads", &threads.to_string()]);
                if kind == Kind::Zerorx {
                    c.args(&setup.zerorx_args);
                }
                c
            }
        };
        std::fs::create_dir_all(&setup.log_dir)
            .map_err(|e| format!("{}: {e}", setup.log_dir.display()))?;
        let log = setup.log_dir.join(format!("{}.log", kind.name()));
        let stderr = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("start {}: {e}", kind.name()))?;
        let mut server = Server {
            kind,
            child,
            addr,
            log,
        };
        server.wait_ready(Duration::from_secs(20))?;
        Ok(server)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited ({status}) before accepting connections:\n{}",
                    self.kind.name(),
                    tail(&self.log)
                ));
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} did not accept connections within {limit:?}",
                    self.kind.name()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// CPU seconds (user + system, every thread) it has used so far.
    pub fn cpu_secs(&self) -> Result<f64, String> {
        zerorx_bench::procfs::process_cpu_secs(self.child.id())
            .map_err(|e| format!("{} cpu: {e}", self.kind.name()))
    }

    /// Whether it is still running (a server that died under load is a failure).
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "{} exited ({status}) under load:\n{}",
                self.kind.name(),
                tail(&self.log)
            )),
            Err(e) => Err(format!("{}: {e}", self.kind.name())),
        }
    }

    /// Asks it to stop (SIGTERM, so zerorx drains and logs its counters), kills it
    /// if it is still running after a second, and reaps it.
    pub fn stop(mut self) {
        // A pid from `Child` fits pid_t.
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: `pid` is this server's child process, not yet reaped, so the id
        // cannot name another process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Never leave a server behind, whatever path the benchmark took.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The last lines of a log, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The `--serve KIND --port P --threads N` child: runs the server until killed.
pub fn serve_child(args: &[String]) -> i32 {
    let mut kind = None;
    let mut port = None;
    let mut threads = 1usize;
    let mut extra: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().map(String::as_str).unwrap_or_default();
        match flag.as_str() {
            "--serve" => kind = Kind::parse(value),
            "--port" => port = value.parse::<u16>().ok(),
            "--threads" => threads = value.parse().unwrap_or(1),
            // Anything else is a `zerorx serve` option, passed through.
            _ => extra.extend([flag.clone(), value.to_owned()]),
        }
    }
    let (Some(kind), Some(port)) = (kind, port) else {
        eprintln!("rpc bench child: usage --serve zerorx|tokio|thrift-crate|frame-echo --port P --threads N");
        return 2;
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let res = match kind {
        Kind::Zerorx => {
            let args = [
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--protocol",
                "binary",
                "--transport",
                "framed",
                "--threads",
                &threads.to_string(),
            ];
            let args = args.iter().map(|s| s.to_string()).chain(extra);
            match zerorx_cli::bench::serve::parse_args(args) {
                Ok(Some(a)) => zerorx_cli::bench::serve::run(&a).map_err(|e| e.to_string()),
                Ok(None) => Err("unexpected --help".into()),
                Err(e) => Err(e),
            }
        }
        Kind::Tokio => super::tokio_server::serve(addr, threads).map_err(|e| e.to_string()),
        Kind::ThriftCrate => super::thrift_crate_server::serve(addr).map_err(|e| e.to_string()),
        Kind::TNonblocking => Err("the C++ server is its own binary".into()),
        Kind::FrameEcho => {
            zerorx_bench::frame_echo::serve(addr, threads).map_err(|e| e.to_string())
        }
    };
    match res {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{} server: {e}", kind.name());
            1
        }
    }
}
