//! tokio's IO traits on [`Compat`] (feature `tokio-io`), so crates written against
//! `tokio::io::{AsyncRead, AsyncBufRead, AsyncWrite}` (tokio-util's codecs, tonic's
//! transport pieces) run on zerorx. Only the traits: no tokio runtime is involved.
//! Reads copy once into the caller's `ReadBuf` (`AsyncBufRead` reads the received
//! buffers in place); writes are [`Compat`]'s.

use super::{poll_copy_out, AsConnection, Compat};
use futures_io::{AsyncBufRead, AsyncWrite};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

impl<S: AsConnection + Unpin> tokio::io::AsyncRead for Compat<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.remaining();
        poll_copy_out(self.get_mut(), cx, room, |data| buf.put_slice(data)).map_ok(drop)
    }
}

impl<S: AsConnection + Unpin> tokio::io::AsyncBufRead for Compat<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        AsyncBufRead::poll_fill_buf(self, cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        AsyncBufRead::consume(self, amt)
    }
}

impl<S: AsConnection + Unpin> tokio::io::AsyncWrite for Compat<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        AsyncWrite::poll_write(self, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        AsyncWrite::poll_flush(self, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        AsyncWrite::poll_close(self, cx)
    }
}
