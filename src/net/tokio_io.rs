//! tokio's IO traits on [`Compat`] (feature `tokio-io`), so crates written against
//! `tokio::io::{AsyncRead, AsyncBufRead, AsyncWrite}` (tokio-util's codecs, tonic's
//! transport pieces) run on zerorx. Only the traits: no tokio runtime is involved.
//! Reads copy once into the caller's `ReadBuf` (`AsyncBufRead` reads the received
//! buffers in place); writes are [`Compat`]'s.

use super::{poll_copy_out, AsConnection, Compat};
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

/// tokio's `AsyncBufRead` and `AsyncWrite` for a type that has futures-io's: the same
/// calls under tokio's names (`poll_shutdown` is futures-io's `poll_close`). Used for
/// the socket's [`Compat`] and the file's `FileCompat`.
macro_rules! tokio_buf_read_and_write_from_futures_io {
    ([$($generics:tt)*] $ty:ty) => {
        impl<$($generics)*> tokio::io::AsyncBufRead for $ty {
            fn poll_fill_buf(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<&[u8]>> {
                futures_io::AsyncBufRead::poll_fill_buf(self, cx)
            }

            fn consume(self: std::pin::Pin<&mut Self>, amt: usize) {
                futures_io::AsyncBufRead::consume(self, amt)
            }
        }

        impl<$($generics)*> tokio::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures_io::AsyncWrite::poll_write(self, cx, buf)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                futures_io::AsyncWrite::poll_flush(self, cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                futures_io::AsyncWrite::poll_close(self, cx)
            }
        }
    };
}
pub(crate) use tokio_buf_read_and_write_from_futures_io;

tokio_buf_read_and_write_from_futures_io!([S: AsConnection + Unpin] Compat<S>);
