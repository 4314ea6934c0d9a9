//! Behaviour specific to the io_uring TCP provider: backpressure on unexpected
//! messages, hostile bytes on its port, zero-copy payloads, accept, unreachable peers.

use std::time::Duration;
use zerorx_fabric::*;

const OP_TIMEOUT: Duration = Duration::from_secs(30);

fn run<F: std::future::Future<Output = ()>>(f: F) {
    run_with(zerorx::SendZeroCopy::default(), f);
}

/// [`run`] with `policy` for the runtime's queued sends; returns the worker's
/// counters after `f`.
fn run_with<F: std::future::Future<Output = ()>>(
    policy: zerorx::SendZeroCopy,
    f: F,
) -> zerorx::WorkerMetricsSnapshot {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .shutdown_timeout(Duration::from_secs(5))
        .send_zero_copy(policy)
        .build()
        .expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async {
        zerorx::time::timeout(Duration::from_secs(120), f)
            .await
            .expect("test finished in time")
    });
    h.metrics()[0]
}

fn domain() -> Domain {
    Fabric::open("uring-tcp", &Requirements::new().caps(Cap::ALL))
        .expect("open")
        .domain(DomainConfig::default())
        .expect("domain")
}

fn endpoint(d: &Domain, cfg: EndpointConfig) -> (Endpoint, CompletionQueue) {
    let cq = d.completion_queue(cfg.tx_depth + cfg.rx_depth).expect("cq");
    (d.endpoint(&cq, cfg).expect("endpoint"), cq)
}

async fn next(cq: &CompletionQueue) -> Completion {
    zerorx::time::timeout(OP_TIMEOUT, cq.next())
        .await
        .expect("a completion in time")
}

/// The socket address inside a uring-tcp endpoint address (nonce, then text).
fn sock(ep: &Endpoint) -> std::net::SocketAddr {
    let a = ep.address();
    std::str::from_utf8(&a.bytes[8..]).unwrap().parse().unwrap()
}

#[test]
fn unexpected_messages_are_bounded_with_backpressure() {
    run(async {
        let d = domain();
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let (b, bcq) = endpoint(
            &d,
            EndpointConfig {
                unexpected_msgs: 4,
                ..Default::default()
            },
        );
        let ab = a.connect(&b.address()).await.unwrap();
        const N: usize = 64;
        let src = d.register(N * 1024, Access::LOCAL).unwrap();
        for i in 0..N {
            src.write(i * 1024, &[i as u8; 1024]).unwrap();
            a.send(ab, &src.slice(i * 1024..(i + 1) * 1024).unwrap())
                .level(Level::Delivered)
                .context(i as u64)
                .post()
                .unwrap();
        }
        // The receiver takes 4 and then stops reading: no fifth delivery however long
        // one waits.
        let mut delivered = Vec::new();
        for _ in 0..4 {
            let c = next(&acq).await;
            assert!(c.is_ok(), "{c:?}");
            delivered.push(c.context);
        }
        zerorx::time::sleep(Duration::from_millis(300)).await;
        assert!(
            acq.try_next().is_none(),
            "a fifth message was taken past the bound"
        );
        assert_eq!(delivered, vec![0, 1, 2, 3]);
        let dst = d.register(N * 1024, Access::LOCAL).unwrap();
        for i in 0..N {
            b.recv(&dst.slice(i * 1024..(i + 1) * 1024).unwrap())
                .post()
                .unwrap();
        }
        for i in 0..N {
            let c = next(&bcq).await;
            assert!(c.is_ok() && c.len == 1024, "{c:?}");
            assert_eq!(dst.to_vec(i * 1024..i * 1024 + 2).unwrap(), [i as u8; 2]);
        }
        while delivered.len() < N {
            let c = next(&acq).await;
            assert!(c.is_ok(), "{c:?}");
            delivered.push(c.context);
        }
        assert_eq!(delivered, (0..N as u64).collect::<Vec<_>>());
    });
}

/// Sends `bytes` on a raw connection to `ep` and expects the endpoint to close it.
async fn hostile(ep: &Endpoint, bytes: Vec<u8>, what: &str) {
    let s = zerorx::net::TcpStream::connect(sock(ep)).await.unwrap();
    s.send(bytes::Bytes::from(bytes)).await.unwrap();
    let end = zerorx::time::timeout(OP_TIMEOUT, async {
        loop {
            match s.recv().await {
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => return,
            }
        }
    })
    .await;
    assert!(end.is_ok(), "{what}: the endpoint closes the connection");
}

fn header(op: u8, id: u64, len: u64, key: u64, generation: u32) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[0] = op;
    h[4..8].copy_from_slice(&generation.to_le_bytes());
    h[8..16].copy_from_slice(&id.to_le_bytes());
    h[16..24].copy_from_slice(&len.to_le_bytes());
    h[40..48].copy_from_slice(&key.to_le_bytes());
    h
}

#[test]
fn hostile_bytes_close_only_that_connection() {
    run(async {
        let d = domain();
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let (b, bcq) = endpoint(&d, EndpointConfig::default());
        let magic = u64::from_le_bytes(*b"ZRXFAB01");
        hostile(&b, vec![0xAB; 200], "garbage").await;
        hostile(&b, header(1, 7, 4, magic, 99), "wrong version").await;
        hostile(&b, header(1, 7, 1 << 40, magic, 1), "huge HELLO").await;
        let mut hello = header(1, 7, 9, magic, 1);
        hello.extend_from_slice(b"not-addr!");
        hostile(&b, hello, "HELLO with no address").await;
        let mut ok_hello = header(1, 8, 14, magic, 1);
        ok_hello.extend_from_slice(b"127.0.0.1:9999");
        let mut frames = ok_hello.clone();
        frames.extend(header(2, 1, 1 << 40, 0, 0));
        hostile(&b, frames, "a message over the maximum size").await;
        let mut frames = ok_hello.clone();
        frames.extend(header(5, 1, 0, 0, 0));
        hostile(&b, frames, "an answer on a request connection").await;
        let mut frames = ok_hello;
        frames.extend(header(42, 1, 0, 0, 0));
        hostile(&b, frames, "an unknown frame type").await;
        // The endpoint still serves well-behaved peers.
        let ab = a.connect(&b.address()).await.unwrap();
        let src = d.register(64, Access::LOCAL).unwrap();
        let dst = d.register(64, Access::LOCAL).unwrap();
        src.write(0, b"still here").unwrap();
        b.recv(&dst.all()).post().unwrap();
        a.send(ab, &src.slice(0..10).unwrap()).post().unwrap();
        assert!(next(&acq).await.is_ok());
        assert!(next(&bcq).await.is_ok());
        assert_eq!(dst.to_vec(0..10).unwrap(), b"still here");
    });
}

/// Large payloads and read answers go out zero-copy under the runtime's policy
/// (`always`: loopback copies, which the default policy would not try), every byte
/// intact.
#[test]
fn send_zc_payloads() {
    let policy = zerorx::SendZeroCopy::Always {
        threshold: 16 << 10,
    };
    let m = run_with(policy, async {
        let d = domain();
        let cfg = EndpointConfig::default();
        let (a, acq) = endpoint(&d, cfg.clone());
        let (b, bcq) = endpoint(&d, cfg);
        let ab = a.connect(&b.address()).await.unwrap();
        let n = 1 << 20;
        let data: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
        let src = d.register_vec(data.clone(), Access::ALL).unwrap();
        let dst = d.register(n, Access::ALL).unwrap();
        b.recv(&dst.all()).post().unwrap();
        a.send(ab, &src.all()).post().unwrap();
        assert!(next(&acq).await.is_ok());
        assert!(next(&bcq).await.is_ok());
        assert!(dst.to_vec(0..n).unwrap() == data);
        // A read answered with SEND_ZC from the target region.
        let key = src.remote(0..n, Access::REMOTE_READ).unwrap();
        let ba = b.insert_peer(&a.address()).unwrap();
        let back = d.register(n, Access::LOCAL).unwrap();
        b.read(ba, &back.all(), &key, 0).post().unwrap();
        assert!(next(&bcq).await.is_ok());
        assert!(back.to_vec(0..n).unwrap() == data);
    });
    assert!(m.send_zc >= 2, "no zero-copy send: {m:?}");
    assert_eq!(
        m.send_zc_copied, m.send_zc,
        "loopback copies every one: {m:?}"
    );
    // The payloads went out from the registered regions, naming the registration;
    // their headers, small, went plain.
    assert_eq!(
        m.send_zc_registered, m.send_zc,
        "a zero-copy payload sent unregistered: {m:?}"
    );
}

#[test]
fn accept_reports_peers_that_connected() {
    run(async {
        let d = domain();
        let (server, scq) = endpoint(&d, EndpointConfig::default());
        let (client, ccq) = endpoint(&d, EndpointConfig::default());
        let to_server = client.connect(&server.address()).await.unwrap();
        let src = d.register(64, Access::LOCAL).unwrap();
        src.write(0, b"hi").unwrap();
        client
            .send(to_server, &src.slice(0..2).unwrap())
            .post()
            .unwrap();
        let peer = zerorx::time::timeout(OP_TIMEOUT, server.accept())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(server.insert_peer(&client.address()).unwrap(), peer);
        let dst = d.register(64, Access::LOCAL).unwrap();
        server.recv(&dst.all()).post().unwrap();
        let c = next(&scq).await;
        assert_eq!((c.peer, c.len), (Some(peer), 2));
        client.recv(&dst.all()).post().unwrap();
        server.send(peer, &src.slice(0..2).unwrap()).post().unwrap();
        assert!(next(&ccq).await.is_ok()); // client's send
        let r = next(&ccq).await;
        assert!(r.is_ok() && r.kind == OpKind::Recv && r.len == 2, "{r:?}");
    });
}

#[test]
fn unreachable_peer() {
    run(async {
        let d = domain();
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut bytes = 5u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(format!("127.0.0.1:{port}").as_bytes());
        let dead = EpAddr {
            provider: "uring-tcp".into(),
            bytes,
        };
        match a.connect(&dead).await {
            Err(FabricError::Unreachable { cause, .. }) => {
                assert!(cause.contains("connecting"), "{cause}")
            }
            other => panic!("{other:?}"),
        }
        let peer = a.insert_peer(&dead).unwrap();
        let src = d.register(8, Access::LOCAL).unwrap();
        assert!(matches!(
            a.send(peer, &src.all()).post(),
            Err(PostError::PeerDown { .. })
        ));
        assert!(acq.try_next().is_none());
        let short = EpAddr {
            provider: "uring-tcp".into(),
            bytes: vec![1, 2],
        };
        assert!(matches!(
            a.insert_peer(&short),
            Err(FabricError::BadAddress { .. })
        ));
        assert!(EpAddr::from_bytes(&[]).is_err());
        assert!(EpAddr::from_bytes(&[9, b'a']).is_err());
        let e = a.address();
        assert_eq!(EpAddr::from_bytes(&e.to_bytes()).unwrap(), e);
    });
}

#[test]
fn bind_address_is_checked() {
    run(async {
        let d = domain();
        let cq = d.completion_queue(1024).unwrap();
        let e = d
            .endpoint(
                &cq,
                EndpointConfig {
                    bind: Some("0.0.0.0:0".parse().unwrap()),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(
            matches!(
                e,
                FabricError::InvalidConfig {
                    field: "EndpointConfig::bind",
                    ..
                }
            ),
            "{e}"
        );
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let e = d
            .endpoint(
                &cq,
                EndpointConfig {
                    bind: Some(taken.local_addr().unwrap()),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(matches!(e, FabricError::Io { call: "bind", .. }), "{e}");
        drop(taken);
        // Nor may a second endpoint share a port with the first.
        let first = d.endpoint(&cq, EndpointConfig::default()).unwrap();
        let e = d
            .endpoint(
                &cq,
                EndpointConfig {
                    bind: Some(sock(&first)),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(
            matches!(e, FabricError::Io { call: "bind", code, .. } if code == libc::EADDRINUSE),
            "{e}"
        );
    });
}

#[test]
fn use_outside_the_worker_is_an_error_not_a_panic() {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    let (d, a, b, cq) = rt.block_on(async {
        let d = domain();
        let (a, cq) = endpoint(&d, EndpointConfig::default());
        let (b, _) = endpoint(&d, EndpointConfig::default());
        (d, a, b, cq)
    });
    assert!(matches!(
        a.insert_peer(&b.address()),
        Err(FabricError::NotInRuntime)
    ));
    let buf = d.register(8, Access::LOCAL).unwrap();
    let r = a
        .recv(&buf.all())
        .post()
        .expect("posting a receive needs no task");
    drop(a);
    let c = cq.try_next().expect("closing completes the receive");
    assert_eq!((c.op, c.status), (r, Err(OpError::Canceled)));
    drop(b);
}

#[test]
fn max_msg_size_bounds_posts_and_what_peers_may_send() {
    run(async {
        let d = domain();
        let small = EndpointConfig {
            max_msg_size: Some(4096),
            ..Default::default()
        };
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let (b, bcq) = endpoint(&d, small);
        assert_eq!(b.max_msg_size(), 4096);
        assert_eq!(a.max_msg_size(), 8 << 20, "the Requirements' default");
        let buf = d.register(65536, Access::LOCAL).unwrap();
        let ba = b.insert_peer(&a.address()).unwrap();
        assert_eq!(
            b.send(ba, &buf.all()).post(),
            Err(PostError::TooLarge {
                len: 65536,
                max: 4096
            })
        );
        assert_eq!(
            b.recv_lease(8192).post(),
            Err(PostError::TooLarge {
                len: 8192,
                max: 4096
            })
        );
        // A peer sending more than b accepts is cut off; its operations learn it.
        let ab = a.connect(&b.address()).await.unwrap();
        // A receive only from a learns it too (one from anyone stays posted).
        b.recv(&buf.slice(0..4096).unwrap())
            .from(ba)
            .post()
            .unwrap();
        a.send(ab, &buf.all())
            .level(Level::Delivered)
            .post()
            .unwrap();
        let c = next(&acq).await;
        assert!(
            matches!(c.status, Err(OpError::ConnectionLost { .. })),
            "{c:?}"
        );
        let r = next(&bcq).await;
        assert!(
            matches!(r.status, Err(OpError::ConnectionLost { .. })),
            "{r:?}"
        );
        let e = d
            .endpoint(
                &d.completion_queue(1024).unwrap(),
                EndpointConfig {
                    max_msg_size: Some(usize::MAX),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(
            matches!(
                e,
                FabricError::InvalidConfig {
                    field: "EndpointConfig::max_msg_size",
                    ..
                }
            ),
            "{e}"
        );
    });
}

#[test]
fn a_runtime_without_a_receive_pool_is_refused_with_the_fix() {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .copy_pool(None)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let d = domain();
        let cq = d.completion_queue(1024).unwrap();
        match d.endpoint(&cq, EndpointConfig::default()) {
            Err(FabricError::InvalidConfig { field, reason, .. }) => {
                assert_eq!(field, "Builder::copy_pool");
                assert!(reason.contains("receive pool"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn a_peer_inserted_by_socket_address_is_the_endpoint_that_connects_from_there() {
    run(async {
        let d = domain();
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let (b, bcq) = endpoint(&d, EndpointConfig::default());
        let (c, _ccq) = endpoint(&d, EndpointConfig::default());
        assert_eq!(b.address().uring_tcp_socket(), Some(sock(&b)));
        // Each knows the other only by socket address (libfabric's FI_SOCKADDR_IN).
        let ab = a.insert_peer(&EpAddr::uring_tcp(sock(&b))).unwrap();
        let ba = b.insert_peer(&EpAddr::uring_tcp(sock(&a))).unwrap();
        let bc = b.insert_peer(&EpAddr::uring_tcp(sock(&c))).unwrap();
        assert_ne!(
            ba, bc,
            "two addresses are two peers, though neither nonce is known"
        );
        assert_eq!(
            b.insert_peer(&EpAddr::uring_tcp(sock(&a))).unwrap(),
            ba,
            "inserting the same address again names the same peer"
        );
        let src = d.register(16, Access::LOCAL).unwrap();
        let dst = d.register(16, Access::LOCAL).unwrap();
        src.write(0, b"by socket addr..").unwrap();
        b.recv(&dst.all()).post().unwrap();
        a.send(ab, &src.all()).post().unwrap();
        assert!(next(&acq).await.is_ok());
        let got = next(&bcq).await;
        assert!(got.is_ok(), "{got:?}");
        assert_eq!(
            got.peer,
            Some(ba),
            "the connection from a is tied to a's entry"
        );
        assert_eq!(dst.to_vec(0..16).unwrap(), b"by socket addr..");
        assert_eq!(
            b.peer_address(ba),
            Some(a.address()),
            "the entry now carries a's nonce"
        );
        assert_eq!(
            b.insert_peer(&a.address()).unwrap(),
            ba,
            "a's full address now names the same peer"
        );
    });
}

#[test]
fn foreign_memory_is_sent_from_and_received_into_in_place() {
    run(async {
        let d = domain();
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let (b, bcq) = endpoint(&d, EndpointConfig::default());
        let ab = a.connect(&b.address()).await.unwrap();
        let mut out = vec![0u8; 64 << 10];
        out.iter_mut().enumerate().for_each(|(i, x)| *x = i as u8);
        let mut into = vec![0u8; 64 << 10];
        // SAFETY: both vectors outlive the regions and every operation posted on them
        // (the completions are awaited below), and nothing touches them meanwhile.
        let (src, dst) = unsafe {
            (
                d.register_foreign(out.as_mut_ptr(), out.len(), Access::LOCAL)
                    .unwrap(),
                d.register_foreign(into.as_mut_ptr(), into.len(), Access::LOCAL)
                    .unwrap(),
            )
        };
        b.recv(&dst.all()).post().unwrap();
        a.send(ab, &src.all()).post().unwrap();
        assert!(next(&acq).await.is_ok());
        assert_eq!(next(&bcq).await.len, 64 << 10);
        drop((src, dst));
        assert_eq!(
            into, out,
            "received in place, and the owner still has its memory"
        );
        // SAFETY: a null pointer is refused before anything is touched.
        let null = unsafe { d.register_foreign(std::ptr::null_mut(), 8, Access::LOCAL) };
        assert!(null.is_err());
    });
}

#[test]
fn rma_with_a_program_chosen_key_is_checked_at_the_target() {
    run(async {
        let d = domain();
        let (a, acq) = endpoint(&d, EndpointConfig::default());
        let (b, _bcq) = endpoint(&d, EndpointConfig::default());
        let ab = a.connect(&b.address()).await.unwrap();
        let target = d.register(4096, Access::ALL).unwrap();
        let key = target
            .remote_keyed(0..4096, Access::REMOTE_READ | Access::REMOTE_WRITE, 0xC0DE)
            .unwrap();
        assert_eq!(key.key, 0xC0DE);
        let other = d.register(64, Access::ALL).unwrap();
        assert!(
            other
                .remote_keyed(0..64, Access::REMOTE_READ, 0xC0DE)
                .is_err(),
            "a key is granted once per domain"
        );
        // The initiator knows only the key's value.
        let raw = RemoteKey::raw(0xC0DE);
        let src = d.register(100, Access::LOCAL).unwrap();
        src.write(0, &[7u8; 100]).unwrap();
        a.write(ab, &src.all(), &raw, 1000).post().unwrap();
        assert!(next(&acq).await.is_ok());
        assert_eq!(target.to_vec(1000..1100).unwrap(), vec![7u8; 100]);
        let back = d.register(100, Access::LOCAL).unwrap();
        a.read(ab, &back.all(), &raw, 1000).post().unwrap();
        assert!(next(&acq).await.is_ok());
        assert_eq!(back.to_vec(0..100).unwrap(), vec![7u8; 100]);
        // Out of the range: only the target can tell, and it says so.
        a.write(ab, &src.all(), &raw, 4000).post().unwrap();
        let c = next(&acq).await;
        assert!(
            matches!(
                c.status,
                Err(OpError::RemoteAccess {
                    fault: AccessFault::OutOfBounds { .. },
                    ..
                })
            ),
            "{c:?}"
        );
        // Deregistered: the key is gone.
        drop(target);
        a.write(ab, &src.all(), &raw, 0).post().unwrap();
        let c = next(&acq).await;
        assert!(
            matches!(c.status, Err(OpError::RemoteAccess { .. })),
            "{c:?}"
        );
        assert!(
            other
                .remote_keyed(0..64, Access::REMOTE_READ, 0xC0DE)
                .is_ok(),
            "a released key can be chosen again"
        );
    });
}
