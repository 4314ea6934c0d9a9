//! TCP echo across workers with many connections (every byte verified), UDP, send
//! variants.

mod common;

use bytes::{Bytes, BytesMut};
use common::{rt, Rng, MODES};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;
use zerorx::net::{TcpListener, TcpStream, UdpSocket};
use zerorx::{spawn, timeout};

async fn echo_conn(stream: TcpStream) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        buf.clear();
        if buf.capacity() < 16 * 1024 {
            buf = BytesMut::with_capacity(16 * 1024);
        }
        let (n, b) = match stream.recv_into(buf).await {
            Ok(r) => r,
            Err(_) => return,
        };
        if n == 0 {
            return;
        }
        let data = b.freeze();
        if stream.send(data.clone()).await.is_err() {
            return;
        }
        buf = data
            .try_into_mut()
            .unwrap_or_else(|_| BytesMut::with_capacity(16 * 1024));
    }
}

async fn serve(listener: TcpListener, served: Rc<std::cell::Cell<usize>>) {
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                served.set(served.get() + 1);
                spawn(echo_conn(s));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// One client: sends `len` pseudo-random bytes in odd-sized pieces (plain and vectored
/// sends), reads the echo back and compares every byte.
async fn client(addr: SocketAddr, seed: u64, len: usize) -> usize {
    let s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let mut rng = Rng(seed | 1);
    let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let data = Bytes::from(data);
    let reader = {
        let expect = data.clone();
        let s2 = Rc::new(s);
        let r = s2.clone();
        let reader = spawn(async move {
            let mut got = 0;
            let mut buf = BytesMut::with_capacity(8192);
            while got < expect.len() {
                buf.clear();
                let (n, b) = r.recv_into(buf).await.expect("recv");
                assert!(n > 0, "early EOF at {got}");
                assert_eq!(&b[..n], &expect[got..got + n], "mismatch at {got}");
                got += n;
                buf = b;
            }
            got
        });
        let mut off = 0;
        let mut k = 0;
        while off < data.len() {
            let piece = (1 + (rng.next() as usize % 7000)).min(data.len() - off);
            if k % 2 == 0 {
                s2.send(data.slice(off..off + piece)).await.expect("send");
            } else {
                let mid = off + piece / 2;
                s2.send_vectored(&[data.slice(off..mid), data.slice(mid..off + piece)])
                    .await
                    .expect("send_vectored");
            }
            off += piece;
            k += 1;
        }
        reader
    };
    reader.await.expect("reader")
}

#[test]
fn echo_across_workers_many_connections() {
    for mode in MODES {
        let rt = rt(2, mode);
        let h = rt.handle().clone();
        let total = rt.block_on(async move {
            let (l0, addr) = common::loopback_listener();
            // Every worker listens on the same port (SO_REUSEPORT).
            let served0 = Rc::new(std::cell::Cell::new(0));
            spawn(serve(l0, served0.clone()));
            let (tx, rx) = crossbeam_channel::bounded(1);
            drop(h.spawn_on_with(1, move || async move {
                let l1 = TcpListener::bind(addr).expect("bind same port");
                tx.send(()).expect("ready");
                serve(l1, Rc::new(std::cell::Cell::new(0))).await;
            }));
            while rx.try_recv().is_err() {
                zerorx::sleep(Duration::from_millis(1)).await;
            }
            // 64 connections, clients on both workers.
            let joins = (0..64u64).map(|i| {
                h.spawn_on_with((i % 2) as usize, move || {
                    client(addr, i * 7919, 64 * 1024 + i as usize * 1031)
                })
            });
            let mut total = 0;
            for j in joins.collect::<Vec<_>>() {
                total += timeout(Duration::from_secs(30), j)
                    .await
                    .expect("client in time")
                    .expect("client ok");
            }
            assert!(served0.get() > 0, "worker 0 accepted some connections");
            total
        });
        let expected: usize = (0..64).map(|i| 64 * 1024 + i * 1031).sum();
        assert_eq!(total, expected, "{mode:?}");
        let m = rt.handle().metrics();
        assert!(m.iter().all(|w| w.stale_cqes == 0), "{m:?}");
    }
}

#[test]
fn udp_round_trip() {
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let a = UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind a");
        let b = UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind b");
        let baddr = b.local_addr().expect("addr");
        let n = a
            .send_to(Bytes::from_static(b"datagram"), baddr)
            .await
            .expect("send_to");
        assert_eq!(n, 8);
        let (n, buf, from) = b
            .recv_from(BytesMut::with_capacity(64))
            .await
            .expect("recv_from");
        assert_eq!(&buf[..n], b"datagram");
        assert_eq!(from, a.local_addr().expect("addr"));
    });
}

#[test]
fn shutdown_write_gives_peer_eof_and_connect_refused_is_an_error() {
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let c = TcpStream::connect(addr).await.expect("connect");
        let (s, peer) = l.accept().await.expect("accept");
        assert_eq!(peer, c.local_addr().expect("local"));
        c.send(Bytes::from_static(b"bye")).await.expect("send");
        c.shutdown(std::net::Shutdown::Write)
            .await
            .expect("shutdown");
        let (n, buf) = s
            .recv_into(BytesMut::with_capacity(16))
            .await
            .expect("recv");
        assert_eq!(&buf[..n], b"bye");
        let (n, _) = s
            .recv_into(BytesMut::with_capacity(16))
            .await
            .expect("recv eof");
        assert_eq!(n, 0, "EOF after shutdown(Write)");
        drop(l);
        let e = TcpStream::connect(addr).await.expect_err("refused");
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    });
}

#[test]
fn runtime_with_32_byte_cqes_runs_net_and_pool() {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .cqe32(true)
        .build()
        .expect("runtime");
    assert!(rt.handle().ring_flags()[0].is_some_and(|f| f.cqe32));
    rt.block_on(async {
        let (c, s) = common::connected_pair().await;
        c.send(Bytes::from_static(b"thirty-two"))
            .await
            .expect("send");
        let b = s.recv().await.expect("recv").expect("data");
        assert_eq!(&b[..], b"thirty-two");
        zerorx::sleep(Duration::from_millis(1)).await;
    });
}

#[test]
fn send_zc_delivers_every_byte_and_holds_the_op_until_the_notification() {
    let rt = rt(1, Default::default());
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let mut rng = Rng(99);
        let data = Bytes::from((0..1 << 20).map(|_| rng.next() as u8).collect::<Vec<_>>());
        let reader = {
            let expect = data.clone();
            spawn(async move {
                let mut got = 0;
                while got < expect.len() {
                    let b = s.recv().await.expect("recv").expect("data");
                    assert_eq!(&b[..], &expect[got..got + b.len()]);
                    got += b.len();
                }
                got
            })
        };
        for chunk in data.chunks(256 * 1024) {
            c.send_zc(data.slice_ref(chunk)).await.expect("send_zc");
        }
        assert_eq!(reader.await.expect("reader"), 1 << 20);
        // Result and notification both reaped: nothing left in flight but the recv
        // and accept of this test.
        assert_eq!(h.metrics()[0].stale_cqes, 0);
    });
}

#[test]
fn connection_accepted_on_one_worker_is_served_on_another() {
    let rt = rt(2, Default::default());
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        // Receive once here (arms the multishot), then hand the socket over.
        c.send(Bytes::from_static(b"one")).await.expect("send");
        assert_eq!(&s.recv().await.expect("recv").expect("data")[..], b"one");
        let std_stream = s.into_std().await.expect("into_std");
        let served = h.spawn_on_with(1, move || async move {
            let s = TcpStream::from_std(std_stream).expect("from_std");
            let b = s.recv().await.expect("recv").expect("data");
            s.send(b.into_bytes()).await.expect("echo");
            zerorx::Handle::try_current().and_then(|h| h.current_worker())
        });
        c.send(Bytes::from_static(b"two")).await.expect("send");
        let (n, buf) = c
            .recv_into(BytesMut::with_capacity(16))
            .await
            .expect("recv");
        assert_eq!(&buf[..n], b"two");
        assert_eq!(served.await.expect("served"), Some(1));
    });
}
