//! The server and client over Unix domain sockets: calls in every protocol and
//! transport on a path and on an abstract name, two workers accepting on one socket; the errors a missing path, a stale socket file and a path too long give;
//! the socket file removed when the server stops.

mod support;

use bytes::Bytes;
use std::io::ErrorKind;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr as UnixAddr;
use std::time::Duration;
use support::{client_config, client_rt, Harness};
use zerorx_cli::bench::{register, BenchClient, BenchState, FailError, FailException};
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{Client, ClientError, Protocol, Server};

fn dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zerorx-thrift-unix")
        .tempdir()
        .expect("temp dir")
}

/// Every Bench method once over `c`.
async fn calls(c: &BenchClient, what: &str) {
    let data = Bytes::from(vec![9u8; 200_000]);
    assert_eq!(c.echo(data.clone()).await.expect("echo"), data, "{what}");
    assert_eq!(c.add(40, 2).await.expect("add"), 42, "{what}");
    assert_eq!(c.sum((1..=10).collect()).await.expect("sum"), 55, "{what}");
    c.fire(Bytes::from_static(b"x")).await.expect("fire");
    match c.fail("no".into()).await {
        Err(FailError::Thrown(FailException::O(o))) => assert_eq!(&o.reason[..], "no"),
        other => panic!("{what}: fail returned {other:?}"),
    }
}

#[test]
fn calls_round_trip_over_a_unix_socket_on_two_workers() {
    let d = dir();
    let path = d.path().join("bench.sock");
    let h = {
        let path = path.clone();
        Harness::start(2, move |b| b.unix(path))
    };
    assert_eq!(
        h.unix.as_ref().and_then(|u| u.as_pathname()),
        Some(path.as_path())
    );
    assert_eq!(h.addr, std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
    let rt = client_rt();
    let mut connections = 0;
    for protocol in [Protocol::Binary, Protocol::Compact] {
        for transport in [Transport::Framed, Transport::Unframed, Transport::Header] {
            let what = format!("{protocol:?}/{transport:?}");
            rt.block_on(async {
                let c = BenchClient::connect_unix(&path, client_config(protocol, transport))
                    .await
                    .expect("connect");
                calls(&c, &what).await;
            });
            connections += 1;
        }
    }
    // A generated client over an untyped one made for the path, and pipelined calls on
    // several connections at once.
    rt.block_on(async {
        let mut joins = Vec::new();
        for i in 0..8 {
            let path = path.clone();
            joins.push(zerorx::spawn(async move {
                let client =
                    Client::connect_unix(&path, client_config(Protocol::Binary, Transport::Framed))
                        .await
                        .expect("connect");
                let c = BenchClient::new(client);
                let adds: Vec<_> = (0..20i64)
                    .map(|k| {
                        let c = c.clone();
                        zerorx::spawn(async move { (k, c.add(i, k).await.expect("add")) })
                    })
                    .collect();
                for add in adds {
                    let (k, sum) = add.await.expect("task");
                    assert_eq!(sum, i + k);
                }
            }));
        }
        for j in joins {
            j.await.expect("client");
        }
    });
    connections += 8;
    h.wait_stats("every connection counted", |s| {
        s.connections_accepted == connections
    });
    let s = h.stats();
    assert_eq!(s.requests, 6 * 5 + 8 * 20, "{s:?}");
    assert!(path.exists(), "the socket file while serving");
    h.stop(Duration::from_secs(1)).expect("stopped");
    assert!(
        !path.exists(),
        "a server that stopped removes the socket file it made"
    );
}

#[test]
fn a_server_on_an_abstract_name_serves_a_client_of_that_name() {
    let name = format!("zerorx-thrift-test-{}", std::process::id());
    let addr = UnixAddr::from_abstract_name(&name).expect("addr");
    let h = {
        let addr = addr.clone();
        Harness::start(1, move |b| b.unix_addr(addr))
    };
    assert_eq!(
        h.unix.as_ref().and_then(|u| u.as_abstract_name()),
        Some(name.as_bytes())
    );
    client_rt().block_on(async {
        let client =
            Client::connect_unix_addr(addr, client_config(Protocol::Compact, Transport::Framed))
                .await
                .expect("connect");
        calls(&BenchClient::new(client), "abstract").await;
    });
    h.stop(Duration::from_secs(1)).expect("stopped");
}

#[test]
fn connecting_to_a_missing_path_names_it() {
    let d = dir();
    let missing = d.path().join("nobody.sock");
    let err = client_rt().block_on(async {
        BenchClient::connect_unix(&missing, client_config(Protocol::Binary, Transport::Framed))
            .await
            .expect_err("nothing there")
    });
    let ClientError::Connect(e) = &err else {
        panic!("a connect error: {err:?}")
    };
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let shown = err.to_string();
    assert!(
        shown.contains(&missing.display().to_string()),
        "the error names the path: {shown}"
    );
    let long = d.path().join("x".repeat(200));
    let err = client_rt().block_on(async {
        Client::connect_unix(&long, Default::default())
            .await
            .expect_err("too long")
    });
    assert!(
        matches!(&err, ClientError::Connect(e) if e.kind() == ErrorKind::InvalidInput),
        "{err:?}"
    );
}

#[test]
fn a_stale_socket_file_stops_the_server_from_starting_and_stays() {
    let d = dir();
    let path = d.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).expect("leave a stale file"));
    let rt = zerorx::Runtime::builder()
        .threads(2)
        .build()
        .expect("runtime");
    let start = |b: zerorx_thrift::ServerBuilder| {
        register(b, std::sync::Arc::new(BenchState::default())).start(rt.handle())
    };
    let e = start(Server::builder().unix(&path)).expect_err("stale file");
    assert_eq!(e.kind(), ErrorKind::AddrInUse);
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains("stale"),
        "{msg}"
    );
    assert!(path.exists(), "never removed silently");
    let long = d.path().join("y".repeat(200));
    let e = start(Server::builder().unix(&long)).expect_err("too long");
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains(&"y".repeat(200)), "{e}");
    // Once the operator removed it, the server starts, and `local_addr` does not panic.
    std::fs::remove_file(&path).expect("remove");
    let server = start(Server::builder().unix(&path)).expect("starts");
    assert_eq!(server.local_addr().port(), 0);
    assert!(format!("{server:?}").contains("stale.sock"), "{server:?}");
    rt.block_on(server.shutdown(Duration::from_millis(100)))
        .expect("stopped");
    assert!(!path.exists());
}
