//! The zerorx echo server: received pool buffers are sent back as they are (no copy in
//! user space), queued with no task waiting (the runtime gathers what arrives during a
//! send into the next); each returns to the pool when its send completes.

use super::{loopback_any_port, nodelay_listener, Ready, ServerConfig, ServerStats};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
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
    BACKLOG.store(backlog_limit(cfg), Relaxed);
    let handle = rt.handle().clone();
    // Every listener is bound before the address is announced, so the kernel spreads
    // the very first connections over all workers.
    let first = nodelay_listener(loopback_any_port())?;
    let addr = first.local_addr()?;
    for worker in 1..threads {
        let std_listener = nodelay_listener(addr)?;
        handle.spawn_on_with(worker, move || async move {
            match TcpListener::from_std(std_listener) {
                Ok(l) => accept_loop(l).await,
                Err(e) => fail(e),
            }
        });
    }
    let stats_handle = handle.clone();
    rt.block_on(async move {
        crate::count::spawn_exit_listener();
        let l = TcpListener::from_std(first)?;
        ready(addr, Arc::new(move || stats(&stats_handle)));
        accept_loop(l).await;
        Ok(())
    })
}

/// Serves every connection `l` accepts. The echo needs no peer address, so none is
/// asked for (a `getpeername` fewer per connection), and `TCP_NODELAY` comes from the
/// listener.
async fn accept_loop(l: TcpListener) {
    loop {
        match l.accept_stream().await {
            Ok(s) => {
                spawn(echo(s));
            }
            Err(e) => fail(e),
        }
    }
}

/// The server's [`backlog_limit`], set once before any connection is served.
static BACKLOG: AtomicUsize = AtomicUsize::new(1);

/// How many bytes a connection queues for sending before it waits for them: the
/// buffers a receive takes before it stops at the runtime's default hold limit (an
/// eighth of the pool), less one.
///
/// Queued received buffers stay out of the pool until they are sent. Unbounded, a
/// stream whose peer reads slowly would hold the pool's buffers in its queue while
/// its receive keeps taking more (four streams held the whole pool: `ENOBUFS`,
/// measured); bounded at about one hold limit, a stream keeps about one limit.
fn backlog_limit(cfg: &ServerConfig) -> usize {
    let buffers = (usize::from(cfg.pool_buffers) / 8).saturating_sub(1).max(1);
    buffers * cfg.pool_buffer_size as usize
}

/// Sends each received buffer back as it is, with no task waiting for the send
/// ([`TcpStream::queue_send`]): the runtime gathers what arrives while a send is in
/// flight into the next one. The limit is a static rather than an argument, so an idle
/// connection (W7) keeps no room for it in its task.
async fn echo(s: TcpStream) {
    loop {
        let buf = match s.recv().await {
            Ok(Some(buf)) => buf,
            _ => return,
        };
        if s.queue_send(buf).is_err() {
            return;
        }
        if s.send_backlog() > BACKLOG.load(Relaxed) {
            let flushed = s.flush_sends().await;
            if flushed.is_err() {
                return;
            }
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

#[cfg(test)]
mod tests {
    use zerorx::net::TcpStream;

    /// The size of the future `f` returns.
    fn returned<R>(_: &impl Fn(TcpStream) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    #[test]
    fn an_idle_echo_task_stays_small() {
        // W7 measures this future in every idle connection's task.
        let n = returned(&super::echo);
        assert!(n <= 48, "the echo future is {n} B");
    }
}
