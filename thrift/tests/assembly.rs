//! Messages that straddle receive buffers, read with `MessageStream` on a real
//! loopback connection: each is assembled once, its bytes stay valid while the next
//! messages arrive, and the assembly memory is reused once a message is dropped.

use bytes::{BufMut, Bytes, BytesMut};
use std::rc::Rc;
use std::time::Duration;
use zerorx::net::{Connection, FrameReader, TcpListener, TcpStream};
use zerorx::timeout;
use zerorx_thrift::transport::{Incoming, MessageStream, Transport, DEFAULT_MAX_FRAME};
use zerorx_thrift::{DecodeLimits, Protocol};

fn rt() -> zerorx::Runtime {
    zerorx::Runtime::builder()
        .threads(1)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime")
}

/// A connected loopback pair on the current worker: (client, server side).
async fn connected_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr"))
        .await
        .expect("connect");
    let (s, _) = l.accept().await.expect("accept");
    (c, s)
}

/// A frame of `len` body bytes, each `fill`, with its length prefix.
fn frame(len: usize, fill: u8) -> (Bytes, Bytes) {
    let mut f = BytesMut::with_capacity(4 + len);
    f.put_u32(len as u32);
    f.put_bytes(fill, len);
    let f = f.freeze();
    (f.slice(..4 + len / 2), f.slice(4 + len / 2..))
}

/// Sends a frame in two halves, the second only once the reader holds the first,
/// so the body is always split between two receive buffers.
async fn straddling(c: &TcpStream, m: &mut MessageStream, len: usize, fill: u8) -> Incoming {
    let (first, second) = frame(len, fill);
    c.send(first).await.expect("send");
    // The stream holds the first half before the rest is sent; reading a message
    // times out harmlessly (it is cancel-safe) while the second half is missing.
    assert!(timeout(Duration::from_millis(50), m.next()).await.is_err());
    assert!(m.buffered() > 0, "first half buffered");
    c.send(second).await.expect("send");
    timeout(Duration::from_secs(20), m.next())
        .await
        .expect("message in time")
        .expect("read")
        .expect("a message")
}

#[test]
fn straddling_messages_stay_valid_and_their_memory_is_reused_once_dropped() {
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.set_nodelay(true).expect("nodelay");
        let mut m = MessageStream::new(
            FrameReader::new(Rc::new(Connection::from(s))),
            Transport::Framed,
            Protocol::Binary,
            DEFAULT_MAX_FRAME,
            DecodeLimits::default(),
        );
        let len = 40_000;
        let a = straddling(&c, &mut m, len, 0xa1).await;
        assert!(a.copied, "split across two buffers: assembled");
        // A field borrowed from the first message, as a decoder hands it out.
        let field = a.bytes.slice(100..200);
        let b = straddling(&c, &mut m, len, 0xb2).await;
        assert!(b.copied);
        assert_ne!(a.bytes.as_ptr(), b.bytes.as_ptr(), "a is still alive");
        assert!(
            a.bytes.iter().all(|&x| x == 0xa1),
            "a intact after b arrived"
        );
        assert!(b.bytes.iter().all(|&x| x == 0xb2));
        let (pa, pb) = (a.bytes.as_ptr(), b.bytes.as_ptr());
        drop(a);
        // Only a slice of `a` remains: its memory is still busy.
        let c3 = straddling(&c, &mut m, len, 0xc3).await;
        assert_ne!(c3.bytes.as_ptr(), pa, "a's field is still alive");
        assert_ne!(c3.bytes.as_ptr(), pb, "b is still alive");
        assert!(field.iter().all(|&x| x == 0xa1), "field intact");
        drop((field, b));
        // Allocations of the same size in between do not get that memory (a general
        // allocator would hand them the blocks just freed).
        let others = [vec![1u8; len + 4], vec![2u8; len + 4]];
        let d = straddling(&c, &mut m, len, 0xd4).await;
        assert!(
            d.bytes.as_ptr() == pa || d.bytes.as_ptr() == pb,
            "assembled into a's or b's memory once both were dropped"
        );
        assert_eq!(d.bytes.len(), len);
        assert!(d.bytes.iter().all(|&x| x == 0xd4));
        assert!(c3.bytes.iter().all(|&x| x == 0xc3), "c intact after d");
        assert!(others[0].iter().all(|&x| x == 1) && others[1].iter().all(|&x| x == 2));
    });
}

/// One framed binary `echo` call of `len` bytes of `fill`, as one buffer.
fn echo_call(seqid: i32, len: usize, fill: u8) -> Vec<u8> {
    let args = zerorx_cli::bench::EchoArgs {
        data: Bytes::from(vec![fill; len]),
    };
    let segs = zerorx_thrift::encode_message(
        Protocol::Binary,
        true,
        usize::MAX,
        b"echo",
        zerorx_thrift::MessageType::Call,
        seqid,
        &args,
    )
    .expect("encode");
    segs.concat()
}

#[test]
fn a_server_whose_pool_runs_low_copies_partial_requests_and_counts_it() {
    use std::io::{Read, Write};
    // 8 x 4 KiB buffers; six connections each park 5 KB of a 6 KB request, which
    // leaves the pool low while they wait for the rest.
    const CONNS: usize = 6;
    const LEN: usize = 6000;
    const FIRST: usize = 5000;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let rt = zerorx::Runtime::builder()
            .threads(1)
            .copy_pool(Some(zerorx::zcrx::CopyPoolConfig {
                buffers: 8,
                buffer_size: 4096,
                ..zerorx::zcrx::CopyPoolConfig::default()
            }))
            .shutdown_timeout(Duration::from_secs(5))
            .build()?;
        let server =
            zerorx_cli::bench::register(zerorx_thrift::Server::builder(), Default::default())
                .addr("127.0.0.1:0".parse().expect("addr"))
                .start(rt.handle())?;
        let _ = tx.send((
            server.local_addr(),
            server.shutdown_handle(),
            server.stats_handle(),
        ));
        rt.block_on(server.stopped())
    });
    let (addr, shutdown, stats) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("server started");
    let mut conns = Vec::new();
    for i in 0..CONNS {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let call = echo_call(i as i32, LEN, i as u8);
        s.write_all(&call[..FIRST]).expect("first part");
        conns.push((s, call));
        std::thread::sleep(Duration::from_millis(50));
    }
    for (i, (s, call)) in conns.iter_mut().enumerate() {
        s.write_all(&call[FIRST..]).expect("rest");
        let mut len = [0u8; 4];
        s.read_exact(&mut len).expect("reply length");
        let mut reply = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut reply).expect("reply");
        let mut r = zerorx_thrift::MessageReader::new(
            Protocol::Binary,
            reply.into(),
            DecodeLimits::default(),
        );
        let h = r.read_header().expect("header");
        assert_eq!(h.seqid, i as i32);
        let zerorx_thrift::Returns(data) = r
            .decode::<zerorx_thrift::Returns<Bytes>>()
            .expect("echo result");
        assert_eq!(data, Bytes::from(vec![i as u8; LEN]), "connection {i}");
    }
    let s = stats.snapshot();
    shutdown.shutdown(Duration::from_secs(1));
    server.join().expect("server thread").expect("server ran");
    assert_eq!(s.requests, CONNS as u64, "{s:#?}");
    assert!(
        s.pressure_spills > 0,
        "waiting readers copied out when the pool ran low: {s:#?}"
    );
    assert!(s.pressure_spills <= s.frames_copied, "{s:#?}");
}
