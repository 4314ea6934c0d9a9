//! The tokio echo server as tokio's users write it: a task per connection with a
//! 64 KiB buffer, `read_buf` → `write_all` (epoll readiness). The buffer is a
//! `BytesMut` read into its spare capacity, so no connection pays for zeroing 64 KiB
//! (a `vec![0; 64 KiB]` per connection cost tokio ~9 % of its churn time), as the
//! monoio server's `Vec::with_capacity` does not either.

use super::{loopback_any_port, no_stats, nodelay_listener, Ready, PEER_BUFFER};
use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves on a `current_thread` runtime, or a multi-thread one with two workers.
pub(super) fn serve(multi_thread: bool, ready: Ready) -> io::Result<()> {
    let rt = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()?
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?
    };
    rt.block_on(async move {
        // `TCP_NODELAY` comes with each accepted socket, as for every server.
        let std_listener = nodelay_listener(loopback_any_port())?;
        std_listener.set_nonblocking(true)?;
        let l = tokio::net::TcpListener::from_std(std_listener)?;
        ready(l.local_addr()?, no_stats());
        loop {
            let (mut s, _) = l.accept().await?;
            tokio::spawn(async move {
                let mut buf = bytes::BytesMut::with_capacity(PEER_BUFFER);
                loop {
                    buf.clear();
                    match s.read_buf(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    if s.write_all(&buf).await.is_err() {
                        break;
                    }
                }
            });
        }
    })
}
