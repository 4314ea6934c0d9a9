//! Hand-over of zero-copy receives between workers, end to end through TCP streams
//! (the mechanism is `io::handover`).

use crate::net::{TcpListener, TcpStream};
use crate::ops::tcp_recv::Path;
use crate::{spawn, timeout, ReceiveMode, Runtime};
use bytes::Bytes;
use std::time::Duration;

fn runtime() -> Runtime {
    Runtime::builder()
        .threads(2)
        .receive_mode(ReceiveMode::Copy)
        .pool_size(64 * 4096)
        .chunk_size(4096)
        .build()
        .expect("runtime")
}

/// A connected pair on the current worker.
async fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr"))
        .await
        .expect("connect");
    let (s, _) = l.accept().await.expect("accept");
    (c, s)
}

#[test]
fn receives_run_on_the_owner_and_buffers_come_over() {
    let rt = runtime();
    let h = rt.handle().clone();
    let total = rt.block_on(async move {
        let job = h.spawn_on_with(1, || async {
            let (c, s) = pair().await;
            s.force_handover(0);
            let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
            let data = Bytes::from(data);
            let writer = {
                let data = data.clone();
                spawn(async move {
                    for chunk in data.chunks(5000) {
                        c.send(data.slice_ref(chunk)).await.expect("send");
                    }
                    c
                })
            };
            let mut got = 0;
            while got < data.len() {
                let b = s.recv().await.expect("recv").expect("data");
                assert_eq!(&b[..], &data[got..got + b.len()], "at {got}");
                got += b.len();
            }
            assert_eq!(s.recv_path(), Some(Path::Handover(0)));
            drop(writer.await.expect("writer"));
            // The peer is gone: end of stream, and it stays that way.
            assert!(s.recv().await.expect("eof").is_none());
            assert!(s.recv().await.expect("eof again").is_none());
            got
        });
        timeout(Duration::from_secs(30), job)
            .await
            .expect("in time")
            .expect("job")
    });
    assert_eq!(total, 300_000);
    let m = rt.handle().metrics();
    assert_eq!(m[1].recv_handovers, 1);
    let pools = rt.handle().pool_stats();
    let owner = pools[0].expect("owner pool");
    // Into the owner's pool, or beside it while its buffers were all out in the
    // handover queue (then into ordinary memory on the owner).
    assert!(
        owner.bytes + owner.overflow_bytes >= 300_000,
        "received on the owner: {owner:?}"
    );
    assert!(
        owner.remote_returns > 0,
        "dropped on worker 1, returned to worker 0's pool: {owner:?}"
    );
    assert_eq!(
        pools[1].expect("pool").bytes,
        0,
        "worker 1 received nothing itself"
    );
}

#[test]
fn dropping_the_stream_stops_the_server_and_returns_every_buffer() {
    let rt = runtime();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let h1 = h.clone();
        let job = h.spawn_on_with(1, move || async move {
            let (c, s) = pair().await;
            s.force_handover(0);
            c.send(Bytes::from(vec![1u8; 1000])).await.expect("send");
            let first = s.recv().await.expect("recv").expect("data");
            // More arrives and queues on the owner, then the stream goes away.
            for _ in 0..20 {
                c.send(Bytes::from(vec![2u8; 4000])).await.expect("send");
            }
            crate::sleep(Duration::from_millis(20)).await;
            drop(s);
            drop(first);
            for _ in 0..500 {
                let owner = h1.metrics()[0];
                let pool = h1.pool_stats()[0].expect("pool");
                if owner.ops_in_flight == 0 && pool.in_use == 0 {
                    drop(c);
                    return;
                }
                crate::sleep(Duration::from_millis(2)).await;
            }
            panic!(
                "the owner still holds the receive or buffers: {:?} {:?}",
                h1.metrics()[0],
                h1.pool_stats()[0]
            );
        });
        timeout(Duration::from_secs(30), job)
            .await
            .expect("in time")
            .expect("job");
    });
}
