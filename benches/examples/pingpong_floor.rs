//! The floor under any provider's small-message latency on this host: a 128-byte
//! TCP ping-pong over loopback between two processes that do nothing else, busy
//! polling like `fi_rdm_pingpong`, in two ways:
//!
//! - `socket`: non-blocking `recv` in a loop, `send` (what `tcp;ofi_rxm` does under
//!   its provider layers);
//! - `uring`: receives the way zerorx does, on a ring set up as zerorx sets up its
//!   own (single issuer, deferred task work, the task-run flag): one multishot
//!   `RECV` into zcrx's `CopyPool`, reaped by spinning on the task-run flag,
//!   so the kernel is entered only when deferred work waits; the send a plain `send`
//!   (what zerorx's send path does for a small message on an idle socket). Two
//!   system calls per message, as zerorx makes.
//!
//! `scripts/fabtests --perf` prints both beside the providers: what is left between
//! the `uring` floor and zerorx's figure is the provider's own cost; what is left
//! between the floors is the price of receiving through io_uring, which no provider
//! built on it avoids.
//!
//! ```text
//! pingpong_floor socket|uring ITERS     # forks its echoing peer, prints "one-way-us X"
//! ```
//!
//! `cargo run --release -p zerorx-bench --example pingpong_floor -- uring 20000`

use io_uring::IoUring;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Command, ExitCode};
use std::time::Instant;
use zcrx::{CopyPool, CopyPoolConfig};

/// The wire size of a 64-byte message under zerorx-fabric's 64-byte frame header.
const LEN: usize = 128;
/// The message.
static MSG: [u8; LEN] = [0x5a; LEN];
/// Round trips before the timed ones.
const WARM_UP: usize = 1000;

fn send_all(fd: RawFd, msg: &[u8; LEN]) -> Result<(), String> {
    // SAFETY: `msg` is valid for LEN bytes for the call.
    let n = unsafe { libc::send(fd, msg.as_ptr().cast(), LEN, libc::MSG_NOSIGNAL) };
    // A 128-byte send on an idle loopback socket goes whole or fails.
    if n as usize == LEN {
        Ok(())
    } else {
        Err(format!("send: {}", std::io::Error::last_os_error()))
    }
}

/// One way of exchanging messages with the peer.
trait Receive {
    fn send(&mut self, fd: RawFd) -> Result<(), String> {
        send_all(fd, &MSG)
    }

    fn recv(&mut self, fd: RawFd, buf: &mut [u8; LEN]) -> Result<(), String>;
}

/// Non-blocking `recv` until the message is in.
struct Socket;

impl Receive for Socket {
    fn recv(&mut self, fd: RawFd, buf: &mut [u8; LEN]) -> Result<(), String> {
        let mut got = 0;
        while got < LEN {
            // SAFETY: `buf[got..]` is valid for `LEN - got` bytes for the call.
            let n = unsafe {
                libc::recv(
                    fd,
                    buf[got..].as_mut_ptr().cast(),
                    LEN - got,
                    libc::MSG_DONTWAIT,
                )
            };
            match n {
                0 => return Err("the peer closed".into()),
                n if n > 0 => got += n as usize,
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        return Err(format!("recv: {e}"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The ring: one multishot `RECV` armed for the whole run into a zcrx `CopyPool`
/// (the pool zerorx's copy mode receives into, defaults and all: a buffer goes back
/// to the kernel with a tail store, no system call), reaped by spinning on the
/// task-run flag; the send a plain `send`. Two system calls per message, as zerorx
/// makes: the send and the entry the flag asks for.
struct Uring {
    /// Declared before `pool`: the ring must close before the pool's memory goes
    /// (`CopyPool::register`'s contract).
    ring: IoUring,
    pool: CopyPool,
    armed: bool,
}

impl Uring {
    fn new() -> Result<Uring, String> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(64)
            .map_err(|e| format!("io_uring_setup: {e}"))?;
        // SAFETY: the pool lives in the same struct as the ring, declared after it,
        // so the ring is closed first.
        let pool = unsafe { CopyPool::register(&ring.submitter(), &CopyPoolConfig::default()) }
            .map_err(|e| format!("registering the receive pool: {e}"))?;
        Ok(Uring {
            ring,
            pool,
            armed: false,
        })
    }

    /// Copies what the receive completions there are carry into `buf` from `*got`
    /// on (the one copy a provider makes, into the application's buffer); each pool
    /// buffer goes back when its `RxBuf` drops.
    fn reap(&mut self, buf: &mut [u8; LEN], got: &mut usize) -> Result<(), String> {
        for c in self.ring.completion() {
            if !io_uring::cqueue::more(c.flags()) {
                self.armed = false;
            }
            match c.result() {
                0 => return Err("the peer closed".into()),
                n if n > 0 => {
                    let data = self
                        .pool
                        .take(n, c.flags())
                        .map_err(|e| format!("a receive completion: {e}"))?;
                    if *got + data.len() > LEN {
                        return Err("more than one message in flight".into());
                    }
                    buf[*got..*got + data.len()].copy_from_slice(&data);
                    *got += data.len();
                }
                // Out of buffers for a moment: the multishot ended; re-armed by `recv`.
                e if -e == libc::ENOBUFS => {}
                e => return Err(format!("recv: {}", std::io::Error::from_raw_os_error(-e))),
            }
        }
        Ok(())
    }
}

impl Receive for Uring {
    fn recv(&mut self, fd: RawFd, buf: &mut [u8; LEN]) -> Result<(), String> {
        let mut got = 0;
        while got < LEN {
            // Publishes the buffers returned since with one tail store.
            self.pool.maintain();
            if !self.armed {
                let recv = self.pool.recv_multishot(fd);
                // SAFETY: the receive's buffers are the pool's, which outlives the
                // ring (see the struct).
                unsafe { self.ring.submission().push(&recv) }.map_err(|_| "SQ full".to_string())?;
                self.armed = true;
                self.ring
                    .submit()
                    .map_err(|e| format!("io_uring_enter: {e}"))?;
            }
            if self.ring.submission().taskrun() {
                self.ring
                    .submit_and_wait(0)
                    .map_err(|e| format!("io_uring_enter: {e}"))?;
            }
            self.reap(buf, &mut got)?;
        }
        Ok(())
    }
}

/// `n` round trips; the client sends first.
fn rounds(s: &TcpStream, rx: &mut dyn Receive, n: usize, client: bool) -> Result<(), String> {
    let fd = s.as_raw_fd();
    let mut buf = [0u8; LEN];
    for i in 0..n {
        if client || i > 0 {
            rx.send(fd)?;
        }
        rx.recv(fd, &mut buf)?;
        if buf != MSG {
            return Err("a message arrived changed".into());
        }
    }
    // The echoing side's last reply.
    if !client {
        rx.send(fd)?;
    }
    Ok(())
}

/// Times `iters` round trips against a forked echoing peer, or (`echo_to`: the timing
/// side's port) is that peer.
fn run(way: &str, iters: usize, echo_to: Option<u16>) -> Result<(), String> {
    let way_of = |s: &TcpStream| -> Result<Box<dyn Receive>, String> {
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        match way {
            "socket" => Ok(Box::new(Socket)),
            "uring" => Ok(Box::new(Uring::new()?)),
            other => Err(format!("unknown way {other:?}: socket or uring")),
        }
    };
    if let Some(port) = echo_to {
        let s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
        let mut rx = way_of(&s)?;
        return rounds(&s, rx.as_mut(), WARM_UP + iters, false);
    }
    if !matches!(way, "socket" | "uring") {
        return Err(format!("unknown way {way:?}: socket or uring"));
    }
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut peer = Command::new(exe)
        .args([way, &iters.to_string(), "--peer", &port.to_string()])
        .spawn()
        .map_err(|e| format!("starting the peer: {e}"))?;
    let result = l
        .accept()
        .map_err(|e| format!("accept: {e}"))
        .and_then(|(s, _)| {
            let mut rx = way_of(&s)?;
            timed(&s, rx.as_mut(), iters)
        });
    let status = peer.wait().map_err(|e| e.to_string())?;
    let us = result?;
    if !status.success() {
        return Err(format!("the peer failed: {status}"));
    }
    println!("one-way-us {us:.2}");
    Ok(())
}

/// Runs the timing side and returns the one-way latency in microseconds.
fn timed(s: &TcpStream, rx: &mut dyn Receive, iters: usize) -> Result<f64, String> {
    rounds(s, rx, WARM_UP, true)?;
    let start = Instant::now();
    rounds(s, rx, iters, true)?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / iters as f64 / 2.0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: pingpong_floor socket|uring ITERS";
    let (Some(way), Some(Ok(iters))) = (args.first(), args.get(1).map(|n| n.parse::<usize>()))
    else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let peer = match args.get(2).map(String::as_str) {
        Some("--peer") => match args.get(3).map(|p| p.parse::<u16>()) {
            Some(Ok(p)) => Some(p),
            _ => {
                eprintln!("{usage}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    match run(way, iters, peer) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pingpong_floor: {e}");
            ExitCode::FAILURE
        }
    }
}
