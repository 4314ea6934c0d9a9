//! The server and client together: every Bench method in every protocol and
//! transport, pipelining, exceptions, limits, timeouts and graceful drain.

mod rpc_support;

use bytes::Bytes;
use rpc_support::{client_config, client_rt, Harness};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zerorx::rpc::bench::{BenchClient, FailError, Payload, RETRY_AFTER_MS};
use zerorx::rpc::transport::Transport;
use zerorx::rpc::{ApplicationExceptionKind, ClientError, Protocol};

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
                match c.fail("too busy").await {
                    Err(FailError::Overloaded(o)) => {
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
