//! Sending a received `RxBuf` directly (`TcpStream::send(RxBuf)`, no `Bytes` in
//! between): the bytes arrive exactly, the send keeps the pool buffer until the kernel
//! is done with it, and the buffer goes back to the pool afterwards, also when the
//! send future is dropped while the send is still in the kernel.
//!
//! The peers are plain std sockets on their own threads, so the pool's `in_use` count
//! is the server's buffers alone.

mod common;

use common::{in_use, join_peer, pool_drained, random};
use std::io::{Read, Write};
use std::time::Duration;
use zerorx::net::{SendBuf, TcpStream};
use zerorx::{sleep, spawn, timeout};

#[test]
fn rxbuf_echo_is_byte_exact_and_returns_every_buffer() {
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        let server = spawn(async move {
            let (s, _) = l.accept().await.expect("accept");
            let mut echoed = 0usize;
            while let Some(buf) = s.recv().await.expect("recv") {
                echoed += buf.len();
                s.send(buf).await.expect("send the RxBuf back");
            }
            echoed
        });
        // Several connections' worth of data in odd-sized writes, from a thread that
        // reads the echo concurrently (so neither side's socket buffer fills up).
        let data = random(7, 300_000);
        let client = common::std_echo_client(addr, data, 7_001);
        let echoed = timeout(Duration::from_secs(30), server)
            .await
            .expect("the server finished in time")
            .expect("server task");
        assert_eq!(echoed, 300_000);
        join_peer(client).await;
        pool_drained(&h).await;
    });
}

/// What the held-send tests share: a server stream whose socket send buffer is full
/// (the peer is not reading yet), one received `RxBuf`, and the peer thread, which
/// starts reading when `go` is sent and returns everything it read.
struct Stalled {
    stream: TcpStream,
    buf: zcrx::RxBuf,
    filler: usize,
    go: std::sync::mpsc::Sender<()>,
    peer: std::thread::JoinHandle<Vec<u8>>,
}

const MESSAGE: usize = 100;

async fn stalled_stream() -> Stalled {
    let (l, addr) = common::loopback_listener();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let peer = std::thread::spawn(move || {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        // Small before connecting, so the window stays small and the server's send
        // buffer fills quickly.
        sock.set_recv_buffer_size(4096).expect("SO_RCVBUF");
        sock.connect(&addr.into()).expect("connect");
        let mut c: std::net::TcpStream = sock.into();
        c.write_all(&random(11, MESSAGE)).expect("write");
        // Bounded: the test side sends `go` or drops the sender.
        let _ = wait.recv_timeout(Duration::from_secs(30));
        c.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut all = Vec::new();
        c.read_to_end(&mut all).expect("read to EOF");
        all
    });
    let (stream, _) = l.accept().await.expect("accept");
    stream
        .socket()
        .set_send_buffer_size(4096)
        .expect("SO_SNDBUF");
    let buf = stream.recv().await.expect("recv").expect("data");
    assert_eq!(&buf[..], &random(11, MESSAGE)[..buf.len()]);
    // Fill the socket without blocking; the byte count is exact.
    let mut filler = 0usize;
    let chunk = vec![0xA5u8; 16 * 1024];
    loop {
        match stream.socket().send_with_flags(&chunk, libc::MSG_DONTWAIT) {
            Ok(n) => filler += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("filling the socket: {e}"),
        }
        assert!(filler < 64 << 20, "the socket never filled up");
    }
    Stalled {
        stream,
        buf,
        filler,
        go,
        peer,
    }
}

#[test]
fn rxbuf_send_holds_the_buffer_until_it_completes() {
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let st = stalled_stream().await;
        let sent: Vec<u8> = st.buf.to_vec();
        let stream = std::rc::Rc::new(st.stream);
        let send = {
            let stream = stream.clone();
            let buf = st.buf;
            spawn(async move { stream.send(SendBuf::from(buf)).await })
        };
        sleep(Duration::from_millis(50)).await;
        assert!(!send.is_finished(), "the send finished into a full socket");
        assert_eq!(in_use(&h), 1, "the in-flight send holds its buffer");
        st.go.send(()).expect("peer waits");
        timeout(Duration::from_secs(20), send)
            .await
            .expect("the send finished once the peer read")
            .expect("send task")
            .expect("send");
        assert_eq!(in_use(&h), 0, "the finished send gave its buffer back");
        drop(stream);
        let got = join_peer(st.peer).await;
        assert_eq!(got.len(), st.filler + sent.len());
        assert!(got[..st.filler].iter().all(|&b| b == 0xA5), "filler bytes");
        assert!(got[st.filler..] == sent[..], "the RxBuf's bytes differ");
    });
}

#[test]
fn dropped_rxbuf_send_returns_the_buffer() {
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let st = stalled_stream().await;
        let stream = std::rc::Rc::new(st.stream);
        let send = {
            let stream = stream.clone();
            let buf = st.buf;
            spawn(async move { stream.send(buf).await })
        };
        sleep(Duration::from_millis(50)).await;
        assert!(!send.is_finished(), "the send finished into a full socket");
        assert_eq!(in_use(&h), 1, "the in-flight send holds its buffer");
        // Dropping the future cancels the op; the buffer comes back once the kernel's
        // final completion for the send is handled, with the peer still not reading.
        send.abort();
        let joined = timeout(Duration::from_secs(20), send)
            .await
            .expect("the aborted task finished");
        assert!(
            joined.as_ref().err().is_some_and(|e| e.is_cancelled()),
            "the send task was not cancelled: {joined:?}"
        );
        pool_drained(&h).await;
        assert!(
            h.metrics()[0].ops_in_flight <= 2,
            "ops left behind: {:?}",
            h.metrics()[0]
        );
        st.go.send(()).expect("peer waits");
        drop(stream);
        let got = join_peer(st.peer).await;
        assert!(got.len() >= st.filler, "the peer lost filler bytes");
    });
}

#[test]
fn vectored_send_of_rxbufs_and_bytes_is_byte_exact() {
    let rt = common::small_pool_rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        // Letters only, so the `|` separators added below can be taken out again.
        let data: Vec<u8> = random(23, 20_000).iter().map(|b| b'a' + b % 26).collect();
        let expect = data.clone();
        let peer = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            c.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            c.write_all(&data).expect("write");
            c.shutdown(std::net::Shutdown::Write).expect("shutdown");
            let mut all = Vec::new();
            c.read_to_end(&mut all).expect("read to EOF");
            all
        });
        let (s, _) = l.accept().await.expect("accept");
        // Everything received, sent back in one gather with a header between buffers.
        let mut bufs = Vec::new();
        while let Some(buf) = s.recv().await.expect("recv") {
            bufs.push(SendBuf::from(bytes::Bytes::from_static(b"|")));
            bufs.push(SendBuf::from(buf));
        }
        let mut want = Vec::new();
        for b in &bufs {
            want.extend_from_slice(b);
        }
        s.send_vectored_owned(bufs)
            .await
            .expect("send_vectored_owned");
        pool_drained(&h).await;
        drop(s);
        let got = join_peer(peer).await;
        assert!(got == want, "the gathered echo differs");
        let body: Vec<u8> = got.iter().copied().filter(|&b| b != b'|').collect();
        assert!(
            body == expect,
            "the RxBufs' bytes differ from what the peer sent"
        );
    });
}
