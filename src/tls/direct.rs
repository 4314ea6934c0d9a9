//! A TLS stream driven by the receive buffers themselves: rustls's [`Connection`] fed
//! straight from each `RxBuf`, its records sent as owned buffers, one batch in flight.

use crate::net::TcpStream;
use bytes::Bytes;
use futures_io::{AsyncRead, AsyncWrite};
use rustls::Connection;
use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use zcrx::RxBuf;

type SendFuture = Pin<Box<dyn Future<Output = io::Result<()>>>>;

/// A TLS connection over a [`TcpStream`], as futures-io `AsyncRead` + `AsyncWrite`.
///
/// Writes return once rustls has taken the plaintext (encrypted into its send buffer,
/// up to rustls's buffer limit) and its records are on their way; `poll_flush` waits
/// until the kernel has them. `poll_close` sends `close_notify` and shuts the write
/// half down. A peer that closes without `close_notify` is an `UnexpectedEof` error.
pub struct TlsStream {
    stream: Rc<TcpStream>,
    conn: Connection,
    /// The received buffer being fed to rustls, and how far.
    rx: Option<(RxBuf, usize)>,
    /// The peer's end of stream was fed to rustls.
    eof: bool,
    /// Records in flight to the kernel.
    sending: Option<SendFuture>,
    /// The write half's shutdown, once `poll_close` started it.
    closing: Option<SendFuture>,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("stream", &self.stream)
            .field("handshaking", &self.conn.is_handshaking())
            .finish_non_exhaustive()
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsStream {
    /// The server side of a handshake on `stream`, driven by its receive buffers.
    pub async fn accept(
        stream: TcpStream,
        config: Arc<rustls::ServerConfig>,
    ) -> io::Result<TlsStream> {
        let conn = rustls::ServerConnection::new(config).map_err(tls_error)?;
        TlsStream::handshake(stream, conn.into()).await
    }

    /// The client side of a handshake with `server` on `stream`.
    pub async fn connect(
        stream: TcpStream,
        config: Arc<rustls::ClientConfig>,
        server: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<TlsStream> {
        let conn = rustls::ClientConnection::new(config, server).map_err(tls_error)?;
        TlsStream::handshake(stream, conn.into()).await
    }

    async fn handshake(stream: TcpStream, conn: Connection) -> io::Result<TlsStream> {
        let mut tls = TlsStream {
            stream: Rc::new(stream),
            conn,
            rx: None,
            eof: false,
            sending: None,
            closing: None,
        };
        std::future::poll_fn(|cx| tls.poll_handshake(cx)).await?;
        Ok(tls)
    }

    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            std::task::ready!(self.poll_send_all(cx))?;
            if !self.conn.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            if !std::task::ready!(self.poll_feed(cx))? {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed during the TLS handshake",
                )));
            }
        }
    }

    /// Starts sending what rustls has to send, if nothing is in flight.
    fn start_send(&mut self) -> io::Result<()> {
        if self.sending.is_some() || !self.conn.wants_write() {
            return Ok(());
        }
        let mut out = Vec::new();
        while self.conn.wants_write() {
            self.conn.write_tls(&mut out)?;
        }
        let stream = self.stream.clone();
        let bytes = Bytes::from(out);
        self.sending = Some(Box::pin(async move { stream.send(bytes).await }));
        Ok(())
    }

    /// Drives the send in flight; `Ready` once nothing is in flight.
    fn poll_sending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(send) = self.sending.as_mut() {
            let done = std::task::ready!(send.as_mut().poll(cx));
            self.sending = None;
            done?;
        }
        Poll::Ready(Ok(()))
    }

    /// Sends everything rustls has to send and waits until the kernel took it.
    fn poll_send_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            std::task::ready!(self.poll_sending(cx))?;
            if !self.conn.wants_write() {
                return Poll::Ready(Ok(()));
            }
            self.start_send()?;
        }
    }

    /// Feeds rustls the next received bytes and processes them; `false` once the
    /// peer's end of stream has reached rustls.
    fn poll_feed(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if self.rx.is_none() {
            if self.eof {
                return Poll::Ready(Ok(false));
            }
            match std::task::ready!(self.stream.poll_recv(cx))? {
                Some(buf) => self.rx = Some((buf, 0)),
                None => {
                    self.eof = true;
                    // An empty read tells rustls the stream ended.
                    self.conn.read_tls(&mut io::empty())?;
                    self.conn.process_new_packets().map_err(tls_error)?;
                    return Poll::Ready(Ok(false));
                }
            }
        }
        let Some((buf, pos)) = self.rx.as_mut() else {
            return Poll::Ready(Ok(false));
        };
        let n = self.conn.read_tls(&mut &buf[*pos..])?;
        *pos += n;
        if *pos == buf.len() {
            // Fed whole: the chunk goes back to its pool now.
            self.rx = None;
        }
        let processed = self.conn.process_new_packets();
        // Alerts and handshake replies go out even when processing failed.
        self.start_send()?;
        processed.map_err(tls_error)?;
        Poll::Ready(Ok(true))
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        loop {
            match this.conn.reader().read(out) {
                // `Ok(0)` is the peer's close_notify.
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            // Replies rustls owes (key updates) go out while we wait.
            if let Poll::Ready(Err(e)) = this.poll_sending(cx) {
                return Poll::Ready(Err(e));
            }
            this.start_send()?;
            if !std::task::ready!(this.poll_feed(cx))? {
                // The end of stream reached rustls: the reader now says how it ended.
                return Poll::Ready(match this.conn.reader().read(out) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed without close_notify",
                    )),
                    other => other,
                });
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // One batch of records in flight at a time: the previous one first.
        std::task::ready!(this.poll_sending(cx))?;
        // Nothing is in flight, so rustls's send buffer was drained into the last
        // batch: it takes up to its buffer limit now, and its records leave at once.
        let n = this.conn.writer().write(data)?;
        this.start_send()?;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_send_all(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.closing.is_none() {
            this.conn.send_close_notify();
            std::task::ready!(this.poll_send_all(cx))?;
            let stream = this.stream.clone();
            this.closing = Some(Box::pin(async move {
                stream.shutdown(std::net::Shutdown::Write).await
            }));
        }
        match this.closing.as_mut() {
            Some(close) => close.as_mut().poll(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}
