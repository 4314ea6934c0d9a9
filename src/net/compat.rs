//! [`Compat`]: a connection (TCP or Unix) as futures-io
//! `AsyncRead`/`AsyncBufRead`/`AsyncWrite`, so code written against those traits
//! (codecs, `futures::io::copy`, line readers) runs on zerorx.

use super::{AsConnection, Connection, TcpStream, UnixStream};
use crate::runtime::{RegisteredBuf, REGISTERED_CHUNK};
use bytes::Bytes;
use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use zcrx::RxBuf;

type OpFuture = Pin<Box<dyn Future<Output = io::Result<()>>>>;

/// A connection behind the futures-io traits: a [`TcpStream`] (the default, shared in
/// an `Rc`), or any [`AsConnection`], e.g. an `Rc<UnixStream>`.
///
/// # Reading copies
/// `AsyncRead::poll_read` hands us the caller's memory, so the received buffer is
/// copied into it; the rest of a partly read buffer is kept (holding its pool chunk)
/// for the next read. [`AsyncBufRead`] is implemented on the received buffers
/// themselves, so `fill_buf`/`consume` users (line readers, `futures::io::copy_buf`)
/// read without that copy. Code that can take owned buffers should use
/// [`Connection::recv`] or [`FrameReader`](super::FrameReader) instead.
///
/// # Writing copies
/// `AsyncWrite::poll_write` borrows the caller's slice only for the call, but the
/// kernel reads the data later, so it is copied into a `Bytes` and queued on the
/// connection ([`Connection::queue_send`]): the write returns `Ready(n)` at once, the
/// runtime sends it on with no task waiting (zero-copy where the runtime's
/// [`SendZeroCopy`](crate::SendZeroCopy) policy says it pays: a large HTTP body, say),
/// and what several writes queue meanwhile goes out in one gathered send. Past
/// [`WRITE_BACKLOG`] bytes queued and not yet sent, `poll_write` waits until they are
/// (backpressure from a slow reader). A send failure is returned by the next
/// `poll_write`, `poll_flush` or `poll_close`. A write that will go out zero-copy is
/// copied into the worker's registered send arena instead
/// ([`RegisteredBuf`](crate::runtime::RegisteredBuf), at most one 64 KiB chunk per
/// call), so the kernel does not pin it per send. `poll_flush` waits until everything
/// written is sent; `poll_close` also shuts down the write half. Dropping the adapter
/// leaves what was written to be sent (the connection stays open until it is).
pub struct Compat<S: AsConnection = Rc<TcpStream>> {
    stream: S,
    /// The received buffer being read from, and how far.
    rx: Option<(RxBuf, usize)>,
    eof: bool,
    write: WriteState,
}

/// Bytes a [`Compat`] lets wait to be sent before `poll_write` waits for them.
pub const WRITE_BACKLOG: usize = 256 << 10;

enum WriteState {
    Open,
    /// Flushing, then the write half's shutdown in flight.
    Closing(OpFuture),
    Closed,
}

impl<S: AsConnection> Compat<S> {
    /// Wraps a stream; held in an `Rc`, other tasks may keep sending on it
    /// (interleaving is theirs to avoid).
    pub fn new(stream: S) -> Compat<S> {
        Compat {
            stream,
            rx: None,
            eof: false,
            write: WriteState::Open,
        }
    }

    /// The connection as it is held.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The connection back, with the received bytes not read yet (nothing is dropped).
    /// Bytes written and not yet sent are still sent: flush first to know they were.
    pub fn into_inner(self) -> (S, Bytes) {
        let rest = match self.rx {
            Some((buf, pos)) => buf.into_bytes().slice(pos..),
            None => Bytes::new(),
        };
        (self.stream, rest)
    }
}

impl TcpStream {
    /// This stream behind the futures-io traits (see [`Compat`] for what copies).
    pub fn compat(self) -> Compat {
        Compat::new(Rc::new(self))
    }
}

impl UnixStream {
    /// This stream behind the futures-io traits (see [`Compat`] for what copies).
    pub fn compat(self) -> Compat<Rc<UnixStream>> {
        Compat::new(Rc::new(self))
    }
}

impl Connection {
    /// This connection behind the futures-io traits (see [`Compat`] for what copies).
    pub fn compat(self) -> Compat<Rc<Connection>> {
        Compat::new(Rc::new(self))
    }
}

impl<S: AsConnection + Unpin> AsyncBufRead for Compat<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.rx.is_none() && !this.eof {
            match std::task::ready!(this.stream.connection().poll_recv(cx))? {
                Some(buf) => this.rx = Some((buf, 0)),
                None => this.eof = true,
            }
        }
        Poll::Ready(Ok(match &this.rx {
            Some((buf, pos)) => &buf[*pos..],
            None => &[],
        }))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        if let Some((buf, pos)) = &mut this.rx {
            *pos = (*pos + amt).min(buf.len());
            if *pos == buf.len() {
                // Fully read: give the chunk back to the pool now.
                this.rx = None;
            }
        }
    }
}

impl<S: AsConnection> std::fmt::Debug for Compat<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compat")
            .field("stream", self.stream.connection())
            .field(
                "buffered",
                &self.rx.as_ref().map_or(0, |(b, pos)| b.len() - pos),
            )
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

/// Hands up to `room` bytes of what `reader` has buffered to `put`, consumes them and
/// returns their count: the one copy of a received buffer that a read trait bringing
/// its own memory (futures-io's, tokio's, hyper's) makes. Nothing is put at the end of
/// the stream; a buffer not taken whole stays for the next read.
pub(crate) fn poll_copy_out<R: AsyncBufRead + Unpin + ?Sized>(
    reader: &mut R,
    cx: &mut Context<'_>,
    room: usize,
    put: impl FnOnce(&[u8]),
) -> Poll<io::Result<usize>> {
    let avail = std::task::ready!(Pin::new(&mut *reader).poll_fill_buf(cx))?;
    let n = avail.len().min(room);
    put(&avail[..n]);
    Pin::new(reader).consume(n);
    Poll::Ready(Ok(n))
}

impl<S: AsConnection + Unpin> AsyncRead for Compat<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let room = out.len();
        poll_copy_out(self.get_mut(), cx, room, |data| {
            out[..data.len()].copy_from_slice(data)
        })
    }
}

impl<S: AsConnection + Unpin> AsyncWrite for Compat<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !matches!(this.write, WriteState::Open) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "write after poll_close",
            )));
        }
        let conn = this.stream.connection();
        if conn.send_backlog() > WRITE_BACKLOG {
            std::task::ready!(conn.poll_flush_sends(cx))?;
        }
        if buf.is_empty() {
            return Poll::Ready(conn.sends_done().unwrap_or(Ok(())).map(|()| 0));
        }
        // A write that will go out zero-copy is copied into registered memory (a
        // chunk at a time: the caller writes the rest next), so the kernel does not
        // pin its pages per send; with the arena full, into the heap as usual.
        if conn.would_send_zero_copy(buf.len().min(REGISTERED_CHUNK)) {
            // An arena that cannot be registered was reported once, by the call that
            // tried; the bytes go from the heap then.
            if let Ok(Some(mut chunk)) = RegisteredBuf::new() {
                let n = buf.len().min(REGISTERED_CHUNK);
                chunk.extend_from_slice(&buf[..n])?;
                conn.queue_send_more(chunk)?;
                return Poll::Ready(Ok(n));
            }
        }
        // A writer's writes come in runs ended by a flush (a response's head and body,
        // TLS records): they wait for the turn's end and go out together, none at once
        // on its own.
        conn.queue_send_more(Bytes::copy_from_slice(buf))?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match &mut this.write {
            WriteState::Open => this.stream.connection().poll_flush_sends(cx),
            WriteState::Closing(fut) => {
                let res = std::task::ready!(fut.as_mut().poll(cx));
                this.write = WriteState::Closed;
                Poll::Ready(res)
            }
            WriteState::Closed => Poll::Ready(Ok(())),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if matches!(this.write, WriteState::Open) {
            std::task::ready!(this.stream.connection().poll_flush_sends(cx))?;
            this.write = WriteState::Closing(Box::pin(
                this.stream
                    .connection()
                    .shutdown_op(std::net::Shutdown::Write),
            ));
        }
        match &mut this.write {
            WriteState::Closing(fut) => {
                let res = std::task::ready!(fut.as_mut().poll(cx));
                this.write = WriteState::Closed;
                Poll::Ready(res)
            }
            _ => Poll::Ready(Ok(())),
        }
    }
}
