//! Interop with Apache Thrift's Rust library (the `thrift` crate): its client against
//! the embedded server and against `zerorx serve`, and zerorx's client against a
//! server built with it.

mod support;

use bytes::Bytes;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::{client_config, client_rt, ref_read, ref_write, Harness};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryInputProtocolFactory, TBinaryOutputProtocol,
    TBinaryOutputProtocolFactory, TCompactInputProtocol, TCompactInputProtocolFactory,
    TCompactOutputProtocol, TCompactOutputProtocolFactory, TInputProtocol, TMessageIdentifier,
    TMessageType, TOutputProtocol,
};
use thrift::server::{TProcessor, TServer};
use thrift::transport::{
    TBufferedReadTransport, TBufferedReadTransportFactory, TBufferedWriteTransport,
    TBufferedWriteTransportFactory, TFramedReadTransport, TFramedReadTransportFactory,
    TFramedWriteTransport, TFramedWriteTransportFactory, TIoChannel, TTcpChannel,
};
use zerorx_cli::bench::{BenchClient, FailError, FailException, Payload};
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{Protocol, TType, Value};

/// A dynamic Bench client made of the reference library's protocols and transports.
struct RefClient {
    i: Box<dyn TInputProtocol>,
    o: Box<dyn TOutputProtocol>,
    seq: i32,
}

impl RefClient {
    fn connect(addr: SocketAddr, protocol: Protocol, transport: Transport) -> RefClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let (r, w) = TTcpChannel::with_stream(stream).split().expect("split");
        let (r, w): (Box<dyn std::io::Read>, Box<dyn std::io::Write>) = match transport {
            Transport::Framed => (
                Box::new(TFramedReadTransport::new(r)),
                Box::new(TFramedWriteTransport::new(w)),
            ),
            Transport::Unframed => (
                Box::new(TBufferedReadTransport::new(r)),
                Box::new(TBufferedWriteTransport::new(w)),
            ),
            other => panic!("the thrift crate has no {other:?} transport"),
        };
        let (i, o): (Box<dyn TInputProtocol>, Box<dyn TOutputProtocol>) = match protocol {
            Protocol::Binary => (
                Box::new(TBinaryInputProtocol::new(r, true)),
                Box::new(TBinaryOutputProtocol::new(w, true)),
            ),
            Protocol::BinaryNonStrict => (
                Box::new(TBinaryInputProtocol::new(r, false)),
                Box::new(TBinaryOutputProtocol::new(w, false)),
            ),
            Protocol::Compact => (
                Box::new(TCompactInputProtocol::new(r)),
                Box::new(TCompactOutputProtocol::new(w)),
            ),
        };
        RefClient { i, o, seq: 0 }
    }

    /// Sends `name(args)`; for a call, returns the reply's type and body.
    fn call(&mut self, name: &str, args: Value, oneway: bool) -> Option<(TMessageType, Value)> {
        self.seq += 1;
        let kind = if oneway {
            TMessageType::OneWay
        } else {
            TMessageType::Call
        };
        self.o
            .write_message_begin(&TMessageIdentifier::new(name, kind, self.seq))
            .expect("header");
        ref_write(&mut *self.o, &args).expect("args");
        self.o.write_message_end().expect("end");
        self.o.flush().expect("flush");
        if oneway {
            return None;
        }
        let id = self.i.read_message_begin().expect("reply header");
        assert_eq!((id.name.as_str(), id.sequence_number), (name, self.seq));
        let body = ref_read(&mut *self.i, TType::Struct).expect("reply body");
        self.i.read_message_end().expect("end");
        Some((id.message_type, body))
    }

    /// A normal reply's result struct.
    fn ok(&mut self, name: &str, args: Value) -> Value {
        let (kind, body) = self.call(name, args, false).expect("reply");
        assert_eq!(kind, TMessageType::Reply, "{name}: {body:?}");
        body
    }
}

fn s(fields: Vec<(i16, Value)>) -> Value {
    Value::Struct(fields)
}

fn bin(b: &[u8]) -> Value {
    Value::Binary(Bytes::copy_from_slice(b))
}

fn payload_value(data_len: usize) -> Value {
    s(vec![
        (1, Value::I64(-9)),
        (2, Value::Binary(Bytes::from(vec![3u8; data_len]))),
        (
            3,
            Value::Map {
                types: Some((TType::Binary, TType::Binary)),
                entries: vec![(bin(b"a"), bin(b"b"))],
            },
        ),
        (
            4,
            Value::List {
                elem: TType::I32,
                items: vec![Value::I32(1), Value::I32(2)],
            },
        ),
    ])
}

/// Every Bench method through the reference client.
fn ref_suite(c: &mut RefClient) {
    assert_eq!(
        c.ok("echo", s(vec![(1, bin(b"hello"))])),
        s(vec![(0, bin(b"hello"))])
    );
    let big = vec![9u8; 200_000];
    assert_eq!(
        c.ok("echo", s(vec![(1, bin(&big))])),
        s(vec![(0, bin(&big))])
    );
    for len in [0, 100_000] {
        let p = payload_value(len);
        assert_eq!(c.ok("roundtrip", s(vec![(1, p.clone())])), s(vec![(0, p)]));
    }
    // Without the optional field.
    let mut p = payload_value(3);
    if let Value::Struct(f) = &mut p {
        f.retain(|(id, _)| *id != 3);
    }
    assert_eq!(c.ok("roundtrip", s(vec![(1, p.clone())])), s(vec![(0, p)]));
    assert_eq!(
        c.ok("add", s(vec![(1, Value::I64(40)), (2, Value::I64(2))])),
        s(vec![(0, Value::I64(42))])
    );
    let values = Value::List {
        elem: TType::I64,
        items: (1..=10).map(Value::I64).collect(),
    };
    assert_eq!(
        c.ok("sum", s(vec![(1, values)])),
        s(vec![(0, Value::I64(55))])
    );
    let empty = Value::List {
        elem: TType::I64,
        items: vec![],
    };
    assert_eq!(
        c.ok("sum", s(vec![(1, empty)])),
        s(vec![(0, Value::I64(0))])
    );
    assert_eq!(c.ok("sleep_ms", s(vec![(1, Value::I32(10))])), s(vec![]));
    for _ in 0..2 {
        assert!(c.call("fire", s(vec![(1, bin(b"x"))]), true).is_none());
    }
    let fired = c.ok("fired", s(vec![]));
    let Value::Struct(f) = &fired else {
        panic!("fired: {fired:?}")
    };
    assert!(
        matches!(f[..], [(0, Value::I64(n))] if n >= 2),
        "fired: {fired:?}"
    );
    assert_eq!(
        c.ok("fail", s(vec![(1, bin(b"why"))])),
        s(vec![(1, s(vec![(1, bin(b"why")), (2, Value::I32(7))]))])
    );
    let (kind, body) = c.call("nope", s(vec![]), false).expect("reply");
    assert_eq!(kind, TMessageType::Exception);
    let Value::Struct(f) = &body else {
        panic!("{body:?}")
    };
    assert!(f.contains(&(2, Value::I32(1))), "UNKNOWN_METHOD: {body:?}");
    // Still usable after the exception.
    assert_eq!(
        c.ok("add", s(vec![(1, Value::I64(1)), (2, Value::I64(1))])),
        s(vec![(0, Value::I64(2))])
    );
}

#[test]
fn thrift_crate_client_calls_every_method_on_the_embedded_server() {
    let h = Harness::start(2, |b| b);
    for protocol in [
        Protocol::Binary,
        Protocol::BinaryNonStrict,
        Protocol::Compact,
    ] {
        for transport in [Transport::Framed, Transport::Unframed] {
            let mut c = RefClient::connect(h.addr, protocol, transport);
            ref_suite(&mut c);
        }
    }
    let s = h.stats();
    assert_eq!(s.unknown_method, 6);
    assert_eq!(
        s.protocol_errors + s.bad_args + s.handler_panics,
        0,
        "{s:#?}"
    );
    h.stop(Duration::from_secs(5)).expect("clean stop");
}

/// A Bench processor written against the reference library, for its threaded server.
struct RefBench {
    fired: std::sync::atomic::AtomicI64,
}

impl TProcessor for RefBench {
    fn process(
        &self,
        i: &mut dyn TInputProtocol,
        o: &mut dyn TOutputProtocol,
    ) -> thrift::Result<()> {
        let id = i.read_message_begin()?;
        let args = ref_read(i, TType::Struct)?;
        i.read_message_end()?;
        let Value::Struct(fields) = args else {
            unreachable!("structs decode as structs")
        };
        let field = |n: i16| {
            fields
                .iter()
                .find(|(id, _)| *id == n)
                .map(|(_, v)| v.clone())
        };
        let result = match id.name.as_str() {
            "echo" | "roundtrip" => s(vec![(0, field(1).expect("arg"))]),
            "add" => match (field(1), field(2)) {
                (Some(Value::I64(a)), Some(Value::I64(b))) => {
                    s(vec![(0, Value::I64(a.wrapping_add(b)))])
                }
                other => panic!("add args {other:?}"),
            },
            "sum" => match field(1) {
                Some(Value::List { items, .. }) => {
                    let total = items.iter().fold(0i64, |t, v| match v {
                        Value::I64(n) => t.wrapping_add(*n),
                        _ => t,
                    });
                    s(vec![(0, Value::I64(total))])
                }
                other => panic!("sum args {other:?}"),
            },
            "sleep_ms" => {
                if let Some(Value::I32(ms)) = field(1) {
                    std::thread::sleep(Duration::from_millis(ms.max(0) as u64));
                }
                s(vec![])
            }
            "fire" => {
                self.fired.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return Ok(());
            }
            "fired" => s(vec![(
                0,
                Value::I64(self.fired.load(std::sync::atomic::Ordering::SeqCst)),
            )]),
            "fail" => s(vec![(
                1,
                s(vec![(1, field(1).expect("reason")), (2, Value::I32(7))]),
            )]),
            other => panic!("unexpected method {other}"),
        };
        o.write_message_begin(&TMessageIdentifier::new(
            id.name,
            TMessageType::Reply,
            id.sequence_number,
        ))?;
        ref_write(o, &result)?;
        o.write_message_end()?;
        o.flush()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Starts the reference library's threaded server on a free port. Its accept loop
/// never returns: the thread ends with the test process.
fn ref_server(compact: bool) -> SocketAddr {
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    std::thread::spawn(move || {
        let bench = RefBench {
            fired: Default::default(),
        };
        let res = if compact {
            TServer::new(
                TBufferedReadTransportFactory::new(),
                TCompactInputProtocolFactory::new(),
                TBufferedWriteTransportFactory::new(),
                TCompactOutputProtocolFactory::new(),
                bench,
                4,
            )
            .listen(addr)
        } else {
            TServer::new(
                TFramedReadTransportFactory::new(),
                TBinaryInputProtocolFactory::new(),
                TFramedWriteTransportFactory::new(),
                TBinaryOutputProtocolFactory::new(),
                bench,
                4,
            )
            .listen(addr)
        };
        panic!("reference server stopped: {res:?}");
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "reference server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    addr
}

#[test]
fn zerorx_client_against_a_thrift_crate_server() {
    for (compact, protocol, transport) in [
        (false, Protocol::Binary, Transport::Framed),
        (true, Protocol::Compact, Transport::Unframed),
    ] {
        let addr = ref_server(compact);
        let rt = client_rt();
        rt.block_on(async {
            let c = BenchClient::connect(addr, client_config(protocol, transport))
                .await
                .expect("connect");
            let big = Bytes::from(vec![5u8; 150_000]);
            assert_eq!(c.echo(big.clone()).await.expect("echo"), big);
            let p = Payload {
                id: 3,
                data: Bytes::from_static(b"data"),
                meta: Some([("k".into(), "v".into())].into()),
                tags: vec![4, 5],
            };
            assert_eq!(c.roundtrip(p.clone()).await.expect("roundtrip"), p);
            assert_eq!(c.add(i64::MIN, -1).await.expect("add"), i64::MAX);
            assert_eq!(c.sum(vec![7; 10]).await.expect("sum"), 70);
            c.sleep_ms(5).await.expect("sleep");
            c.fire(Bytes::new()).await.expect("fire");
            c.fire(Bytes::new()).await.expect("fire");
            assert_eq!(
                c.fired().await.expect("fired"),
                2,
                "oneway calls processed in order"
            );
            match c.fail("nope".into()).await {
                Err(FailError::Thrown(FailException::O(o))) => {
                    assert_eq!((&*o.reason, o.retry_after_ms), ("nope", 7))
                }
                other => panic!("fail: {other:?}"),
            }
            // Pipelined calls on one connection against a server that answers in order.
            let calls: Vec<_> = (0..20)
                .map(|i| {
                    let c = c.clone();
                    zerorx::spawn(async move { c.add(i, i).await })
                })
                .collect();
            for (i, call) in calls.into_iter().enumerate() {
                assert_eq!(call.await.expect("task").expect("add"), 2 * i as i64);
            }
        });
    }
}
