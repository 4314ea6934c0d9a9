//! Many idle connections: opened in batches (so no listen backlog overflows), each
//! pinged once so the server has really accepted and served it, then left alone.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Connections the client holds open and does nothing with.
pub struct IdleConns {
    conns: Vec<TcpStream>,
}

/// Size of the one ping each connection sends.
const PING: usize = 64;

impl IdleConns {
    /// Opens `n` connections to `addr`, `batch` at a time, and pings each once.
    pub fn open(addr: SocketAddr, n: usize, batch: usize) -> io::Result<IdleConns> {
        let mut conns = Vec::with_capacity(n);
        let timeout = Duration::from_secs(10);
        while conns.len() < n {
            let first = conns.len();
            let count = batch.max(1).min(n - first);
            for i in 0..count {
                let s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("idle connection {}: connect: {e}", first + i),
                    )
                })?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                conns.push(s);
            }
            for (i, s) in conns[first..].iter_mut().enumerate() {
                s.write_all(&ping(first + i))?;
            }
            for (i, s) in conns[first..].iter_mut().enumerate() {
                let mut back = [0u8; PING];
                s.read_exact(&mut back).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("idle connection {}: echo: {e}", first + i),
                    )
                })?;
                if back != ping(first + i) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "idle connection {}: the echo differs from the ping",
                            first + i
                        ),
                    ));
                }
            }
        }
        Ok(IdleConns { conns })
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether none are open.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }
}

fn ping(i: usize) -> [u8; PING] {
    let mut p = [0u8; PING];
    for (j, b) in p.iter_mut().enumerate() {
        *b = (i.wrapping_mul(31).wrapping_add(j)) as u8;
    }
    p
}
