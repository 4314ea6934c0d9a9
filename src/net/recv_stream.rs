//! [`RecvStream`]: a connection's received buffers as a `futures_core::Stream`.

use super::{AsConnection, Connection};
use futures_core::{FusedStream, Stream};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use zcrx::RxBuf;

/// The buffers a connection receives, as a [`Stream`] of `io::Result<RxBuf>` that
/// ends at end of stream.
///
/// The same zero-copy buffers as [`Connection::recv`], without a future per item. An
/// error is yielded once and ends the stream. Like `recv`, one consumer at a time.
/// `S` is how the connection is held ([`AsConnection`]): `&Connection` (from
/// [`Connection::recv_stream`]), a `TcpStream` or `UnixStream`, or an `Rc` of one.
pub struct RecvStream<S: AsConnection> {
    stream: S,
    done: bool,
}

impl<S: AsConnection> RecvStream<S> {
    /// A stream of what `stream` receives.
    pub fn new(stream: S) -> Self {
        RecvStream {
            stream,
            done: false,
        }
    }

    /// The connection as it is held, e.g. to send on it.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The connection back.
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl Connection {
    /// What this connection receives, as a [`RecvStream`].
    pub fn recv_stream(&self) -> RecvStream<&Connection> {
        RecvStream::new(self)
    }
}

impl<S: AsConnection + Unpin> Stream for RecvStream<S> {
    type Item = io::Result<RxBuf>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match this.stream.connection().poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(Some(buf))) => Poll::Ready(Some(Ok(buf))),
            Poll::Ready(Ok(None)) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Err(e)) => {
                this.done = true;
                Poll::Ready(Some(Err(e)))
            }
        }
    }
}

impl<S: AsConnection + Unpin> FusedStream for RecvStream<S> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}
