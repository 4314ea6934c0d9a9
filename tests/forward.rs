//! `net::forward` / `forward_both`: a proxy that moves received buffers to the other
//! connection without copying them. A std client talks through the proxy to a std
//! echo server; every byte of the echo is checked, the half-close travels both ways,
//! and every pool buffer comes back, with plain and with zero-copy sends.

mod common;

use common::{join_peer, pool_drained, random};
use std::io::{Read, Write};
use std::time::Duration;
use zerorx::net::{forward_both, TcpStream, FORWARD_BACKLOG};
use zerorx::{spawn, timeout, SendZeroCopy};

/// A std echo server on its own thread for one connection: echoes until the end of
/// stream, then shuts its write half.
fn std_echo_server() -> (std::net::SocketAddr, std::thread::JoinHandle<u64>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let t = std::thread::spawn(move || {
        let (mut c, _) = l.accept().expect("accept");
        c.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut buf = vec![0u8; 50_000];
        let mut echoed = 0u64;
        loop {
            match c.read(&mut buf).expect("read") {
                0 => break,
                n => {
                    c.write_all(&buf[..n]).expect("write");
                    echoed += n as u64;
                }
            }
        }
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
        echoed
    });
    (addr, t)
}

fn proxied_echo(policy: SendZeroCopy, register_pools: bool) -> zerorx::WorkerMetricsSnapshot {
    let _fds = common::fd_lock();
    let rt = common::small_pool_builder()
        .send_zero_copy(policy)
        .build()
        .expect("runtime");
    let h = rt.handle().clone();
    let hp = h.clone();
    rt.block_on(async move {
        let (upstream, server) = std_echo_server();
        let (l, addr) = common::loopback_listener();
        let proxy = spawn(async move {
            let (client, _) = l.accept().await.expect("accept");
            if register_pools {
                let n = zerorx::runtime::register_receive_pools().expect("registers");
                assert_eq!(n, 1, "the copy pool's area");
            }
            let server = TcpStream::connect(upstream)
                .await
                .expect("connect upstream");
            forward_both(&client, &server, FORWARD_BACKLOG).await
        });
        let n = 4 << 20;
        let client = common::std_echo_client(addr, random(21, n), 7_001);
        let (there, back) = timeout(Duration::from_secs(60), proxy)
            .await
            .expect("the proxy finished in time")
            .expect("proxy task")
            .expect("forwarded both ways");
        assert_eq!((there, back), (n as u64, n as u64));
        join_peer(client).await;
        assert_eq!(join_peer(server).await, n as u64);
        pool_drained(&hp).await;
    });
    h.metrics()[0]
}

#[test]
fn a_proxy_forwards_both_ways_byte_exact_with_plain_sends() {
    let m = proxied_echo(SendZeroCopy::default(), false);
    // Both peers are on this host: the default policy sends plain.
    assert_eq!(m.send_zc, 0, "{m:?}");
}

#[test]
fn a_proxy_forwards_both_ways_byte_exact_with_zero_copy_sends() {
    let m = proxied_echo(SendZeroCopy::Always { threshold: 0 }, false);
    assert!(m.send_zc > 0, "no zero-copy send: {m:?}");
    assert_eq!(m.send_zc_registered, 0, "nothing was registered: {m:?}");
    assert_eq!(
        m.send_zc_copied, m.send_zc,
        "loopback copies every one: {m:?}"
    );
}

#[test]
fn a_proxy_on_registered_receive_pools_sends_naming_the_registration() {
    let m = proxied_echo(SendZeroCopy::Always { threshold: 0 }, true);
    assert!(m.send_zc > 0, "no zero-copy send: {m:?}");
    // The received buffers lie in the copy pool, registered before the first send;
    // only buffers received into ordinary memory while the pool was held go
    // unregistered.
    assert!(
        m.send_zc_registered > 0,
        "no send named the pool's registration: {m:?}"
    );
    assert_eq!(
        m.send_zc_copied, m.send_zc,
        "loopback copies every one: {m:?}"
    );
}

#[test]
fn a_proxy_whose_upstream_resets_reports_the_failure() {
    let _fds = common::fd_lock();
    common::small_pool_rt().block_on(async {
        // An upstream that accepts, then resets the connection at once.
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let upstream = l.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let (c, _) = l.accept().expect("accept");
            socket2::SockRef::from(&c)
                .set_linger(Some(Duration::ZERO))
                .expect("SO_LINGER");
            std::thread::sleep(Duration::from_millis(50));
            drop(c);
        });
        let (pl, addr) = common::loopback_listener();
        let proxy = spawn(async move {
            let (client, _) = pl.accept().await.expect("accept");
            let server = TcpStream::connect(upstream)
                .await
                .expect("connect upstream");
            forward_both(&client, &server, FORWARD_BACKLOG).await
        });
        let client = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            // Keeps sending until the proxy gives up on the connection.
            let piece = vec![5u8; 64 << 10];
            for _ in 0..1000 {
                if c.write_all(&piece).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let r = timeout(Duration::from_secs(30), proxy)
            .await
            .expect("the proxy ended in time")
            .expect("proxy task");
        let e = r.expect_err("the upstream reset");
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            ),
            "{e}"
        );
        join_peer(server).await;
        join_peer(client).await;
    });
}
