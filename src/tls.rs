//! TLS over a [`TcpStream`] (feature `rustls`): rustls through `futures-rustls`, on
//! the stream's futures-io face ([`Compat`]). [`accept`] and [`connect`] hand back
//! futures-rustls streams, which are `AsyncRead + AsyncWrite`; wrapped in a
//! `futures::io::BufReader` they serve hyper through
//! [`HyperIo::from_io`](crate::hyper::HyperIo::from_io) too.
//!
//! Why through futures-rustls: it is rustls's maintained async adapter, and the TLS
//! record layer needs the plaintext in its own buffers anyway (decryption writes it
//! there), so a receive buffer is copied once into rustls either way.
//!
//! `rustls` itself is re-exported, with `ring` as its crypto provider, so a
//! `ServerConfig` built from `zerorx::tls::rustls` matches the version used here.

use crate::net::{Compat, TcpStream};
pub use futures_rustls::rustls;
use futures_rustls::rustls::pki_types::ServerName;
pub use futures_rustls::{client, server};
use std::io;
use std::sync::Arc;

/// Runs the server side of a TLS handshake on `stream`.
///
/// Fails with the handshake's error (an `io::Error` of kind `InvalidData` for a peer
/// that does not speak TLS or offers nothing the config accepts).
pub async fn accept(
    stream: TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> io::Result<server::TlsStream<Compat>> {
    futures_rustls::TlsAcceptor::from(config)
        .accept(stream.compat())
        .await
}

/// Runs the client side of a TLS handshake with `server` (the name its certificate
/// must carry) on `stream`.
pub async fn connect(
    stream: TcpStream,
    config: Arc<rustls::ClientConfig>,
    server: ServerName<'static>,
) -> io::Result<client::TlsStream<Compat>> {
    futures_rustls::TlsConnector::from(config)
        .connect(server, stream.compat())
        .await
}
