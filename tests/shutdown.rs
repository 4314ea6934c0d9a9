//! Shutdown with ops in flight: no hang, no fd leak, in both wake modes.
//! Every test here holds the fd lock: they compare `/proc/self/fd` counts.

mod common;

use common::{fd_count, fd_lock, rt, MODES};
use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use zerorx::net::TcpStream;
use zerorx::{sleep, Runtime};

/// Arms, on every worker: an accept, a recv on a connection with no data, a long
/// timer, and a pending task. Returns once all are armed.
fn arm_everything(rt: &Runtime) {
    let h = rt.handle().clone();
    rt.block_on(async move {
        let joins = h.spawn_on_each(|_| async {
            let (listener, addr) = common::loopback_listener();
            let client = TcpStream::connect(addr).await.expect("connect");
            let (server, _) = listener.accept().await.expect("accept");
            // Runs until the runtime drops it: an accept armed, a recv pending on a
            // connection that never sends, a timer an hour away.
            zerorx::spawn(async move {
                let _c = client;
                let _listener_accept = zerorx::spawn(async move {
                    let _ = listener.accept().await;
                });
                let pending_recv = server.recv_into(bytes::BytesMut::with_capacity(64));
                let _ = zerorx::timeout(Duration::from_secs(3600), pending_recv).await;
            });
            zerorx::spawn(sleep(Duration::from_secs(3600)));
            sleep(Duration::from_millis(5)).await;
        });
        for j in joins {
            j.await.expect("armed");
        }
    });
    let in_flight: u64 = rt.handle().metrics().iter().map(|m| m.ops_in_flight).sum();
    assert!(
        in_flight >= 2 * rt.handle().threads() as u64,
        "ops armed: {in_flight}"
    );
}

#[test]
fn drop_with_inflight_ops_neither_hangs_nor_leaks() {
    let _g = fd_lock();
    for mode in MODES {
        let before = fd_count();
        let rt = rt(2, mode);
        arm_everything(&rt);
        let t = Instant::now();
        drop(rt);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "{mode:?}: drop took {:?}",
            t.elapsed()
        );
        assert_eq!(fd_count(), before, "{mode:?}: fds leaked");
    }
}

#[test]
fn shutdown_with_timeout_reports_success() {
    let _g = fd_lock();
    let before = fd_count();
    let rt = rt(2, Default::default());
    arm_everything(&rt);
    let h = rt.handle().clone();
    rt.shutdown(Duration::from_secs(2)).expect("clean shutdown");
    let m = h.metrics();
    assert!(
        m.iter().all(|w| w.leaked_ops == 0 && w.ops_in_flight == 0),
        "{m:?}"
    );
    drop(h);
    assert_eq!(fd_count(), before);
}

#[test]
fn spawn_after_shutdown_resolves_cancelled() {
    let _g = fd_lock();
    let rt = rt(2, Default::default());
    let h = rt.handle().clone();
    drop(rt);
    for w in 0..2 {
        let e = futures_executor::block_on(h.spawn_on(w, async { 1 })).expect_err("no worker");
        assert!(e.is_cancelled());
    }
}

#[test]
fn cancelled_connect_and_accept_release_everything() {
    let _g = fd_lock();
    let before = fd_count();
    let rt = rt(1, Default::default());
    let h = rt.handle().clone();
    rt.block_on(async {
        // A listener with a full backlog that never accepts: further SYNs are dropped,
        // so connects stay pending until cancelled.
        let full = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        full.bind(&"127.0.0.1:0".parse::<SocketAddr>().expect("addr").into())
            .expect("bind");
        full.listen(0).expect("listen");
        let addr = full.local_addr().expect("addr").as_socket().expect("inet");
        let mut held = Vec::new();
        let mut timed_out = 0;
        for _ in 0..4 {
            match TcpStream::connect_timeout(addr, Duration::from_millis(50)).await {
                Ok(s) => held.push(s),
                Err(e) => {
                    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
                    timed_out += 1;
                }
            }
        }
        assert!(timed_out > 0, "some connect had to stay pending");

        // An armed multishot accept whose connection is never taken: the accepted fd
        // sits in the op's queue and must be closed with the listener.
        let (listener, laddr) = common::loopback_listener();
        let r = zerorx::timeout(Duration::from_millis(10), listener.accept()).await;
        assert!(r.is_err(), "nobody connected yet");
        let client = std::net::TcpStream::connect(laddr).expect("std connect");
        sleep(Duration::from_millis(20)).await;
        drop(listener);
        drop(client);
        drop(held);
        drop(full);
        // Cancels complete asynchronously: wait for the slab to empty.
        for _ in 0..200 {
            if h.metrics()[0].ops_in_flight == 0 {
                break;
            }
            sleep(Duration::from_millis(1)).await;
        }
    });
    assert_eq!(rt.handle().metrics()[0].ops_in_flight, 0);
    // One worker: its ring and its eventfd.
    assert_eq!(fd_count() - 2, before, "only the runtime's own fds remain");
    drop(rt);
    // The handle keeps the worker's shared state (and its eventfd) alive.
    drop(h);
    assert_eq!(fd_count(), before);
}

#[test]
fn a_panicking_worker_is_reported_by_shutdown() {
    let _g = fd_lock();
    let before = fd_count();
    let rt = rt(2, Default::default());
    let h = rt.handle().clone();
    // A waker that panics when the driver wakes it makes worker 1's loop itself panic
    // (task panics are caught; this is the loop's own code path).
    struct PanicWaker;
    impl std::task::Wake for PanicWaker {
        fn wake(self: std::sync::Arc<Self>) {
            panic!("waker exploded");
        }
    }
    drop(h.spawn_on_with(1, || async {
        let (listener, addr) = common::loopback_listener();
        let waker = std::task::Waker::from(std::sync::Arc::new(PanicWaker));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut connect = Box::pin(TcpStream::connect(addr));
        assert!(connect.as_mut().poll(&mut cx).is_pending());
        // Keep the op alive; its completion wakes the panicking waker.
        std::future::pending::<()>().await;
        drop((connect, listener));
    }));
    std::thread::sleep(Duration::from_millis(100));
    let err = rt
        .shutdown(Duration::from_secs(2))
        .expect_err("worker 1 panicked");
    assert!(
        err.to_string()
            .contains("worker 1 panicked: waker exploded"),
        "{err}"
    );
    drop(h);
    assert_eq!(fd_count(), before, "fds released even after the panic");
}
