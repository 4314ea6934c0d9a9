//! An HTTP server on every worker: HTTP/1.1 (keep-alive, pipelining, chunked bodies)
//! and HTTP/2 over cleartext with prior knowledge (h2c), told apart by each
//! connection's first bytes, with hyper on zerorx (`zerorx::hyper`).
//!
//! ```text
//! cargo run --release --example http [-- --addr 127.0.0.1:8080] [--threads N]
//! curl http://127.0.0.1:8080/                       # hello from worker N
//! curl --data-binary @file http://127.0.0.1:8080/echo    # the body back, streamed
//! curl --data-binary @file http://127.0.0.1:8080/sum     # "<bytes> <fnv1a64 hex>"
//! curl http://127.0.0.1:8080/chunks/5               # five chunks, chunked encoding
//! curl --http2-prior-knowledge http://127.0.0.1:8080/
//! ```
//!
//! Prints `listening on ADDR` once every worker listens (port 0 picks a free one).

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;
use zerorx::hyper::{HyperExecutor, HyperIo, HyperTimer};
use zerorx::net::{TcpListener, TcpStream};
use zerorx::Runtime;

type Body = UnsyncBoxBody<Bytes, hyper::Error>;

fn text(status: StatusCode, s: String) -> Response<Body> {
    let body = Full::new(Bytes::from(s)).map_err(|never: Infallible| match never {});
    let mut r = Response::new(body.boxed_unsync());
    *r.status_mut() = status;
    r
}

/// FNV-1a, 64 bits: a checksum the tests compute too.
fn fnv1a(mut h: u64, data: &[u8]) -> u64 {
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

async fn handle(req: Request<Incoming>, worker: usize) -> Result<Response<Body>, hyper::Error> {
    let path = req.uri().path().to_string();
    Ok(match (req.method().clone(), path.as_str()) {
        (Method::GET, "/") => text(
            StatusCode::OK,
            format!("hello from zerorx worker {worker}\n"),
        ),
        // The request body streamed back as it arrives.
        (Method::POST, "/echo") => Response::new(req.into_body().boxed_unsync()),
        (Method::POST, "/sum") => {
            let mut body = req.into_body();
            let (mut len, mut h) = (0u64, 0xcbf2_9ce4_8422_2325u64);
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame?.into_data() {
                    len += data.len() as u64;
                    h = fnv1a(h, &data);
                }
            }
            text(StatusCode::OK, format!("{len} {h:016x}\n"))
        }
        (Method::GET, p) if p.starts_with("/chunks/") => match p["/chunks/".len()..].parse::<u32>()
        {
            Ok(n) if n <= 10_000 => {
                let frames = (0..n).map(|i| Ok(Frame::data(Bytes::from(format!("chunk {i}\n")))));
                let body = StreamBody::new(futures_util::stream::iter(frames));
                Response::new(BodyExt::boxed_unsync(body))
            }
            _ => text(
                StatusCode::BAD_REQUEST,
                "chunks: a count up to 10000\n".into(),
            ),
        },
        _ => text(StatusCode::NOT_FOUND, format!("no route for {path}\n")),
    })
}

async fn serve_connection(stream: TcpStream, worker: usize) {
    let _ = stream.set_nodelay(true);
    let mut io = HyperIo::new(stream);
    let service = service_fn(move |req| handle(req, worker));
    let served = match io.starts_with_h2_preface().await {
        Ok(true) => {
            http2::Builder::new(HyperExecutor)
                .timer(HyperTimer)
                .serve_connection(io, service)
                .await
        }
        Ok(false) => {
            http1::Builder::new()
                .timer(HyperTimer)
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(io, service)
                .await
        }
        Err(_) => return,
    };
    if let Err(e) = served {
        if !peer_went_away(&e) {
            eprintln!("http: worker {worker}: {e} ({e:?})");
        }
    }
}

/// Whether a connection ended because its client went away (mid-request, or while a
/// handler read its body): the client's business, not a server error to log.
fn peer_went_away(e: &hyper::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                return true;
            }
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            // NotConnected: the peer was gone before the server shut its side down.
            if matches!(
                io.kind(),
                ConnectionReset | BrokenPipe | UnexpectedEof | NotConnected
            ) {
                return true;
            }
        }
        cause = c.source();
    }
    false
}

async fn accept_loop(listener: TcpListener, worker: usize) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => drop(zerorx::spawn(serve_connection(stream, worker))),
            Err(e) => {
                eprintln!("http: worker {worker}: accept: {e}");
                zerorx::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

fn main() {
    let mut addr: SocketAddr = "127.0.0.1:8080".parse().expect("default address");
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next();
        match (a.as_str(), value.as_deref().map(str::parse::<SocketAddr>)) {
            ("--addr", Some(Ok(v))) => addr = v,
            ("--threads", _) => match value.as_deref().map(str::parse::<usize>) {
                Some(Ok(n)) if n > 0 => threads = n,
                _ => exit_usage("--threads takes a count of at least 1"),
            },
            ("--addr", _) => exit_usage("--addr takes an address such as 127.0.0.1:8080"),
            _ => exit_usage(&format!("unknown argument {a}")),
        }
    }
    let rt = match Runtime::builder().threads(threads).build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("http: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let handle = rt.handle().clone();
    let result = rt.block_on(async move {
        let first = TcpListener::bind(addr)?;
        let addr = first.local_addr()?;
        // The other workers bind the same port (SO_REUSEPORT): the kernel spreads
        // connections over them.
        let mut ready = Vec::new();
        for w in 1..threads {
            let (tx, rx) = std::sync::mpsc::channel();
            drop(handle.spawn_on_with(w, move || async move {
                match TcpListener::bind(addr) {
                    Ok(l) => {
                        let _ = tx.send(Ok(()));
                        accept_loop(l, w).await;
                    }
                    Err(e) => drop(tx.send(Err(e))),
                }
            }));
            ready.push(rx);
        }
        for rx in ready {
            rx.recv().map_err(std::io::Error::other)??;
        }
        println!("listening on {addr}");
        accept_loop(first, 0).await;
        Ok::<(), std::io::Error>(())
    });
    if let Err(e) = result {
        eprintln!("http: {e}");
        std::process::exit(1);
    }
}

fn exit_usage(why: &str) -> ! {
    eprintln!("http: {why}\nusage: http [--addr ADDR] [--threads N]");
    std::process::exit(2);
}
