//! `FrameReader` on real loopback connections: frames cut at every byte boundary and
//! delivered in separate receive buffers, 1-byte to multi-MiB frames with every byte
//! verified, zero-copy of a frame that arrives in one buffer, frames larger than the
//! whole pool, the length limit, early EOF, reset and cancellation.

mod common;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use common::{connected_pair, random, Rng};
use std::io::ErrorKind;
use std::rc::Rc;
use std::time::Duration;
use zcrx::CopyPoolConfig;
use zerorx::net::{AsConnection, BytesChain, FrameReader};
use zerorx::{spawn, timeout, Runtime, WakeMode};

const LIMIT: usize = 16 << 20;

fn rt() -> Runtime {
    common::rt(1, WakeMode::EventFd)
}

fn rt_with_pool(buffers: u16, size: u32) -> Runtime {
    Runtime::builder()
        .threads(1)
        .copy_pool(Some(CopyPoolConfig {
            buffers,
            buffer_size: size,
            ..CopyPoolConfig::default()
        }))
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime")
}

/// `bodies` framed with 4-byte big-endian lengths, back to back.
fn framed(bodies: &[Vec<u8>]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for b in bodies {
        out.put_u32(b.len() as u32);
        out.put_slice(b);
    }
    out.to_vec()
}

fn flat(c: &BytesChain) -> Vec<u8> {
    c.segments().flat_map(|s| s.iter().copied()).collect()
}

/// Bounded so a bug shows as a failure, not a hung test.
async fn frame<S: AsConnection>(r: &mut FrameReader<S>, max: usize) -> Option<BytesChain> {
    timeout(Duration::from_secs(20), r.read_frame(max))
        .await
        .expect("frame in time")
        .expect("read_frame")
}

#[test]
fn frames_split_at_every_byte_boundary_arrive_intact() {
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.set_nodelay(true).expect("nodelay");
        let bodies = vec![vec![], b"x".to_vec(), random(1, 5), random(2, 40)];
        let wire = framed(&bodies);
        let mut r = FrameReader::new(&s);
        let mut spanning = 0;
        for cut in 1..wire.len() {
            // The reader sees the first piece before the second is sent, so the two
            // pieces are always separate receive buffers.
            c.send(Bytes::copy_from_slice(&wire[..cut]))
                .await
                .expect("send");
            assert!(r.fill(cut).await.expect("fill"), "cut {cut}");
            c.send(Bytes::copy_from_slice(&wire[cut..]))
                .await
                .expect("send");
            for (i, body) in bodies.iter().enumerate() {
                let f = frame(&mut r, LIMIT).await.expect("a frame");
                assert_eq!(&flat(&f), body, "cut {cut} frame {i}");
                spanning += usize::from(f.segments().len() > 1);
            }
            assert!(r.buffered().is_empty(), "cut {cut}");
        }
        assert!(spanning > 0, "no frame spanned two receive buffers");
    });
}

#[test]
fn random_three_way_splits_reassemble() {
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.set_nodelay(true).expect("nodelay");
        let mut rng = Rng(77);
        let mut r = FrameReader::new(Rc::new(s));
        for round in 0..150u64 {
            let bodies: Vec<Vec<u8>> = (0..1 + rng.next() % 4)
                .map(|i| random(round * 8 + i, (rng.next() % 300) as usize))
                .collect();
            let wire = framed(&bodies);
            let a = (rng.next() as usize) % wire.len();
            let b = a + (rng.next() as usize) % (wire.len() - a);
            let mut sent = 0;
            for end in [a, b, wire.len()] {
                if end > sent {
                    c.send(Bytes::copy_from_slice(&wire[sent..end]))
                        .await
                        .expect("send");
                    assert!(r.fill(end).await.expect("fill"));
                    sent = end;
                }
            }
            for body in &bodies {
                assert_eq!(&flat(&frame(&mut r, LIMIT).await.expect("frame")), body);
            }
        }
    });
}

#[test]
fn tiny_and_multi_mib_frames_verify_every_byte() {
    // Holding a whole 3 MiB frame in receive buffers needs a pool that can hold it
    // (small sends fill buffers only partly); with the default hold limit the default
    // pool is enough.
    for hold_all in [true, false] {
        let rt = if hold_all {
            rt_with_pool(1024, 16 * 1024)
        } else {
            rt()
        };
        rt.block_on(async move {
            let (c, s) = connected_pair().await;
            let bodies = vec![
                b"z".to_vec(),
                vec![],
                random(3, 3 << 20),
                random(4, 1),
                random(5, 700_001),
            ];
            let wire = Bytes::from(framed(&bodies));
            let writer = spawn(async move {
                // Uneven pieces, so frame edges fall anywhere inside buffers.
                let mut off = 0;
                let mut step = 1;
                while off < wire.len() {
                    let end = (off + step).min(wire.len());
                    c.send(wire.slice(off..end)).await.expect("send");
                    off = end;
                    step = step * 7 + 13;
                    if step > 300_000 {
                        step = 3;
                    }
                }
                c
            });
            let mut r = FrameReader::new(s);
            if hold_all {
                r.set_hold_limit(usize::MAX);
            }
            for (i, body) in bodies.iter().enumerate() {
                let f = frame(&mut r, LIMIT).await.expect("frame");
                assert_eq!(f.len(), body.len(), "frame {i}");
                let got = f.into_contiguous();
                if let Some(at) = got.iter().zip(body).position(|(a, b)| a != b) {
                    panic!("frame {i} (hold_all {hold_all}) differs at byte {at}");
                }
            }
            let c = writer.await.expect("writer");
            drop(c);
            assert!(frame(&mut r, LIMIT).await.is_none(), "clean EOF");
        });
    }
}

#[test]
fn frame_larger_than_the_whole_pool_completes_by_copying() {
    // 8 × 4 KiB = 32 KiB of pool; a 1 MiB frame can only complete if the reader
    // copies out what it holds instead of keeping every buffer.
    let rt = rt_with_pool(8, 4096);
    rt.block_on(async {
        let (c, s) = connected_pair().await;
        let body = random(9, 1 << 20);
        let wire = Bytes::from(framed(&[body.clone(), b"after".to_vec()]));
        let writer = spawn(async move {
            c.send(wire).await.expect("send");
            c
        });
        let mut r = FrameReader::new(&s);
        r.set_hold_limit(16 * 1024);
        let f = frame(&mut r, LIMIT).await.expect("frame");
        assert!(f.is_contiguous(), "copied into one heap buffer: {f:?}");
        assert!(r.last_copied());
        let copies = r.copy_stats();
        assert_eq!(copies.frames, 1);
        assert!(
            copies.bytes >= body.len() as u64,
            "every body byte was copied at least once: {copies:?}"
        );
        assert!(f.into_contiguous() == body, "1 MiB body differs");
        assert_eq!(
            &flat(&frame(&mut r, LIMIT).await.expect("second")),
            b"after"
        );
        drop(writer.await.expect("writer"));
        assert!(frame(&mut r, LIMIT).await.is_none());
    });
}

#[test]
fn frame_in_one_buffer_points_into_the_receive_pool() {
    let pool = CopyPoolConfig::default();
    let area = pool.buffers as usize * pool.buffer_size as usize;
    rt().block_on(async move {
        let (c, s) = connected_pair().await;
        // Learn where the pool's memory is from one plain receive.
        c.send(Bytes::from_static(b"probe")).await.expect("send");
        let probe = s.recv().await.expect("recv").expect("data");
        let base = probe.as_ptr() as usize - probe.area_offset();
        drop(probe);

        let body = random(11, 1000);
        c.send(Bytes::from(framed(std::slice::from_ref(&body))))
            .await
            .expect("send");
        let mut r = FrameReader::new(&s);
        let f = frame(&mut r, LIMIT).await.expect("frame");
        assert!(f.is_contiguous(), "{f:?}");
        let seg = f.segments().next().expect("one segment").as_ptr() as usize;
        assert!(
            (base..base + area).contains(&seg),
            "frame body at {seg:#x} is not in the pool [{base:#x}, +{area:#x})"
        );
        let whole = f.into_contiguous();
        assert_eq!(whole.as_ptr() as usize, seg, "into_contiguous copied");
        assert_eq!(&whole[..], &body[..]);
    });
}

#[test]
fn length_over_the_limit_fails_without_waiting_for_the_body() {
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        // A header announcing 1001 bytes, and no body: the peer stays open.
        c.send(Bytes::from_static(&[0, 0, 0x03, 0xe9]))
            .await
            .expect("send");
        let mut r = FrameReader::new(&s);
        let err = timeout(Duration::from_secs(5), r.read_frame(1000))
            .await
            .expect("decided from the header alone")
            .expect_err("over the limit");
        assert_eq!(err.kind(), ErrorKind::InvalidData);
        let msg = err.to_string();
        assert!(msg.contains("1001") && msg.contains("1000"), "{msg}");
        assert_eq!(r.buffered().len(), 4, "the header stays buffered");
        // Skip the bad header: a frame exactly at the limit is accepted.
        assert_eq!(flat(&r.consume(4)), [0, 0, 0x03, 0xe9]);
        c.send(Bytes::from(framed(&[vec![7u8; 1000]])))
            .await
            .expect("send");
        let f = frame(&mut r, 1000).await.expect("frame");
        assert_eq!(flat(&f), vec![7u8; 1000]);
        drop(c);
    });
}

#[test]
fn eof_inside_a_header_or_body_is_unexpected_eof_and_at_a_boundary_is_none() {
    rt().block_on(async {
        // (bytes sent before closing, what read_frame must say about each frame)
        let cases: [(&[u8], &str); 3] = [
            (&[0, 0], "frame header (2 of 4 bytes)"),
            (&[0, 0, 0, 5, b'a', b'b'], "frame (2 of 5 body bytes)"),
            (
                &[0, 0, 0, 1, b'a', 0, 0, 0, 2, b'x'],
                "frame (1 of 2 body bytes)",
            ),
        ];
        for (wire, said) in cases {
            let (c, s) = connected_pair().await;
            c.send(Bytes::from_static(wire)).await.expect("send");
            c.shutdown(std::net::Shutdown::Write)
                .await
                .expect("shutdown");
            let mut r = FrameReader::new(s);
            let mut last = None;
            for _ in 0..3 {
                match timeout(Duration::from_secs(5), r.read_frame(LIMIT))
                    .await
                    .expect("in time")
                {
                    Ok(Some(f)) => assert_eq!(flat(&f), b"a"),
                    Ok(None) => panic!("clean EOF reported for {wire:?}"),
                    Err(e) => {
                        last = Some(e);
                        break;
                    }
                }
            }
            let e = last.expect("an error");
            assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{e}");
            assert!(e.to_string().contains(said), "{e} vs {said}");
        }

        // read_exact names how much of the request arrived.
        let (c, s) = connected_pair().await;
        c.send(Bytes::from_static(b"abc")).await.expect("send");
        drop(c);
        let mut r = FrameReader::new(&s);
        let e = r.read_exact(10).await.expect_err("short");
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("3 of 10"), "{e}");
        assert_eq!(flat(&r.consume(100)), b"abc", "what arrived stays buffered");

        // Clean close right after a frame.
        let (c, s) = connected_pair().await;
        c.send(Bytes::from(framed(&[b"last".to_vec()])))
            .await
            .expect("send");
        drop(c);
        let mut r = FrameReader::new(s);
        assert_eq!(flat(&frame(&mut r, LIMIT).await.expect("frame")), b"last");
        assert!(frame(&mut r, LIMIT).await.is_none());
        assert!(frame(&mut r, LIMIT).await.is_none(), "EOF stays EOF");
        let (stream, rest) = r.into_inner();
        assert!(rest.is_empty());
        drop(stream);
    });
}

#[test]
fn peer_reset_is_an_error() {
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.send(Bytes::from(framed(&[b"ok".to_vec()])))
            .await
            .expect("send");
        let mut r = FrameReader::new(&s);
        assert_eq!(flat(&frame(&mut r, LIMIT).await.expect("frame")), b"ok");
        // Linger 0: close sends RST instead of FIN.
        c.socket().set_linger(Some(Duration::ZERO)).expect("linger");
        drop(c);
        let e = timeout(Duration::from_secs(5), r.read_frame(LIMIT))
            .await
            .expect("in time")
            .expect_err("reset is not a clean EOF");
        assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    });
}

#[test]
fn cancelled_reads_lose_nothing() {
    for hold_limit in [usize::MAX, 0] {
        rt().block_on(async move {
            let (c, s) = connected_pair().await;
            c.set_nodelay(true).expect("nodelay");
            let body = random(21, 50_000);
            let wire = framed(std::slice::from_ref(&body));
            let mut r = FrameReader::new(&s);
            r.set_hold_limit(hold_limit);
            let mut sent = 0;
            for piece in wire.chunks(9_999) {
                c.send(Bytes::copy_from_slice(piece)).await.expect("send");
                sent += piece.len();
                if sent < wire.len() {
                    // Dropped while waiting for the rest of the frame.
                    let cut = timeout(Duration::from_millis(30), r.read_frame(LIMIT)).await;
                    assert!(cut.is_err(), "a partial frame cannot complete");
                    assert!(r.fill(sent).await.expect("fill"));
                    assert_eq!(r.buffered().len(), sent, "hold {hold_limit}");
                }
            }
            let f = frame(&mut r, LIMIT).await.expect("frame");
            assert!(f.into_contiguous() == body, "hold {hold_limit}");
            assert!(r.buffered().is_empty());
            assert_eq!(r.get_ref().local_addr().ok(), s.local_addr().ok());
        });
    }
}

#[test]
fn chain_reads_as_buf_across_receive_buffers() {
    rt().block_on(async {
        let (c, s) = connected_pair().await;
        c.set_nodelay(true).expect("nodelay");
        let mut r = FrameReader::new(&s);
        c.send(Bytes::from_static(&[0, 0])).await.expect("send");
        assert!(r.fill(2).await.expect("fill"));
        c.send(Bytes::from_static(&[1, 2, 0xff]))
            .await
            .expect("send");
        let mut chain = r.read_exact(5).await.expect("read_exact");
        assert_eq!(chain.segments().len(), 2);
        assert_eq!(chain.get_u32(), 0x0102);
        assert_eq!(chain.get_u8(), 0xff);
        assert_eq!(chain.remaining(), 0);
    });
}

/// Body of connection `id`'s frame: its id first (accept order is not connect order),
/// then bytes only that id produces.
fn tagged_body(id: usize, len: usize) -> Vec<u8> {
    let mut body = random(1000 + id as u64, len);
    body[..8].copy_from_slice(&(id as u64).to_be_bytes());
    body
}

/// `conns` connections each send the first `first` bytes of one frame with a `body`
/// byte body, all pause, then all send the rest and close. Every frame must arrive
/// intact within a bounded time; returns the readers' copy counts (frames, bytes).
fn partial_frames_on_every_connection(
    rt: &Runtime,
    conns: usize,
    first: usize,
    body: usize,
) -> (u64, u64) {
    let listener =
        zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let addr = listener.local_addr().expect("addr");
    let client = std::thread::spawn(move || {
        use std::io::Write;
        let mut socks = Vec::new();
        for id in 0..conns {
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            s.set_nodelay(true).expect("nodelay");
            s.set_write_timeout(Some(Duration::from_secs(30)))
                .expect("write timeout");
            let wire = framed(&[tagged_body(id, body)]);
            s.write_all(&wire[..first]).expect("first part");
            socks.push((s, wire));
        }
        // Every server reader now sits on a partial frame.
        std::thread::sleep(Duration::from_millis(300));
        for (s, wire) in &mut socks {
            s.write_all(&wire[first..]).expect("rest");
            s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        }
        socks
    });
    let arrived = Rc::new(std::cell::Cell::new(0usize));
    let copies = rt.block_on({
        let arrived = arrived.clone();
        async move {
            let all = async {
                let mut tasks = Vec::new();
                for _ in 0..conns {
                    let (s, _) = listener.accept().await.expect("accept");
                    let arrived = arrived.clone();
                    tasks.push(spawn(async move {
                        let mut r = FrameReader::new(s);
                        let f = r.read_frame(LIMIT).await.expect("read_frame");
                        let f = f.expect("a frame before EOF").into_contiguous();
                        assert_eq!(f.len(), body, "body length");
                        let id = u64::from_be_bytes(f[..8].try_into().expect("8 bytes"));
                        assert!((id as usize) < conns, "bad id {id}");
                        assert!(f == tagged_body(id as usize, body), "frame {id} differs");
                        arrived.set(arrived.get() + 1);
                        assert!(r.read_frame(LIMIT).await.expect("eof").is_none());
                        (id, r.copy_stats())
                    }));
                }
                let mut ids = Vec::new();
                let (mut frames, mut bytes) = (0, 0);
                for t in tasks {
                    let (id, stats) = t.await.expect("reader task");
                    ids.push(id);
                    frames += stats.frames;
                    bytes += stats.bytes;
                }
                ids.sort_unstable();
                assert_eq!(ids, (0..conns as u64).collect::<Vec<_>>(), "every id once");
                (frames, bytes)
            };
            match timeout(Duration::from_secs(30), all).await {
                Ok(copies) => copies,
                Err(_) => panic!(
                    "worker wedged: {} of {conns} frames arrived in 30 s (readers on partial \
                     frames hold the receive pool)",
                    arrived.get()
                ),
            }
        }
    });
    drop(client.join().expect("client"));
    let stats = rt.handle().pool_stats()[0].expect("copy pool stats");
    assert_eq!(stats.in_use, 0, "pool buffers still held: {stats:?}");
    copies
}

#[test]
fn partial_frames_on_more_connections_than_chunks_all_arrive() {
    // 8 × 4 KiB of pool, 32 connections each holding 3000 bytes of a 10 KB frame: the
    // partial frames alone need 3× the pool.
    let rt = rt_with_pool(8, 4096);
    let (frames, bytes) = partial_frames_on_every_connection(&rt, 32, 3000, 10_000);
    assert!(
        frames > 0 && bytes > 0,
        "the pool ran low, so readers must have copied"
    );
}

#[test]
fn partial_frames_with_incremental_buffers_where_the_kernel_has_them() {
    // The builder's default turns incremental consumption on where the kernel has it:
    // then partial frames of several connections share one buffer, and all of them
    // must let go of it.
    let rt = Runtime::builder()
        .threads(1)
        .pool_size(8 * 4096)
        .chunk_size(4096)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime");
    let (frames, _) = partial_frames_on_every_connection(&rt, 32, 1500, 10_000);
    assert!(frames > 0, "the pool ran low, so readers must have copied");
}

#[test]
fn partial_frames_stay_zero_copy_while_the_pool_has_room() {
    // 64 × 64 KiB: 4 partial frames take at most 4 buffers; nothing is copied.
    let rt = rt();
    let (frames, bytes) = partial_frames_on_every_connection(&rt, 4, 3000, 10_000);
    assert_eq!((frames, bytes), (0, 0), "copied with the pool nearly empty");
}

#[test]
fn waiting_readers_let_go_when_another_connection_drains_the_pool() {
    // 8 × 4 KiB. Five readers each hold one buffer of a partial frame: 3 free, not
    // low, so they wait holding. Then a sixth connection's consumer needs 4 buffers at
    // once, and the readers' peers send the rest only after it got them. Only the
    // worker waking the waiting readers when the pool runs low can make room.
    const READERS: usize = 5;
    const FIRST: usize = 3000;
    const BODY: usize = 6000;
    const BULK: usize = 4 * 4096;
    let rt = rt_with_pool(8, 4096);
    let listener =
        zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let addr = listener.local_addr().expect("addr");
    let client = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let connect = || {
            let s = std::net::TcpStream::connect(addr).expect("connect");
            s.set_nodelay(true).expect("nodelay");
            s.set_read_timeout(Some(Duration::from_secs(30)))
                .expect("read timeout");
            s
        };
        let mut readers = Vec::new();
        for id in 0..READERS {
            let mut s = connect();
            let wire = framed(&[tagged_body(id, BODY)]);
            s.write_all(&wire[..FIRST]).expect("first part");
            readers.push((s, wire));
        }
        std::thread::sleep(Duration::from_millis(300));
        let mut bulk = connect();
        bulk.write_all(&random(77, BULK)).expect("bulk");
        let mut ack = [0u8; 1];
        let acked = bulk.read_exact(&mut ack).is_ok();
        for (s, wire) in &mut readers {
            s.write_all(&wire[FIRST..]).expect("rest");
            s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        }
        (acked, readers, bulk)
    });
    let spills = rt.block_on(async move {
        let all = async {
            let mut tasks = Vec::new();
            for _ in 0..READERS {
                let (s, _) = listener.accept().await.expect("accept");
                tasks.push(spawn(async move {
                    let mut r = FrameReader::new(s);
                    let f = r.read_frame(LIMIT).await.expect("read_frame");
                    let f = f.expect("a frame before EOF").into_contiguous();
                    let id = u64::from_be_bytes(f[..8].try_into().expect("8 bytes")) as usize;
                    assert!(
                        id < READERS && f == tagged_body(id, BODY),
                        "frame {id} differs"
                    );
                    assert!(r.read_frame(LIMIT).await.expect("eof").is_none());
                    r.copy_stats().pressure_spills
                }));
            }
            let (bulk, _) = listener.accept().await.expect("accept bulk");
            let mut held = Vec::new();
            let mut got = 0;
            while got < BULK {
                let b = bulk.recv().await.expect("recv").expect("bulk data");
                got += b.len();
                held.push(b);
            }
            let wire: Vec<u8> = held.iter().flat_map(|b| b.iter().copied()).collect();
            assert!(wire == random(77, BULK), "bulk bytes differ");
            bulk.send(Bytes::from_static(b"k")).await.expect("ack");
            drop(held);
            let mut spills = 0;
            for t in tasks {
                spills += t.await.expect("reader task");
            }
            spills
        };
        timeout(Duration::from_secs(30), all)
            .await
            .expect("worker wedged: the readers kept their buffers while the pool was dry")
    });
    let (acked, _, _) = client.join().expect("client");
    assert!(acked, "the bulk connection was never served");
    assert!(
        spills > 0,
        "the readers must have copied out their partial frames"
    );
    let stats = rt.handle().pool_stats()[0].expect("copy pool stats");
    assert_eq!(stats.in_use, 0, "pool buffers still held: {stats:?}");
}
