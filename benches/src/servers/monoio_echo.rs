//! The monoio echo server as monoio's users write it: a task per connection owning a
//! 64 KiB buffer that it lends to each `read` and `write_all` (io_uring, one read in
//! flight per connection).

use super::{loopback_any_port, no_stats, nodelay_listener, Ready, PEER_BUFFER};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use std::io;

/// Serves on one thread with a 4096-entry ring.
pub(super) fn serve(ready: Ready) -> io::Result<()> {
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(4096)
        .build()?;
    rt.block_on(async move {
        // `TCP_NODELAY` comes with each accepted socket, as for every server.
        let l = monoio::net::TcpListener::from_std(nodelay_listener(loopback_any_port())?)?;
        ready(l.local_addr()?, no_stats());
        loop {
            let (mut s, _) = l.accept().await?;
            monoio::spawn(async move {
                let mut buf = Vec::with_capacity(PEER_BUFFER);
                loop {
                    let (res, b) = s.read(buf).await;
                    buf = b;
                    match res {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    // `read` set the length to the bytes received; `write_all` sends them.
                    let (res, mut b) = s.write_all(buf).await;
                    if res.is_err() {
                        break;
                    }
                    b.clear();
                    buf = b;
                }
            });
        }
    })
}
