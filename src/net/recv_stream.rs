//! [`RecvStream`]: a connection's received buffers as a `futures_core::Stream`.

use super::TcpStream;
use futures_core::{FusedStream, Stream};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use zcrx::RxBuf;

/// The buffers a [`TcpStream`] receives, as a [`Stream`] of
/// `io::Result<RxBuf>` that ends at end of stream.
///
/// The same zero-copy buffers as [`TcpStream::recv`], without a future per item. An
/// error is yielded once and ends the stream. Like `recv`, one consumer at a time.
/// `S` is how the stream is held: `&TcpStream` (from
/// [`TcpStream::recv_stream`]), `TcpStream` or `Rc<TcpStream>`.
pub struct RecvStream<S: AsRef<TcpStream>> {
    stream: S,
    done: bool,
}

impl<S: AsRef<TcpStream>> RecvStream<S> {
    /// A stream of what `stream` receives.
    pub fn new(stream: S) -> Self {
        RecvStream {
            stream,
            done: false,
        }
    }

    /// The connection, e.g. to send on it.
    pub fn get_ref(&self) -> &TcpStream {
        self.stream.as_ref()
    }

    /// The connection back.
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl TcpStream {
    /// What this connection receives, as a [`RecvStream`].
    pub fn recv_stream(&self) -> RecvStream<&TcpStream> {
        RecvStream::new(self)
    }
}

impl<S: AsRef<TcpStream> + Unpin> Stream for RecvStream<S> {
    type Item = io::Result<RxBuf>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match this.stream.as_ref().poll_recv(cx) {
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

impl<S: AsRef<TcpStream> + Unpin> FusedStream for RecvStream<S> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}
