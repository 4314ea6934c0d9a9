//! Coordination between tasks with runtime-agnostic crates, on zerorx: which work and
//! how (README, "Besides sockets"). Each is used across workers (its types are `Send`)
//! and within one, with zerorx's timers beside it.
//!
//! - `async-channel`: bounded multi-producer multi-consumer channels.
//! - `futures` (`futures-channel`, `futures-util`): `mpsc`, `oneshot`, `select`, `join`.
//! - `tokio::sync` without tokio's runtime: `mpsc`, `oneshot`, `Notify`, `Mutex`,
//!   `Semaphore` (only its timers need tokio's runtime; use zerorx's).

use std::sync::Arc;
use std::time::Duration;
use zerorx::{spawn, timeout, Runtime};

fn rt() -> Runtime {
    Runtime::builder().threads(2).build().expect("runtime")
}

#[test]
fn async_channel_carries_work_between_workers_with_backpressure() {
    let rt = rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (tx, rx) = async_channel::bounded::<u64>(4);
        let consumer = h.spawn_on(1, async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        });
        for v in 1..=1000 {
            tx.send(v).await.expect("consumer alive");
        }
        drop(tx);
        let sum = timeout(Duration::from_secs(10), consumer)
            .await
            .expect("in time")
            .expect("task");
        assert_eq!(sum, 500_500);
    });
}

#[test]
fn futures_channels_select_and_join_work_with_zerorx_timers() {
    use futures_util::future::{join, select, Either};
    use futures_util::StreamExt;
    let rt = rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (mut tx, mut rx) = futures_channel::mpsc::channel::<u32>(2);
        let (done_tx, done_rx) = futures_channel::oneshot::channel::<u32>();
        h.spawn_on(1, async move {
            let mut n = 0;
            while let Some(v) = rx.next().await {
                n += v;
            }
            let _ = done_tx.send(n);
        });
        let send = async {
            for v in 0..10 {
                futures_util::SinkExt::send(&mut tx, v).await.expect("send");
            }
            drop(tx);
        };
        let (_, total) = join(send, done_rx).await;
        assert_eq!(total.expect("sum"), 45);
        // select: a channel that never delivers loses to a zerorx sleep.
        let (_never_tx, never) = futures_channel::oneshot::channel::<()>();
        match select(
            never,
            std::pin::pin!(zerorx::sleep(Duration::from_millis(20))),
        )
        .await
        {
            Either::Right(_) => {}
            Either::Left(_) => panic!("nothing was sent"),
        }
    });
}

#[test]
fn tokio_sync_works_without_tokio_s_runtime() {
    let rt = rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let notify = Arc::new(tokio::sync::Notify::new());
        let lock = Arc::new(tokio::sync::Mutex::new(0u32));
        let permits = Arc::new(tokio::sync::Semaphore::new(2));
        let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(8);
        let (once_tx, once_rx) = tokio::sync::oneshot::channel::<&str>();
        let waiter = {
            let notify = notify.clone();
            h.spawn_on(1, async move {
                notify.notified().await;
                let _ = once_tx.send("notified");
            })
        };
        let workers: Vec<_> = (0..4)
            .map(|i| {
                let (lock, permits, tx) = (lock.clone(), permits.clone(), tx.clone());
                h.spawn_on(i % 2, async move {
                    let _p = permits.acquire().await.expect("open");
                    *lock.lock().await += 1;
                    zerorx::sleep(Duration::from_millis(5)).await;
                    tx.send(i as u32).await.expect("receiver alive");
                })
            })
            .collect();
        drop(tx);
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        got.sort();
        assert_eq!(got, vec![0, 1, 2, 3]);
        for w in workers {
            w.await.expect("task");
        }
        assert_eq!(*lock.lock().await, 4);
        // Give the waiter time to wait (a Notify before it waits is kept: one permit).
        zerorx::sleep(Duration::from_millis(10)).await;
        notify.notify_one();
        assert_eq!(
            timeout(Duration::from_secs(10), once_rx)
                .await
                .expect("in time"),
            Ok("notified")
        );
        waiter.await.expect("task");
    });
}

#[test]
fn a_task_local_channel_needs_nothing_more() {
    // Within one worker a !Send value (an Rc) goes through the same channels: their
    // ends are then !Send too, which tasks on one worker allow.
    let rt = Runtime::builder().threads(1).build().expect("runtime");
    rt.block_on(async {
        let (tx, rx) = futures_channel::oneshot::channel::<std::rc::Rc<u8>>();
        let t = spawn(async move { *rx.await.expect("sent") });
        tx.send(std::rc::Rc::new(7)).expect("receiver alive");
        assert_eq!(t.await.expect("task"), 7);
    });
}
