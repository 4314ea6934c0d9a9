//! `zerorx serve` as a process: every method of the reference service over binary
//! framed and unframed, a compact client refused by a binary-only server, the drain and
//! its counters on SIGTERM, the state dump on SIGUSR2, and serving on a Unix socket
//! beside or instead of TCP.

mod served;

use bytes::Bytes;
use served::{count, Served};
use std::io::Write;
use std::time::{Duration, Instant};
use zerorx_cli::bench::{BenchClient, FailError, FailException, Payload};
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{ClientConfig, Protocol};

fn config(protocol: Protocol, transport: Transport) -> ClientConfig {
    ClientConfig {
        protocol,
        transport,
        call_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    }
}

#[test]
fn bench_client_calls_every_method_of_zerorx_serve() {
    let served = Served::start(&["--port", "0", "--threads", "2", "--protocol", "binary"]);
    let addr = served.1;
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        for protocol in [Protocol::Binary, Protocol::BinaryNonStrict] {
            for transport in [Transport::Framed, Transport::Unframed] {
                let c = BenchClient::connect(addr, config(protocol, transport))
                    .await
                    .expect("connect");
                let data = Bytes::from(vec![7u8; 100_000]);
                assert_eq!(c.echo(data.clone()).await.expect("echo"), data);
                let p = Payload {
                    id: 9,
                    data: Bytes::from_static(b"d"),
                    meta: Some([("k".into(), "v".into())].into_iter().collect()),
                    tags: vec![1, 2],
                };
                assert_eq!(c.roundtrip(p.clone()).await.expect("roundtrip"), p);
                assert_eq!(c.add(40, 2).await.expect("add"), 42);
                assert_eq!(c.sum((1..=10).collect()).await.expect("sum"), 55);
                c.sleep_ms(5).await.expect("sleep_ms");
                c.fire(Bytes::from_static(b"x")).await.expect("fire");
                match c.fail("why".into()).await {
                    Err(FailError::Thrown(FailException::O(o))) => assert_eq!(&o.reason[..], "why"),
                    other => panic!("fail: {other:?}"),
                }
            }
        }
        // A compact client is refused by a binary-only server: the connection closes.
        let c = BenchClient::connect(addr, config(Protocol::Compact, Transport::Framed))
            .await
            .expect("connect");
        assert!(c.add(1, 1).await.is_err(), "compact refused");
    });
    let (status, stderr) = served.stop();
    assert!(status.success(), "exit {status:?}: {stderr}");
    assert!(stderr.contains("draining"), "{stderr}");
    assert_eq!(count(&stderr, "protocol_errors"), 1, "{stderr}");
    // 6 calls and a oneway per suite, 4 suites.
    assert_eq!(count(&stderr, "requests"), 4 * 7, "{stderr}");
    assert_eq!(count(&stderr, "oneway_requests"), 4, "{stderr}");
}

#[test]
fn zerorx_serve_dumps_its_state_on_sigusr2() {
    let file = std::env::temp_dir().join(format!("zerorx-dump-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let file_arg = file.to_str().expect("utf-8 temp path");
    let served = Served::start(&[
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--threads",
        "2",
        "--dump-file",
        file_arg,
    ]);
    let addr = served.1;
    // An idle connection for the dump to show.
    let mut idle = std::net::TcpStream::connect(addr).expect("connect");
    idle.write_all(&[0, 0])
        .expect("two bytes of a frame header");
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill has no memory effects; the pid is our child's, not yet reaped.
    let rc = unsafe { libc::kill(served.0.id() as i32, libc::SIGUSR2) };
    assert_eq!(rc, 0, "kill -USR2");
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        // The dump is written in one piece; its last worker's section ends the file.
        if text.contains("worker 1") && text.ends_with('\n') {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no dump in {}: {text:?}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(text.starts_with("zerorx state dump: 2 workers"), "{text}");
    assert!(text.contains("ACCEPT multishot"), "{text}");
    let peer = idle.local_addr().expect("addr");
    assert!(
        text.contains(&format!("-> {peer})")),
        "the idle connection: {text}"
    );
    let (status, stderr) = served.stop();
    assert!(status.success(), "{status}: {stderr}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn zerorx_serve_on_a_unix_socket_beside_tcp() {
    let dir = tempfile::Builder::new()
        .prefix("zerorx-serve")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join("bench.sock");
    let path_arg = path.to_str().expect("utf-8 temp path");
    let served = Served::start_listing(&["--port", "0", "--unix", path_arg, "--threads", "2"], 2);
    assert_eq!(served.2[1], format!("unix:{path_arg}"), "{:?}", served.2);
    let tcp = served.1;
    assert_ne!(tcp.port(), 0, "{:?}", served.2);
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        for transport in [Transport::Framed, Transport::Unframed] {
            let c = BenchClient::connect_unix(&path, config(Protocol::Binary, transport))
                .await
                .expect("connect over the Unix socket");
            let data = Bytes::from(vec![3u8; 100_000]);
            assert_eq!(c.echo(data.clone()).await.expect("echo"), data);
            assert_eq!(c.add(40, 2).await.expect("add"), 42);
            c.fire(Bytes::from_static(b"x")).await.expect("fire");
            // Read after the oneway call on this connection, so it was received.
            assert!(c.fired().await.expect("fired") >= 1);
        }
        let c = BenchClient::connect(tcp, config(Protocol::Compact, Transport::Framed))
            .await
            .expect("connect over TCP");
        assert_eq!(c.add(1, 2).await.expect("add"), 3);
        // Both servers share one state: the TCP one counts the Unix one's oneway calls.
        assert_eq!(c.fired().await.expect("fired"), 2);
    });
    let (status, stderr) = served.stop();
    assert!(status.success(), "exit {status:?}: {stderr}");
    // Counters summed over both servers: 4 requests per Unix connection, 2 over TCP.
    assert_eq!(count(&stderr, "connections_accepted"), 3, "{stderr}");
    assert_eq!(count(&stderr, "requests"), 2 * 4 + 2, "{stderr}");
    assert_eq!(count(&stderr, "oneway_requests"), 2, "{stderr}");
    assert!(!path.exists(), "the socket file is removed on stop");
}

#[test]
fn zerorx_serve_refuses_a_stale_socket_file_and_serves_unix_only() {
    let dir = tempfile::Builder::new()
        .prefix("zerorx-serve")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join("only.sock");
    let path_arg = path.to_str().expect("utf-8 temp path");
    drop(std::os::unix::net::UnixListener::bind(&path).expect("leave a stale file"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zerorx"))
        .args(["serve", "--unix", path_arg, "--threads", "1"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(path_arg) && err.contains("stale"), "{err}");
    assert!(path.exists(), "never removed for the operator");
    std::fs::remove_file(&path).expect("the operator removes it");

    let served = Served::start_listing(&["--unix", path_arg, "--threads", "1"], 1);
    assert_eq!(served.2, [format!("unix:{path_arg}")]);
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let c = BenchClient::connect_unix(&path, config(Protocol::Binary, Transport::Framed))
            .await
            .expect("connect");
        assert_eq!(c.sum(vec![1, 2, 3]).await.expect("sum"), 6);
    });
    let (status, stderr) = served.stop();
    assert!(status.success(), "exit {status:?}: {stderr}");
    assert_eq!(count(&stderr, "requests"), 1, "{stderr}");
}
