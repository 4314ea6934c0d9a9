//! TLS on zerorx: a hyper HTTP/1.1 server behind `zerorx::tls::accept` (feature
//! `rustls`: rustls driven by the receive buffers) and behind futures-rustls over
//! `compat()`, with a certificate made in the test (rcgen), checked by Debian's
//! `openssl s_client` and `curl --cacert`, by hyper's client over TLS on zerorx, and
//! against clients that do not speak TLS or do not trust the certificate.

use bytes::Bytes;
use futures_util::io::BufReader;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zerorx::hyper::HyperIo;
use zerorx::net::{TcpListener, TcpStream};
use zerorx::tls::rustls;

/// A certificate for `localhost`, its key, and the PEM file curl and openssl trust.
struct Cert {
    der: rustls::pki_types::CertificateDer<'static>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    pem_file: PathBuf,
}

fn cert(tag: &str) -> Cert {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("self-signed certificate");
    let dir = std::env::temp_dir().join(format!("zerorx-tls-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pem_file = dir.join("cert.pem");
    std::fs::write(&pem_file, made.cert.pem()).expect("write cert");
    Cert {
        der: made.cert.der().clone(),
        key: rustls::pki_types::PrivateKeyDer::Pkcs8(made.key_pair.serialize_der().into()),
        pem_file,
    }
}

type Body = UnsyncBoxBody<Bytes, hyper::Error>;

async fn handle(req: Request<Incoming>) -> Result<Response<Body>, hyper::Error> {
    Ok(match req.uri().path() {
        "/echo" => Response::new(req.into_body().boxed_unsync()),
        _ => Response::new(
            Full::new(Bytes::from_static(b"hello over tls\n"))
                .map_err(|never: Infallible| match never {})
                .boxed_unsync(),
        ),
    })
}

/// How the server's TLS runs.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// futures-rustls over `TcpStream::compat()`: any futures-io TLS crate works.
    Compat,
    /// zerorx's own: rustls driven by the receive buffers (`zerorx::tls`).
    Direct,
}

const MODES: [Mode; 2] = [Mode::Compat, Mode::Direct];

/// A TLS HTTP server on a zerorx worker thread of its own; stopped when dropped.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(cert: &Cert, mode: Mode) -> Server {
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der.clone()], cert.key.clone_key())
            .expect("server config");
        let config = Arc::new(config);
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let rt = zerorx::Runtime::builder()
                .threads(1)
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
                tx.send(l.local_addr().expect("addr")).expect("send addr");
                while !stopping.load(Ordering::SeqCst) {
                    let Ok((stream, _)) = l.accept().await else {
                        continue;
                    };
                    let config = config.clone();
                    drop(zerorx::spawn(async move {
                        let http = hyper::server::conn::http1::Builder::new();
                        let service = hyper::service::service_fn(handle);
                        // A failed handshake (plaintext, untrusted) just ends the connection.
                        match mode {
                            Mode::Compat => {
                                let acceptor = futures_rustls::TlsAcceptor::from(config);
                                if let Ok(tls) = acceptor.accept(stream.compat()).await {
                                    let io = HyperIo::from_io(BufReader::new(tls));
                                    let _ = http.serve_connection(io, service).await;
                                }
                            }
                            Mode::Direct => {
                                if let Ok(tls) = zerorx::tls::accept(stream, config).await {
                                    let io = HyperIo::from_io(BufReader::new(tls));
                                    let _ = http.serve_connection(io, service).await;
                                }
                            }
                        }
                    }));
                }
            });
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("server address");
        Server {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn curl(args: &[&str]) -> std::process::Output {
    Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20"])
        .args(args)
        .output()
        .expect("curl is missing: run scripts/test, or apt-get install curl")
}

#[test]
fn curl_trusts_the_certificate_and_gets_the_page() {
    for mode in MODES {
        curl_against(mode);
    }
}

fn curl_against(mode: Mode) {
    let cert = cert(&format!("curl-{mode:?}"));
    let s = Server::start(&cert, mode);
    let url = format!("https://localhost:{}/", s.addr.port());
    let resolve = format!("localhost:{}:127.0.0.1", s.addr.port());
    let ca = cert.pem_file.to_str().expect("utf-8 path");
    let out = curl(&["--cacert", ca, "--resolve", &resolve, &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"hello over tls\n");
    // Without the certificate curl refuses the server (exit 60: peer not verified).
    let out = curl(&["--resolve", &resolve, &url]);
    assert_eq!(
        out.status.code(),
        Some(60),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn openssl_s_client_verifies_the_handshake_and_reads_the_reply() {
    for mode in MODES {
        openssl_against(mode);
    }
}

fn openssl_against(mode: Mode) {
    let cert = cert(&format!("openssl-{mode:?}"));
    let s = Server::start(&cert, mode);
    let mut child = Command::new("openssl")
        .args(["s_client", "-brief", "-ign_eof", "-verify_return_error"])
        .args(["-servername", "localhost"])
        .args(["-connect", &s.addr.to_string()])
        .arg("-CAfile")
        .arg(&cert.pem_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl is missing: run scripts/test, or apt-get install openssl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("request");
    let out = child.wait_with_output().expect("openssl output");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains("Verification: OK"), "{stderr}");
    assert!(stdout.contains("hello over tls"), "{stdout}\n{stderr}");
}

#[test]
fn hyper_client_over_zerorx_tls_echoes_a_large_body() {
    for mode in MODES {
        hyper_client_against(mode);
    }
}

/// Opens a TLS client connection the way `mode` does.
async fn client_tls(
    mode: Mode,
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    name: &'static str,
) -> std::io::Result<HyperIo<BufReader<Box<dyn ClientIo>>>> {
    let stream = TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from(name).expect("name");
    let io: Box<dyn ClientIo> = match mode {
        Mode::Compat => Box::new(
            futures_rustls::TlsConnector::from(config)
                .connect(name, stream.compat())
                .await?,
        ),
        Mode::Direct => Box::new(zerorx::tls::connect(stream, config, name).await?),
    };
    Ok(HyperIo::from_io(BufReader::new(io)))
}

/// Either kind of client TLS stream.
trait ClientIo: futures_util::AsyncRead + futures_util::AsyncWrite + Unpin {}
impl<T: futures_util::AsyncRead + futures_util::AsyncWrite + Unpin> ClientIo for T {}

fn hyper_client_against(mode: Mode) {
    let cert = cert(&format!("client-{mode:?}"));
    let s = Server::start(&cert, mode);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der.clone()).expect("trust the certificate");
    let config = Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let data: Vec<u8> = (0..(2usize << 20))
        .map(|i| (i * 13 + i / 509) as u8)
        .collect();
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let io = client_tls(mode, s.addr, config.clone(), "localhost")
            .await
            .expect("handshake");
        let (mut send, conn) = hyper::client::conn::http1::Builder::new()
            .handshake::<_, Full<Bytes>>(io)
            .await
            .expect("http handshake");
        let conn = zerorx::spawn(conn);
        let res = send
            .send_request(Request::get("/").body(Full::default()).expect("request"))
            .await
            .expect("response");
        let body = res.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], b"hello over tls\n", "{mode:?}");
        let req = Request::post("/echo")
            .body(Full::new(Bytes::from(data.clone())))
            .expect("request");
        let res = send.send_request(req).await.expect("response");
        let body = res.into_body().collect().await.expect("body").to_bytes();
        assert!(
            body == data,
            "{mode:?}: 2 MiB echoed over TLS, {} bytes back",
            body.len()
        );
        drop(send);
        conn.await.expect("task").expect("clean end");
        // A name the certificate does not carry fails the handshake.
        let err = client_tls(mode, s.addr, config, "example.com")
            .await
            .expect_err("the certificate is for localhost only");
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::InvalidData,
            "{mode:?}: {err}"
        );
    });
}

#[test]
fn a_plaintext_client_is_refused_and_the_server_keeps_serving() {
    for mode in MODES {
        plaintext_against(mode);
    }
}

fn plaintext_against(mode: Mode) {
    let cert = cert(&format!("plain-{mode:?}"));
    let s = Server::start(&cert, mode);
    let mut c = std::net::TcpStream::connect(s.addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    c.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("plaintext request");
    let mut got = Vec::new();
    // The server answers with a TLS alert at most, then closes: no HTTP response.
    let _ = c.read_to_end(&mut got);
    assert!(!got.windows(5).any(|w| w == b"HTTP/"), "{got:?}");
    let url = format!("https://localhost:{}/", s.addr.port());
    let resolve = format!("localhost:{}:127.0.0.1", s.addr.port());
    let out = curl(&[
        "--cacert",
        cert.pem_file.to_str().expect("path"),
        "--resolve",
        &resolve,
        &url,
    ]);
    assert_eq!(
        out.stdout,
        b"hello over tls\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_peer_that_closes_without_close_notify_is_an_unexpected_eof() {
    use futures_util::{AsyncReadExt, AsyncWriteExt};
    let cert = cert("eof");
    let server_cfg = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der.clone()], cert.key.clone_key())
            .expect("server config"),
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der.clone()).expect("trust");
    let client_cfg = Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let addr = l.local_addr().expect("addr");
        // A server that finishes the handshake, sends a little, then drops the TCP
        // connection without close_notify.
        let server = zerorx::spawn(async move {
            let (s, _) = l.accept().await.expect("accept");
            let mut tls = zerorx::tls::accept(s, server_cfg).await.expect("handshake");
            tls.write_all(b"partial").await.expect("write");
            tls.flush().await.expect("flush");
            drop(tls);
            // A second client that hangs up before the handshake ends.
            let (s, _) = l.accept().await.expect("accept");
            drop(s);
        });
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let s = TcpStream::connect(addr).await.expect("connect");
        let mut tls = zerorx::tls::connect(s, client_cfg.clone(), name.clone())
            .await
            .expect("handshake");
        let mut got = Vec::new();
        let err = tls
            .read_to_end(&mut got)
            .await
            .expect_err("no close_notify");
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof, "{err}");
        assert_eq!(got, b"partial", "the data before the abrupt close arrives");
        let s = TcpStream::connect(addr).await.expect("connect");
        let err = zerorx::tls::connect(s, client_cfg, name)
            .await
            .expect_err("the server hung up mid-handshake");
        assert!(
            matches!(
                err.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ),
            "{err}"
        );
        server.await.expect("server task");
    });
}
