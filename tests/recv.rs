//! `TcpStream::recv` on the worker's copy pool: zero-copy echo with every byte
//! verified, ENOBUFS re-arm after buffers are dropped on another thread.

mod common;

use bytes::Bytes;
use common::{Rng, MODES};
use std::time::Duration;
use zcrx::CopyPoolConfig;
use zerorx::net::{TcpListener, TcpStream};
use zerorx::{spawn, timeout, Runtime, WakeMode};

fn rt_with_pool(threads: usize, mode: WakeMode, buffers: u16, size: u32) -> Runtime {
    Runtime::builder()
        .threads(threads)
        .wake(mode)
        .copy_pool(Some(CopyPoolConfig {
            buffers,
            buffer_size: size,
            ..CopyPoolConfig::default()
        }))
        .build()
        .expect("runtime")
}

async fn echo(stream: TcpStream) {
    // The received buffer goes straight back out: no copy on the server.
    while let Ok(Some(buf)) = stream.recv().await {
        if stream.send(buf.into_bytes()).await.is_err() {
            return;
        }
    }
}

/// Binds a listener on loopback and echoes every connection it accepts (on the
/// current worker); returns its address.
fn echo_server() -> std::net::SocketAddr {
    let (l, addr) = common::loopback_listener();
    spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            spawn(echo(s));
        }
    });
    addr
}

#[test]
fn pooled_echo_across_workers_verifies_every_byte() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    for mode in MODES {
        // A small pool (16 × 4 KiB per worker) for 32 concurrent connections.
        let rt = rt_with_pool(2, mode, 16, 4096);
        let h = rt.handle().clone();
        let total = rt.block_on(async move {
            let (l0, addr) = common::loopback_listener();
            let (tx, rx) = crossbeam_channel::bounded(1);
            drop(h.spawn_on_with(1, move || async move {
                let l1 = TcpListener::bind(addr).expect("bind same port");
                tx.send(()).expect("ready");
                while let Ok((s, _)) = l1.accept().await {
                    spawn(echo(s));
                }
            }));
            spawn(async move {
                while let Ok((s, _)) = l0.accept().await {
                    spawn(echo(s));
                }
            });
            while rx.try_recv().is_err() {
                zerorx::sleep(Duration::from_millis(1)).await;
            }
            let joins: Vec<_> = (0..32u64)
                .map(|i| {
                    h.spawn_on_with((i % 2) as usize, move || async move {
                        let len = 48 * 1024 + i as usize * 517;
                        let mut rng = Rng(i * 31 + 7);
                        let data =
                            Bytes::from((0..len).map(|_| rng.next() as u8).collect::<Vec<_>>());
                        let s = std::rc::Rc::new(TcpStream::connect(addr).await.expect("connect"));
                        common::echo_verified(s, data, 3000, "mismatch").await
                    })
                })
                .collect();
            let mut total = 0;
            for j in joins {
                total += timeout(Duration::from_secs(30), j)
                    .await
                    .expect("in time")
                    .expect("client");
            }
            total
        });
        let expected: usize = (0..32).map(|i| 48 * 1024 + i * 517).sum();
        assert_eq!(total, expected, "{mode:?}");
        let stats = rt.handle().pool_stats();
        assert!(stats.iter().all(|s| s.is_some()), "every worker has a pool");
    }
}

#[test]
fn enobufs_rearms_after_buffers_return_from_another_thread() {
    let _g = common::fd_lock();
    // 4 buffers of 1 KiB: holding all four starves the receive, which may not receive
    // into ordinary memory beside them (a limit of the pool's size).
    let rt = Runtime::builder()
        .threads(1)
        .copy_pool(Some(CopyPoolConfig {
            buffers: 4,
            buffer_size: 1024,
            ..CopyPoolConfig::default()
        }))
        .receive_memory_limit(4 * 1024)
        .build()
        .expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let mut held = Vec::new();
        let mut got = 0;
        while held.len() < 4 {
            c.send(Bytes::from(vec![1u8; 1024])).await.expect("send");
            let b = s.recv().await.expect("recv").expect("data");
            got += b.len();
            held.push(b);
        }
        // Pool empty. More data makes the armed receive end with ENOBUFS.
        c.send(Bytes::from(vec![2u8; 100])).await.expect("send");
        zerorx::sleep(Duration::from_millis(20)).await;
        let before = h.metrics()[0].recv_enobufs;
        // The buffers go back from another thread; its drops wake this worker.
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(held);
        });
        let mut rest = Vec::new();
        while rest.len() < 100 {
            let b = timeout(Duration::from_secs(5), s.recv())
                .await
                .expect("re-armed in time")
                .expect("recv")
                .expect("data");
            rest.extend_from_slice(&b);
        }
        dropper.join().expect("dropper");
        assert!(got >= 4 * 1024 - 1024, "held 4 buffers");
        assert!(rest.iter().all(|&b| b == 2 || b == 1));
        assert_eq!(rest.iter().filter(|&&b| b == 2).count(), 100);
        let m = &h.metrics()[0];
        assert!(m.recv_enobufs >= 1 && m.recv_enobufs >= before, "{m:?}");
        // EOF after the peer closes.
        drop(c);
        let mut eof = false;
        for _ in 0..8 {
            if s.recv().await.expect("recv").is_none() {
                eof = true;
                break;
            }
        }
        assert!(eof, "EOF seen");
    });
}

#[test]
fn dropping_a_stream_returns_its_queued_buffers_and_closes_the_fd() {
    let _g = common::fd_lock();
    let rt = rt_with_pool(1, WakeMode::EventFd, 8, 1024);
    let h = rt.handle().clone();
    rt.block_on(async move {
        // The listener stays open to the end: its fd is part of the baseline.
        let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let c = TcpStream::connect(l.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (s, _) = l.accept().await.expect("accept");
        let before = common::fd_count();
        // Arm the receive, then let data queue up in the op without taking it.
        c.send(Bytes::from(vec![7u8; 10])).await.expect("send");
        let first = s.recv().await.expect("recv").expect("data");
        drop(first);
        for _ in 0..4 {
            c.send(Bytes::from(vec![8u8; 1024])).await.expect("send");
        }
        zerorx::sleep(Duration::from_millis(20)).await;
        // Completions are decoded into buffers as they are reaped: the queued data is
        // held by the armed receive until someone takes it.
        let queued = h.pool_stats()[0].expect("pool");
        assert!(queued.in_use >= 1, "queued data holds buffers: {queued:?}");
        drop(s);
        for _ in 0..100 {
            if h.metrics()[0].ops_in_flight <= 1 {
                break;
            }
            zerorx::sleep(Duration::from_millis(1)).await;
        }
        let st = h.pool_stats()[0].expect("pool");
        assert_eq!(st.in_use, 0, "queued buffers returned: {st:?}");
        // All 8 buffers are usable again: a new connection can hold 8 at once.
        let c2 = TcpStream::connect(l.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (s2, _) = l.accept().await.expect("accept");
        let mut held = Vec::new();
        while held.len() < 8 {
            c2.send(Bytes::from(vec![9u8; 1024])).await.expect("send");
            held.push(s2.recv().await.expect("recv").expect("data"));
        }
        assert_eq!(h.pool_stats()[0].expect("pool").in_use, 8);
        drop(held);
        drop((c2, s2));
        zerorx::sleep(Duration::from_millis(5)).await;
        assert_eq!(common::fd_count(), before - 1, "the stream's fd is closed");
    });
}

#[test]
fn incremental_pool_ping_pong_on_many_connections() {
    let _g = common::fd_lock();
    let rt = Runtime::builder()
        .threads(1)
        .pool_size(256 * 1024)
        .chunk_size(64 * 1024)
        .incremental_buffers(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let addr = echo_server();
        let joins: Vec<_> = (0..32u8)
            .map(|i| {
                spawn(async move {
                    let s = TcpStream::connect(addr).await.expect("connect");
                    for round in 0..200u32 {
                        let msg = Bytes::from(vec![i ^ round as u8; 64 + (round as usize % 7)]);
                        s.send(msg.clone()).await.expect("send");
                        let mut got = Vec::new();
                        while got.len() < msg.len() {
                            let b = s.recv().await.expect("recv").expect("no EOF mid-stream");
                            got.extend_from_slice(&b);
                        }
                        assert_eq!(&got[..], &msg[..], "conn {i} round {round}");
                    }
                })
            })
            .collect();
        for j in joins {
            timeout(Duration::from_secs(30), j)
                .await
                .expect("in time")
                .expect("client");
        }
    });
}

/// Echo through one worker with 16 connections, every byte checked, under one set of
/// receive levers.
fn echo_with(configure: impl FnOnce(&mut zerorx::Builder)) -> zerorx::WorkerMetricsSnapshot {
    let mut b = Runtime::builder();
    b.threads(1).pool_size(256 * 1024).chunk_size(16 * 1024);
    configure(&mut b);
    let rt = b.build().expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async {
        let addr = echo_server();
        let joins: Vec<_> = (0..16u64)
            .map(|i| {
                spawn(async move {
                    let len = 40_000 + i as usize * 1234;
                    let mut rng = Rng(i * 7 + 3);
                    let data = Bytes::from((0..len).map(|_| rng.next() as u8).collect::<Vec<_>>());
                    let s = std::rc::Rc::new(TcpStream::connect(addr).await.expect("connect"));
                    common::echo_verified(s, data, 700 + i as usize * 300, &format!("conn {i}"))
                        .await;
                })
            })
            .collect();
        for j in joins {
            timeout(Duration::from_secs(30), j)
                .await
                .expect("in time")
                .expect("client");
        }
    });
    h.metrics()[0]
}

#[test]
fn echo_verifies_every_byte_with_each_receive_lever() {
    let _g = common::fd_lock();
    let caps = zcrx::probe::capabilities();
    assert!(
        caps.buffer_rings.incremental && caps.buffer_rings.bundle,
        "this kernel lacks incremental buffer rings (6.12) or bundles (6.10): {:?}",
        caps.buffer_rings
    );
    echo_with(|b| {
        b.incremental_buffers(false);
    });
    echo_with(|b| {
        b.incremental_buffers(true);
    });
    echo_with(|b| {
        b.incremental_buffers(false).recv_bundles(true);
    });
    let m = echo_with(|b| {
        b.incremental_buffers(true)
            .completion_batch(16, Duration::from_micros(100));
    });
    assert!(m.cqes > 0);
}

/// A slow reader on a small pool: the sender outruns it. Without a hold limit the
/// pool runs dry, the receive ends with ENOBUFS and is re-armed when the reader drops
/// buffers; with the default limit the receive stops at its share of the pool instead
/// and the pool never runs dry. Either way no byte is lost, and memory stays bounded:
/// never more pool memory out than the pool has (the rest waits in the kernel's socket
/// buffer, and TCP stops the sender). The receive memory limit is the pool's, so no
/// receive goes to ordinary memory meanwhile (tests/pool_pressure.rs has those).
fn slow_reader(incremental: bool, unlimited: bool) {
    let mut b = Runtime::builder();
    b.threads(1)
        .pool_size(8 * 4096)
        .chunk_size(4096)
        .receive_memory_limit(8 * 4096)
        .incremental_buffers(incremental);
    if unlimited {
        b.recv_hold_limit(0);
    }
    let rt = b.build().expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let total = 2 << 20;
        let mut rng = Rng(99);
        let data = Bytes::from((0..total).map(|_| rng.next() as u8).collect::<Vec<_>>());
        let writer = {
            let data = data.clone();
            spawn(async move {
                c.send(data).await.expect("send");
                c
            })
        };
        let mut got = 0;
        let mut held = Vec::new();
        while got < total {
            let buf = timeout(Duration::from_secs(20), s.recv())
                .await
                .expect("progress")
                .expect("recv")
                .expect("no early EOF");
            assert_eq!(&buf[..], &data[got..got + buf.len()], "at {got}");
            got += buf.len();
            held.push(buf);
            let st = h.pool_stats()[0].expect("pool");
            assert!(
                held.iter().map(|b| b.len()).sum::<usize>() <= 8 * 4096,
                "never more received-and-held bytes than the pool: {st:?}"
            );
            // With the hold limit the reader keeps less, so the pool has room for
            // the receive's share even when its buffers are parts of more buffers.
            if held.len() >= if unlimited { 6 } else { 4 } {
                // The reader is slow: it sits on what it has for a while.
                zerorx::sleep(Duration::from_millis(1)).await;
                held.clear();
            }
        }
        drop(
            writer
                .await
                .expect("the sender finished once the reader caught up"),
        );
        let m = h.metrics()[0];
        let st = h.pool_stats()[0].expect("pool");
        assert_eq!(st.bytes, total as u64, "{st:?}");
        if unlimited {
            assert!(
                m.rearms.no_buffers > 0 && m.recv_enobufs == m.rearms.no_buffers,
                "the pool ran dry and the receive was re-armed: {m:?}"
            );
            assert!(st.enobufs > 0, "{st:?}");
        } else {
            assert!(
                m.rearms.budget > 0 && m.recv_enobufs == 0,
                "the receive stopped at its hold limit, the pool never ran dry: {m:?}"
            );
        }
        drop(held);
    });
}

#[test]
fn slow_reader_exhausts_the_pool_without_losing_bytes() {
    let _g = common::fd_lock();
    slow_reader(false, true);
}

#[test]
fn slow_reader_exhausts_an_incremental_pool_without_losing_bytes() {
    let _g = common::fd_lock();
    slow_reader(true, true);
}

#[test]
fn slow_reader_stops_at_its_hold_limit_without_losing_bytes() {
    let _g = common::fd_lock();
    slow_reader(false, false);
    slow_reader(true, false);
}

fn udp_rt(pool: Option<CopyPoolConfig>) -> Runtime {
    Runtime::builder()
        .threads(1)
        .udp_pool(pool)
        .build()
        .expect("runtime")
}

#[test]
fn udp_pooled_receive_gets_every_datagram_with_its_sender_despite_a_dry_pool() {
    use zerorx::net::UdpSocket;
    // 4 buffers: holding them starves the multishot RECVMSG (ENOBUFS); the rest of
    // the burst waits in the socket buffer until buffers come back.
    let rt = udp_rt(Some(CopyPoolConfig {
        buffers: 4,
        buffer_size: 2048,
        group_id: 1,
        ..CopyPoolConfig::default()
    }));
    let h = rt.handle().clone();
    rt.block_on(async move {
        let rx = UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let tx = UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let to = rx.local_addr().expect("addr");
        let from = tx.local_addr().expect("addr");
        let payload = |i: u32| -> Vec<u8> {
            let mut v = i.to_le_bytes().to_vec();
            v.extend((0..(i * 37 % 1400)).map(|k| (k ^ i) as u8));
            v
        };
        for i in 0..40u32 {
            tx.send_to(Bytes::from(payload(i)), to).await.expect("send");
        }
        let mut held = Vec::new();
        for i in 0..40u32 {
            let d = timeout(Duration::from_secs(5), rx.recv_pooled())
                .await
                .expect("in time")
                .expect("datagram");
            assert_eq!(d.from, from);
            assert!(!d.truncated);
            assert_eq!(&d.data[..], &payload(i)[..], "datagram {i}");
            held.push(d);
            if held.len() == 4 {
                // The pool is dry: let the armed receive hit ENOBUFS, then give back.
                zerorx::sleep(Duration::from_millis(5)).await;
                held.clear();
            }
        }
        let m = h.metrics()[0];
        assert!(m.rearms.no_buffers > 0, "{m:?}");
        let st = h.udp_pool_stats()[0].expect("datagram pool");
        assert_eq!(st.completions, 40, "{st:?}");
        assert!(st.enobufs > 0, "{st:?}");
        drop(held);
    });
}

#[test]
fn udp_datagram_larger_than_a_buffer_arrives_truncated_and_says_so() {
    use zerorx::net::UdpSocket;
    let rt = udp_rt(Some(CopyPoolConfig {
        buffers: 8,
        buffer_size: 1024,
        group_id: 1,
        ..CopyPoolConfig::default()
    }));
    rt.block_on(async {
        let rx = UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let tx = UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let big: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        tx.send_to(Bytes::from(big.clone()), rx.local_addr().expect("addr"))
            .await
            .expect("send");
        tx.send_to(Bytes::from_static(b"small"), rx.local_addr().expect("addr"))
            .await
            .expect("send");
        let d = rx.recv_pooled().await.expect("datagram");
        assert!(d.truncated);
        assert!(!d.data.is_empty() && d.data.len() < 1024);
        assert_eq!(&d.data[..], &big[..d.data.len()]);
        let d = rx.recv_pooled().await.expect("datagram");
        assert!(!d.truncated);
        assert_eq!(&d.data[..], b"small");
    });
}

#[test]
fn udp_pooled_receive_without_a_pool_is_unsupported() {
    let rt = udp_rt(None);
    rt.block_on(async {
        let rx = zerorx::net::UdpSocket::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let e = rx.recv_pooled().await.expect_err("no pool");
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("udp_pool"), "{e}");
    });
}
