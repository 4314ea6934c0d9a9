//! `spawn_blocking`: results and panics through the handle, workers never stalled by a
//! blocking job, the pool's limit and idle timeout, the state dump, and shutdown
//! waiting for running jobs up to its timeout and naming what it abandoned.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::{spawn_blocking, Runtime};

fn rt(configure: impl FnOnce(&mut zerorx::Builder)) -> Runtime {
    let mut b = Runtime::builder();
    b.threads(1).shutdown_timeout(Duration::from_secs(5));
    configure(&mut b);
    b.build().expect("runtime")
}

#[test]
fn a_blocking_job_runs_off_the_worker_and_its_value_comes_back() {
    let rt = rt(|_| {});
    rt.block_on(async {
        let worker = std::thread::current().id();
        let (v, thread) = spawn_blocking(|| (21 * 2, std::thread::current().id()))
            .await
            .expect("no panic");
        assert_eq!(v, 42);
        assert_ne!(thread, worker, "ran on a pool thread");
    });
}

#[test]
fn the_worker_keeps_serving_while_a_job_blocks() {
    let rt = rt(|_| {});
    rt.block_on(async {
        // The job blocks until the worker, running timers meanwhile, releases it: on
        // the worker's own thread it would block the timers and time out instead.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let job = spawn_blocking(move || released.recv_timeout(Duration::from_secs(10)).is_ok());
        for _ in 0..10 {
            zerorx::sleep(Duration::from_millis(5)).await;
        }
        assert!(!job.is_finished());
        release.send(()).expect("the job waits");
        assert!(job.await.expect("no panic"), "released by the worker");
    });
}

#[test]
fn a_panicking_job_reaches_its_handle_with_the_message() {
    let rt = rt(|_| {});
    rt.block_on(async {
        let err = spawn_blocking(|| -> u8 { panic!("the compressor broke") })
            .await
            .expect_err("panicked");
        assert!(err.is_panic());
        assert_eq!(err.panic_message(), Some("the compressor broke"));
        // The pool goes on.
        assert_eq!(spawn_blocking(|| 7).await.expect("no panic"), 7);
    });
}

#[test]
fn jobs_beyond_the_limit_queue_and_the_dump_lists_them() {
    let rt = rt(|b| {
        b.max_blocking_threads(2);
    });
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let jobs: Vec<_> = (0..6)
            .map(|i| {
                let (now, most) = (now.clone(), most.clone());
                spawn_blocking(move || {
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(100));
                    now.fetch_sub(1, Ordering::SeqCst);
                    i
                })
            })
            .collect();
        zerorx::sleep(Duration::from_millis(30)).await;
        let dump = h.dump();
        assert_eq!(dump.blocking.threads, 2, "{dump}");
        assert_eq!(
            (dump.blocking.running.len(), dump.blocking.queued.len()),
            (2, 4),
            "{dump}"
        );
        assert!(dump.blocking.running[0].name.contains("blocking"), "{dump}");
        assert!(
            dump.to_string().contains("blocking pool: 2 threads"),
            "{dump}"
        );
        let mut out = Vec::new();
        for j in jobs {
            out.push(j.await.expect("no panic"));
        }
        assert_eq!(out, (0..6).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn idle_threads_leave_after_the_keep_alive() {
    let rt = rt(|b| {
        b.blocking_keep_alive(Duration::from_millis(50));
    });
    let h = rt.handle().clone();
    rt.block_on(async move {
        spawn_blocking(|| ()).await.expect("no panic");
        let t = Instant::now();
        while h.dump().blocking.threads > 0 {
            assert!(t.elapsed() < Duration::from_secs(5), "{}", h.dump());
            zerorx::sleep(Duration::from_millis(20)).await;
        }
    });
}

#[test]
fn shutdown_waits_for_running_jobs_up_to_its_timeout_and_names_the_abandoned() {
    // Enough time: the running job finishes, nothing is abandoned.
    let rt1 = rt(|b| {
        b.max_blocking_threads(1);
    });
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    rt1.block_on(async move {
        drop(spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(100));
            d.fetch_add(1, Ordering::SeqCst);
        }));
        zerorx::sleep(Duration::from_millis(20)).await;
    });
    rt1.shutdown(Duration::from_secs(5))
        .expect("nothing abandoned");
    assert_eq!(
        done.load(Ordering::SeqCst),
        1,
        "shutdown waited for the job"
    );

    // Too little time: the running job and the queued one are named.
    let rt2 = rt(|b| {
        b.max_blocking_threads(1);
    });
    rt2.block_on(async {
        drop(spawn_blocking(|| {
            std::thread::sleep(Duration::from_secs(5))
        }));
        drop(spawn_blocking(|| ()));
        zerorx::sleep(Duration::from_millis(20)).await;
    });
    let t = Instant::now();
    let err = rt2
        .shutdown(Duration::from_millis(200))
        .expect_err("abandoned");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "did not wait for the job: {:?}",
        t.elapsed()
    );
    let text = err.to_string();
    assert!(
        text.contains("1 job(s) still running") && text.contains("1 queued job(s) never ran"),
        "{text}"
    );
}

#[test]
fn bad_pool_settings_are_refused() {
    // (The environment's values are checked in the builder's unit tests.)
    let err = Runtime::builder()
        .threads(1)
        .max_blocking_threads(0)
        .build()
        .expect_err("0 threads");
    assert!(err.to_string().contains("max_blocking_threads"), "{err}");
}
