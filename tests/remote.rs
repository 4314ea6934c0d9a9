//! Cross-thread spawning and waking, in both wake modes.

mod common;

use common::{rt, MODES};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::{sleep, WakeMode};

fn storm(mode: WakeMode) {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 25_000;
    let rt = rt(3, mode);
    let handle = rt.handle().clone();
    let done = Arc::new(AtomicUsize::new(0));
    let spawners: Vec<_> = (0..THREADS)
        .map(|t| {
            let handle = handle.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let n = handle.threads();
                let joins: Vec<_> = (0..PER_THREAD)
                    .map(|i| {
                        let v = (t * PER_THREAD + i) as u64;
                        handle.spawn_on(i % n, async move {
                            (v, zerorx::Handle::try_current().is_some())
                        })
                    })
                    .collect();
                let mut sum = 0u64;
                for j in joins {
                    let (v, in_rt) = futures_executor::block_on(j).expect("task result");
                    assert!(in_rt);
                    sum += v;
                }
                done.fetch_add(1, Ordering::SeqCst);
                sum
            })
        })
        .collect();
    // Worker 0 runs only inside block_on.
    let deadline = Instant::now() + Duration::from_secs(60);
    rt.block_on(async {
        while done.load(Ordering::SeqCst) < THREADS {
            assert!(Instant::now() < deadline, "storm timed out");
            sleep(Duration::from_millis(2)).await;
        }
    });
    let total: u64 = spawners
        .into_iter()
        .map(|t| t.join().expect("spawner"))
        .sum();
    let n = (THREADS * PER_THREAD) as u64;
    assert_eq!(total, n * (n - 1) / 2, "every result received once");
    let m = handle.metrics();
    let spawned: u64 = m.iter().map(|w| w.tasks_spawned).sum();
    assert_eq!(spawned, n);
    assert!(m.iter().all(|w| w.tasks_spawned > 0), "{m:?}");
}

#[test]
fn spawn_on_storm_eventfd() {
    storm(WakeMode::EventFd);
}

#[test]
fn spawn_on_storm_msg_ring() {
    storm(WakeMode::MsgRing);
}

#[test]
fn parked_worker_is_woken_in_both_modes() {
    for mode in MODES {
        let rt = rt(2, mode);
        let h = rt.handle().clone();
        // Let worker 1 park, then wake it from a foreign thread 20 times.
        std::thread::sleep(Duration::from_millis(20));
        let before = h.metrics()[1].wakeups_received;
        let t = std::thread::spawn(move || {
            for i in 0..20u32 {
                std::thread::sleep(Duration::from_millis(2));
                let v =
                    futures_executor::block_on(h.spawn_on(1, async move { i + 1 })).expect("woken");
                assert_eq!(v, i + 1);
            }
            h
        });
        let h = t.join().expect("thread");
        let m = &h.metrics()[1];
        assert!(m.wakeups_received > before, "{mode:?}: {m:?}");
        assert!(m.wakeups_sent > 0, "{mode:?}: {m:?}");
        drop(rt);
    }
}

#[test]
fn spawn_on_each_runs_everywhere_and_cross_worker_wakes() {
    for mode in MODES {
        let rt = rt(3, mode);
        let h = rt.handle().clone();
        let out = rt.block_on(async move {
            // !Send futures made on each worker.
            let joins = h.spawn_on_each(|i| {
                let rc = std::rc::Rc::new(i);
                async move {
                    sleep(Duration::from_millis(1)).await;
                    (
                        *rc,
                        zerorx::Handle::try_current().and_then(|h| h.current_worker()),
                    )
                }
            });
            let mut out = Vec::new();
            for j in joins {
                out.push(j.await.expect("each"));
            }
            // A task on worker 2 awaiting a task on worker 1: the wake crosses rings.
            let h2 = h.clone();
            let chained = h
                .spawn_on(2, async move {
                    h2.spawn_on(1, async {
                        sleep(Duration::from_millis(5)).await;
                        11
                    })
                    .await
                })
                .await
                .expect("outer")
                .expect("inner");
            assert_eq!(chained, 11);
            out
        });
        assert_eq!(
            out,
            vec![(0, Some(0)), (1, Some(1)), (2, Some(2))],
            "{mode:?}"
        );
    }
}

#[test]
fn is_finished_implies_the_result_is_ready() {
    // Regression: COMPLETE used to be published before the result was stored.
    let rt = rt(2, WakeMode::EventFd);
    let h = rt.handle().clone();
    let t = std::thread::spawn(move || {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        for i in 0..20_000u64 {
            let mut j = std::pin::pin!(h.spawn_on(1, async move { i }));
            while !j.is_finished() {
                std::hint::spin_loop();
            }
            match std::future::Future::poll(j.as_mut(), &mut cx) {
                std::task::Poll::Ready(v) => assert_eq!(v.expect("value"), i),
                std::task::Poll::Pending => panic!("finished but pending at {i}"),
            }
        }
    });
    t.join().expect("checker");
    drop(rt);
}
