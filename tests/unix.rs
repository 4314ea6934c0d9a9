//! Unix domain sockets: streams through the same receive pool and frame reader as TCP,
//! the listener's socket-file rules (a stale file is an error naming it, removed only
//! by `bind_replacing`), abstract names, datagrams, errors naming the path, a peer
//! gone mid-stream, and one socket accepted on by two workers.

mod common;

use bytes::{Bytes, BytesMut};
use futures_util::{AsyncReadExt, AsyncWriteExt};
use std::io::ErrorKind;
use std::os::linux::net::SocketAddrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;
use zerorx::net::{
    AsConnection, Connection, FrameReader, TcpStream, UnixDatagram, UnixListener, UnixStream,
};
use zerorx::{spawn, timeout, ReceiveMode, Runtime};

/// A one-worker copy-mode runtime.
fn copy_rt() -> Runtime {
    Runtime::builder()
        .threads(1)
        .receive_mode(ReceiveMode::Copy)
        .build()
        .expect("runtime")
}

/// A fresh directory for socket files, removed when the test ends.
fn dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zerorx-unix")
        .tempdir()
        .expect("temp dir")
}

/// A name no other test (or test run) uses, for the abstract namespace.
fn abstract_name(what: &str) -> String {
    format!("zerorx-test-{}-{what}", std::process::id())
}

/// Lets the worker's loop turn: a dropped socket is closed through the ring with the
/// worker's next submissions, and only then is its path or name free.
async fn let_close() {
    zerorx::sleep(Duration::from_millis(20)).await;
}

/// Bounds a test's async part: a hang fails it instead of blocking the suite.
async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    timeout(Duration::from_secs(20), f)
        .await
        .expect("finished within 20 s")
}

/// Echoes every buffer back until the peer closes: the same function serves TCP and
/// Unix connections.
async fn echo(conn: Connection) {
    while let Ok(Some(buf)) = conn.recv().await {
        if conn.send(buf).await.is_err() {
            return;
        }
    }
}

/// Sends `frames` length-prefixed frames of growing size over `conn` and reads each
/// back through a `FrameReader`, checking every byte; returns the bytes echoed.
async fn frames_through<S: AsConnection>(reader: &mut FrameReader<S>, frames: usize) -> usize {
    let mut total = 0;
    for i in 0..frames {
        let body: Vec<u8> = (0..i * 997 + 1).map(|b| (b * 7 + i) as u8).collect();
        let mut framed = (body.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&body);
        reader
            .get_ref()
            .connection()
            .send(Bytes::from(framed))
            .await
            .expect("send");
        let got = reader
            .read_frame(1 << 20)
            .await
            .expect("read_frame")
            .expect("a frame");
        assert_eq!(got.into_contiguous(), body, "frame {i}");
        total += body.len() + 4;
    }
    total
}

#[test]
fn a_unix_stream_receives_through_the_copy_pool_and_the_frame_reader() {
    let rt = copy_rt();
    let d = dir();
    let path = d.path().join("echo.sock");
    let before = rt.handle().pool_stats()[0].expect("copy pool").bytes;
    let echoed = rt.block_on(bounded(async {
        let listener = UnixListener::bind(&path).expect("bind");
        assert_eq!(
            listener.local_addr().expect("addr").as_pathname(),
            Some(path.as_path())
        );
        spawn(async move {
            let (conn, peer) = listener.accept().await.expect("accept");
            assert!(peer.is_unnamed(), "an unbound client: {peer:?}");
            echo(conn.into()).await;
        });
        let client = UnixStream::connect(&path).await.expect("connect");
        assert_eq!(
            client.peer_addr().expect("peer").as_pathname(),
            Some(path.as_path())
        );
        let mut reader = FrameReader::new(Rc::new(client));
        frames_through(&mut reader, 40).await
    }));
    let stats = rt.handle().pool_stats()[0].expect("copy pool");
    // Both sides of the echo received every byte through the worker's copy pool.
    assert_eq!(stats.bytes - before, 2 * echoed as u64, "{stats:?}");
    assert!(rt.handle().zc_pool_stats()[0].is_none());
}

#[test]
fn tcp_and_unix_connections_are_served_by_the_same_code() {
    let rt = copy_rt();
    let d = dir();
    let path = d.path().join("both.sock");
    rt.block_on(bounded(async {
        let (tcp_l, addr) = common::loopback_listener();
        let unix_l = UnixListener::bind(&path).expect("bind");
        spawn(async move {
            let (s, _) = tcp_l.accept().await.expect("tcp accept");
            echo(Connection::from(s)).await;
        });
        spawn(async move {
            let (s, _) = unix_l.accept().await.expect("unix accept");
            echo(s.into_connection()).await;
        });
        let tcp: Connection = TcpStream::connect(addr).await.expect("tcp").into();
        let unix: Connection = UnixStream::connect(&path).await.expect("unix").into();
        for conn in [tcp, unix] {
            let mut reader = FrameReader::new(conn);
            assert!(frames_through(&mut reader, 5).await > 0);
        }
    }));
}

#[test]
fn a_stale_socket_file_is_an_error_naming_it_and_only_bind_replacing_removes_it() {
    let rt = copy_rt();
    let d = dir();
    let path = d.path().join("stale.sock");
    rt.block_on(bounded(async {
        drop(UnixListener::bind(&path).expect("first bind"));
        let_close().await;
        assert!(path.exists(), "closing a listener leaves its socket file");
        let e = UnixListener::bind(&path).expect_err("the file is still there");
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(
            msg.contains("stale") && msg.contains("bind_replacing"),
            "{msg}"
        );
        assert!(path.exists(), "a failed bind removes nothing");
        // A client finds nobody there, and is told where it looked.
        let e = UnixStream::connect(&path).await.expect_err("stale");
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");

        let listener = UnixListener::bind_replacing(&path).expect("stale file replaced");
        spawn(async move {
            let (s, _) = listener.accept().await.expect("accept");
            echo(s.into()).await;
        });
        let c = UnixStream::connect(&path).await.expect("connect");
        c.send(Bytes::from_static(b"hi")).await.expect("send");
        let back = c.recv().await.expect("recv").expect("data");
        assert_eq!(&back[..], b"hi");
    }));
}

#[test]
fn bind_replacing_leaves_a_live_server_and_other_files_alone() {
    let rt = copy_rt();
    let d = dir();
    let live = d.path().join("live.sock");
    rt.block_on(bounded(async {
        let listener = UnixListener::bind(&live).expect("bind");
        let e = UnixListener::bind(&live).expect_err("in use");
        assert!(e.to_string().contains("a server is listening"), "{e}");
        let e = UnixListener::bind_replacing(&live).expect_err("live server");
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        assert!(
            e.to_string().contains("listening") && e.to_string().contains("not replaced"),
            "{e}"
        );
        // Still the live server's: a client reaches it (after the connections the
        // two checks made, closed at once).
        spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                spawn(echo(s.into()));
            }
        });
        let c = UnixStream::connect(&live).await.expect("still served");
        c.send(Bytes::from_static(b"x")).await.expect("send");
        assert_eq!(&c.recv().await.expect("recv").expect("data")[..], b"x");
    }));
    let file = d.path().join("data.txt");
    std::fs::write(&file, b"keep me").expect("write");
    for bind in [UnixListener::bind, |p: &Path| {
        UnixListener::bind_replacing(p)
    }] {
        let e = rt
            .block_on(async { bind(&file) })
            .expect_err("not a socket");
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        assert!(e.to_string().contains("not a socket"), "{e}");
    }
    assert_eq!(std::fs::read(&file).expect("still there"), b"keep me");
}

#[test]
fn connecting_to_a_missing_path_says_which() {
    let rt = copy_rt();
    let d = dir();
    let missing = d.path().join("nobody-here.sock");
    rt.block_on(bounded(async {
        let e = UnixStream::connect(&missing).await.expect_err("missing");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
        let e = UnixListener::bind(d.path().join("no-dir/x.sock")).expect_err("no directory");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("no-dir/x.sock"), "{e}");
    }));
}

#[test]
fn abstract_names_are_served_refused_while_in_use_and_freed_with_their_socket() {
    let rt = copy_rt();
    let name = abstract_name("listener");
    rt.block_on(bounded(async {
        let listener = UnixListener::bind_abstract(&name).expect("bind");
        let addr = listener.local_addr().expect("addr");
        assert_eq!(addr.as_abstract_name(), Some(name.as_bytes()));
        let e = UnixListener::bind_abstract(&name).expect_err("in use");
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        assert!(
            e.to_string().contains(&format!("@{name}")) && e.to_string().contains("in use"),
            "{e}"
        );
        let served = spawn(async move {
            let (s, _) = listener.accept().await.expect("accept");
            echo(s.into()).await;
        });
        let c = UnixStream::connect_abstract(&name).await.expect("connect");
        let same = std::os::unix::net::SocketAddr::from_abstract_name(&name).expect("addr");
        let c2 = UnixStream::connect_addr(&same)
            .await
            .expect("connect by address");
        drop(c2);
        c.send(Bytes::from_static(b"abstract")).await.expect("send");
        assert_eq!(
            &c.recv().await.expect("recv").expect("data")[..],
            b"abstract"
        );
        drop(c);
        served.await.expect("served");
        let_close().await;
        // The serving task dropped the listener: the name is free again, no file left.
        let again = UnixListener::bind_abstract(&name).expect("free again");
        drop(again);
        let_close().await;
        let e = UnixStream::connect_abstract(&name).await.expect_err("gone");
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains(&format!("@{name}")), "{e}");
    }));
}

#[test]
fn a_peer_gone_mid_stream_ends_the_frame_with_the_bytes_it_got() {
    let rt = copy_rt();
    rt.block_on(bounded(async {
        let (a, b) = UnixStream::pair().expect("pair");
        assert!(a.local_addr().expect("addr").is_unnamed());
        assert!(b.peer_addr().expect("addr").is_unnamed());
        // A header announcing 100 bytes, 10 of them, then the peer closes.
        let mut partial = 100u32.to_be_bytes().to_vec();
        partial.extend_from_slice(&[1; 10]);
        a.send(Bytes::from(partial)).await.expect("send");
        drop(a);
        let mut reader = FrameReader::new(b);
        let e = reader.read_frame(1024).await.expect_err("truncated");
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("10 of 100"), "{e}");
        // Sending to the gone peer fails instead of blocking or killing the process.
        let mut failed = None;
        for _ in 0..100 {
            if let Err(e) = reader.get_ref().send(Bytes::from_static(b"late")).await {
                failed = Some(e);
                break;
            }
        }
        let e = failed.expect("a send to a closed peer fails");
        assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
    }));
}

#[test]
fn datagrams_go_by_path_abstract_name_and_connection() {
    let rt = copy_rt();
    let d = dir();
    let (a_path, b_path) = (d.path().join("a.dgram"), d.path().join("b.dgram"));
    rt.block_on(bounded(async {
        let a = UnixDatagram::bind(&a_path).expect("bind a");
        let b = UnixDatagram::bind(&b_path).expect("bind b");
        let n = a
            .send_to(Bytes::from_static(b"to b"), &b_path)
            .await
            .expect("send_to");
        assert_eq!(n, 4);
        let (n, buf, from) = b
            .recv_from(BytesMut::with_capacity(64))
            .await
            .expect("recv_from");
        assert_eq!(
            (&buf[..n], from.as_pathname()),
            (&b"to b"[..], Some(a_path.as_path()))
        );
        // Connected: send and recv without addresses.
        b.connect(&a_path).expect("connect");
        assert_eq!(
            b.peer_addr().expect("peer").as_pathname(),
            Some(a_path.as_path())
        );
        b.send(Bytes::from_static(b"back")).await.expect("send");
        let (n, buf) = a.recv(BytesMut::with_capacity(64)).await.expect("recv");
        assert_eq!(&buf[..n], b"back");

        let name = abstract_name("dgram");
        let c = UnixDatagram::bind_abstract(&name).expect("bind abstract");
        let unbound = UnixDatagram::unbound().expect("unbound");
        unbound
            .send_to_addr(
                Bytes::from_static(b"anon"),
                &std::os::unix::net::SocketAddr::from_abstract_name(&name).expect("addr"),
            )
            .await
            .expect("send to abstract");
        let (n, buf, from) = c
            .recv_from(BytesMut::with_capacity(64))
            .await
            .expect("recv");
        assert_eq!(&buf[..n], b"anon");
        assert!(from.is_unnamed(), "an unbound sender: {from:?}");

        let (p, q) = UnixDatagram::pair().expect("pair");
        p.send(Bytes::from_static(b"pair")).await.expect("send");
        let (n, buf) = q.recv(BytesMut::with_capacity(8)).await.expect("recv");
        assert_eq!(&buf[..n], b"pair");

        let missing = d.path().join("missing.dgram");
        let e = a
            .send_to(Bytes::from_static(b"x"), &missing)
            .await
            .expect_err("missing");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
        let e = UnixDatagram::bind(&a_path).expect_err("in use");
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        assert!(e.to_string().contains(&a_path.display().to_string()), "{e}");
    }));
}

#[test]
fn two_workers_accept_on_one_shared_socket() {
    const CONNS: usize = 16;
    let rt = Runtime::builder()
        .threads(2)
        .receive_mode(ReceiveMode::Copy)
        .build()
        .expect("runtime");
    let d = dir();
    let path: PathBuf = d.path().join("shared.sock");
    let std_listener = rt
        .block_on(async { UnixListener::bind(&path) })
        .expect("bind")
        .into_std()
        .expect("into_std");
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for w in 0..2 {
        let l = std_listener.try_clone().expect("clone");
        let served = served.clone();
        drop(rt.handle().spawn_on_with(w, move || async move {
            let l = UnixListener::from_std(l).expect("from_std");
            loop {
                let Ok((s, _)) = l.accept().await else { return };
                served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                spawn(echo(s.into()));
            }
        }));
    }
    drop(std_listener);
    rt.block_on(bounded(async {
        let mut clients = Vec::new();
        for i in 0..CONNS {
            let path = path.clone();
            clients.push(spawn(async move {
                let c = UnixStream::connect(&path).await.expect("connect");
                let msg = Bytes::from(format!("client {i}"));
                c.send(msg.clone()).await.expect("send");
                let mut got = Vec::new();
                while got.len() < msg.len() {
                    got.extend_from_slice(&c.recv().await.expect("recv").expect("data"));
                }
                assert_eq!(got, msg);
            }));
        }
        for c in clients {
            c.await.expect("client");
        }
    }));
    assert_eq!(served.load(std::sync::atomic::Ordering::Relaxed), CONNS);
}

#[test]
fn a_unix_stream_moves_between_workers_and_speaks_futures_io() {
    let rt = Runtime::builder()
        .threads(2)
        .receive_mode(ReceiveMode::Copy)
        .build()
        .expect("runtime");
    let (here, there) = std::os::unix::net::UnixStream::pair().expect("pair");
    let handle = rt.handle().clone();
    rt.block_on(bounded(async move {
        // Worker 1 wraps its end, reads a line with futures-io and moves the stream
        // back as a std socket.
        let moved = handle.spawn_on_with(1, move || async move {
            let s = UnixStream::from_std(there).expect("from_std");
            let mut io = s.compat();
            let mut line = [0u8; 5];
            io.read_exact(&mut line).await.expect("read");
            assert_eq!(&line, b"hello");
            io.write_all(b"world").await.expect("write");
            io.flush().await.expect("flush");
            let (s, rest) = io.into_inner();
            assert!(rest.is_empty());
            Rc::try_unwrap(s)
                .expect("the only owner")
                .into_std()
                .await
                .expect("into_std")
        });
        let mine = UnixStream::from_std(here).expect("from_std");
        mine.send(Bytes::from_static(b"hello")).await.expect("send");
        let mut got = Vec::new();
        while got.len() < 5 {
            got.extend_from_slice(&mine.recv().await.expect("recv").expect("data"));
        }
        assert_eq!(got, b"world");
        let back = moved.await.expect("moved back");
        let back = UnixStream::from_std(back).expect("wrapped here");
        mine.send(Bytes::from_static(b"again")).await.expect("send");
        let buf = back.recv().await.expect("recv").expect("data");
        assert_eq!(&buf[..], b"again");
    }));
}
