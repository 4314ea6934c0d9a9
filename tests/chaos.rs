//! Cancellation under load: many connections across workers whose connects, sends and
//! receives are cut short by random timeouts. Afterwards nothing may be left in
//! flight, no CQE may have hit the wrong op, and no fd may leak.

mod common;

use bytes::Bytes;
use common::{fd_count, fd_lock, Rng, MODES};
use std::time::{Duration, Instant};
use zerorx::net::{TcpListener, TcpStream};
use zerorx::{spawn, timeout, Runtime};

async fn echo(s: TcpStream) {
    while let Ok(Some(b)) = s.recv().await {
        if s.send(b.into_bytes()).await.is_err() {
            return;
        }
    }
}

async fn flaky_client(addr: std::net::SocketAddr, seed: u64) -> (u32, u32) {
    let mut rng = Rng(seed | 1);
    let (mut ok, mut cut) = (0, 0);
    for _ in 0..8 {
        // From "cut during connect" to "usually completes".
        let budget = Duration::from_micros(rng.next() % 40_000);
        let attempt = async {
            let s = TcpStream::connect(addr).await?;
            let len = 1 + (rng.next() % 100_000) as usize;
            let data = Bytes::from(vec![(seed % 251) as u8; len]);
            s.send(data).await?;
            let mut got = 0;
            while got < len {
                match s.recv().await? {
                    Some(b) => {
                        assert!(b.iter().all(|&x| x == (seed % 251) as u8), "foreign bytes");
                        got += b.len();
                    }
                    None => break,
                }
            }
            Ok::<_, std::io::Error>(got)
        };
        match timeout(budget, attempt).await {
            Ok(Ok(_)) => ok += 1,
            // Errors are a cut too: the server side of an earlier cut connection may
            // reset, never this one; but a refused connect under load is possible.
            Ok(Err(e)) => {
                assert_ne!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
                cut += 1
            }
            Err(_) => cut += 1,
        }
    }
    (ok, cut)
}

#[test]
fn random_cancellation_leaves_nothing_behind() {
    let _g = fd_lock();
    for mode in MODES {
        let before = fd_count();
        let rt = Runtime::builder()
            .threads(2)
            .wake(mode)
            .copy_pool(Some(zcrx::CopyPoolConfig {
                buffers: 256,
                buffer_size: 16 * 1024,
                ..Default::default()
            }))
            .build()
            .expect("runtime");
        let h = rt.handle().clone();
        let started = Instant::now();
        let (ok, cut) = rt.block_on(async move {
            let (l0, addr) = common::loopback_listener();
            let s0 = spawn(async move {
                while let Ok((s, _)) = l0.accept().await {
                    spawn(echo(s));
                }
            });
            let s1 = h.spawn_on_with(1, move || async move {
                let l1 = TcpListener::bind(addr).expect("bind");
                while let Ok((s, _)) = l1.accept().await {
                    spawn(echo(s));
                }
            });
            let clients: Vec<_> = (0..96u64)
                .map(|i| h.spawn_on_with((i % 2) as usize, move || flaky_client(addr, i * 977 + 5)))
                .collect();
            let (mut ok, mut cut) = (0, 0);
            for c in clients {
                let (o, k) = timeout(Duration::from_secs(30), c)
                    .await
                    .expect("clients finish")
                    .expect("client");
                ok += o;
                cut += k;
            }
            s0.abort();
            s1.abort();
            let _ = s0.await;
            let _ = s1.await;
            // Echo tasks end when their peers' fds close; cancels drain.
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let in_flight: u64 = h.metrics().iter().map(|m| m.ops_in_flight).sum();
                if in_flight == 0 || Instant::now() > deadline {
                    break;
                }
                zerorx::sleep(Duration::from_millis(5)).await;
            }
            (ok, cut)
        });
        assert!(started.elapsed() < Duration::from_secs(60));
        let m = rt.handle().metrics();
        let in_flight: u64 = m.iter().map(|w| w.ops_in_flight).sum();
        assert_eq!(in_flight, 0, "{mode:?}: {m:?}");
        assert!(m.iter().all(|w| w.stale_cqes == 0), "{mode:?}: {m:?}");
        assert!(
            ok > 0 && cut > 0,
            "{mode:?}: both outcomes exercised: ok {ok}, cut {cut}"
        );
        let pools = rt.handle().pool_stats();
        assert!(
            pools.iter().flatten().all(|p| p.in_use == 0),
            "{mode:?}: every buffer back: {pools:?}"
        );
        drop(rt);
        assert_eq!(fd_count(), before, "{mode:?}: fds leaked");
    }
}
