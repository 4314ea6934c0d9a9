//! The client's event loop: a plain io_uring ring driving a set of connections, each
//! with a [`Role`], for a warm-up and then a measured window. What a run asks and
//! returns is in `plan`, the open loop's schedule in `arrivals`, churn's source
//! addresses in `churn`.

use super::arrivals::Arrivals;
use super::churn::{bind_source, churn_sources};
use super::pattern::{fill_request, Pattern};
use super::plan::{EngineResult, Plan, Probe, Role, Tally};
use crate::procfs;
use io_uring::{opcode, squeue, types, IoUring};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// The largest churn request sent without `TCP_NODELAY`: one segment on any path.
const NAGLE_FREE_REQUEST: usize = 536;

/// A churn cycle's close, through the ring (kind 0, so no other op is mistaken for it).
const CLOSE: u64 = 0;
const SEND: u64 = 1;
const RECV: u64 = 2;
const CONNECT: u64 = 3;
const KIND_BITS: u32 = 2;

fn user_data(conn: usize, kind: u64) -> u64 {
    ((conn as u64) << KIND_BITS) | kind
}

struct Conn {
    role: Role,
    fd: Option<OwnedFd>,
    tx: Box<[u8]>,
    rx: Box<[u8]>,
    /// Request in progress (request/response and churn roles).
    active: bool,
    connecting: bool,
    send_busy: bool,
    recv_busy: bool,
    sent: usize,
    got: usize,
    seq: u64,
    started: Instant,
    /// Start of the churn cycle whose close is in flight: the cycle is timed (and
    /// counted) when the close completes, while the next one may already run.
    closing: Option<Instant>,
    /// Scheduled start times waiting for this connection (open loop).
    queue: VecDeque<Instant>,
    /// Stream positions.
    tx_off: u64,
    rx_off: u64,
}

impl Conn {
    fn new(role: Role, now: Instant) -> Conn {
        let (tx, rx) = match role {
            Role::Closed { size } | Role::Open { size } | Role::Churn { size } => {
                (vec![0u8; size].into(), vec![0u8; size].into())
            }
            Role::Stream { chunk, .. } => (Box::default(), vec![0u8; chunk].into()),
        };
        Conn {
            role,
            fd: None,
            tx,
            rx,
            active: false,
            connecting: false,
            send_busy: false,
            recv_busy: false,
            sent: 0,
            got: 0,
            seq: 0,
            started: now,
            closing: None,
            queue: VecDeque::new(),
            tx_off: 0,
            rx_off: 0,
        }
    }

    fn raw_fd(&self) -> io::Result<types::Fd> {
        self.fd
            .as_ref()
            .map(|f| types::Fd(f.as_raw_fd()))
            .ok_or_else(|| io::Error::other("connection has no socket"))
    }
}

/// The client: a ring and its connections.
pub struct Engine {
    ring: IoUring,
    conns: Vec<Conn>,
    pattern: Pattern,
    addr: socket2::SockAddr,
    /// Source addresses churn connections bind to in turn ([`churn_sources`]).
    sources: Vec<SocketAddr>,
    next_source: usize,
    in_flight: usize,
    rr: Tally,
    stream: Tally,
    churn: Tally,
    /// Inside the measured window.
    counting: bool,
    /// Correct completions over the whole run.
    answered: u64,
}

impl Engine {
    /// Connects every non-churn connection of `plan` (blocking, before any timing).
    pub fn connect(plan: &Plan) -> io::Result<Engine> {
        let entries = (plan.roles.len() * 3 + 16).next_power_of_two().max(64) as u32;
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(entries * 2)
            .build(entries)
            .or_else(|_| IoUring::builder().setup_cqsize(entries * 2).build(entries))?;
        let max_chunk = plan
            .roles
            .iter()
            .map(|r| match *r {
                Role::Closed { size } | Role::Open { size } | Role::Churn { size } => size,
                Role::Stream { chunk, .. } => chunk,
            })
            .max()
            .unwrap_or(0);
        let now = Instant::now();
        let mut conns = Vec::with_capacity(plan.roles.len());
        for (i, role) in plan.roles.iter().enumerate() {
            let mut c = Conn::new(*role, now);
            if !matches!(role, Role::Churn { .. }) {
                let s = std::net::TcpStream::connect_timeout(&plan.addr, Duration::from_secs(5))
                    .map_err(|e| {
                        io::Error::new(e.kind(), format!("connection {i}: connect: {e}"))
                    })?;
                s.set_nodelay(true)?;
                c.fd = Some(OwnedFd::from(s));
            }
            conns.push(c);
        }
        Ok(Engine {
            ring,
            conns,
            pattern: Pattern::new(max_chunk),
            addr: plan.addr.into(),
            sources: churn_sources(plan.addr),
            next_source: 0,
            in_flight: 0,
            rr: Tally::new()?,
            stream: Tally::new()?,
            churn: Tally::new()?,
            counting: false,
            answered: 0,
        })
    }

    /// Runs the plan: warm-up, then the measured window (with `probe` called at its
    /// edges), then closes every connection. Any error, a wrong byte or a connection
    /// the server closed fails the run.
    pub fn run(mut self, plan: &Plan, probe: &mut dyn Probe) -> io::Result<EngineResult> {
        let outcome = self.drive(plan, probe);
        let drained = self.teardown();
        let result = outcome?;
        drained?;
        Ok(result)
    }

    fn drive(&mut self, plan: &Plan, probe: &mut dyn Probe) -> io::Result<EngineResult> {
        let start = Instant::now();
        let window_start_at = start + plan.warmup;
        let end_at = window_start_at + plan.measure;
        let open: Vec<usize> = (0..self.conns.len())
            .filter(|&i| matches!(self.conns[i].role, Role::Open { .. }))
            .collect();
        let mut arrivals = Arrivals::new(plan.open_rate, start);
        let mut next_open = 0;
        let mut window: Option<(Instant, Duration)> = None;
        loop {
            let now = Instant::now();
            if window.is_none() && now >= window_start_at {
                probe.window_start()?;
                self.counting = true;
                window = Some((Instant::now(), procfs::thread_cpu()));
            }
            let done = self.rr.ops + self.churn.ops;
            if now >= end_at || plan.max_ops.is_some_and(|m| window.is_some() && done >= m) {
                break;
            }
            if !open.is_empty() {
                while arrivals.next <= now {
                    self.conns[open[next_open]].queue.push_back(arrivals.next);
                    next_open = (next_open + 1) % open.len();
                    arrivals.advance();
                }
            }
            for i in 0..self.conns.len() {
                self.pump(i, now, start)?;
            }
            let mut deadline = end_at.min(now + Duration::from_millis(5));
            if window.is_none() {
                deadline = deadline.min(window_start_at);
            }
            if !open.is_empty() {
                deadline = deadline.min(arrivals.next.max(now + Duration::from_micros(20)));
            }
            self.wait(deadline.saturating_duration_since(now))?;
            self.reap(true)?;
        }
        self.counting = false;
        let end = Instant::now();
        let (w_start, cpu0) = window.unwrap_or((end, procfs::thread_cpu()));
        let client_cpu = procfs::thread_cpu().saturating_sub(cpu0);
        probe.window_end()?;
        Ok(EngineResult {
            window: end.saturating_duration_since(w_start),
            rr: self.rr.clone(),
            stream: self.stream.clone(),
            churn: self.churn.clone(),
            client_cpu,
            answered: self.answered,
        })
    }

    /// Submits what is queued and waits up to `timeout` for one completion.
    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        let ts = types::Timespec::from(timeout.max(Duration::from_micros(1)));
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(io::Error::new(e.kind(), format!("io_uring_enter: {e}"))),
        }
    }

    /// Queues an SQE, submitting first if the SQ is full.
    ///
    /// # Safety
    /// Every buffer and address `e` points to must stay valid until its completion is
    /// reaped (or for ever, if it never is).
    unsafe fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: forwarded from this function's contract.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                self.in_flight += 1;
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    fn push_send(&mut self, i: usize) -> io::Result<()> {
        self.push_send_flagged(i, squeue::Flags::empty())
    }

    /// Queues connection `i`'s send with `flags` (a churn cycle links it after its
    /// connect).
    fn push_send_flagged(&mut self, i: usize, flags: squeue::Flags) -> io::Result<()> {
        let c = &self.conns[i];
        let fd = c.raw_fd()?;
        let (ptr, len) = match c.role {
            Role::Stream { chunk, .. } => (self.pattern.at(c.tx_off, chunk).as_ptr(), chunk),
            _ => (c.tx[c.sent..].as_ptr(), c.tx.len() - c.sent),
        };
        let e = opcode::Send::new(fd, ptr, len as u32)
            .build()
            .flags(flags)
            .user_data(user_data(i, SEND));
        self.conns[i].send_busy = true;
        // SAFETY: the pattern and the connection's `tx` are heap buffers owned by the
        // engine, never resized; `teardown` waits for every completion before they
        // are freed (or leaks them).
        unsafe { self.push(e) }
    }

    fn push_recv(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.conns[i];
        let fd = c.raw_fd()?;
        let (ptr, len) = match c.role {
            Role::Stream { .. } => (c.rx.as_mut_ptr(), c.rx.len()),
            _ => (c.rx[c.got..].as_mut_ptr(), c.rx.len() - c.got),
        };
        let e = opcode::Recv::new(fd, ptr, len as u32)
            .build()
            .user_data(user_data(i, RECV));
        c.recv_busy = true;
        // SAFETY: `rx` is a heap buffer owned by the connection, never resized, only
        // read after this receive completes; `teardown` waits for every completion
        // before freeing it (or leaks it).
        unsafe { self.push(e) }
    }

    /// Queues a churn cycle's connect with its send and receive linked behind it: one
    /// submit for the three, and no completion to handle before the request goes out.
    /// If the connect fails, the kernel cancels the other two (`ECANCELED`), and the
    /// connect's own error comes first.
    fn push_connect(&mut self, i: usize) -> io::Result<()> {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        // A churn cycle's one request goes into an idle connection, which Nagle holds
        // back only past its first segment: a small one needs no TCP_NODELAY, which
        // would be a syscall per connection for nothing.
        if self.conns[i].tx.len() > NAGLE_FREE_REQUEST {
            s.set_nodelay(true)?;
        }
        if !self.sources.is_empty() {
            bind_source(&s, self.sources[self.next_source])?;
            self.next_source = (self.next_source + 1) % self.sources.len();
        }
        let fd = OwnedFd::from(s);
        let e = opcode::Connect::new(
            types::Fd(fd.as_raw_fd()),
            self.addr.as_ptr(),
            self.addr.len(),
        )
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(user_data(i, CONNECT));
        let c = &mut self.conns[i];
        c.fd = Some(fd);
        c.connecting = true;
        // SAFETY: the address lives in the engine until after `teardown`; the socket is
        // closed only once this connect has completed.
        unsafe { self.push(e) }?;
        self.push_send_flagged(i, squeue::Flags::IO_LINK)?;
        self.push_recv(i)
    }

    /// Queues the close of connection `i`'s socket, which ends its churn cycle; the
    /// queued request owns the fd from here on.
    fn push_close(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.conns[i];
        let fd =
            c.fd.take()
                .ok_or_else(|| io::Error::other("connection has no socket"))?;
        c.closing = Some(c.started);
        let e = opcode::Close::new(types::Fd(fd.into_raw_fd()))
            .build()
            .user_data(user_data(i, CLOSE));
        // SAFETY: CLOSE refers to no memory; the fd, no longer owned here, is closed by
        // this request (teardown waits for its completion like any other).
        unsafe { self.push(e) }
    }

    /// Starts whatever connection `i` should be doing and is not.
    fn pump(&mut self, i: usize, now: Instant, start: Instant) -> io::Result<()> {
        let c = &mut self.conns[i];
        match c.role {
            Role::Stream { pause, .. } => {
                let paused = pause.is_some_and(|p| {
                    let period = p.period.as_nanos().max(1);
                    let phase = now.saturating_duration_since(start).as_nanos() % period;
                    phase >= period.saturating_sub(p.stopped.as_nanos())
                });
                let (send_busy, recv_busy) = (c.send_busy, c.recv_busy);
                if !send_busy {
                    self.push_send(i)?;
                }
                if !recv_busy && !paused {
                    self.push_recv(i)?;
                }
            }
            Role::Closed { .. } | Role::Open { .. } | Role::Churn { .. } => {
                if c.active {
                    return Ok(());
                }
                let started = match c.role {
                    Role::Open { .. } => match c.queue.pop_front() {
                        Some(t) => t,
                        None => return Ok(()),
                    },
                    _ => now,
                };
                c.active = true;
                c.started = started;
                c.sent = 0;
                c.got = 0;
                c.seq += 1;
                fill_request(&mut c.tx, &self.pattern, c.seq ^ ((i as u64) << 40));
                if matches!(c.role, Role::Churn { .. }) {
                    self.push_connect(i)?;
                } else {
                    self.push_send(i)?;
                    self.push_recv(i)?;
                }
            }
        }
        Ok(())
    }

    /// Handles every completion in the CQ. With `live` false (teardown) results are
    /// only counted, not acted on.
    fn reap(&mut self, live: bool) -> io::Result<()> {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        // Counted before any is handled: an error returns early, and the completions
        // after it (e.g. the cancelled ops linked behind a failed connect) have left
        // the CQ all the same, so teardown must not wait for them.
        self.in_flight = self.in_flight.saturating_sub(cqes.len());
        for (ud, res) in cqes {
            let i = (ud >> KIND_BITS) as usize;
            let kind = ud & ((1 << KIND_BITS) - 1);
            if !live || i >= self.conns.len() {
                continue;
            }
            self.complete(i, kind, res)?;
        }
        Ok(())
    }

    fn complete(&mut self, i: usize, kind: u64, res: i32) -> io::Result<()> {
        let what = match kind {
            SEND => "send",
            RECV => "recv",
            CLOSE => "close",
            _ => "connect",
        };
        if res < 0 {
            let e = io::Error::from_raw_os_error(-res);
            return Err(io::Error::new(
                e.kind(),
                format!("connection {i}: {what}: {e}"),
            ));
        }
        if kind == CLOSE {
            self.finish_close(i);
            return Ok(());
        }
        let n = res as usize;
        if kind == RECV && n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("connection {i}: the server closed the connection"),
            ));
        }
        let counting = self.counting;
        let c = &mut self.conns[i];
        match (c.role, kind) {
            (Role::Stream { .. }, SEND) => {
                c.tx_off += n as u64;
                c.send_busy = false;
            }
            (Role::Stream { .. }, _) => {
                if c.rx[..n] != *self.pattern.at(c.rx_off, n) {
                    return Err(wrong_bytes(i, c.rx_off));
                }
                c.rx_off += n as u64;
                c.recv_busy = false;
                self.answered += 1;
                if counting {
                    self.stream.bytes += n as u64;
                    self.stream.ops += 1;
                }
            }
            (_, CONNECT) => {
                // The send and receive were linked behind it.
                c.connecting = false;
            }
            (_, SEND) => {
                c.sent += n;
                if c.sent < c.tx.len() {
                    self.push_send(i)?;
                } else {
                    c.send_busy = false;
                    self.finish_request(i)?;
                }
            }
            _ => {
                c.got += n;
                if c.got < c.rx.len() {
                    self.push_recv(i)?;
                } else {
                    c.recv_busy = false;
                    self.finish_request(i)?;
                }
            }
        }
        Ok(())
    }

    /// Completes a request once both its send and its echo are done.
    fn finish_request(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.conns[i];
        if c.send_busy || c.recv_busy || !c.active {
            return Ok(());
        }
        if c.rx != c.tx {
            return Err(wrong_bytes(i, 0));
        }
        c.active = false;
        self.answered += 1;
        if matches!(c.role, Role::Churn { .. }) {
            // Closing the socket is the last step of a churn cycle: it is timed and
            // counted when the close completes (`finish_close`).
            return self.push_close(i);
        }
        if self.counting {
            let size = c.tx.len() as u64;
            let ns = c.started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            self.rr.ops += 1;
            self.rr.bytes += size;
            self.rr.latency.saturating_record(ns.max(1));
        }
        Ok(())
    }

    /// Ends the churn cycle of connection `i` whose close completed.
    fn finish_close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(started) = c.closing.take() else {
            return;
        };
        if self.counting {
            let ns = started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            self.churn.ops += 1;
            self.churn.bytes += c.tx.len() as u64;
            self.churn.latency.saturating_record(ns.max(1));
        }
    }

    /// Shuts every socket down (which ends pending receives and sends) and waits, up
    /// to 5 s, for every op's completion; only then may the buffers be freed.
    fn teardown(&mut self) -> io::Result<()> {
        for c in &self.conns {
            if let Some(fd) = &c.fd {
                // SAFETY: shutdown on a socket fd this connection owns.
                unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.in_flight > 0 && Instant::now() < deadline {
            self.wait(Duration::from_millis(50))?;
            self.reap(false)?;
        }
        if self.in_flight > 0 {
            let n = self.in_flight;
            // The kernel may still write into these buffers: never free them.
            std::mem::forget(std::mem::take(&mut self.conns));
            return Err(io::Error::other(format!(
                "client: {n} operations did not complete within 5 s of shutdown"
            )));
        }
        Ok(())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.in_flight > 0 {
            // `run` was not called to its end (a panic unwound): keep every buffer the
            // kernel may still reference alive.
            std::mem::forget(std::mem::take(&mut self.conns));
        }
    }
}

fn wrong_bytes(i: usize, offset: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("connection {i}: the echo differs from what was sent (near offset {offset})"),
    )
}

#[cfg(test)]
mod tests;
