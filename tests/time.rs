//! Timers: ordering, cancellation, timeout, interval.

mod common;

use common::{rt, Rng};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};
use zerorx::time::{interval, interval_at, MissedTickBehavior};
use zerorx::{sleep, sleep_until, spawn, timeout, yield_now};

#[test]
fn ten_thousand_sleeps_fire_in_deadline_order() {
    let rt = rt(1, Default::default());
    let log = rt.block_on(async {
        // Far enough ahead that every sleeper registers before the first deadline.
        let start = Instant::now() + Duration::from_millis(1000);
        let log = Rc::new(RefCell::new(Vec::with_capacity(10_000)));
        let mut rng = Rng(0x9e3779b97f4a7c15);
        let handles: Vec<_> = (0..10_000)
            .map(|_| {
                let deadline = start + Duration::from_micros(rng.next() % 150_000);
                let log = log.clone();
                spawn(async move {
                    sleep_until(deadline).await;
                    let now = Instant::now();
                    assert!(now >= deadline, "woke early");
                    log.borrow_mut().push(deadline);
                })
            })
            .collect();
        for h in handles {
            h.await.expect("sleeper");
        }
        let v = log.borrow().clone();
        v
    });
    assert_eq!(log.len(), 10_000);
    // Tasks woken in one turn run in firing order, so deadlines come out sorted.
    assert!(log.windows(2).all(|w| w[0] <= w[1]), "out of order");
}

#[test]
fn dropped_sleeps_never_fire() {
    let rt = rt(1, Default::default());
    let h = rt.handle().clone();
    rt.block_on(async move {
        let started = Rc::new(Cell::new(0));
        let fired = Rc::new(Cell::new(0));
        // Long enough that a loaded machine descheduling us between registration and
        // abort cannot let a timer expire early; the test waits on `started`, not on time.
        let handles: Vec<_> = (0..1000)
            .map(|_| {
                let (started, fired) = (started.clone(), fired.clone());
                spawn(async move {
                    started.set(started.get() + 1);
                    sleep(Duration::from_millis(300)).await;
                    fired.set(fired.get() + 1);
                })
            })
            .collect();
        while started.get() < 1000 {
            yield_now().await; // until every sleeper registered its timer
        }
        let before = h.metrics()[0].timers_fired;
        for h in handles.iter().step_by(2) {
            h.abort();
        }
        sleep(Duration::from_millis(600)).await;
        assert_eq!(fired.get(), 500);
        // 500 sleepers plus our own sleep: the aborted timers never fired.
        assert_eq!(h.metrics()[0].timers_fired - before, 501);
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.await.is_err(), i % 2 == 0);
        }
    });
}

#[test]
fn timeout_elapsed_vs_completed() {
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let t = Instant::now();
        let r = timeout(Duration::from_millis(20), sleep(Duration::from_secs(10))).await;
        assert!(r.is_err());
        let e = t.elapsed();
        assert!(
            e >= Duration::from_millis(20) && e < Duration::from_secs(2),
            "{e:?}"
        );

        let r = timeout(Duration::from_secs(10), async {
            sleep(Duration::from_millis(5)).await;
            7
        })
        .await;
        assert_eq!(r, Ok(7));
        // Ready at once wins even with a zero timeout.
        assert_eq!(timeout(Duration::ZERO, async { 1 }).await, Ok(1));
    });
}

#[test]
fn interval_ticks_on_schedule() {
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let period = Duration::from_millis(10);
        let start = Instant::now();
        let mut iv = interval_at(start, period);
        let mut ticks = Vec::new();
        for _ in 0..5 {
            ticks.push(iv.tick().await);
        }
        for (k, t) in ticks.iter().enumerate() {
            assert_eq!(*t, start + period * k as u32, "scheduled instants");
        }
        assert!(start.elapsed() >= period * 4);

        // Skip: after stalling 35 ms, one tick fires now and the next one is the next
        // point of the original schedule.
        let mut iv = interval(period);
        iv.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let t0 = iv.tick().await;
        std::thread::sleep(Duration::from_millis(35));
        let stall_end = Instant::now();
        let late = iv.tick().await;
        assert_eq!(late, t0 + period);
        let next = iv.tick().await;
        // The stall may overrun on a loaded machine: the next tick is the first point of
        // the original schedule after it ended, whichever that is.
        let since = next - t0;
        assert!(next >= stall_end, "missed points are skipped");
        assert_eq!(
            since.as_nanos() % period.as_nanos(),
            0,
            "still on the schedule"
        );
        assert!(since >= period * 4, "no tick for the skipped points");

        // Burst: missed ticks fire back to back.
        let mut iv = interval(period);
        let t0 = iv.tick().await;
        std::thread::sleep(Duration::from_millis(35));
        let a = Instant::now();
        for k in 1..=3 {
            assert_eq!(iv.tick().await, t0 + period * k);
        }
        // The instants above prove the burst; this only catches ticks that waited for a
        // later point instead of firing at once (generous for loaded machines).
        assert!(
            a.elapsed() < Duration::from_millis(500),
            "burst is immediate"
        );
    });
}

#[test]
fn a_sleep_polled_again_with_another_waker_wakes_that_one_and_an_unchanged_one_keeps_it() {
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let rt = rt(1, Default::default());
    rt.block_on(async {
        let (a, b) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let (wa, wb) = (Waker::from(a.clone()), Waker::from(b.clone()));
        let mut s = Box::pin(sleep(Duration::from_millis(30)));
        // Registered with `a`, polled again with `a` (nothing to change), then with `b`:
        // `b` is the one the timer wakes.
        for w in [&wa, &wa, &wb, &wb] {
            assert!(s.as_mut().poll(&mut Context::from_waker(w)).is_pending());
            yield_now().await;
        }
        let start = Instant::now();
        while b.0.load(Ordering::SeqCst) == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the timer never woke `b`"
            );
            sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(
            a.0.load(Ordering::SeqCst),
            0,
            "the replaced waker was woken"
        );
        assert!(s.as_mut().poll(&mut Context::from_waker(&wb)).is_ready());
    });
}
