//! The two HTTP servers the bench compares, each run in a child process of the bench
//! binary: hyper 1.x HTTP/1.1 on zerorx (`zerorx::hyper`) and on tokio's
//! current-thread runtime (`hyper-util`'s `TokioIo`), one thread each, the same
//! handler (a 12-byte body), keep-alive on.

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use std::convert::Infallible;
use std::io::{self, Write};

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// hyper on zerorx.
    Zerorx,
    /// hyper on tokio current_thread.
    Tokio,
}

impl Kind {
    /// Both, in the bench's order.
    pub const ALL: [Kind; 2] = [Kind::Zerorx, Kind::Tokio];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Zerorx => "zerorx",
            Kind::Tokio => "tokio",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

async fn hello(_req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(
        b"hello world\n",
    ))))
}

/// Serves `kind` on a free loopback port until killed; prints `listening on ADDR`.
pub fn serve(kind: Kind) -> io::Result<()> {
    match kind {
        Kind::Zerorx => serve_zerorx(),
        Kind::Tokio => serve_tokio(),
    }
}

fn announce(addr: std::net::SocketAddr) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "listening on {addr}")?;
    out.flush()
}

fn serve_zerorx() -> io::Result<()> {
    use zerorx::hyper::{HyperIo, HyperTimer};
    let rt = zerorx::Runtime::builder().threads(1).build()?;
    rt.block_on(async {
        let listener = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr"))?;
        announce(listener.local_addr()?)?;
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            drop(zerorx::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(HyperTimer)
                    .serve_connection(HyperIo::new(stream), service_fn(hello))
                    .await;
            }));
        }
    })
}

fn serve_tokio() -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        announce(listener.local_addr()?)?;
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::task::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service_fn(hello))
                    .await;
            });
        }
    })
}
