//! The zerorx echo server: received pool buffers are sent back as they are (no copy in
//! user space), the buffers already received together in one gathered send; each
//! returns to the pool when its send completes.

use super::{loopback_any_port, nodelay_listener, Ready, ServerConfig, ServerStats};
use futures_util::future::Either;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
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
    GATHER.store(gather_limit(cfg), Relaxed);
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

/// The server's [`gather_limit`], set once before any connection is served.
static GATHER: AtomicUsize = AtomicUsize::new(1);

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

async fn echo(s: TcpStream) {
    loop {
        // Nothing gathered lives across the awaits but the send itself, and the limit
        // is a static rather than an argument: an idle connection (W7) keeps neither a
        // buffer list nor room for one in its task.
        let first = match s.recv().await {
            Ok(Some(first)) => first,
            _ => break,
        };
        // The send is made first and awaited after the `match`: awaited inside its
        // arms, the task would keep room for the matched value across the await too
        // (a 72-byte future instead of 48).
        let send = match gathered(&s, first, GATHER.load(Relaxed)) {
            Gathered::One(buf) => Either::Left(s.send(buf)),
            Gathered::Many(bufs) => Either::Right(s.send_vectored_owned(bufs)),
        };
        if send.await.is_err() {
            break;
        }
    }
}

/// What one send carries.
enum Gathered {
    /// Only the buffer just received (nothing else had arrived).
    One(RxBuf),
    /// Several.
    Many(Vec<SendBuf>),
}

/// `first` and the buffers that have arrived already, `gather` at most, taken without
/// waiting ([`TcpStream::try_recv`], which registers no waker: the task's next `recv`
/// does). An end of stream (or error) found here stops the gathering; the next `recv`
/// meets the end (or a failure) too.
fn gathered(s: &TcpStream, first: RxBuf, gather: usize) -> Gathered {
    let mut bufs: Vec<SendBuf> = Vec::new();
    let mut pending = Some(first);
    while bufs.len() + usize::from(pending.is_some()) < gather {
        match s.try_recv() {
            Some(Ok(Some(next))) => {
                bufs.extend(pending.take().map(SendBuf::from));
                bufs.push(next.into());
            }
            _ => break,
        }
    }
    match pending {
        Some(one) => Gathered::One(one),
        None => Gathered::Many(bufs),
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
