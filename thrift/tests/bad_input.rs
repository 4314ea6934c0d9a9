//! Hostile and broken clients against the server: each gets a
//! `TApplicationException` or a clean close, is counted, and leaves other
//! connections alone.

mod support;

use bytes::Bytes;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;
use support::Harness;
use zerorx_cli::bench::{AddArgs, EchoArgs};
use zerorx_thrift::{
    encode_message, ApplicationException, ApplicationExceptionKind, DecodeLimits, MessageReader,
    MessageType, Protocol, Returns, ServerStats, TType, Value,
};

fn connect(h: &Harness) -> TcpStream {
    let s = TcpStream::connect(h.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn call<T: zerorx_thrift::MessageBody>(
    protocol: Protocol,
    name: &str,
    seqid: i32,
    args: &T,
) -> Vec<u8> {
    encode_message(
        protocol,
        true,
        usize::MAX,
        name.as_bytes(),
        MessageType::Call,
        seqid,
        args,
    )
    .expect("encodes")
    .concat()
}

/// Reads one framed reply: `None` when the server closed the connection instead.
fn read_reply(s: &mut TcpStream) -> Option<(zerorx_thrift::MessageHeader, MessageReader)> {
    let mut len = [0u8; 4];
    match s.read_exact(&mut len) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ) =>
        {
            return None
        }
        Err(e) => panic!("reading a reply: {e}"),
    }
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("reply body");
    let protocol = if body.first() == Some(&0x82) {
        Protocol::Compact
    } else {
        Protocol::Binary
    };
    let mut r = MessageReader::new(protocol, Bytes::from(body), DecodeLimits::default());
    let h = r.read_header().expect("reply header");
    Some((h, r))
}

fn expect_exception(s: &mut TcpStream, kind: ApplicationExceptionKind) -> ApplicationException {
    let (h, mut r) = read_reply(s).expect("an exception reply");
    assert_eq!(h.kind, MessageType::Exception);
    let e: ApplicationException = r.decode().expect("exception body");
    assert_eq!(e.kind, kind, "{e}");
    e
}

fn expect_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("expected the server to close the connection: {e}"),
        }
    }
}

/// A healthy connection that must keep working through everything.
struct Witness(TcpStream, i32);

impl Witness {
    fn check(&mut self) {
        self.1 += 1;
        let req = call(
            Protocol::Binary,
            "add",
            self.1,
            &AddArgs {
                a: self.1.into(),
                b: 1,
            },
        );
        self.0.write_all(&req).expect("witness send");
        let (h, mut r) = read_reply(&mut self.0).expect("witness reply");
        assert_eq!((h.kind, h.seqid), (MessageType::Reply, self.1));
        let sum: Returns<i64> = r.decode().expect("result");
        assert_eq!(sum.0, i64::from(self.1) + 1);
    }
}

fn counted(h: &Harness, what: &str, pred: impl Fn(&ServerStats) -> bool) {
    h.wait_stats(what, pred);
}

/// The arguments of a oneway method that requires a field (9) no test sends: its
/// decoding always fails as bad content.
struct NeedsField9;

impl zerorx_thrift::ThriftType for NeedsField9 {
    const TTYPE: TType = TType::Struct;
}

impl zerorx_thrift::ThriftDecode for NeedsField9 {
    fn decode<R: zerorx_thrift::ProtocolRead>(
        r: &mut R,
    ) -> Result<Self, zerorx_thrift::DecodeError> {
        let mut seen = None;
        zerorx_thrift::read_struct(r, |r, h| {
            if h.id == 9 {
                seen = zerorx_thrift::read_field::<_, i64>(r, h)?;
                return Ok(true);
            }
            Ok(false)
        })?;
        zerorx_thrift::required(seen, "NeedsField9", "x").map(|_| NeedsField9)
    }
}

#[test]
fn broken_clients_get_exceptions_or_clean_closes_and_are_counted() {
    let h = Harness::start(2, |b| {
        b.max_frame(64 * 1024)
            .oneway("strict", |_: NeedsField9| async {})
    });
    let mut w = Witness(connect(&h), 0);
    w.check();

    // Garbage: not Thrift at all.
    let mut s = connect(&h);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    expect_closed(&mut s);
    counted(&h, "garbage", |s| s.protocol_errors == 1);
    w.check();

    // A frame over the limit: closed from the header alone.
    let mut s = connect(&h);
    s.write_all(&(1u32 << 30).to_be_bytes()).expect("send");
    s.write_all(&[0x80, 1, 0, 1]).expect("send");
    expect_closed(&mut s);
    counted(&h, "over-limit frame", |s| s.frames_too_large == 1);
    w.check();

    // Only an over-limit length and nothing after it: refused from those 4 bytes, not
    // held open until the idle timeout waiting for a byte that tells the protocol.
    let mut s = connect(&h);
    s.write_all(&(1u32 << 30).to_be_bytes()).expect("send");
    expect_closed(&mut s);
    counted(&h, "lone over-limit length", |s| s.frames_too_large == 2);
    w.check();

    // Disconnect in the middle of a frame.
    let mut s = connect(&h);
    let req = call(Protocol::Binary, "add", 1, &AddArgs { a: 1, b: 2 });
    s.write_all(&req[..req.len() - 3]).expect("send");
    s.shutdown(Shutdown::Write).expect("half close");
    expect_closed(&mut s);
    counted(&h, "truncated", |s| s.truncated == 1);
    w.check();

    // Wrong method name: an exception, and the connection stays.
    let mut s = connect(&h);
    s.write_all(&call(Protocol::Compact, "nope", 7, &AddArgs { a: 1, b: 2 }))
        .expect("send");
    let e = expect_exception(&mut s, ApplicationExceptionKind::UnknownMethod);
    assert!(e.message.contains("nope"));
    s.write_all(&call(Protocol::Compact, "add", 8, &AddArgs { a: 1, b: 2 }))
        .expect("send");
    let (hd, mut r) = read_reply(&mut s).expect("reply");
    assert_eq!(
        (
            hd.kind,
            hd.seqid,
            r.decode::<Returns<i64>>().expect("sum").0
        ),
        (MessageType::Reply, 8, 3)
    );
    w.check();

    // Oneway calls to an unknown method, or with bad arguments, get no reply (there is
    // no reply to a oneway call); the next call's reply is the next thing read.
    let oneway = |name: &str, seqid: i32, args: &dyn Fn(&mut Vec<u8>)| {
        let mut m = encode_message(
            Protocol::Compact,
            true,
            usize::MAX,
            name.as_bytes(),
            MessageType::Oneway,
            seqid,
            &AddArgs { a: 1, b: 2 },
        )
        .expect("encodes")
        .concat();
        args(&mut m);
        m
    };
    s.write_all(&oneway("nope", 20, &|_| {})).expect("send");
    s.write_all(&oneway("strict", 21, &|_| {})).expect("send"); // field 9 missing
    s.write_all(&call(Protocol::Compact, "add", 22, &AddArgs { a: 2, b: 2 }))
        .expect("send");
    let (hd, mut r) = read_reply(&mut s).expect("reply");
    assert_eq!(
        (
            hd.kind,
            hd.seqid,
            r.decode::<Returns<i64>>().expect("sum").0
        ),
        (MessageType::Reply, 22, 4)
    );
    counted(&h, "oneway errors", |s| {
        s.unknown_method == 2 && s.bad_args == 1
    });

    // A reply sent to the server: wrong message type, answered, connection kept.
    let reply = encode_message(
        Protocol::Compact,
        true,
        usize::MAX,
        b"add",
        MessageType::Reply,
        9,
        &Returns(1i64),
    )
    .expect("encodes")
    .concat();
    s.write_all(&reply).expect("send");
    expect_exception(&mut s, ApplicationExceptionKind::InvalidMessageType);
    counted(&h, "invalid message type", |s| s.invalid_message_type == 1);

    // Structurally broken arguments: exception with the seqid, then close.
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // A field of unknown type id 0x11.
        ("unknown type", {
            let mut m = call(Protocol::Binary, "add", 10, &Value::Struct(vec![]));
            m.truncate(m.len() - 1);
            m.extend_from_slice(&[0x11, 0, 1, 0]);
            fix_len(m)
        }),
        // list<i64> of -1 elements.
        ("negative size", {
            let mut m = call(Protocol::Binary, "sum", 11, &Value::Struct(vec![]));
            m.truncate(m.len() - 1);
            m.extend_from_slice(&[15, 0, 1, 10, 0xff, 0xff, 0xff, 0xff, 0]);
            fix_len(m)
        }),
        // list<i64> of 2^31-1 elements with 8 bytes present.
        ("huge size", {
            let mut m = call(Protocol::Binary, "sum", 12, &Value::Struct(vec![]));
            m.truncate(m.len() - 1);
            m.extend_from_slice(&[
                15, 0, 1, 10, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0,
            ]);
            fix_len(m)
        }),
        // Payload nested 100 structs deep (the limit is 64).
        ("too deep", {
            let deep = (0..100).fold(Value::Struct(vec![]), |v, _| Value::Struct(vec![(9, v)]));
            call(
                Protocol::Compact,
                "roundtrip",
                13,
                &Value::Struct(vec![(1, deep)]),
            )
        }),
    ];
    for (i, (what, bytes)) in cases.into_iter().enumerate() {
        let mut s = connect(&h);
        s.write_all(&bytes).expect("send");
        let e = expect_exception(&mut s, ApplicationExceptionKind::ProtocolError);
        assert!(!e.message.is_empty(), "{what}");
        expect_closed(&mut s);
        counted(&h, what, |s| s.protocol_errors == 2 + i as u64);
        w.check();
    }

    // A bad protocol version: no sequence id to answer with, so just closed.
    let mut s = connect(&h);
    s.write_all(&frame(&[0x80, 0x02, 0, 1, 0, 0, 0, 1, b'a', 0, 0, 0, 1, 0]))
        .expect("send");
    expect_closed(&mut s);
    counted(&h, "bad version", |s| s.protocol_errors == 6);
    w.check();

    // Unframed garbage after a valid-looking start.
    let mut s = connect(&h);
    s.write_all(&[0x82, 0x21, 1, 3, b'a', b'd', b'd', 0x1f, 0])
        .expect("send");
    expect_closed(&mut s);
    counted(&h, "unframed garbage", |s| s.protocol_errors == 7);
    w.check();

    let s = h.stats();
    assert_eq!((s.handler_panics, s.io_errors > 100), (0, false), "{s:#?}");
    h.stop(Duration::from_secs(5)).expect("stopped cleanly");
}

/// Rewrites a frame's length prefix after its body was edited.
fn fix_len(mut m: Vec<u8>) -> Vec<u8> {
    let len = (m.len() - 4) as u32;
    m[..4].copy_from_slice(&len.to_be_bytes());
    m
}

#[test]
fn a_client_that_never_reads_is_cut_off_without_hurting_others() {
    let h = Harness::start(1, |b| {
        b.write_timeout(Some(Duration::from_millis(300)))
            .max_in_flight(16)
    });
    let mut w = Witness(connect(&h), 0);
    let mut hog = connect(&h);
    hog.set_write_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let big = call(
        Protocol::Binary,
        "echo",
        1,
        &EchoArgs {
            data: Bytes::from(vec![1u8; 256 * 1024]),
        },
    );
    // Send until the server stops reading (its in-flight limit and our buffers fill).
    for _ in 0..400 {
        if hog.write_all(&big).is_err() {
            break;
        }
    }
    w.check();
    counted(&h, "write timeout", |s| s.write_timeouts == 1);
    w.check();
    h.wait_stats("only the witness left", |s| s.connections_active == 1);
    assert!(h.stats().in_flight_waits >= 1);
}

#[test]
fn many_bad_connections_at_once_leave_a_good_one_working() {
    let h = Harness::start(2, |b| b.max_frame(4096));
    let mut w = Witness(connect(&h), 0);
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let addr = h.addr;
            std::thread::spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ i;
                for round in 0..10 {
                    let Ok(mut s) = TcpStream::connect(addr) else {
                        continue;
                    };
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let len = 1 + (x % 300) as usize;
                    let bytes: Vec<u8> = (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            x as u8
                        })
                        .collect();
                    let mut framed = frame(&bytes);
                    if round % 2 == 0 {
                        framed[4] = 0x80;
                    }
                    let _ = s.write_all(&framed);
                    let _ = s.shutdown(Shutdown::Write);
                    let mut sink = Vec::new();
                    let _ = s.read_to_end(&mut sink);
                }
            })
        })
        .collect();
    for _ in 0..20 {
        w.check();
    }
    for t in threads {
        t.join().expect("bad client thread");
    }
    w.check();
    h.wait_stats("bad connections closed", |s| s.connections_active == 1);
    let s = h.stats();
    assert_eq!(s.connections_accepted, 161, "{s:#?}");
    assert!(
        s.protocol_errors + s.truncated + s.frames_too_large + s.unknown_method + s.bad_args > 0
    );
}

#[test]
fn value_helpers_build_the_bodies_used_above() {
    // The hand-edited frames above start from an empty args struct: check it is one
    // stop byte, so truncating it and appending fields is valid.
    let m = call(Protocol::Binary, "x", 1, &Value::Struct(vec![]));
    assert_eq!(*m.last().expect("stop"), 0);
    assert_eq!(TType::Struct, Value::Struct(vec![]).ttype());
}
