//! `TcpStream::try_recv` and `poll_recv` take only what has arrived, so a task can
//! gather the buffers already received into one `send_vectored_owned` (what the echo
//! benchmark's server does): every byte comes back in order, a look with nothing
//! queued returns at once, and `try_recv` leaves a waiting receive's waker in place.

mod common;

use common::join_peer;
use std::future::poll_fn;
use std::io::{Read, Write};
use std::task::Poll;
use std::time::Duration;
use zerorx::net::{SendBuf, TcpStream};
use zerorx::Runtime;

fn rt() -> Runtime {
    Runtime::builder()
        .threads(1)
        .copy_pool(Some(zerorx::zcrx::CopyPoolConfig {
            buffers: 16,
            buffer_size: 4096,
            ..zerorx::zcrx::CopyPoolConfig::default()
        }))
        .build()
        .expect("runtime")
}

/// Deterministic bytes that differ at every offset of a round.
fn pattern(round: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i.wrapping_mul(31) ^ round.wrapping_mul(7919) ^ (i >> 8)) as u8)
        .collect()
}

/// Whether a buffer has arrived: `Some` if `poll_recv` is ready, without waiting.
async fn ready(s: &TcpStream) -> Option<std::io::Result<Option<zerorx::zcrx::RxBuf>>> {
    poll_fn(|cx| match s.poll_recv(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

#[test]
fn gathered_echo_returns_every_byte_in_order() {
    const ROUNDS: usize = 20;
    // Several 4 KiB buffers per round: each gathered send carries many of them.
    const ROUND_BYTES: usize = 48 * 1024 + 123;
    let rt = rt();
    rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        let peer = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            c.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            for round in 0..ROUNDS {
                let sent = pattern(round, ROUND_BYTES);
                c.write_all(&sent).expect("write");
                let mut back = vec![0u8; ROUND_BYTES];
                c.read_exact(&mut back).expect("read the echo");
                assert!(back == sent, "round {round}: the echo differs");
            }
            c.shutdown(std::net::Shutdown::Write).expect("shutdown");
            let mut rest = Vec::new();
            c.read_to_end(&mut rest).expect("read to EOF");
            rest.len()
        });
        let (s, _) = l.accept().await.expect("accept");
        let (mut sends, mut gathered) = (0usize, 0usize);
        let mut ended = false;
        while !ended {
            let Some(first) = s.recv().await.expect("recv") else {
                break;
            };
            let mut bufs = vec![SendBuf::from(first)];
            loop {
                match s.try_recv() {
                    Some(Ok(Some(buf))) => bufs.push(buf.into()),
                    Some(Ok(None)) => {
                        ended = true;
                        break;
                    }
                    Some(Err(e)) => panic!("try_recv failed: {e}"),
                    None => break,
                }
            }
            sends += 1;
            gathered += bufs.len();
            s.send_vectored_owned(bufs).await.expect("gathered send");
        }
        // At end of stream it keeps saying so.
        assert!(matches!(s.try_recv(), Some(Ok(None))));
        assert!(matches!(ready(&s).await, Some(Ok(None))));
        drop(s);
        let extra = join_peer(peer).await;
        assert_eq!(extra, 0, "bytes came back after the last round");
        assert!(
            gathered > sends,
            "no send gathered more than one buffer ({sends} sends of {gathered} buffers)"
        );
    });
}

#[test]
fn poll_recv_with_nothing_received_returns_pending_at_once() {
    let rt = rt();
    rt.block_on(async move {
        let (s, mut c) = accepted_pair().await;
        assert!(ready(&s).await.is_none(), "nothing was sent yet");
        c.write_all(b"hello").expect("write");
        // The armed receive delivers it; the task is woken for it.
        let got = zerorx::timeout(Duration::from_secs(10), s.recv())
            .await
            .expect("the receive was not woken")
            .expect("recv")
            .expect("data");
        assert_eq!(&got[..], b"hello");
        assert!(ready(&s).await.is_none(), "only one message was sent");
        drop(c);
        assert_end(&s).await;
    });
}

#[test]
fn try_recv_leaves_a_waiting_receive_registered() {
    let rt = rt();
    rt.block_on(async move {
        let (s, mut c) = accepted_pair().await;
        let s = std::rc::Rc::new(s);
        let waiting = zerorx::spawn({
            let s = s.clone();
            async move { s.recv().await }
        });
        // The spawned task runs first and waits in `recv` with its own waker.
        zerorx::yield_now().await;
        zerorx::yield_now().await;
        assert!(s.try_recv().is_none(), "nothing was sent yet");
        c.write_all(b"wake the waiter").expect("write");
        let got = zerorx::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the waiting recv was not woken: try_recv took its waker")
            .expect("task")
            .expect("recv")
            .expect("data");
        assert_eq!(&got[..], b"wake the waiter");
        assert!(s.try_recv().is_none(), "only one message was sent");
        drop(c);
        assert_end(&s).await;
        assert!(matches!(s.try_recv(), Some(Ok(None))), "the end stays");
    });
}

#[test]
fn try_recv_off_a_worker_is_an_error_not_a_panic() {
    let rt = rt();
    let s = rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        let _c = TcpStream::connect(addr).await.expect("connect");
        l.accept().await.expect("accept").0
    });
    match s.try_recv() {
        Some(Err(e)) => assert!(e.to_string().contains("runtime"), "{e}"),
        other => panic!("expected an error off the worker, got {other:?}"),
    }
}

/// The peer closed: `recv` sees the end of the stream (within 10 s).
async fn assert_end(s: &TcpStream) {
    let end = zerorx::timeout(Duration::from_secs(10), s.recv())
        .await
        .expect("end of stream not seen")
        .expect("recv");
    assert!(end.is_none(), "data after the peer closed");
}

/// A connection: the accepted zerorx end and a blocking std client.
async fn accepted_pair() -> (TcpStream, std::net::TcpStream) {
    let (l, addr) = common::loopback_listener();
    let c = std::net::TcpStream::connect(addr).expect("connect");
    let (s, _) = l.accept().await.expect("accept");
    (s, c)
}
