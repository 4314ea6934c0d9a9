//! The tokio echo server as tokio's users write it: a task per connection with a
//! 64 KiB buffer, `read` → `write_all` (epoll readiness).

use super::{loopback_any_port, no_stats, Ready, PEER_BUFFER};
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
        let l = tokio::net::TcpListener::bind(loopback_any_port()).await?;
        ready(l.local_addr()?, no_stats());
        loop {
            let (mut s, _) = l.accept().await?;
            let _ = s.set_nodelay(true);
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
