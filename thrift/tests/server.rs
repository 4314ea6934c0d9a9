//! The server and client together: every Bench method in every protocol and
//! transport, pipelining, exceptions, limits, timeouts and graceful drain.

mod support;

use bytes::Bytes;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::{client_config, client_rt, Harness};
use zerorx_cli::bench::{BenchClient, FailError, FailException, Payload, RETRY_AFTER_MS};
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{ApplicationExceptionKind, ClientError, Protocol};

const PROTOCOLS: [Protocol; 3] = [
    Protocol::Binary,
    Protocol::BinaryNonStrict,
    Protocol::Compact,
];
const TRANSPORTS: [Transport; 2] = [Transport::Framed, Transport::Unframed];

fn payload(id: i64, len: usize, meta: bool) -> Payload {
    Payload {
        id,
        data: Bytes::from((0..len).map(|i| (i * 7) as u8).collect::<Vec<_>>()),
        meta: meta.then(|| {
            BTreeMap::from([
                ("k".into(), "v".into()),
                ("ünï".into(), String::new().into()),
            ])
        }),
        tags: vec![1, -2, i32::MAX],
    }
}

#[test]
fn every_method_in_every_protocol_and_transport() {
    let h = Harness::start(2, |b| b);
    let rt = client_rt();
    let mut fires = 0;
    for protocol in PROTOCOLS {
        for transport in TRANSPORTS {
            let what = format!("{protocol:?}/{transport:?}");
            rt.block_on(async {
                let c = BenchClient::connect(h.addr, client_config(protocol, transport))
                    .await
                    .expect("connect");
                for len in [0, 64, 5000, 300 * 1024] {
                    let data = Bytes::from(vec![len as u8; len]);
                    assert_eq!(c.echo(data.clone()).await.expect("echo"), data, "{what}");
                }
                for p in [payload(1, 10, true), payload(-5, 70_000, false)] {
                    assert_eq!(
                        c.roundtrip(p.clone()).await.expect("roundtrip"),
                        p,
                        "{what}"
                    );
                }
                assert_eq!(c.add(2, 40).await.expect("add"), 42);
                assert_eq!(c.add(i64::MAX, 1).await.expect("add wraps"), i64::MIN);
                assert_eq!(c.sum(vec![]).await.expect("sum"), 0);
                assert_eq!(c.sum((1..=100).collect()).await.expect("sum"), 5050);
                let t = Instant::now();
                c.sleep_ms(30).await.expect("sleep");
                assert!(t.elapsed() >= Duration::from_millis(30), "{what}: slept");
                for _ in 0..3 {
                    c.fire(Bytes::from_static(b"x")).await.expect("fire");
                }
                fires += 3;
                match c.fail("too busy".into()).await {
                    Err(FailError::Thrown(FailException::O(o))) => {
                        assert_eq!((&*o.reason, o.retry_after_ms), ("too busy", RETRY_AFTER_MS))
                    }
                    other => panic!("{what}: fail returned {other:?}"),
                }
                // Oneway calls on this connection were read before `fired`.
                let fired = c.fired().await.expect("fired");
                assert!(
                    fired >= 3 && fired <= fires,
                    "{what}: fired {fired} of {fires}"
                );
            });
        }
    }
    h.wait_stats("all fires processed", |s| s.oneway_requests == fires as u64);
    assert_eq!(h.state.fired(), fires);
    let s = h.stats();
    assert_eq!(
        s.protocol_errors + s.bad_args + s.unknown_method + s.handler_panics,
        0,
        "{s:#?}"
    );
    assert!(
        s.frames_copied > 0,
        "300 KiB requests span receive buffers: {s:#?}"
    );
    h.stop(Duration::from_secs(5)).expect("clean stop");
}

#[test]
fn pipelined_calls_are_answered_by_seqid_out_of_order() {
    let h = Harness::start(2, |b| b);
    let rt = client_rt();
    rt.block_on(async {
        let c = BenchClient::connect(h.addr, client_config(Protocol::Compact, Transport::Framed))
            .await
            .expect("connect");
        let slow = {
            let c = c.clone();
            zerorx::spawn(async move {
                c.sleep_ms(300).await.expect("sleep");
                Instant::now()
            })
        };
        zerorx::time::sleep(Duration::from_millis(20)).await;
        let calls: Vec<_> = (0..200i64)
            .map(|i| {
                let c = c.clone();
                zerorx::spawn(
                    async move { (i, c.add(i, 1000).await.expect("add"), Instant::now()) },
                )
            })
            .collect();
        let mut last_add = Instant::now();
        for call in calls {
            let (i, sum, at) = call.await.expect("task");
            assert_eq!(sum, i + 1000, "reply matched to its call");
            last_add = last_add.max(at);
        }
        let slow_done = slow.await.expect("task");
        assert!(
            last_add < slow_done,
            "200 later calls were answered before the slow one"
        );
        assert_eq!(c.client().stats().reconnects, 0);
    });
    // `replies` counts replies queued, possibly counted after the client's receipt of
    // the last one (another thread).
    h.wait_stats("every reply sent", |s| s.replies == 201);
    assert_eq!(h.stats().requests, 201);
}

#[test]
fn unknown_methods_bad_arguments_and_failing_handlers_get_application_exceptions() {
    use zerorx_cli::bench::{EchoArgs, FiredArgs};
    use zerorx_thrift::{ApplicationException, Returns, Void};
    let h = Harness::start(1, |b| {
        b.method("panics", |_: FiredArgs| async {
            if true {
                panic!("boom");
            }
            Ok(Void)
        })
        .method(
            "panics_early",
            |_: FiredArgs| -> std::future::Ready<Result<Void, ApplicationException>> {
                // Panics while making its future, before any poll.
                panic!("early boom")
            },
        )
        .method("errs", |_: FiredArgs| async {
            Err::<Void, _>(ApplicationException::internal("handler said no"))
        })
        .method("too_big", |_: FiredArgs| async {
            Ok(Returns(Bytes::from(vec![0u8; 64 * 1024])))
        })
        .max_frame(16 * 1024)
    });
    let rt = client_rt();
    rt.block_on(async {
        let c = BenchClient::connect(h.addr, client_config(Protocol::Binary, Transport::Framed))
            .await
            .expect("connect");
        let raw = c.client();
        let app = |r: Result<Void, ClientError>| match r {
            Err(ClientError::Application(e)) => e,
            other => panic!("expected an application exception, got {other:?}"),
        };
        let e = app(raw.call("no_such_method", &FiredArgs {}).await);
        assert_eq!(e.kind, ApplicationExceptionKind::UnknownMethod);
        assert!(e.message.contains("no_such_method"), "{e}");
        // `add` with a binary where it wants two i64s: the field of the wrong type is
        // skipped and the absent arguments take their defaults, as Apache's servers do.
        let defaulted: Returns<i64> = raw
            .call(
                "add",
                &EchoArgs {
                    data: Bytes::from_static(b"x"),
                },
            )
            .await
            .expect("add runs with default arguments");
        assert_eq!(defaulted.0, 0);
        // `fail` with a string that is not UTF-8: valid Thrift, bad arguments.
        let bad: Result<Void, _> = raw
            .call(
                "fail",
                &EchoArgs {
                    data: Bytes::from_static(b"\xff\xfe"),
                },
            )
            .await;
        match bad {
            Err(ClientError::Application(e)) => {
                assert_eq!(e.kind, ApplicationExceptionKind::ProtocolError);
                assert!(e.message.contains("UTF-8"), "{e}");
            }
            other => panic!("bad args: {other:?}"),
        }
        let e = app(raw.call("panics", &FiredArgs {}).await);
        assert_eq!(e.kind, ApplicationExceptionKind::InternalError);
        assert!(e.message.contains("boom"), "{e}");
        let e = app(raw.call("panics_early", &FiredArgs {}).await);
        assert_eq!(e.kind, ApplicationExceptionKind::InternalError);
        assert!(e.message.contains("early boom"), "{e}");
        let e = app(raw.call("errs", &FiredArgs {}).await);
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ApplicationExceptionKind::InternalError, "handler said no")
        );
        let e = app(raw.call("too_big", &FiredArgs {}).await);
        assert_eq!(e.kind, ApplicationExceptionKind::InternalError);
        assert!(e.message.contains("frame limit"), "{e}");
        // The connection survived all of it.
        assert_eq!(c.add(1, 2).await.expect("still usable"), 3);
        assert_eq!(raw.stats().reconnects, 0);
    });
    let s = h.stats();
    assert_eq!(
        (
            s.unknown_method,
            s.bad_args,
            s.handler_panics,
            s.handler_errors,
            s.protocol_errors
        ),
        (1, 1, 2, 1, 0),
        "{s:#?}"
    );
}

#[test]
fn in_flight_limit_pushes_back_without_failing_calls() {
    let h = Harness::start(1, |b| b.max_in_flight(2));
    let rt = client_rt();
    rt.block_on(async {
        let c = BenchClient::connect(h.addr, client_config(Protocol::Binary, Transport::Framed))
            .await
            .expect("connect");
        let start = Instant::now();
        let calls: Vec<_> = (0..10)
            .map(|_| {
                let c = c.clone();
                zerorx::spawn(async move { c.sleep_ms(30).await })
            })
            .collect();
        for call in calls {
            call.await.expect("task").expect("call succeeds");
        }
        // Two at a time: at least five rounds of 30 ms.
        assert!(
            start.elapsed() >= Duration::from_millis(150),
            "{:?}",
            start.elapsed()
        );
    });
    assert!(h.stats().in_flight_waits > 0);
}

#[test]
fn connections_over_the_per_worker_limit_are_closed() {
    let h = Harness::start(1, |b| b.max_connections_per_worker(1));
    let rt = client_rt();
    rt.block_on(async {
        let mut cfg = client_config(Protocol::Binary, Transport::Framed);
        cfg.reconnect = false;
        let first = BenchClient::connect(h.addr, cfg.clone())
            .await
            .expect("connect");
        assert_eq!(first.add(1, 1).await.expect("first serves"), 2);
        let second = BenchClient::connect(h.addr, cfg)
            .await
            .expect("tcp connect");
        match second.add(1, 1).await {
            Err(ClientError::Closed(_)) => {}
            other => panic!("second connection: {other:?}"),
        }
        assert_eq!(first.add(2, 2).await.expect("first unaffected"), 4);
    });
    assert_eq!(h.stats().connections_rejected, 1);
}

#[test]
fn idle_connections_close_and_clients_reconnect() {
    let h = Harness::start(1, |b| b.idle_timeout(Some(Duration::from_millis(150))));
    let rt = client_rt();
    rt.block_on(async {
        let c = BenchClient::connect(
            h.addr,
            client_config(Protocol::Compact, Transport::Unframed),
        )
        .await
        .expect("connect");
        // A call longer than the idle timeout is not idleness.
        c.sleep_ms(400).await.expect("busy connection kept");
        assert!(c.client().is_connected());
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.client().is_connected() {
            assert!(
                Instant::now() < deadline,
                "the server never closed the idle connection"
            );
            zerorx::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(c.add(1, 2).await.expect("reconnects"), 3);
        assert!(c.client().is_connected());
        assert_eq!(c.client().stats().reconnects, 1);
    });
    assert!(h.stats().idle_timeouts >= 1);
}

#[test]
fn call_timeouts_leave_the_connection_usable() {
    let h = Harness::start(1, |b| b);
    let rt = client_rt();
    rt.block_on(async {
        let mut cfg = client_config(Protocol::Binary, Transport::Framed);
        cfg.call_timeout = Some(Duration::from_millis(100));
        let c = BenchClient::connect(h.addr, cfg).await.expect("connect");
        assert!(matches!(c.sleep_ms(500).await, Err(ClientError::Timeout)));
        assert_eq!(c.add(5, 5).await.expect("same connection"), 10);
        zerorx::time::sleep(Duration::from_millis(700)).await;
        let st = c.client().stats();
        assert_eq!(
            (st.timeouts, st.unmatched_replies, st.reconnects),
            (1, 1, 0)
        );
    });
}

#[test]
fn graceful_drain_finishes_calls_in_flight_and_refuses_new_ones() {
    let h = Harness::start(2, |b| b);
    let rt = client_rt();
    rt.block_on(async {
        let mut cfg = client_config(Protocol::Binary, Transport::Framed);
        cfg.reconnect = false;
        let c = BenchClient::connect(h.addr, cfg.clone())
            .await
            .expect("connect");
        let slow = {
            let c = c.clone();
            zerorx::spawn(async move { c.sleep_ms(300).await })
        };
        zerorx::time::sleep(Duration::from_millis(50)).await;
        h.shutdown.shutdown(Duration::from_secs(10));
        slow.await
            .expect("task")
            .expect("the call in flight finished");
        // The connection closes after its last reply; new connections are refused.
        zerorx::time::sleep(Duration::from_millis(100)).await;
        assert!(c.add(1, 1).await.is_err(), "no new calls after the drain");
        assert!(
            BenchClient::connect(h.addr, cfg).await.is_err(),
            "listener closed"
        );
    });
    let s = h.stats();
    assert_eq!((s.drained, s.drain_aborted), (1, 0), "{s:#?}");
    h.stop(Duration::from_secs(1)).expect("stopped cleanly");
}

#[test]
fn drain_deadline_closes_connections_still_busy() {
    let h = Harness::start(1, |b| b);
    let rt = client_rt();
    let t = Instant::now();
    rt.block_on(async {
        let c = BenchClient::connect(h.addr, client_config(Protocol::Binary, Transport::Framed))
            .await
            .expect("connect");
        let slow = {
            let c = c.clone();
            zerorx::spawn(async move { c.sleep_ms(5000).await })
        };
        zerorx::time::sleep(Duration::from_millis(50)).await;
        h.shutdown.shutdown(Duration::from_millis(100));
        assert!(matches!(
            slow.await.expect("task"),
            Err(ClientError::Closed(_))
        ));
    });
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "did not wait for the handler"
    );
    assert_eq!(h.stats().drain_aborted, 1);
    h.stop(Duration::ZERO).expect("stopped");
}

#[test]
fn requests_in_one_receive_buffer_are_decoded_in_place() {
    let h = Harness::start(1, |b| b);
    let rt = client_rt();
    rt.block_on(async {
        let c = BenchClient::connect(h.addr, client_config(Protocol::Binary, Transport::Framed))
            .await
            .expect("connect");
        // One small request at a time: each arrives in one receive buffer.
        for i in 0..50 {
            assert_eq!(
                c.echo(Bytes::from(vec![i as u8; 1000]))
                    .await
                    .expect("echo")
                    .len(),
                1000
            );
        }
    });
    let s = h.stats();
    assert_eq!((s.requests, s.frames_copied), (50, 0), "{s:#?}");
}

#[test]
fn invalid_settings_are_rejected_at_start() {
    let rt = client_rt();
    for builder in [
        zerorx_thrift::Server::builder().max_in_flight(0),
        zerorx_thrift::Server::builder().max_connections_per_worker(0),
    ] {
        let err = builder.start(rt.handle()).expect_err("invalid");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }
    // A port in use by a non-reuseport socket: the bind error comes back from start.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let err = zerorx_thrift::Server::builder()
        .addr(taken.local_addr().expect("addr"))
        .start(rt.handle())
        .expect_err("address in use");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
}

#[test]
fn replies_sent_long_after_the_write_timer_was_armed_do_not_time_out() {
    // The writer keeps one timer and moves it only when it fires: a reply sent after
    // the timer's deadline has passed must still get its own full write timeout.
    let h = Harness::start(1, |b| b.write_timeout(Some(Duration::from_millis(40))));
    let rt = client_rt();
    rt.block_on(async {
        let c = BenchClient::connect(h.addr, client_config(Protocol::Binary, Transport::Framed))
            .await
            .expect("connect");
        for i in 0..6 {
            assert_eq!(c.add(i, 1).await.expect("add"), i + 1);
            // Longer than the write timeout between replies.
            c.sleep_ms(60).await.expect("sleep");
        }
        assert_eq!(c.client().stats().reconnects, 0);
    });
    let s = h.stats();
    assert_eq!(s.write_timeouts, 0, "{s:#?}");
    assert_eq!(s.io_errors, 0, "{s:#?}");
}

#[test]
fn a_client_connects_by_name_and_a_failure_names_the_host() {
    let h = Harness::start(1, |b| b.addr("127.0.0.1:0".parse().expect("addr")));
    let port = h.addr.port();
    // A port nothing listens on (bound, then closed).
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    client_rt().block_on(async move {
        let config = client_config(Protocol::Binary, Transport::Framed);
        // "localhost" resolves through /etc/hosts, on the blocking pool.
        let c = zerorx_thrift::Client::connect_to(format!("localhost:{port}"), config.clone())
            .await
            .expect("connect by name");
        let c = BenchClient::new(c);
        assert_eq!(c.add(40, 2).await.expect("add"), 42);
        let e = zerorx_thrift::Client::connect_to(format!("localhost:{refused}"), config)
            .await
            .expect_err("nothing listens there");
        assert!(
            matches!(e, ClientError::Connect(_)) && e.to_string().contains("localhost"),
            "{e}"
        );
    });
    h.stop(Duration::from_secs(1)).expect("stop");
}
