//! The counted work's client: plain blocking sockets, a thread per connection, one
//! request in flight on each, every reply checked. Blocking threads rather than the
//! benchmarks' io_uring client: this client's cost is not measured, and the simplest
//! closed loop keeps the server's batching as steady as it can be. A stream
//! (`Exchange::ahead` above 1) writes from one thread and reads from another, at most
//! `ahead` requests ahead of the echoes read: full duplex, with the amount in flight
//! bounded so the batching stays steady.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One request and what its reply looks like.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The bytes of one request.
    pub request: Vec<u8>,
    /// Its reply.
    pub reply: Reply,
    /// Requests written before the reply to the first of them is read: 1 is one
    /// request in flight; more makes the connection a full-duplex stream (echo
    /// replies only).
    pub ahead: usize,
}

/// The shape of a reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// The request's bytes, echoed.
    Echo,
    /// A 4-byte big-endian length and a frame of exactly that many bytes.
    Framed {
        /// The frame's length (the reply to the same call is always the same size).
        len: usize,
    },
}

/// A reply this long means the server is broken (or the count is wrong).
const IO_LIMIT: Duration = Duration::from_secs(120);

/// Open connections to a server, kept across the phases of a run.
pub(super) struct Clients {
    streams: Vec<TcpStream>,
}

impl Clients {
    /// Opens `connections` connections to `addr`.
    pub(super) fn connect(addr: SocketAddr, connections: usize) -> Result<Clients, String> {
        let streams = (0..connections)
            .map(|_| {
                let s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                s.set_read_timeout(Some(IO_LIMIT))
                    .map_err(|e| e.to_string())?;
                Ok(s)
            })
            .collect::<Result<_, String>>()?;
        Ok(Clients { streams })
    }

    /// Makes `requests` requests over the connections (spread evenly), each waiting
    /// for its reply before the next.
    pub(super) fn run(&mut self, requests: u64, exchange: &Exchange) -> Result<(), String> {
        let n = self.streams.len() as u64;
        let (per, extra) = (requests / n, requests % n);
        std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .streams
                .iter_mut()
                .enumerate()
                .map(|(i, s)| {
                    let n = per + u64::from((i as u64) < extra);
                    scope.spawn(move || match exchange.ahead {
                        0 | 1 => exchange_n(s, n, exchange),
                        ahead => stream_n(s, n, ahead, &exchange.request),
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err("client thread panicked".into()))
                })
                .collect::<Result<Vec<()>, String>>()
        })?;
        Ok(())
    }
}

fn exchange_n(s: &mut TcpStream, n: u64, exchange: &Exchange) -> Result<(), String> {
    let mut buf = vec![0u8; exchange.request.len().max(64)];
    for i in 0..n {
        s.write_all(&exchange.request)
            .map_err(|e| format!("request {i}: write: {e}"))?;
        match exchange.reply {
            Reply::Echo => {
                let got = &mut buf[..exchange.request.len()];
                s.read_exact(got)
                    .map_err(|e| format!("request {i}: reading the echo: {e}"))?;
                if *got != exchange.request[..] {
                    return Err(format!("request {i}: the echo differs from the request"));
                }
            }
            Reply::Framed { len } => {
                let mut head = [0u8; 4];
                s.read_exact(&mut head)
                    .map_err(|e| format!("request {i}: reading the reply's length: {e}"))?;
                let got = u32::from_be_bytes(head) as usize;
                if got + 4 != len {
                    return Err(format!(
                        "request {i}: a reply frame of {} bytes, expected {len}",
                        got + 4
                    ));
                }
                buf.resize(got.max(buf.len()), 0);
                s.read_exact(&mut buf[..got])
                    .map_err(|e| format!("request {i}: reading the reply: {e}"))?;
            }
        }
    }
    Ok(())
}

/// `n` copies of `request` written on `s` by one thread while another reads their
/// echoes, the writer at most `ahead` requests ahead.
fn stream_n(s: &mut TcpStream, n: u64, ahead: usize, request: &[u8]) -> Result<(), String> {
    let mut reader = s.try_clone().map_err(|e| format!("a second handle: {e}"))?;
    // A token per request in flight: the writer takes one before each write, the
    // reader gives one back per echo read.
    let (tokens, returned) = std::sync::mpsc::sync_channel::<()>(ahead);
    std::thread::scope(|scope| {
        let read = scope.spawn(move || {
            let mut got = vec![0u8; request.len()];
            for i in 0..n {
                reader
                    .read_exact(&mut got)
                    .map_err(|e| format!("chunk {i}: reading the echo: {e}"))?;
                if got != request {
                    return Err(format!("chunk {i}: the echo differs from the request"));
                }
                // The writer may have finished (its end of the channel gone).
                let _ = returned.recv();
            }
            Ok(())
        });
        for i in 0..n {
            if tokens.send(()).is_err() {
                // The reader failed; its error says why.
                break;
            }
            s.write_all(request)
                .map_err(|e| format!("chunk {i}: write: {e}"))?;
        }
        drop(tokens);
        read.join()
            .unwrap_or_else(|_| Err("stream reader panicked".into()))
    })
}
