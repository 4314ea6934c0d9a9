//! A receive pool the application holds: a reader that keeps every buffer it received
//! still receives every byte (into ordinary memory beside the pool), within the
//! worker's receive memory limit; at the limit the receive waits for buffers or room,
//! goes on when they come back by any path, and fails with a clear `OutOfMemory` when
//! nothing comes back in time. No hang, no byte lost.

mod common;

use bytes::Bytes;
use common::Rng;
use std::time::{Duration, Instant};
use zcrx::{CopyPoolConfig, RxBuf};
use zerorx::net::TcpStream;
use zerorx::{spawn, timeout, Runtime};

const BUFFERS: u16 = 4;
const BUFFER_SIZE: u32 = 4096;
const POOL: usize = BUFFERS as usize * BUFFER_SIZE as usize;

fn rt(incremental: bool, limit: Option<usize>, wait: Duration) -> Runtime {
    let mut b = Runtime::builder();
    b.threads(1)
        .copy_pool(Some(CopyPoolConfig {
            buffers: BUFFERS,
            buffer_size: BUFFER_SIZE,
            incremental,
            ..CopyPoolConfig::default()
        }))
        // The reader below never lets go: without the hold limit's stops the pool
        // runs dry at once.
        .recv_hold_limit(0)
        .receive_memory_wait(wait);
    if let Some(limit) = limit {
        b.receive_memory_limit(limit);
    }
    b.build().expect("runtime")
}

fn pattern(total: usize) -> Bytes {
    let mut rng = Rng(7);
    Bytes::from((0..total).map(|_| rng.next() as u8).collect::<Vec<_>>())
}

/// Sends `data` from a task of its own and hands the client back when done.
fn send_all(c: TcpStream, data: Bytes) -> zerorx::JoinHandle<TcpStream> {
    spawn(async move {
        c.send(data).await.expect("send");
        c
    })
}

/// Receives until `want` bytes (or an error), keeping every buffer, checking each
/// byte against `data`.
async fn keep_all(s: &TcpStream, data: &Bytes, want: usize) -> (Vec<RxBuf>, std::io::Result<()>) {
    let mut kept = Vec::new();
    let mut got = 0;
    while got < want {
        match timeout(Duration::from_secs(20), s.recv()).await {
            Err(_) => panic!("no progress at {got} of {want} bytes: the receive hung"),
            Ok(Err(e)) => return (kept, Err(e)),
            Ok(Ok(None)) => panic!("early EOF at {got}"),
            Ok(Ok(Some(buf))) => {
                assert_eq!(&buf[..], &data[got..got + buf.len()], "at {got}");
                got += buf.len();
                kept.push(buf);
            }
        }
    }
    (kept, Ok(()))
}

fn a_reader_keeping_everything_receives_everything(incremental: bool) {
    let _g = common::fd_lock();
    let rt = rt(incremental, None, Duration::from_secs(2));
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let total = 1 << 20;
        let data = pattern(total);
        let writer = send_all(c, data.clone());
        let (kept, r) = keep_all(&s, &data, total).await;
        r.expect("every byte received although the pool is held");
        drop(writer.await.expect("sender"));
        let m = h.metrics()[0];
        let st = h.pool_stats()[0].expect("pool");
        let overflow: usize = kept
            .iter()
            .filter(|b| b.is_overflow())
            .map(|b| b.len())
            .sum();
        assert!(m.recv_overflows > 0 && m.recv_enobufs > 0, "{m:?}");
        assert!(overflow >= total - POOL, "{overflow} bytes beside the pool");
        assert_eq!(st.overflow_held, overflow as u64, "{st:?}");
        assert_eq!(st.overflow_bytes, overflow as u64, "{st:?}");
        assert_eq!(m.recv_memory_refusals, 0, "{m:?}");
        // The dump says where the memory went.
        let dump = h.dump().to_string();
        assert!(dump.contains("went to ordinary memory"), "{dump}");
        assert!(
            dump.contains("dry and held by the application for"),
            "{dump}"
        );
        drop(kept);
        let st = h.pool_stats()[0].expect("pool");
        assert_eq!((st.overflow_held, st.in_use), (0, 0), "{st:?}");
        // Once the buffers are back, the pools are no longer reported held.
        zerorx::sleep(Duration::from_millis(10)).await;
        let dump = h.dump();
        assert_eq!(dump.workers[0].pools_held_ms, None, "{dump}");
    });
}

#[test]
fn a_reader_keeping_every_buffer_receives_everything() {
    a_reader_keeping_everything_receives_everything(false);
}

#[test]
fn a_reader_keeping_every_part_of_an_incremental_pool_receives_everything() {
    a_reader_keeping_everything_receives_everything(true);
}

#[test]
fn at_the_memory_limit_the_receive_fails_with_out_of_memory_naming_it() {
    let _g = common::fd_lock();
    let limit = POOL + 64 * 1024;
    let rt = rt(false, Some(limit), Duration::from_millis(300));
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let data = pattern(1 << 20);
        let writer = send_all(c, data.clone());
        let started = Instant::now();
        let (kept, r) = keep_all(&s, &data, 1 << 20).await;
        let err = r.expect_err("the reader keeps more than the limit");
        assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory, "{err}");
        let text = err.to_string();
        assert!(text.contains("ZERORX_RECV_MEMORY_LIMIT"), "{text}");
        assert!(text.contains(&limit.to_string()), "{text}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let held: usize = kept.iter().map(|b| b.len()).sum();
        assert!(held <= limit, "held {held} of a {limit}-byte limit");
        let m = h.metrics()[0];
        assert!(m.recv_memory_refusals >= 1, "{m:?}");
        assert!(h.pool_stats()[0].expect("pool").overflow_held <= (limit - POOL) as u64);
        drop(kept);
        drop(s);
        writer.abort();
    });
}

/// The reader keeps everything until it holds `stop` bytes, then lets go of it on
/// another thread (`remote`) or its own, after a pause in which the receive waits at
/// the limit; every byte must arrive.
fn waits_at_the_limit_then_goes_on(remote: bool) {
    let _g = common::fd_lock();
    let limit = POOL + 16 * 1024;
    let rt = rt(false, Some(limit), Duration::from_secs(10));
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let total = 512 * 1024;
        let data = pattern(total);
        let writer = send_all(c, data.clone());
        let mut got = 0;
        let mut kept: Vec<RxBuf> = Vec::new();
        let mut let_go = 0;
        while got < total {
            // Waiting at the limit: the receive must not finish while all is held.
            let wait =
                if kept.iter().map(|b| b.len()).sum::<usize>() >= limit - BUFFER_SIZE as usize {
                    Duration::from_millis(100)
                } else {
                    Duration::from_secs(20)
                };
            match timeout(wait, s.recv()).await {
                Ok(r) => {
                    let buf = r.expect("recv").expect("data");
                    assert_eq!(&buf[..], &data[got..got + buf.len()], "at {got}");
                    got += buf.len();
                    kept.push(buf);
                }
                Err(_) => {
                    assert!(wait < Duration::from_secs(1), "no progress at {got}");
                    let held = std::mem::take(&mut kept);
                    if remote {
                        std::thread::spawn(move || drop(held))
                            .join()
                            .expect("thread");
                    } else {
                        drop(held);
                    }
                    let_go += 1;
                }
            }
        }
        drop(writer.await.expect("sender"));
        assert!(let_go >= 2, "the reader waited at the limit {let_go} times");
        let m = h.metrics()[0];
        assert_eq!(m.recv_memory_refusals, 0, "{m:?}");
        assert!(m.recv_overflows > 0, "{m:?}");
    });
}

#[test]
fn waits_at_the_limit_then_goes_on_when_buffers_come_back_on_its_thread() {
    waits_at_the_limit_then_goes_on(false);
}

#[test]
fn waits_at_the_limit_then_goes_on_when_buffers_come_back_from_another_thread() {
    waits_at_the_limit_then_goes_on(true);
}

#[test]
fn a_limit_below_the_pools_is_refused_naming_both() {
    let err = Runtime::builder()
        .threads(1)
        .copy_pool(Some(CopyPoolConfig {
            buffers: BUFFERS,
            buffer_size: BUFFER_SIZE,
            ..CopyPoolConfig::default()
        }))
        .receive_memory_limit(POOL - 1)
        .build()
        .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("receive_memory_limit") && text.contains(&POOL.to_string()),
        "{text}"
    );
}

#[test]
fn a_limit_equal_to_the_pool_receives_only_into_the_pool() {
    let _g = common::fd_lock();
    let rt = rt(false, Some(POOL), Duration::from_secs(10));
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let total = 256 * 1024;
        let data = pattern(total);
        let writer = send_all(c, data.clone());
        let mut got = 0;
        let mut kept = Vec::new();
        while got < total {
            let buf = timeout(Duration::from_secs(20), s.recv())
                .await
                .expect("progress")
                .expect("recv")
                .expect("data");
            assert!(!buf.is_overflow());
            got += buf.len();
            kept.push(buf);
            if kept.len() == BUFFERS as usize {
                kept.clear();
            }
        }
        drop(writer.await.expect("sender"));
        assert_eq!(h.metrics()[0].recv_overflows, 0);
    });
}

#[test]
fn streams_receiving_beside_the_pool_at_once_stay_within_the_limit_together() {
    let _g = common::fd_lock();
    let allowance = 64 * 1024;
    let rt = rt(false, Some(POOL + allowance), Duration::from_secs(10));
    let h = rt.handle().clone();
    rt.block_on(async move {
        let kept = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let keeping = std::rc::Rc::new(std::cell::Cell::new(true));
        let (l, addr) = common::loopback_listener();
        let conns = 32;
        let per_conn = 64 * 1024;
        let readers: Vec<_> = (0..conns)
            .map(|_| {
                let (kept, keeping) = (kept.clone(), keeping.clone());
                spawn(async move {
                    let (s, _) = TcpStream::connect(addr)
                        .await
                        .map(|s| (s, ()))
                        .expect("connect");
                    let mut got = 0;
                    while got < per_conn {
                        let buf = s.recv().await.expect("recv").expect("data");
                        got += buf.len();
                        if keeping.get() {
                            kept.borrow_mut().push(buf);
                        }
                    }
                    got
                })
            })
            .collect();
        let mut writers = Vec::new();
        for _ in 0..conns {
            let (s, _) = l.accept().await.expect("accept");
            writers.push(spawn(async move {
                s.send(Bytes::from(vec![9u8; per_conn]))
                    .await
                    .expect("send");
                s
            }));
        }
        // Every reader keeps everything: the pool and then the allowance fill, with
        // many streams starting receives beside the pool at once.
        zerorx::sleep(Duration::from_millis(500)).await;
        let st = h.pool_stats()[0].expect("pool");
        assert!(st.overflow_receives > 0, "{st:?}");
        assert!(
            st.overflow_held <= allowance as u64,
            "{} bytes beside the pool, over the {allowance}-byte allowance",
            st.overflow_held
        );
        // Letting go (and keeping nothing more) lets every stream finish.
        keeping.set(false);
        kept.borrow_mut().clear();
        let mut total = 0;
        for r in readers {
            total += timeout(Duration::from_secs(20), r)
                .await
                .expect("no hang")
                .expect("reader");
        }
        assert_eq!(total, conns * per_conn);
        for w in writers {
            drop(w.await.expect("writer"));
        }
    });
}
