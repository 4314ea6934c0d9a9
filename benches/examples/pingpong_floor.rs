//! The floor under any provider's small-message latency on this host: a 128-byte
//! TCP ping-pong over loopback between two processes that do nothing else, busy
//! polling like `fi_rdm_pingpong`, in two ways:
//!
//! - `socket`: non-blocking `recv` in a loop, `send` (what `tcp;ofi_rxm` does under
//!   its provider layers);
//! - `uring`: receives the way zerorx does, on a ring set up as zerorx sets up its
//!   own (single issuer, deferred task work, the task-run flag): one multishot
//!   `RECV` into a registered buffer ring, reaped by spinning on the task-run flag,
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

use io_uring::{opcode, types, IoUring};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

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

/// The ring: one multishot `RECV` armed for the whole run, taking buffers from a
/// registered buffer ring (a buffer goes back with a store to the ring's tail, no
/// system call), reaped by spinning on the task-run flag; the send a plain `send`.
/// Two system calls per message, as zerorx makes: the send and the entry the flag
/// asks for.
struct Uring {
    ring: IoUring,
    fd: RawFd,
    /// The buffer ring's entries (`BUFS` of them, page-aligned, mapped here).
    entries: *mut types::BufRingEntry,
    /// The buffers, `BUFS` of `LEN` bytes.
    pool: Vec<u8>,
    /// The tail this side has published.
    tail: u16,
    armed: bool,
}

/// Buffers in the ring (a power of two).
const BUFS: u16 = 16;
/// The buffer group's id.
const GROUP: u16 = 7;
/// Bytes of the buffer ring's mapping.
const RING_BYTES: usize = 4096;

impl Uring {
    fn new(fd: RawFd) -> Result<Uring, String> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(64)
            .map_err(|e| format!("io_uring_setup: {e}"))?;
        // SAFETY: a fresh anonymous private mapping; checked for failure below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RING_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        let mut u = Uring {
            ring,
            fd,
            entries: map.cast(),
            pool: vec![0; LEN * BUFS as usize],
            tail: 0,
            armed: false,
        };
        // SAFETY: `entries` is a page-aligned mapping of RING_BYTES (room for BUFS
        // entries) that lives until `Drop`, after the ring has gone.
        unsafe {
            u.ring
                .submitter()
                .register_buf_ring_with_flags(map as u64, BUFS, GROUP, 0)
                .map_err(|e| format!("registering the buffer ring: {e}"))?;
        }
        for bid in 0..BUFS {
            u.give_back(bid);
        }
        Ok(u)
    }

    /// Puts buffer `bid` back in the ring for the kernel to fill.
    fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (BUFS - 1)) as usize;
        // SAFETY: `slot < BUFS` entries of the mapping; the kernel does not read an
        // entry past the published tail, and this one is published only below.
        let e = unsafe { &mut *self.entries.add(slot) };
        e.set_addr(self.pool[bid as usize * LEN..].as_mut_ptr() as u64);
        e.set_len(LEN as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail field sits in the first entry of the live mapping; the
        // release store publishes the entry written above.
        unsafe {
            let tail = types::BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// Copies what the receive completions there are carry into `buf` from `*got`
    /// on (the one copy a provider makes, into the application's buffer), handing
    /// each buffer back.
    fn reap(&mut self, buf: &mut [u8; LEN], got: &mut usize) -> Result<(), String> {
        loop {
            // One completion at a time: the queue's view ends before the buffer goes
            // back (both borrow the ring's side).
            let Some(c) = self.ring.completion().next() else {
                return Ok(());
            };
            if !io_uring::cqueue::more(c.flags()) {
                self.armed = false;
            }
            match c.result() {
                0 => return Err("the peer closed".into()),
                n if n > 0 => {
                    let n = n as usize;
                    if *got + n > LEN {
                        return Err("more than one message in flight".into());
                    }
                    let bid = io_uring::cqueue::buffer_select(c.flags())
                        .ok_or("a receive completion without its buffer")?;
                    let at = bid as usize * LEN;
                    buf[*got..*got + n].copy_from_slice(&self.pool[at..at + n]);
                    *got += n;
                    self.give_back(bid);
                }
                // Out of buffers for a moment: the multishot ended; re-armed by `recv`.
                e if -e == libc::ENOBUFS => {}
                e => return Err(format!("recv: {}", std::io::Error::from_raw_os_error(-e))),
            }
        }
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel stops using the ring's entries here (a receive still armed
        // fails with ENOBUFS instead), so the mapping can go.
        let _ = self.ring.submitter().unregister_buf_ring(GROUP);
        // SAFETY: the mapping made in `new`, of that size, no longer registered.
        unsafe { libc::munmap(self.entries.cast(), RING_BYTES) };
    }
}

impl Receive for Uring {
    fn recv(&mut self, _fd: RawFd, buf: &mut [u8; LEN]) -> Result<(), String> {
        let mut got = 0;
        while got < LEN {
            if !self.armed {
                let recv = opcode::RecvMulti::new(types::Fd(self.fd), GROUP).build();
                // SAFETY: the receive's buffers come from the registered ring, whose
                // memory outlives the ring (see `Drop`).
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
            "uring" => Ok(Box::new(Uring::new(s.as_raw_fd())?)),
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
