//! block_on, spawn, JoinHandle (result, abort, panic), yield_now, builder errors.

mod common;

use common::{rt, MODES};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;
use zerorx::{spawn, yield_now, Runtime};

#[test]
fn block_on_returns_value() {
    let rt = rt(1, Default::default());
    assert_eq!(rt.block_on(async { 7 }), 7);
    // A runtime can run several block_on calls in sequence.
    assert_eq!(rt.block_on(async { 8 }), 8);
}

#[test]
fn spawn_join_result_and_not_send_tasks() {
    let rt = rt(1, Default::default());
    let out = rt.block_on(async {
        let counter = Rc::new(Cell::new(0));
        let handles: Vec<_> = (0..100)
            .map(|i| {
                let c = counter.clone();
                spawn(async move {
                    yield_now().await;
                    c.set(c.get() + 1);
                    i * 2
                })
            })
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.expect("task result");
        }
        (sum, counter.get())
    });
    assert_eq!(out, ((0..100).map(|i| i * 2).sum::<i32>(), 100));
}

#[test]
fn abort_cancels_pending_task() {
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let dropped = Rc::new(Cell::new(false));
        struct SetOnDrop(Rc<Cell<bool>>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let guard = SetOnDrop(dropped.clone());
        let h = spawn(async move {
            let _g = guard;
            zerorx::sleep(Duration::from_secs(3600)).await;
            1
        });
        yield_now().await;
        assert!(!h.is_finished());
        h.abort();
        let err = h.await.expect_err("aborted");
        assert!(err.is_cancelled(), "{err}");
        assert!(dropped.get(), "future dropped on abort");
    });
}

#[test]
fn abort_after_completion_keeps_value() {
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let h = spawn(async { 5 });
        while !h.is_finished() {
            yield_now().await;
        }
        h.abort();
        assert_eq!(h.await.expect("value kept"), 5);
    });
}

#[test]
fn panicking_task_yields_error_and_worker_survives() {
    let rt = rt(2, Default::default());
    rt.block_on(async {
        let h = spawn(async {
            if true {
                panic!("boom");
            }
            1
        });
        let err = h.await.expect_err("panicked");
        assert!(err.is_panic());
        assert_eq!(err.panic_message(), Some("boom"));
        // Same on a background worker, then that worker still runs tasks.
        let h = zerorx::Handle::try_current().expect("handle");
        let e = h
            .spawn_on(1, async { panic!("remote boom") })
            .await
            .expect_err("panicked");
        assert!(e.is_panic());
        assert_eq!(h.spawn_on(1, async { 3 }).await.expect("alive"), 3);
    });
}

#[test]
fn yield_now_interleaves() {
    let rt = rt(1, Default::default());
    let log = rt.block_on(async {
        let log = Rc::new(std::cell::RefCell::new(Vec::new()));
        let a = {
            let log = log.clone();
            spawn(async move {
                for i in 0..3 {
                    log.borrow_mut().push(('a', i));
                    yield_now().await;
                }
            })
        };
        let b = {
            let log = log.clone();
            spawn(async move {
                for i in 0..3 {
                    log.borrow_mut().push(('b', i));
                    yield_now().await;
                }
            })
        };
        a.await.expect("a");
        b.await.expect("b");
        let v = log.borrow().clone();
        v
    });
    assert_eq!(
        log,
        vec![('a', 0), ('b', 0), ('a', 1), ('b', 1), ('a', 2), ('b', 2)]
    );
}

#[test]
fn builder_rejects_bad_config() {
    let e = Runtime::builder()
        .threads(0)
        .build()
        .expect_err("threads(0)");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = Runtime::builder()
        .threads(1)
        .ring_entries(0)
        .build()
        .expect_err("0 entries");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = Runtime::builder()
        .threads(1)
        .ring_entries(64)
        .cq_entries(32)
        .build()
        .expect_err("cq < sq");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn ring_flags_and_current_worker() {
    for mode in MODES {
        let rt = rt(2, mode);
        let h = rt.handle().clone();
        let flags = h.ring_flags();
        assert!(flags.iter().all(|f| f.is_some_and(|f| f.defer_taskrun)));
        assert_eq!(h.threads(), 2);
        assert_eq!(h.current_worker(), None);
        let h2 = h.clone();
        let (w0, w1) = rt.block_on(async move {
            let w0 = h2.current_worker();
            let h3 = h2.clone();
            let w1 = h2
                .spawn_on(1, async move { h3.current_worker() })
                .await
                .expect("remote");
            (w0, w1)
        });
        assert_eq!((w0, w1), (Some(0), Some(1)));
    }
}

#[test]
#[should_panic(expected = "outside a zerorx runtime")]
fn spawn_outside_runtime_panics() {
    drop(spawn(async {}));
}

#[test]
fn metrics_are_readable_from_any_thread() {
    let rt = rt(2, Default::default());
    let h = rt.handle().clone();
    rt.block_on(async {
        for _ in 0..10 {
            zerorx::sleep(Duration::from_millis(1)).await;
        }
    });
    let snap = std::thread::spawn(move || h.metrics())
        .join()
        .expect("reader thread");
    assert_eq!(snap.len(), 2);
    let w0 = &snap[0];
    assert!(w0.loop_turns > 0 && w0.enter_calls > 0, "{w0:?}");
    assert!(w0.timers_fired >= 10, "{w0:?}");
    assert!(
        w0.sqes_submitted >= 1,
        "the eventfd read was submitted: {w0:?}"
    );
    assert_eq!(w0.stale_cqes, 0);
}

#[test]
fn pin_cpus_pins_background_workers() {
    let rt = Runtime::builder()
        .threads(2)
        .pin_cpus(true)
        .build()
        .expect("runtime");
    let h = rt.handle().clone();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (count, on_expected) = rt.block_on(async move {
        h.spawn_on(1, async move {
            // SAFETY: plain libc calls on a zeroed cpu set for this thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(
                    libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                    0
                );
                (libc::CPU_COUNT(&set), libc::CPU_ISSET(1 % cpus, &set))
            }
        })
        .await
        .expect("task")
    });
    assert_eq!((count, on_expected), (1, true));
}

/// A waker that counts its wakes (and, through its `Arc`, its clones).
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Counting {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Counts how often it is dropped: a task's result must be dropped exactly once,
/// whoever ends up with it.
struct DropCount(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_join_handle_on_another_thread_wakes_its_latest_waker_only() {
    use std::future::Future;
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    // Worker 1 runs on a thread of its own (worker 0 only inside `block_on`).
    let rt = rt(2, Default::default());
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let mut h = Box::pin(rt.handle().spawn_on(1, async move {
        // Finishes only once the test says so (polled again every millisecond).
        while rx.try_recv().is_err() {
            zerorx::time::sleep(Duration::from_millis(1)).await;
        }
        41 + 1
    }));
    let (a, b) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
    let (wa, wb) = (Waker::from(a.clone()), Waker::from(b.clone()));
    assert!(h.as_mut().poll(&mut Context::from_waker(&wa)).is_pending());
    // The same waker again keeps it; another one replaces it.
    assert!(h.as_mut().poll(&mut Context::from_waker(&wa)).is_pending());
    assert!(h.as_mut().poll(&mut Context::from_waker(&wb)).is_pending());
    assert_eq!(Arc::strong_count(&a), 2, "the replaced waker was dropped");
    tx.send(()).expect("finish");
    wait_for("the latest waker is woken", || b.0.load(SeqCst) > 0);
    assert_eq!(a.0.load(SeqCst), 0, "a replaced waker is not woken");
    match h.as_mut().poll(&mut Context::from_waker(&wb)) {
        Poll::Ready(v) => assert_eq!(v.expect("value"), 42),
        Poll::Pending => panic!("woken but pending"),
    }
    drop((wb, h));
    // Nothing keeps the waker once the handle is gone.
    wait_for("the task lets go of the waker", || {
        Arc::strong_count(&b) == 1
    });
}

#[test]
fn a_tasks_result_is_dropped_once_whoever_drops_it() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let rt = rt(2, Default::default());
    let drops = Arc::new(AtomicUsize::new(0));
    // Handle dropped before the task finishes: the task drops its result.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let d = drops.clone();
    let h = rt.handle().spawn_on(1, async move {
        while rx.try_recv().is_err() {
            zerorx::time::sleep(Duration::from_millis(1)).await;
        }
        DropCount(d)
    });
    drop(h);
    tx.send(()).expect("finish");
    wait_for("the detached result is dropped", || drops.load(SeqCst) == 1);
    // Handle dropped after the task finished, never polled: the handle drops it.
    let d = drops.clone();
    let h = rt.handle().spawn_on(1, async move { DropCount(d) });
    wait_for("the task finishes", || h.is_finished());
    assert_eq!(
        drops.load(SeqCst),
        1,
        "a result kept for its handle is not dropped"
    );
    drop(h);
    assert_eq!(drops.load(SeqCst), 2);
    // Awaited: the value goes to the caller and is dropped there, once.
    let d = drops.clone();
    let v = rt.block_on(async move { spawn(async move { DropCount(d) }).await });
    assert_eq!(drops.load(SeqCst), 2);
    drop(v);
    assert_eq!(drops.load(SeqCst), 3);
    drop(rt);
    assert_eq!(drops.load(SeqCst), 3);
}

#[test]
fn join_handles_racing_completion_never_miss_a_wake_or_keep_a_waker() {
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    const TASKS: usize = 2000;
    let rt = rt(2, Default::default());
    let drops = Arc::new(AtomicUsize::new(0));
    let wakers: Vec<_> = (0..TASKS)
        .map(|i| {
            let d = drops.clone();
            // Finishes at once or a turn later, racing the poll below.
            let mut h = Box::pin(rt.handle().spawn_on(1, async move {
                if i % 3 == 0 {
                    yield_now().await;
                }
                DropCount(d)
            }));
            let counting = Arc::new(Counting::default());
            let waker = Waker::from(counting.clone());
            if h.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
            {
                if i % 2 == 0 {
                    // Gone while waiting, racing the task's wake.
                    drop(h);
                } else {
                    wait_for("the waiting handle is woken", || {
                        counting.0.load(SeqCst) > 0
                    });
                    match h.as_mut().poll(&mut Context::from_waker(&waker)) {
                        Poll::Ready(v) => drop(v.expect("value")),
                        Poll::Pending => panic!("woken but pending"),
                    }
                }
            }
            counting
        })
        .collect();
    wait_for("every result is dropped once", || {
        drops.load(SeqCst) == TASKS
    });
    wait_for("no waker is kept", || {
        wakers.iter().all(|w| Arc::strong_count(w) == 1)
    });
    drop(rt);
    assert_eq!(drops.load(SeqCst), TASKS);
}

#[test]
fn a_handle_waiting_when_the_runtime_drops_is_woken_with_cancelled() {
    use std::future::Future;
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    let rt = rt(2, Default::default());
    let mut h = Box::pin(rt.handle().spawn_on(1, std::future::pending::<u8>()));
    let counting = Arc::new(Counting::default());
    let waker = Waker::from(counting.clone());
    assert!(h
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    drop(rt);
    assert!(counting.0.load(SeqCst) > 0, "the waiting handle was woken");
    match h.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(Err(e)) => assert!(e.is_cancelled(), "{e}"),
        other => panic!(
            "expected a cancellation, got {:?}",
            other.map(|r| r.is_ok())
        ),
    }
    drop(h);
    drop(waker);
    assert_eq!(
        Arc::strong_count(&counting),
        1,
        "the runtime kept the waker"
    );
}

#[test]
fn a_tasks_wakers_will_wake_each_other_and_not_another_tasks() {
    use std::cell::RefCell;
    use std::future::poll_fn;
    use std::task::{Poll, Waker};
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let other: Rc<RefCell<Option<Waker>>> = Rc::default();
        let kept = other.clone();
        let parked = spawn(poll_fn(move |cx| {
            *kept.borrow_mut() = Some(cx.waker().clone());
            Poll::<()>::Pending
        }));
        yield_now().await;
        let other = other
            .borrow_mut()
            .take()
            .expect("the other task was polled");
        spawn(poll_fn(move |cx| {
            let a = cx.waker().clone();
            let b = a.clone();
            assert!(a.will_wake(&b), "two clones of one task's waker");
            assert!(a.will_wake(cx.waker()), "a clone and the poll's own waker");
            assert!(!a.will_wake(&other), "another task's waker");
            assert!(!a.will_wake(Waker::noop()));
            Poll::Ready(())
        }))
        .await
        .expect("task");
        parked.abort();
        assert!(parked.await.expect_err("aborted").is_cancelled());
    });
}

#[test]
fn a_task_waker_outliving_its_runtime_can_still_be_woken_and_dropped() {
    use std::future::poll_fn;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};
    let rt = rt(2, Default::default());
    let kept: Arc<Mutex<Vec<Waker>>> = Arc::default();
    let dropped = Arc::new(AtomicBool::new(false));
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }
    let (k, guard) = (kept.clone(), SetOnDrop(dropped.clone()));
    let h = rt.handle().spawn_on(1, async move {
        let _g = guard;
        poll_fn(|cx| {
            k.lock().expect("wakers").push(cx.waker().clone());
            Poll::<()>::Pending
        })
        .await
    });
    wait_for("the task kept its waker", || {
        !kept.lock().expect("wakers").is_empty()
    });
    drop(rt);
    assert!(
        dropped.load(SeqCst),
        "the runtime dropped the task's future"
    );
    let w = kept.lock().expect("wakers").pop().expect("waker");
    // The worker is gone: waking (by reference, then by value) must neither run nor
    // keep the task, and the last reference frees it here.
    w.wake_by_ref();
    let w2 = w.clone();
    w.wake();
    drop(w2);
    let mut h = Box::pin(h);
    let polled = std::future::Future::poll(
        h.as_mut(),
        &mut std::task::Context::from_waker(Waker::noop()),
    );
    match polled {
        Poll::Ready(Err(e)) => assert!(e.is_cancelled(), "{e}"),
        other => panic!(
            "expected a cancellation, got {:?}",
            other.map(|r| r.is_ok())
        ),
    }
}
