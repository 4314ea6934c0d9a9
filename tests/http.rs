//! hyper on zerorx, end to end: the `http` example (HTTP/1.1 and h2c on every worker)
//! driven by Debian's `curl` and by hyper's own client running on zerorx: keep-alive,
//! pipelining, chunked responses, large uploads with every byte checked, a client that
//! hangs up mid-body, and HTTP/2 with concurrent streams on one connection.
//!
//! The server is the example binary (`cargo test` builds examples); `curl` comes with
//! `scripts/test` (Debian `curl`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper::{Method, Request};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zerorx::hyper::{HyperExecutor, HyperIo, HyperTimer};
use zerorx::net::TcpStream;

/// The example server, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start() -> Server {
        // Test binaries are in target/<profile>/deps, examples in target/<profile>/examples.
        let exe: PathBuf = std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.join("examples/http")))
            .expect("target directory");
        let built = std::fs::metadata(&exe).and_then(|m| m.modified());
        let built = built.unwrap_or_else(|_| {
            panic!(
                "{} is missing: build it with `cargo build --example http` (`cargo test` \
                 builds it)",
                exe.display()
            )
        });
        // `cargo test --test http` alone does not rebuild examples: never test a stale one.
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let newest = newest_change(&[root.join("src"), root.join("examples/http.rs")]);
        assert!(
            built >= newest,
            "{} is older than its sources: rebuild it with `cargo build --example http`",
            exe.display()
        );
        let mut child = Command::new(&exe)
            .args(["--addr", "127.0.0.1:0", "--threads", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the http example");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("first line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .expect("address");
        Server { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Kills the server; its stderr (errors it logged).
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        err
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The latest modification time of the files under `paths`.
fn newest_change(paths: &[PathBuf]) -> std::time::SystemTime {
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut todo: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = todo.pop() {
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                todo.extend(entries.flatten().map(|e| e.path()));
            }
        } else if let Ok(t) = meta.modified() {
            newest = newest.max(t);
        }
    }
    newest
}

fn curl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "30"])
        .args(args)
        .output()
        .expect("curl is missing: run scripts/test, or apt-get install curl");
    assert!(
        out.status.success(),
        "curl {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What the server's `/sum` answers for `data`.
fn sum_line(data: &[u8]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{} {h:016x}\n", data.len())
}

/// Bytes that differ at every offset, so a lost, repeated or moved chunk shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn curl_keeps_the_connection_alive_and_reads_chunked_responses() {
    let s = Server::start();
    // Two URLs in one curl run reuse its connection: one connect.
    let out = curl(&[
        "--write-out",
        "%{num_connects}\n",
        &s.url("/"),
        &s.url("/chunks/3"),
    ]);
    let out = String::from_utf8(out).expect("utf-8");
    assert!(out.starts_with("hello from zerorx worker "), "{out}");
    assert!(out.contains("chunk 0\nchunk 1\nchunk 2\n"), "{out}");
    let connects: Vec<&str> = out
        .lines()
        .filter(|l| l.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(
        connects,
        ["1", "0"],
        "the second request reused the connection: {out}"
    );
    let headers = String::from_utf8(curl(&["--include", &s.url("/chunks/2")])).expect("utf-8");
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{headers}"
    );
    let err = s.stop();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn curl_uploads_large_bodies_and_gets_every_byte_back() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("zerorx-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("upload.bin");
    let data = pattern(8 << 20);
    std::fs::write(&file, &data).expect("write upload");
    let at = format!("@{}", file.display());
    let sum = curl(&["--data-binary", &at, &s.url("/sum")]);
    assert_eq!(String::from_utf8_lossy(&sum), sum_line(&data));
    let echoed = curl(&["--data-binary", &at, &s.url("/echo")]);
    assert!(echoed == data, "echo of 8 MiB: {} bytes back", echoed.len());
    // Chunked upload (no length known up front).
    let sum = curl(&[
        "--data-binary",
        &at,
        "--header",
        "Transfer-Encoding: chunked",
        &s.url("/sum"),
    ]);
    assert_eq!(String::from_utf8_lossy(&sum), sum_line(&data));
    let _ = std::fs::remove_dir_all(&dir);
    let err = s.stop();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn curl_speaks_h2c_with_prior_knowledge() {
    let s = Server::start();
    let out = curl(&[
        "--http2-prior-knowledge",
        "--write-out",
        "%{http_version}\n",
        &s.url("/"),
    ]);
    let out = String::from_utf8(out).expect("utf-8");
    assert!(out.starts_with("hello from zerorx worker "), "{out}");
    assert!(out.ends_with("\n2\n"), "HTTP/2 was used: {out}");
    let data = pattern(1 << 20);
    let dir = std::env::temp_dir().join(format!("zerorx-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("up.bin");
    std::fs::write(&file, &data).expect("write");
    let sum = curl(&[
        "--http2-prior-knowledge",
        "--data-binary",
        &format!("@{}", file.display()),
        &s.url("/sum"),
    ]);
    assert_eq!(String::from_utf8_lossy(&sum), sum_line(&data));
    let _ = std::fs::remove_dir_all(&dir);
    let err = s.stop();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = Server::start();
    let mut c = std::net::TcpStream::connect(s.addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let body = "pipelined";
    let requests = format!(
        "GET /chunks/1 HTTP/1.1\r\nHost: x\r\n\r\n\
         POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}\
         GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        body.len()
    );
    c.write_all(requests.as_bytes())
        .expect("three requests at once");
    let mut all = String::new();
    c.read_to_string(&mut all).expect("responses until close");
    let statuses: Vec<&str> = all.lines().filter(|l| l.starts_with("HTTP/1.1 ")).collect();
    assert_eq!(
        statuses,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 404 Not Found"
        ],
        "{all}"
    );
    let (first, rest) = all
        .split_once(&sum_line(body.as_bytes()))
        .expect("the sum, second");
    assert!(first.contains("chunk 0\n"), "{all}");
    assert!(rest.contains("no route for /nope"), "{all}");
    let err = s.stop();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn a_client_that_hangs_up_mid_body_leaves_the_server_serving() {
    let s = Server::start();
    for _ in 0..20 {
        let mut c = std::net::TcpStream::connect(s.addr).expect("connect");
        c.write_all(b"POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
            .expect("headers");
        c.write_all(&pattern(300_000)).expect("part of the body");
        drop(c);
    }
    let out = curl(&[&s.url("/")]);
    assert!(out.starts_with(b"hello from zerorx worker "));
    let err = s.stop();
    assert!(
        err.is_empty(),
        "an unfinished request is no server error: {err}"
    );
}

/// A runtime for hyper's client, on zerorx.
fn client_rt() -> zerorx::Runtime {
    zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime")
}

#[test]
fn hyper_client_on_zerorx_keeps_alive_over_http1() {
    let s = Server::start();
    let data = pattern(3 << 20);
    client_rt().block_on(async {
        let stream = TcpStream::connect(s.addr).await.expect("connect");
        let (mut send, conn) = http1::Builder::new()
            .handshake::<_, Full<Bytes>>(HyperIo::new(stream))
            .await
            .expect("handshake");
        let conn = zerorx::spawn(conn);
        for i in 0..20 {
            let req = Request::get(s.url("/"))
                .body(Full::default())
                .expect("request");
            let res = send.send_request(req).await.expect("response");
            assert!(res.status().is_success());
            let body = res.into_body().collect().await.expect("body").to_bytes();
            assert!(
                body.starts_with(b"hello from zerorx worker "),
                "request {i}"
            );
        }
        let req = Request::builder()
            .method(Method::POST)
            .uri(s.url("/echo"))
            .body(Full::new(Bytes::from(data.clone())))
            .expect("request");
        let res = send.send_request(req).await.expect("response");
        let body = res.into_body().collect().await.expect("body").to_bytes();
        assert!(body == data, "3 MiB echoed: {} bytes back", body.len());
        drop(send);
        conn.await.expect("task").expect("connection ends cleanly");
    });
    let err = s.stop();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn hyper_client_on_zerorx_runs_concurrent_http2_streams() {
    let s = Server::start();
    client_rt().block_on(async {
        let stream = TcpStream::connect(s.addr).await.expect("connect");
        let (send, conn) = http2::Builder::new(HyperExecutor)
            .timer(HyperTimer)
            .handshake::<_, Full<Bytes>>(HyperIo::new(stream))
            .await
            .expect("h2c handshake");
        let conn = zerorx::spawn(conn);
        let streams: Vec<_> = (0..64u32)
            .map(|i| {
                let mut send = send.clone();
                let url = s.url("/sum");
                zerorx::spawn(async move {
                    let data = pattern(1000 + i as usize * 997);
                    let req = Request::post(url)
                        .body(Full::new(Bytes::from(data.clone())))
                        .expect("request");
                    let res = send.send_request(req).await.expect("response");
                    assert_eq!(res.version(), hyper::Version::HTTP_2);
                    let body = res.into_body().collect().await.expect("body").to_bytes();
                    assert_eq!(
                        String::from_utf8_lossy(&body),
                        sum_line(&data),
                        "stream {i}"
                    );
                })
            })
            .collect();
        for t in streams {
            t.await.expect("stream task");
        }
        drop(send);
        conn.await.expect("task").expect("connection ends cleanly");
    });
    let err = s.stop();
    assert!(err.is_empty(), "{err}");
}
