//! [`forward`] and [`forward_both`]: a proxy's data path that never touches the
//! payload. Each buffer received from one connection is queued, as it is, on the
//! other ([`Connection::queue_send`]): sent zero-copy where the runtime's
//! [`SendZeroCopy`](crate::SendZeroCopy) policy says it pays, and back in its receive
//! pool once the kernel has let go of it. With a zero-copy (ZCRX) pool the bytes go
//! from the NIC into the pool's area and out again from the same pages; with the copy
//! pool the kernel copies in, but no byte is copied in user space.

use super::{AsConnection, Connection};
use std::future::Future;
use std::io;
use std::net::Shutdown;
use std::pin::pin;
use std::task::Poll;

/// Bytes [`forward`] lets wait to be sent before it stops receiving: received buffers
/// waiting to go out are out of their pool meanwhile, so a slow receiving side slows
/// the sending one down (TCP's own backpressure) instead of draining the pool.
pub const FORWARD_BACKLOG: usize = 256 << 10;

/// Moves every byte `from` receives to `to`, until `from` ends; then flushes, shuts
/// down `to`'s sending side (the peer sees the end of stream) and returns the bytes
/// moved. Whenever more than `max_backlog` bytes wait to be sent on `to`
/// ([`FORWARD_BACKLOG`] is a good value), it waits for them to go before receiving
/// more.
///
/// Errors from either side end it: a receive failure of `from`, a send failure of
/// `to` (the peer reset, say), or the shutdown's.
///
/// ```no_run
/// # async fn f(client: zerorx::net::TcpStream, upstream: zerorx::net::TcpStream) -> std::io::Result<()> {
/// use zerorx::net::{forward, FORWARD_BACKLOG};
/// // One direction: the client's request body to the upstream server.
/// let n = forward(&client, &upstream, FORWARD_BACKLOG).await?;
/// println!("{n} bytes forwarded");
/// # Ok(()) }
/// ```
pub async fn forward(
    from: &impl AsConnection,
    to: &impl AsConnection,
    max_backlog: usize,
) -> io::Result<u64> {
    let (from, to) = (from.connection(), to.connection());
    let mut moved = 0u64;
    while let Some(buf) = from.recv().await? {
        moved += buf.len() as u64;
        to.queue_send(buf)?;
        if to.send_backlog() > max_backlog {
            to.flush_sends().await?;
        }
    }
    to.flush_sends().await?;
    to.shutdown(Shutdown::Write).await?;
    Ok(moved)
}

/// [`forward`] in both directions at once, in the calling task, until both sides
/// have ended their sending; returns the bytes moved `a` → `b` and `b` → `a`. The
/// first error ends both directions.
///
/// ```no_run
/// # async fn f(listener: zerorx::net::TcpListener, upstream: std::net::SocketAddr) -> std::io::Result<()> {
/// use zerorx::net::{forward_both, TcpStream, FORWARD_BACKLOG};
/// loop {
///     let (client, _) = listener.accept().await?;
///     zerorx::spawn(async move {
///         let server = TcpStream::connect(upstream).await?;
///         forward_both(&client, &server, FORWARD_BACKLOG).await
///     });
/// }
/// # }
/// ```
pub async fn forward_both(
    a: &impl AsConnection,
    b: &impl AsConnection,
    max_backlog: usize,
) -> io::Result<(u64, u64)> {
    let (a, b): (&Connection, &Connection) = (a.connection(), b.connection());
    let mut there = pin!(forward(a, b, max_backlog));
    let mut back = pin!(forward(b, a, max_backlog));
    let (mut to_b, mut to_a) = (None, None);
    std::future::poll_fn(|cx| {
        for (fut, out) in [
            (
                there.as_mut() as std::pin::Pin<&mut dyn Future<Output = _>>,
                &mut to_b,
            ),
            (back.as_mut(), &mut to_a),
        ] {
            if out.is_none() {
                if let Poll::Ready(r) = fut.poll(cx) {
                    *out = Some(r?);
                }
            }
        }
        match (to_b, to_a) {
            (Some(x), Some(y)) => Poll::Ready(Ok((x, y))),
            _ => Poll::Pending,
        }
    })
    .await
}
