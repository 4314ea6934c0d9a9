//! The tokio echo server as tokio's users write it: a task per connection with a
//! 64 KiB buffer, `read` → `write_all` (epoll readiness).

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
                let mut buf = vec![0u8; PEER_BUFFER];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    })
}
