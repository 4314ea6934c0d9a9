//! The app example (`examples/app.rs`) run as a user runs it: from a config file, its
//! digests checked over TCP and the Unix socket, then SIGTERM under load — it must
//! answer every call it took, exit 0 within a second, and leave no socket file; and a
//! missing config file is an error naming it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};
use zerorx_thrift::bytes::Bytes;
use zerorx_thrift::ClientConfig;
use zerorx_thrift_test::app::sha256_hex;
use zerorx_thrift_test::generated::app::DigestClient;

/// The example binary; fails if it is missing or older than its sources.
fn example() -> PathBuf {
    // Test binaries are in target/<profile>/deps, examples in target/<profile>/examples.
    let exe: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("examples/app")))
        .expect("target directory");
    let built = std::fs::metadata(&exe)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} is missing: build it with `cargo build -p zerorx-thrift-test --example app` \
                 (`cargo test` builds it)",
                exe.display()
            )
        });
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let newest = [root.join("examples/app.rs"), root.join("src/app.rs")]
        .iter()
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    assert!(
        built >= newest,
        "{} is older than its sources: rebuild it with `cargo build -p zerorx-thrift-test --example app`",
        exe.display()
    );
    exe
}

/// The running example, killed if a test fails before it exits.
struct App {
    child: Child,
    tcp: std::net::SocketAddr,
    unix: PathBuf,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Path) -> App {
    let unix = dir.join("app.sock");
    let config = dir.join("app.conf");
    std::fs::write(
        &config,
        format!(
            "# the app test's config\ntcp = 127.0.0.1:0\nunix = {}\ngrace_ms = 500\n",
            unix.display()
        ),
    )
    .expect("config");
    let mut child = Command::new(example())
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the app example");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("first line");
    let rest = line
        .trim()
        .strip_prefix("listening on tcp ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let (tcp, path) = rest.split_once(" and unix ").expect("both endpoints");
    assert_eq!(Path::new(path), unix);
    App {
        child,
        tcp: tcp.parse().expect("tcp address"),
        unix,
        stdout,
    }
}

fn body(i: usize) -> Bytes {
    // Sizes from 0 bytes to 1 MiB, so some bodies span many receive buffers.
    let len = [0, 1, 100, 4096, 65_537, 1 << 20][i % 6];
    Bytes::from((0..len).map(|j| (i * 31 + j * 7) as u8).collect::<Vec<_>>())
}

#[test]
fn the_app_serves_tcp_and_unix_and_stops_on_sigterm_losing_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut app = start(dir.path());
    let (tcp, unix, pid) = (app.tcp, app.unix.clone(), app.child.id() as libc::pid_t);
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("client runtime");
    let (answered, signalled) = rt.block_on(async move {
        let config = ClientConfig {
            call_timeout: Some(Duration::from_secs(10)),
            ..Default::default()
        };
        let clients = [
            Rc::new(
                DigestClient::connect(tcp, config.clone())
                    .await
                    .expect("tcp"),
            ),
            Rc::new(
                DigestClient::connect_unix(&unix, config.clone())
                    .await
                    .expect("unix"),
            ),
        ];
        // Every digest right, on both endpoints.
        for (c, client) in clients.iter().enumerate() {
            for i in 0..12 {
                let b = body(i);
                let got = client.sha256(b.clone()).await.expect("call");
                assert_eq!(&got[..], sha256_hex(&b), "endpoint {c}, body {i}");
            }
        }
        // Load from 8 callers, then SIGTERM while calls are in flight.
        let callers: Vec<_> = (0..8)
            .map(|k| {
                let client = clients[k % 2].clone();
                zerorx::spawn(async move {
                    let mut ok = 0u64;
                    for i in 0.. {
                        let b = body(i % 4);
                        match client.sha256(b.clone()).await {
                            Ok(got) => {
                                assert_eq!(&got[..], sha256_hex(&b), "caller {k}");
                                ok += 1;
                            }
                            // The server closed the connection after its last answer.
                            Err(_) => break,
                        }
                    }
                    ok
                })
            })
            .collect();
        zerorx::time::sleep(Duration::from_millis(300)).await;
        // SAFETY: kill(2) on the child's pid, which is alive (it is serving us).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let signalled = Instant::now();
        let mut answered = 12 * 2;
        for c in callers {
            answered += c.await.expect("caller");
        }
        (answered, signalled)
    });
    // Exits 0 within a second of the signal.
    let status = loop {
        if let Some(status) = app.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(1),
            "still running {:?} after SIGTERM",
            signalled.elapsed()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    if let Some(mut e) = app.child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "exit {status}; stderr:\n{err}");
    assert!(err.contains("answering the calls in flight"), "{err}");
    let mut last = String::new();
    app.stdout.read_to_string(&mut last).expect("last line");
    let served: u64 = last
        .trim()
        .strip_prefix("stopped after ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected last line {last:?}"));
    // Nothing lost: every call the app answered reached its caller.
    assert_eq!(served, answered, "calls answered by the app vs received");
    assert!(answered > 24, "the load made calls: {answered}");
    assert!(!app.unix.exists(), "the socket file is removed");
}

#[test]
fn a_missing_config_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nowhere.conf");
    let out = Command::new(example())
        .arg(&missing)
        .output()
        .expect("run the app example");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nowhere.conf") && err.contains("reading the config"),
        "{err}"
    );
    let bad = dir.path().join("bad.conf");
    std::fs::write(&bad, "tcp = 127.0.0.1:0\nunix\n").expect("write");
    let out = Command::new(example()).arg(&bad).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.conf: line 2"), "{err}");
}
