//! TLS over a [`TcpStream`] (feature `rustls`): rustls driven straight from the
//! receive buffers ([`TlsStream`], `AsyncRead + AsyncWrite`), ring as its crypto
//! provider. Wrapped in a `futures::io::BufReader` it serves hyper through
//! [`HyperIo::from_io`](crate::hyper::HyperIo::from_io).
//!
//! Why by hand rather than futures-rustls over [`Compat`](crate::net::Compat) (which
//! works too, and the tests check it): measured with
//! `cargo bench -p zerorx-bench --bench tls`, this stream moved a bulk transfer at
//! about 30x the rate of futures-rustls over `compat()` with 0.05x the process CPU per MiB
//! on this machine. Each received record is copied once into rustls either way
//! (decryption needs it in rustls's buffer); outgoing records are moved into the send
//! as rustls wrote them instead of passing through `Compat`'s write path.
//!
//! `rustls` itself is re-exported, so a `ServerConfig` built from
//! `zerorx::tls::rustls` matches the version used here.

mod direct;

pub use direct::TlsStream;
pub use rustls;

use crate::net::TcpStream;
use rustls::pki_types::ServerName;
use std::io;
use std::sync::Arc;

/// Runs the server side of a TLS handshake on `stream`.
///
/// Fails with the handshake's error (an `io::Error` of kind `InvalidData` for a peer
/// that does not speak TLS or offers nothing the config accepts; `UnexpectedEof` for
/// one that hangs up).
pub async fn accept(stream: TcpStream, config: Arc<rustls::ServerConfig>) -> io::Result<TlsStream> {
    TlsStream::accept(stream, config).await
}

/// Runs the client side of a TLS handshake with `server` (the name its certificate
/// must carry) on `stream`.
pub async fn connect(
    stream: TcpStream,
    config: Arc<rustls::ClientConfig>,
    server: ServerName<'static>,
) -> io::Result<TlsStream> {
    TlsStream::connect(stream, config, server).await
}
