//! The counted work's client: plain blocking sockets, a thread per connection, one
//! request in flight on each, every reply checked. Blocking threads rather than the
//! benchmarks' io_uring client: this client's cost is not measured, and the simplest
//! closed loop keeps the server's batching as steady as it can be.

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
                    scope.spawn(move || exchange_n(s, n, exchange))
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
