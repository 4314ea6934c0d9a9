//! [`FileCompat`]: a [`File`] behind the futures-io traits (`AsyncRead`, `AsyncBufRead`,
//! `AsyncWrite`, `AsyncSeek`), and tokio's with the `tokio-io` feature, so code written
//! against them (`futures::io::copy`, line readers, codecs) reads and writes files on
//! zerorx.
//!
//! The traits lend their buffers only for the call while io_uring needs memory it owns
//! until the op completes, so, as with the socket's [`Compat`](crate::net::Compat), a
//! read fills an owned buffer of its own (read-ahead of [`READ_AHEAD`] bytes) that
//! `poll_read` copies out of (`poll_fill_buf` hands it out in place), and a write
//! copies the caller's bytes. Code that can pass owned buffers should call [`File`]'s
//! methods directly.

use super::File;
use bytes::{Buf, Bytes, BytesMut};
use futures_io::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite};
use std::future::Future;
use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

/// Bytes one read asks the kernel for: large enough that sequential reads cost few
/// ops, small enough to stay in cache.
pub const READ_AHEAD: usize = 64 * 1024;

type ReadFuture = Pin<Box<dyn Future<Output = io::Result<(usize, BytesMut)>>>>;
type WriteFuture = Pin<Box<dyn Future<Output = io::Result<()>>>>;
type SizeFuture = Pin<Box<dyn Future<Output = io::Result<u64>>>>;

/// A [`File`] with a position of its own, behind the futures-io traits.
///
/// The traits lend their buffers only for the call while io_uring needs memory it
/// owns until the op completes, so a read fills an owned buffer of its own
/// ([`READ_AHEAD`] bytes) that `poll_read` copies out of (`poll_fill_buf` hands it out
/// in place), and a write copies the caller's bytes. Code that can pass owned buffers
/// should call [`File`]'s methods directly.
///
/// A write returns `Ready(n)` once the kernel has written all `n` bytes at the
/// position. After `poll_write` returns `Pending` the write is already under way: call
/// it again with the same bytes (every futures combinator does); different bytes get
/// an `InvalidInput` error. `poll_flush` waits for a write in flight and `poll_close`
/// also flushes; neither syncs to the device (call [`File::sync_all`] for that).
/// Bytes read ahead are dropped by a write or a seek, so reads always see what was
/// written before them.
///
/// ```no_run
/// # zerorx::Runtime::new()?.block_on(async {
/// use futures_util::io::{AsyncBufReadExt, AsyncWriteExt};
/// let mut out = zerorx::fs::File::create("/tmp/zerorx-lines").await?.compat();
/// out.write_all(b"one\ntwo\n").await?;
/// out.close().await?;
/// let lines = zerorx::fs::File::open("/tmp/zerorx-lines").await?.compat().lines();
/// # let _ = lines;
/// # Ok::<_, std::io::Error>(()) })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct FileCompat {
    file: Rc<File>,
    /// Where the next read or write goes.
    pos: u64,
    /// Bytes read ahead from `pos` on, not yet consumed.
    ahead: BytesMut,
    reading: Option<ReadFuture>,
    write: WriteState,
    /// A seek from the end waiting for the file's size.
    sizing: Option<SizeFuture>,
    /// tokio's two-call seek: the target between `start_seek` and `poll_complete`.
    #[cfg(feature = "tokio-io")]
    seek_to: Option<SeekFrom>,
}

enum WriteState {
    Idle,
    /// A write of `data` at the position in flight.
    Writing {
        data: Bytes,
        fut: WriteFuture,
    },
    /// `data` was written (a flush drove it) but no `poll_write` has reported it.
    Written {
        data: Bytes,
    },
}

impl FileCompat {
    /// Wraps `file`, starting at its position.
    pub fn new(file: File) -> FileCompat {
        let pos = file.position();
        FileCompat {
            file: Rc::new(file),
            pos,
            ahead: BytesMut::new(),
            reading: None,
            write: WriteState::Idle,
            sizing: None,
            #[cfg(feature = "tokio-io")]
            seek_to: None,
        }
    }

    /// The file.
    pub fn get_ref(&self) -> &File {
        &self.file
    }

    /// The position the next read or write uses.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Drops what was read ahead: a write or a seek makes it stale.
    fn forget_ahead(&mut self) {
        self.ahead.clear();
        self.reading = None;
    }

    /// Drives a write in flight to its end, then moves the position past it.
    fn poll_write_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let WriteState::Writing { fut, .. } = &mut self.write {
            let res = ready!(fut.as_mut().poll(cx));
            let data = match std::mem::replace(&mut self.write, WriteState::Idle) {
                WriteState::Writing { data, .. } => data,
                _ => Bytes::new(),
            };
            res?;
            self.pos += data.len() as u64;
            self.write = WriteState::Written { data };
        }
        Poll::Ready(Ok(()))
    }
}

impl File {
    /// This file behind the futures-io traits (see [`FileCompat`]).
    pub fn compat(self) -> FileCompat {
        FileCompat::new(self)
    }
}

impl AsyncBufRead for FileCompat {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        ready!(this.poll_write_done(cx))?;
        if this.ahead.is_empty() {
            let fut = this.reading.get_or_insert_with(|| {
                let (file, at) = (this.file.clone(), this.pos);
                Box::pin(async move { file.read_at(BytesMut::with_capacity(READ_AHEAD), at).await })
            });
            let res = ready!(fut.as_mut().poll(cx));
            this.reading = None;
            let (_, buf) = res?;
            // Empty at the end of the file; a later read looks again (it may grow).
            this.ahead = buf;
        }
        Poll::Ready(Ok(&this.ahead[..]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        let amt = amt.min(this.ahead.len());
        this.ahead.advance(amt);
        this.pos += amt as u64;
    }
}

impl FileCompat {
    /// Copies up to `room` bytes into `put` from what was read ahead, reading more
    /// first if nothing is; `0` at the end of the file.
    fn poll_copy_out(
        &mut self,
        cx: &mut Context<'_>,
        room: usize,
        put: impl FnOnce(&[u8]),
    ) -> Poll<io::Result<usize>> {
        let data = ready!(Pin::new(&mut *self).poll_fill_buf(cx))?;
        let n = data.len().min(room);
        put(&data[..n]);
        Pin::new(self).consume(n);
        Poll::Ready(Ok(n))
    }
}

impl AsyncRead for FileCompat {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let room = buf.len();
        self.get_mut()
            .poll_copy_out(cx, room, |data| buf[..data.len()].copy_from_slice(data))
    }
}

impl AsyncWrite for FileCompat {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        match &this.write {
            WriteState::Writing { data, .. } | WriteState::Written { data }
                if data[..] != buf[..data.len().min(buf.len())] || data.len() > buf.len() =>
            {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "poll_write called with other bytes while an earlier write was under way",
                )));
            }
            WriteState::Idle => {
                this.forget_ahead();
                let data = Bytes::copy_from_slice(buf);
                let (file, at, bytes) = (this.file.clone(), this.pos, data.clone());
                let fut: WriteFuture = Box::pin(async move { file.write_all_at(bytes, at).await });
                this.write = WriteState::Writing { data, fut };
            }
            _ => {}
        }
        ready!(this.poll_write_done(cx))?;
        match std::mem::replace(&mut this.write, WriteState::Idle) {
            WriteState::Written { data } => Poll::Ready(Ok(data.len())),
            _ => Poll::Ready(Ok(0)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_write_done(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_write_done(cx)
    }
}

impl AsyncSeek for FileCompat {
    fn poll_seek(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        to: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        ready!(this.poll_write_done(cx))?;
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => this.pos.checked_add_signed(d),
            SeekFrom::End(d) => {
                let fut = this.sizing.get_or_insert_with(|| {
                    let file = this.file.clone();
                    Box::pin(async move { file.metadata().await.map(|m| m.len()) })
                });
                let size = ready!(fut.as_mut().poll(cx));
                this.sizing = None;
                size?.checked_add_signed(d)
            }
        };
        let Some(target) = target else {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "seeking {} to {to:?} from {}: before the start or past u64",
                    this.file.path().display(),
                    this.pos
                ),
            )));
        };
        if target != this.pos {
            this.forget_ahead();
            this.pos = target;
        }
        Poll::Ready(Ok(target))
    }
}

#[cfg(feature = "tokio-io")]
mod tokio_io {
    //! tokio's IO traits on [`FileCompat`]: the same reads, writes and seeks.

    use super::FileCompat;
    use futures_io::AsyncSeek;
    use std::io::{self, SeekFrom};
    use std::pin::Pin;
    use std::task::{Context, Poll};

    impl tokio::io::AsyncRead for FileCompat {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let room = buf.remaining();
            self.get_mut()
                .poll_copy_out(cx, room, |data| buf.put_slice(data))
                .map_ok(drop)
        }
    }

    crate::net::tokio_io::tokio_buf_read_and_write_from_futures_io!([] FileCompat);

    /// tokio splits a seek in two calls: the target is kept until it completes.
    impl tokio::io::AsyncSeek for FileCompat {
        fn start_seek(self: Pin<&mut Self>, to: SeekFrom) -> io::Result<()> {
            let this = self.get_mut();
            if this.seek_to.is_some() {
                return Err(io::Error::other(
                    "start_seek called while another seek is under way",
                ));
            }
            this.seek_to = Some(to);
            Ok(())
        }

        fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
            let this = self.get_mut();
            let Some(to) = this.seek_to else {
                return Poll::Ready(Ok(this.pos));
            };
            let res = std::task::ready!(AsyncSeek::poll_seek(Pin::new(&mut *this), cx, to));
            this.seek_to = None;
            Poll::Ready(res)
        }
    }
}
