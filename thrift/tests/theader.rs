//! THeader on the wire, byte by byte: a request in a header frame is answered in a
//! header frame with the request's protocol and flags; zlib payloads are inflated;
//! malformed headers close the connection and are counted; a server restricted to
//! one protocol refuses header clients.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use support::Harness;
use zerorx_cli::bench::AddArgs;
use zerorx_thrift::server::ProtocolChoice;
use zerorx_thrift::{encode_message, DecodeLimits, MessageReader, MessageType, Protocol, Returns};

/// A header frame (length included): `var` is the variable header, padded here.
fn frame(flags: u16, seqid: i32, var: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut var = var.to_vec();
    while !var.len().is_multiple_of(4) {
        var.push(0);
    }
    let mut f = vec![0x0f, 0xff];
    f.extend_from_slice(&flags.to_be_bytes());
    f.extend_from_slice(&seqid.to_be_bytes());
    f.extend_from_slice(&((var.len() / 4) as u16).to_be_bytes());
    f.extend_from_slice(&var);
    f.extend_from_slice(payload);
    let mut out = (f.len() as u32).to_be_bytes().to_vec();
    out.extend(f);
    out
}

fn add_call(protocol: Protocol, seqid: i32, a: i64, b: i64) -> Vec<u8> {
    encode_message(
        protocol,
        false,
        usize::MAX,
        b"add",
        MessageType::Call,
        seqid,
        &AddArgs { a, b },
    )
    .expect("encodes")
    .concat()
}

/// Reads one header frame: (flags, seqid, protocol id, the sum it carries).
fn read_sum(s: &mut TcpStream) -> (u16, i32, u8, i64) {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("reply length");
    let mut f = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut f).expect("reply frame");
    assert_eq!(&f[..2], &[0x0f, 0xff], "a header frame");
    let flags = u16::from_be_bytes([f[2], f[3]]);
    let seqid = i32::from_be_bytes([f[4], f[5], f[6], f[7]]);
    let words = u16::from_be_bytes([f[8], f[9]]) as usize;
    let (id, transforms) = (f[10], f[11]);
    assert_eq!(transforms, 0, "replies are not transformed");
    let protocol = if id == 2 {
        Protocol::Compact
    } else {
        Protocol::Binary
    };
    let payload = bytes::Bytes::copy_from_slice(&f[10 + 4 * words..]);
    let mut r = MessageReader::new(protocol, payload, DecodeLimits::default());
    let h = r.read_header().expect("message header");
    assert_eq!((h.kind, h.seqid), (MessageType::Reply, seqid));
    let sum: Returns<i64> = r.decode().expect("result");
    (flags, seqid, id, sum.0)
}

fn connect(h: &Harness) -> TcpStream {
    let s = TcpStream::connect(h.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s
}

#[test]
fn header_requests_are_answered_in_their_dialect() {
    let h = Harness::start(1, |b| b);
    let mut s = connect(&h);
    // Binary, then compact on the same connection (each header names its protocol),
    // with info headers to skip.
    s.write_all(&frame(
        5,
        41,
        &[0, 0],
        &add_call(Protocol::Binary, 41, 40, 2),
    ))
    .expect("send");
    assert_eq!(read_sum(&mut s), (5, 41, 0, 42));
    let info = [2, 0, 1, 1, 3, b'k', b'e', b'y', 1, b'v'];
    s.write_all(&frame(0, -9, &info, &add_call(Protocol::Compact, -9, 1, 2)))
        .expect("send");
    assert_eq!(read_sum(&mut s), (0, -9, 2, 3));
    // zlib-compressed payload.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&add_call(Protocol::Binary, 7, 10, 20)).unwrap();
    s.write_all(&frame(0, 7, &[0, 1, 1], &z.finish().unwrap()))
        .expect("send");
    assert_eq!(read_sum(&mut s), (0, 7, 0, 30));

    // Inside an outer frame: the reply is wrapped the same way.
    let mut s = connect(&h);
    let inner = frame(1, 3, &[0, 0], &add_call(Protocol::Binary, 3, 2, 2));
    let mut outer = (inner.len() as u32).to_be_bytes().to_vec();
    outer.extend(&inner);
    s.write_all(&outer).expect("send");
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("outer length");
    assert_eq!(read_sum(&mut s), (1, 3, 0, 4));
}

#[test]
fn malformed_headers_close_the_connection_and_are_counted() {
    let h = Harness::start(1, |b| b.max_frame(64 * 1024));
    let cases: Vec<Vec<u8>> = vec![
        frame(0, 1, &[9, 0], b"x"),    // unknown protocol id
        frame(0, 1, &[0, 1, 7], b"x"), // unknown transform
        frame(0, 1, &[0, 1, 1], b"not zlib at all"),
        {
            // A zlib bomb: 200 kB of zeros in a small frame, over the 64 KiB limit.
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            z.write_all(&vec![0u8; 200_000]).unwrap();
            frame(0, 1, &[0, 1, 1], &z.finish().unwrap())
        },
    ];
    let n = cases.len() as u64;
    for c in cases {
        let mut s = connect(&h);
        s.write_all(&c).expect("send");
        let mut buf = [0u8; 1];
        assert_eq!(s.read(&mut buf).expect("read"), 0, "closed without a reply");
    }
    h.wait_stats("header errors", |s| {
        s.protocol_errors + s.frames_too_large == n && s.frames_too_large == 1
    });
}

#[test]
fn a_server_restricted_to_one_protocol_refuses_header_clients() {
    let h = Harness::start(1, |b| b.protocol(ProtocolChoice::Binary));
    let mut s = connect(&h);
    s.write_all(&frame(0, 1, &[0, 0], &add_call(Protocol::Binary, 1, 1, 1)))
        .expect("send");
    let mut buf = [0u8; 1];
    assert_eq!(s.read(&mut buf).expect("read"), 0);
    h.wait_stats("refused", |s| s.protocol_errors == 1);
}
