//! Ecosystem adapters on real loopback connections: `RecvStream` with `StreamExt`,
//! and `Compat` under futures-util's own code (`copy`, `read_to_end`, `lines`,
//! `write_all`), a 16 MiB echo verified byte for byte, closed and reset peers, the
//! retry contract of `poll_write`, and no fd or pool buffer left after dropping
//! adapters mid-operation.

mod common;

use bytes::Bytes;
use common::{connected_pair, random, Rng};
use futures_util::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use futures_util::stream::{FusedStream, StreamExt, TryStreamExt};
use std::future::poll_fn;
use std::io::ErrorKind;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;
use zerorx::net::{Compat, RecvStream, TcpStream};
use zerorx::{spawn, timeout, Runtime, WakeMode};

fn rt() -> Runtime {
    common::rt(1, WakeMode::EventFd)
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

const T: Duration = Duration::from_secs(30);

#[test]
fn recv_stream_yields_every_byte_then_ends() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        let data = random(1, 300_000);
        let wire = Bytes::from(data.clone());
        let writer = spawn(async move {
            for i in (0..wire.len()).step_by(7_001) {
                c.send(wire.slice(i..(i + 7_001).min(wire.len())))
                    .await
                    .expect("send");
            }
        });
        let mut got = Vec::new();
        let mut stream = s.recv_stream();
        while let Some(buf) = timeout(T, stream.next()).await.expect("in time") {
            got.extend_from_slice(&buf.expect("recv"));
        }
        assert!(stream.is_terminated());
        assert!(stream.next().await.is_none(), "stays ended");
        assert_eq!(first_difference(&got, &data), None);
        writer.await.expect("writer");

        // An owned stream, consumed by a combinator.
        let (c, s) = connected_pair().await;
        c.send(Bytes::from_static(b"hello ")).await.expect("send");
        c.send(Bytes::from_static(b"world")).await.expect("send");
        drop(c);
        let total = RecvStream::new(Rc::new(s))
            .try_fold(Vec::new(), |mut acc, buf| async move {
                acc.extend_from_slice(&buf);
                Ok(acc)
            })
            .await
            .expect("fold");
        assert_eq!(total, b"hello world");
    });
}

#[test]
fn recv_stream_error_is_yielded_once_then_the_stream_ends() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.socket().set_linger(Some(Duration::ZERO)).expect("linger");
        drop(c);
        let mut stream = RecvStream::new(s);
        let e = timeout(T, stream.next())
            .await
            .expect("in time")
            .expect("an item")
            .expect_err("reset");
        assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
        assert!(stream.next().await.is_none());
        assert!(stream.is_terminated());
    });
}

#[test]
fn sixteen_mib_echo_through_futures_io_copy_verifies_every_byte() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        // Server: futures-util's copy from the read half to the write half.
        let server = spawn(async move {
            let s = Rc::new(s);
            let mut w = Compat::new(s.clone());
            let n = futures_util::io::copy(Compat::new(s), &mut w)
                .await
                .expect("copy");
            w.close().await.expect("close");
            n
        });
        let data = Rc::new(random(2, 16 << 20));
        let c = Rc::new(c);
        let writer = {
            let data = data.clone();
            let mut w = Compat::new(c.clone());
            spawn(async move {
                let mut rng = Rng(5);
                let mut off = 0;
                while off < data.len() {
                    let end = (off + 1 + (rng.next() % 200_000) as usize).min(data.len());
                    w.write_all(&data[off..end]).await.expect("write_all");
                    off = end;
                }
                w.close().await.expect("close");
            })
        };
        // A plain read loop: futures' read_to_end zero-fills the Vec's whole spare
        // capacity on every poll, which is slow for 16 MiB in debug builds (it is
        // exercised on smaller transfers below).
        let mut got = Vec::with_capacity(data.len());
        let mut r = Compat::new(c);
        let mut buf = vec![0u8; 100_000];
        loop {
            let n = timeout(T, r.read(&mut buf))
                .await
                .expect("in time")
                .expect("read");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        writer.await.expect("writer");
        assert_eq!(server.await.expect("server"), data.len() as u64);
        assert_eq!(got.len(), data.len());
        assert_eq!(first_difference(&got, &data), None, "echo differs");
    });
}

#[test]
fn lines_through_bufreader_and_natively() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        for native in [false, true] {
            let (c, s) = connected_pair().await;
            c.set_nodelay(true).expect("nodelay");
            let text: String = (0..2000)
                .map(|i| format!("line {i} {}\n", "x".repeat(i % 97)))
                .collect();
            let wire = Bytes::from(text.clone().into_bytes());
            let writer = spawn(async move {
                let mut rng = Rng(9);
                let mut off = 0;
                while off < wire.len() {
                    let end = (off + 1 + (rng.next() % 5000) as usize).min(wire.len());
                    c.send(wire.slice(off..end)).await.expect("send");
                    off = end;
                }
            });
            let compat = s.compat();
            let lines: Vec<String> = if native {
                timeout(T, compat.lines().try_collect()).await
            } else {
                timeout(T, BufReader::new(compat).lines().try_collect()).await
            }
            .expect("in time")
            .expect("lines");
            writer.await.expect("writer");
            let want: Vec<&str> = text.lines().collect();
            assert_eq!(lines, want, "native {native}");
        }
    });
}

#[test]
fn closed_peer_reads_zero_and_reset_peer_fails_writes() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.send(Bytes::from_static(b"bye")).await.expect("send");
        c.shutdown(std::net::Shutdown::Write)
            .await
            .expect("shutdown");
        let mut r = s.compat();
        let mut buf = [0u8; 16];
        let mut got = Vec::new();
        loop {
            let n = timeout(T, r.read(&mut buf))
                .await
                .expect("in time")
                .expect("read");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"bye");
        assert_eq!(r.read(&mut buf).await.expect("read"), 0, "EOF stays EOF");

        // The peer resets: writes fail within a bounded number of attempts.
        c.socket().set_linger(Some(Duration::ZERO)).expect("linger");
        drop(c);
        zerorx::sleep(Duration::from_millis(20)).await;
        let chunk = vec![1u8; 64 * 1024];
        let mut err = None;
        for _ in 0..100 {
            if let Err(e) = timeout(T, r.write_all(&chunk)).await.expect("in time") {
                err = Some(e);
                break;
            }
        }
        let e = err.expect("writing to a reset peer fails");
        assert!(
            matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe),
            "{e}"
        );

        // Writes after close are refused.
        let (c, _s) = connected_pair().await;
        let mut w = c.compat();
        w.close().await.expect("close");
        let e = w.write(b"late").await.expect_err("after close");
        assert_eq!(e.kind(), ErrorKind::BrokenPipe);
    });
}

/// One poll of `poll_write`, whatever it returns.
async fn poll_write_once(w: &mut Compat, buf: &[u8]) -> Poll<std::io::Result<usize>> {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *w).poll_write(cx, buf))).await
}

#[test]
fn poll_write_queues_and_pushes_back_past_the_backlog() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        let mut w = c.compat();
        // A write is queued at once, and the bytes go out once each, in order.
        let p = poll_write_once(&mut w, b"abc").await;
        assert!(matches!(p, Poll::Ready(Ok(3))), "queued at once: {p:?}");
        let p = poll_write_once(&mut w, b"xyz").await;
        assert!(matches!(p, Poll::Ready(Ok(3))), "{p:?}");
        // Past the backlog, with a peer that reads nothing yet, a write waits.
        let big = vec![5u8; 1 << 20];
        let mut written = 6usize;
        let mut waited = false;
        for _ in 0..256 {
            match poll_write_once(&mut w, &big).await {
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(e)) => panic!("write failed: {e}"),
                Poll::Pending => {
                    waited = true;
                    break;
                }
            }
        }
        assert!(waited, "{written} bytes accepted without pushing back");
        assert!(
            c_backlog(&w) > zerorx::net::WRITE_BACKLOG,
            "it waits only past the backlog"
        );
        // The reader drains it all; the writer finishes and closes.
        let reader = spawn(async move {
            let mut got = Vec::new();
            let mut r = s.compat();
            timeout(T, r.read_to_end(&mut got))
                .await
                .expect("in time")
                .expect("read");
            got
        });
        w.close().await.expect("close");
        let got = reader.await.expect("reader");
        assert_eq!(got.len(), written);
        assert_eq!(
            &got[..6],
            b"abcxyz",
            "each write on the wire once, in order"
        );
        assert!(got[6..].iter().all(|&b| b == 5));
    });
}

#[test]
fn a_send_failure_is_returned_by_a_later_write_or_flush() {
    let _g = common::fd_lock();
    rt().block_on(async {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let peer = std::thread::spawn(move || {
            let (c, _) = l.accept().expect("accept");
            // Closed with no linger: the kernel resets the connection.
            socket2::SockRef::from(&c)
                .set_linger(Some(Duration::ZERO))
                .expect("SO_LINGER");
            drop(c);
        });
        let c = TcpStream::connect(addr).await.expect("connect");
        common::join_peer(peer).await;
        zerorx::sleep(Duration::from_millis(20)).await;
        let mut w = c.compat();
        let piece = vec![1u8; 64 << 10];
        let mut failed = None;
        for _ in 0..100 {
            let r = match w.write_all(&piece).await {
                Ok(()) => w.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                failed = Some(e);
                break;
            }
        }
        let e = failed.expect("writes to a reset connection fail");
        assert!(
            matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe),
            "{e}"
        );
        // And keep failing.
        assert!(w.write_all(b"more").await.and(w.flush().await).is_err());
    });
}

/// Bytes the adapter's connection has queued and not yet sent.
fn c_backlog(w: &Compat) -> usize {
    w.get_ref().send_backlog()
}

#[test]
fn dropping_adapters_mid_operation_leaves_no_fd_or_buffer() {
    let _g = common::fd_lock();
    let before = common::fd_count();
    let rt = rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let big = vec![3u8; 8 << 20];
        for round in 0..20u64 {
            let (c, s) = connected_pair().await;
            let c = Rc::new(c);
            // A read dropped while waiting, and a partly read buffer dropped.
            let mut r = Compat::new(c.clone());
            let mut buf = [0u8; 4];
            assert!(timeout(Duration::from_millis(5), r.read(&mut buf))
                .await
                .is_err());
            s.send(Bytes::from(random(round, 10_000)))
                .await
                .expect("send");
            r.read_exact(&mut buf).await.expect("read");
            drop(r);
            // A write dropped while the peer does not read (send buffer fills).
            let mut w = Compat::new(c.clone());
            let _ = timeout(Duration::from_millis(20), w.write_all(&big)).await;
            drop(w);
            // A stream dropped after one item (part of what the dropped write sent,
            // or the EOF if the cancel came first).
            let mut st = RecvStream::new(s);
            drop(c);
            let _ = timeout(T, st.next()).await.expect("in time");
            drop(st);
        }
        // Buffers come back and ops finish once the kernel lets go.
        let mut in_use = usize::MAX;
        for _ in 0..500 {
            let st = h.pool_stats()[0].expect("pool");
            in_use = st.in_use as usize;
            if in_use == 0 && h.metrics()[0].ops_in_flight <= 1 {
                break;
            }
            zerorx::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(in_use, 0, "a receive buffer is still held");
    });
    // A generous drain: on a loaded machine the cancelled sends can take a while, and
    // a shutdown that gives up leaks their fds on purpose (that would be the error
    // here, not an fd leak).
    rt.shutdown(Duration::from_secs(30))
        .expect("every op finished at shutdown");
    assert_eq!(common::fd_count(), before, "an fd was left open");
}

#[test]
fn compat_keeps_unread_bytes_for_into_inner() {
    // Serialised with the fd-counting test in this file.
    let _g = common::fd_lock();
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.send(Bytes::from_static(b"0123456789"))
            .await
            .expect("send");
        let mut r = s.compat();
        let mut two = [0u8; 2];
        r.read_exact(&mut two).await.expect("read");
        assert_eq!(&two, b"01");
        let (stream, rest): (Rc<TcpStream>, Bytes) = r.into_inner();
        // What was received but not read comes back (it may be the whole rest or a
        // first part, depending on how the kernel delivered it).
        assert!(
            b"23456789".starts_with(&rest) && !rest.is_empty(),
            "{rest:?}"
        );
        drop(stream);
    });
}
