//! The zerorx echo server: received pool buffers are sent back as they are (no copy in
//! user space), the buffers already received together in one gathered send; each
//! returns to the pool when its send completes.

use super::{loopback_any_port, Ready, ServerConfig, ServerStats};
use std::future::poll_fn;
use std::io;
use std::sync::Arc;
use std::task::Poll;
use zerorx::net::{SendBuf, TcpListener, TcpStream};
use zerorx::zcrx::RxBuf;
use zerorx::{spawn, Handle, Runtime};

/// Serves with `threads` workers, each accepting on its own `SO_REUSEPORT` listener.
pub(super) fn serve(threads: usize, cfg: &ServerConfig, ready: Ready) -> io::Result<()> {
    let pool = zcrx::CopyPoolConfig {
        buffers: cfg.pool_buffers,
        buffer_size: cfg.pool_buffer_size,
        ..zcrx::CopyPoolConfig::default()
    };
    let rt = Runtime::builder()
        .threads(threads)
        .copy_pool(Some(pool))
        .build()?;
    let gather = gather_limit(cfg);
    let handle = rt.handle().clone();
    // Every listener is bound before the address is announced, so the kernel spreads
    // the very first connections over all workers.
    let first = reuseport_listener(loopback_any_port())?;
    let addr = first.local_addr()?;
    for worker in 1..threads {
        let std_listener = reuseport_listener(addr)?;
        handle.spawn_on_with(worker, move || async move {
            match TcpListener::from_std(std_listener) {
                Ok(l) => accept_loop(l, gather).await,
                Err(e) => fail(e),
            }
        });
    }
    let stats_handle = handle.clone();
    rt.block_on(async move {
        let l = TcpListener::from_std(first)?;
        ready(addr, Arc::new(move || stats(&stats_handle)));
        accept_loop(l, gather).await;
        Ok(())
    })
}

fn reuseport_listener(addr: std::net::SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

async fn accept_loop(l: TcpListener, gather: usize) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                spawn(echo(s, gather));
            }
            Err(e) => fail(e),
        }
    }
}

/// How many received buffers one send gathers at most: one fewer than a receive takes
/// before it stops at the runtime's default hold limit (an eighth of the pool).
///
/// Sending each buffer on its own costs a send and a completion per buffer, and the
/// buffers received meanwhile wait in the pool (a 64 KiB stream measured ~1.2x tokio's
/// CPU per GB that way, ~1.0-1.1x gathered). Gathering everything a receive held would
/// re-arm the next receive while those buffers are still in the send, so each stream
/// could hold twice its limit and four streams the whole pool (`ENOBUFS`, measured);
/// one fewer keeps a stream at about one limit.
fn gather_limit(cfg: &ServerConfig) -> usize {
    (usize::from(cfg.pool_buffers) / 8).saturating_sub(1).max(1)
}

async fn echo(s: TcpStream, gather: usize) {
    let mut bufs: Vec<SendBuf> = Vec::new();
    while let Ok(Some(first)) = s.recv().await {
        bufs.push(first.into());
        let mut ended = false;
        while bufs.len() < gather {
            match already_received(&s).await {
                Some(Ok(Some(buf))) => bufs.push(buf.into()),
                // End of stream or an error: send what came before it, then stop.
                Some(_) => {
                    ended = true;
                    break;
                }
                None => break,
            }
        }
        let sent = if bufs.len() > 1 {
            s.send_vectored_owned(std::mem::take(&mut bufs)).await
        } else {
            match bufs.pop() {
                Some(one) => s.send(one).await,
                None => Ok(()),
            }
        };
        if sent.is_err() || ended {
            break;
        }
    }
}

/// The next buffer if it has arrived already; `None` if nothing has yet.
async fn already_received(s: &TcpStream) -> Option<io::Result<Option<RxBuf>>> {
    poll_fn(|cx| match s.poll_recv(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// An accept failure (e.g. out of file descriptors) ends the server loudly: the
/// benchmark sees the process die instead of a silently shrinking load.
fn fail(e: io::Error) -> ! {
    eprintln!("zerorx echo server: accept failed: {e}");
    std::process::exit(1)
}

fn stats(h: &Handle) -> ServerStats {
    let m = h.metrics();
    let pools: Vec<_> = h.pool_stats().into_iter().flatten().collect();
    ServerStats {
        enobufs: Some(m.iter().map(|w| w.recv_enobufs).sum()),
        rearms: Some(pools.iter().map(|p| p.rearms).sum()),
        pool_high_water: pools.iter().map(|p| p.high_water).max(),
        pool_chunks: pools.iter().map(|p| p.chunks_total).max(),
        enter_calls: Some(m.iter().map(|w| w.enter_calls).sum()),
        cqes: Some(m.iter().map(|w| w.cqes).sum()),
        loop_turns: Some(m.iter().map(|w| w.loop_turns).sum()),
        heap_bytes: None,
    }
}
