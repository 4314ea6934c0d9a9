//! hyper 1.x on zerorx (feature `hyper`): [`HyperIo`] puts a [`TcpStream`] behind
//! hyper's `rt::Read`/`rt::Write`, [`HyperExecutor`] spawns hyper's background tasks
//! (HTTP/2 streams, client connections) on the current worker, and [`HyperTimer`]
//! gives hyper zerorx timers (header-read timeouts, HTTP/2 keep-alive).
//!
//! Why by hand: hyper's runtime traits are three small traits with no adapter crate
//! for a completion-based runtime; `hyper-util`'s adapters are tokio's.
//!
//! A hyper sleep is one allocation (the box hyper's `Timer` returns) holding a zerorx
//! [`Sleep`](crate::time::Sleep) as it is, and a reset moves that sleep's deadline in
//! place, as `hyper-util`'s tokio timer does: hyper resets a connection's header-read
//! and keep-alive timers on every request, and a reset used to be a new sleep. There
//! is no thread guard around it (there was a `SendWrapper`, a second box): hyper asks
//! for `Send + Sync` sleeps, and zerorx's `Sleep` is both by design (futures given to
//! `Handle::spawn_on` sleep). It is registered with the worker that polls it; dropped
//! or reset on another thread it leaves its timer on the first worker, which fires
//! into a waker nobody waits on; polled off any worker it panics, saying so. None of
//! that is unsound, so the guard bought nothing but an allocation. hyper keeps a
//! connection's timers with the connection, on its worker, anyway.
//!
//! ```no_run
//! use http_body_util::Full;
//! use hyper::body::Bytes;
//! use hyper::{server::conn::http1, service::service_fn, Response};
//! use zerorx::hyper::HyperIo;
//!
//! let rt = zerorx::Runtime::builder().threads(1).build()?;
//! let served: std::io::Result<()> = rt.block_on(async {
//!     let listener = zerorx::net::TcpListener::bind("127.0.0.1:8080".parse().unwrap())?;
//!     loop {
//!         let (stream, _) = listener.accept().await?;
//!         zerorx::spawn(async move {
//!             let hello = service_fn(|_req| async {
//!                 Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from("hi"))))
//!             });
//!             let _ = http1::Builder::new().serve_connection(HyperIo::new(stream), hello).await;
//!         });
//!     }
//! });
//! served?;
//! # Ok::<(), std::io::Error>(())
//! ```

use crate::net::{poll_copy_out, AsConnection, Compat, TcpStream};
use futures_io::{AsyncBufRead, AsyncWrite};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A [`TcpStream`] (a [`UnixStream`](crate::net::UnixStream) through
/// `HyperIo::from_io(stream.compat())`, or any futures-io stream with a read buffer)
/// as hyper IO.
///
/// Reads copy each received buffer once, into hyper's read buffer (hyper's API hands
/// us its memory); a buffer hyper does not take whole is kept for the next read.
/// Writes are [`Compat`]'s: each is copied into an owned buffer (registered send
/// memory when it will go out zero-copy: a large body) and queued on the connection;
/// a flush waits until the kernel has sent it.
///
/// Any `AsyncBufRead + AsyncWrite` works through [`from_io`](HyperIo::from_io): a TLS
/// stream (feature `rustls`) wrapped in a `futures::io::BufReader`, for one.
pub struct HyperIo<T = Compat> {
    inner: T,
}

impl<T> HyperIo<T> {
    /// `io`, for hyper.
    pub fn from_io(io: T) -> HyperIo<T> {
        HyperIo { inner: io }
    }

    /// The stream back.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl HyperIo<Compat> {
    /// `stream`, for hyper.
    pub fn new(stream: TcpStream) -> HyperIo {
        HyperIo {
            inner: stream.compat(),
        }
    }
}

impl<S: AsConnection + Unpin> HyperIo<Compat<S>> {
    /// The stream as the adapter holds it.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref()
    }

    /// Whether the client opened with HTTP/2's connection preface (h2c with prior
    /// knowledge), for a server that speaks both versions on one port. Waits for the
    /// first received bytes and looks at them without consuming them: the server
    /// reads them again. A first receive shorter than the 24-byte preface counts as
    /// HTTP/2 when it is a prefix of it (no HTTP/1 request line is).
    pub async fn starts_with_h2_preface(&mut self) -> io::Result<bool> {
        const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        std::future::poll_fn(|cx| {
            Pin::new(&mut self.inner).poll_fill_buf(cx).map_ok(|data| {
                let n = data.len().min(PREFACE.len());
                n > 0 && data[..n] == PREFACE[..n]
            })
        })
        .await
    }
}

impl<T> std::fmt::Debug for HyperIo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperIo").finish_non_exhaustive()
    }
}

impl<T: AsyncBufRead + Unpin> ::hyper::rt::Read for HyperIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ::hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // An end of stream puts nothing, as hyper expects.
        let room = buf.remaining();
        poll_copy_out(&mut self.inner, cx, room, |data| buf.put_slice(data)).map_ok(drop)
    }
}

impl<T: AsyncWrite + Unpin> ::hyper::rt::Write for HyperIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }
}

/// Runs hyper's background futures as tasks of the current worker (they need not be
/// `Send`: they never leave it).
///
/// # Panics
/// `execute` panics off a zerorx worker thread, as [`spawn`](crate::spawn) does.
#[derive(Clone, Copy, Debug, Default)]
pub struct HyperExecutor;

impl<F> ::hyper::rt::Executor<F> for HyperExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, fut: F) {
        drop(crate::spawn(fut));
    }
}

/// zerorx timers for hyper: each sleep one allocation, each reset none.
#[derive(Clone, Copy, Debug, Default)]
pub struct HyperTimer;

/// A zerorx [`Sleep`](crate::time::Sleep) as hyper's `rt::Sleep`.
struct TimerSleep(crate::time::Sleep);

impl Future for TimerSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // `Sleep` is `Unpin`: it keeps its timer by key, not by address.
        Pin::new(&mut self.0).poll(cx)
    }
}

impl ::hyper::rt::Sleep for TimerSleep {}

impl ::hyper::rt::Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(TimerSleep(crate::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(TimerSleep(crate::time::sleep_until(deadline)))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn ::hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<TimerSleep>() {
            Some(mine) => mine.get_mut().0.reset(new_deadline),
            // Another timer's sleep: replaced, as hyper's default reset does.
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}
