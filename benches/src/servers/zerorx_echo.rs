//! The zerorx echo server: each received pool buffer is sent back as it is (no copy in
//! user space); its buffer returns to the pool when the send completes.

use super::{loopback_any_port, Ready, ServerConfig, ServerStats};
use std::io;
use std::sync::Arc;
use zerorx::net::{TcpListener, TcpStream};
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
    let handle = rt.handle().clone();
    // Every listener is bound before the address is announced, so the kernel spreads
    // the very first connections over all workers.
    let first = reuseport_listener(loopback_any_port())?;
    let addr = first.local_addr()?;
    for worker in 1..threads {
        let std_listener = reuseport_listener(addr)?;
        handle.spawn_on_with(worker, move || async move {
            match TcpListener::from_std(std_listener) {
                Ok(l) => accept_loop(l).await,
                Err(e) => fail(e),
            }
        });
    }
    let stats_handle = handle.clone();
    rt.block_on(async move {
        let l = TcpListener::from_std(first)?;
        ready(addr, Arc::new(move || stats(&stats_handle)));
        accept_loop(l).await;
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

async fn accept_loop(l: TcpListener) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                spawn(echo(s));
            }
            Err(e) => fail(e),
        }
    }
}

async fn echo(s: TcpStream) {
    while let Ok(Some(buf)) = s.recv().await {
        if s.send(buf).await.is_err() {
            break;
        }
    }
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
