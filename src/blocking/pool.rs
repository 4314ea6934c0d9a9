//! [`BlockingPool`]: the queue, the threads and their lifecycle.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Limits of a pool.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockingConfig {
    /// Most threads at once; jobs beyond them wait in the queue.
    pub(crate) max_threads: usize,
    /// How long an idle thread waits for a job before it leaves.
    pub(crate) keep_alive: Duration,
}

/// One job: what it is called (its closure's type) and what it runs.
struct Job {
    id: u64,
    name: &'static str,
    queued: Instant,
    run: Box<dyn FnOnce() + Send>,
}

/// A job's name and when it was queued or started, for the dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JobState {
    pub(crate) name: &'static str,
    pub(crate) since: Instant,
}

/// The pool at one moment.
#[derive(Clone, Debug, Default)]
pub(crate) struct PoolState {
    pub(crate) threads: usize,
    pub(crate) idle: usize,
    pub(crate) max_threads: usize,
    pub(crate) running: Vec<JobState>,
    pub(crate) queued: Vec<JobState>,
}

/// What a shutdown left behind.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Abandoned {
    /// Jobs still running at the deadline (their threads are left to finish alone).
    pub(crate) running: Vec<&'static str>,
    /// Jobs that never started (dropped: whoever awaits them sees them abandoned).
    pub(crate) queued: Vec<&'static str>,
}

impl Abandoned {
    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty() && self.queued.is_empty()
    }
}

impl fmt::Display for Abandoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blocking pool: {} job(s) still running at the shutdown deadline were abandoned {:?}; \
             {} queued job(s) never ran {:?}",
            self.running.len(),
            self.running,
            self.queued.len(),
            self.queued
        )
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    running: HashMap<u64, JobState>,
    threads: usize,
    idle: usize,
    next_id: u64,
    shutdown: bool,
}

struct Inner {
    state: Mutex<State>,
    /// Signalled when a job is queued or the pool shuts down (idle threads wait here).
    work: Condvar,
    /// Signalled when a thread leaves (shutdown waits here).
    left: Condvar,
    config: BlockingConfig,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs run outside the lock and their panics are caught: a poisoned lock
        // can only come from a bug here, and the state is still consistent then.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A pool of threads for blocking jobs, shared by a runtime's workers.
#[derive(Clone)]
pub(crate) struct BlockingPool {
    inner: Arc<Inner>,
}

/// Why a job was not taken.
#[derive(Debug)]
pub(crate) struct ShutDown;

impl BlockingPool {
    pub(crate) fn new(config: BlockingConfig) -> BlockingPool {
        BlockingPool {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                left: Condvar::new(),
                config: BlockingConfig {
                    max_threads: config.max_threads.max(1),
                    ..config
                },
            }),
        }
    }

    /// Queues `run` (named `name`), starting a thread for it when none is idle and the
    /// limit allows. Refused once the pool has shut down; a thread that cannot be
    /// started leaves the job queued for the threads there are (and with none, fails
    /// it: `run` is dropped, which its awaiter sees).
    pub(crate) fn spawn(
        &self,
        name: &'static str,
        run: Box<dyn FnOnce() + Send>,
    ) -> Result<(), ShutDown> {
        let mut st = self.inner.lock();
        if st.shutdown {
            return Err(ShutDown);
        }
        let id = st.next_id;
        st.next_id += 1;
        st.queue.push_back(Job {
            id,
            name,
            queued: Instant::now(),
            run,
        });
        if st.idle > 0 {
            self.inner.work.notify_one();
            return Ok(());
        }
        if st.threads < self.inner.config.max_threads {
            st.threads += 1;
            let inner = self.inner.clone();
            let started = std::thread::Builder::new()
                .name("zerorx-blocking".into())
                .spawn(move || run_thread(inner));
            if let Err(e) = started {
                st.threads -= 1;
                tracing::warn!(error = %e, "could not start a blocking-pool thread");
                if st.threads == 0 {
                    // No thread will ever take it: drop it, so its awaiter is told.
                    st.queue.pop_back();
                }
            }
        }
        Ok(())
    }

    /// Threads, idle threads, running and queued jobs.
    pub(crate) fn state(&self) -> PoolState {
        let st = self.inner.lock();
        let mut running: Vec<JobState> = st.running.values().cloned().collect();
        running.sort_by_key(|j| j.since);
        PoolState {
            threads: st.threads,
            idle: st.idle,
            max_threads: self.inner.config.max_threads,
            running,
            queued: st
                .queue
                .iter()
                .map(|j| JobState {
                    name: j.name,
                    since: j.queued,
                })
                .collect(),
        }
    }

    /// Stops taking jobs, drops those that never started, and waits until `deadline`
    /// for running ones to finish; returns what it abandoned.
    pub(crate) fn shutdown(&self, deadline: Instant) -> Abandoned {
        let mut st = self.inner.lock();
        st.shutdown = true;
        let dropped: Vec<Job> = st.queue.drain(..).collect();
        self.inner.work.notify_all();
        while st.threads > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            st = self
                .inner
                .left
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let mut running: Vec<&JobState> = st.running.values().collect();
        running.sort_by_key(|j| j.since);
        let abandoned = Abandoned {
            running: running.iter().map(|j| j.name).collect(),
            queued: dropped.iter().map(|j| j.name).collect(),
        };
        drop(st);
        // Outside the lock: dropping a job runs its closure's destructors.
        drop(dropped);
        abandoned
    }
}

/// A pool thread: takes jobs until it has been idle for the keep-alive or the pool
/// shuts down.
fn run_thread(inner: Arc<Inner>) {
    let mut st = inner.lock();
    loop {
        if let Some(job) = st.queue.pop_front() {
            st.running.insert(
                job.id,
                JobState {
                    name: job.name,
                    since: Instant::now(),
                },
            );
            drop(st);
            // The job catches its own panics (spawn_blocking hands them to its
            // awaiter); one that escapes must not take the pool's count with it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job.run));
            st = inner.lock();
            st.running.remove(&job.id);
            continue;
        }
        if st.shutdown {
            break;
        }
        st.idle += 1;
        let (guard, timeout) = inner
            .work
            .wait_timeout(st, inner.config.keep_alive)
            .unwrap_or_else(|e| e.into_inner());
        st = guard;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            break;
        }
    }
    st.threads -= 1;
    drop(st);
    inner.left.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    fn pool(max_threads: usize, keep_alive: Duration) -> BlockingPool {
        BlockingPool::new(BlockingConfig {
            max_threads,
            keep_alive,
        })
    }

    #[test]
    fn never_more_threads_than_the_limit_and_every_job_runs() {
        let p = pool(2, Duration::from_secs(5));
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (tx, rx) = mpsc::channel();
        for i in 0..6 {
            let (now, most, tx) = (now.clone(), most.clone(), tx.clone());
            p.spawn(
                "job",
                Box::new(move || {
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    now.fetch_sub(1, Ordering::SeqCst);
                    tx.send(i).unwrap();
                }),
            )
            .unwrap();
        }
        let st = p.state();
        assert!(st.threads <= 2 && st.queued.len() >= 4, "{st:?}");
        let mut done: Vec<i32> = (0..6).map(|_| rx.recv().unwrap()).collect();
        done.sort();
        assert_eq!(done, (0..6).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn idle_threads_leave_after_the_keep_alive() {
        let p = pool(4, Duration::from_millis(30));
        let (tx, rx) = mpsc::channel();
        p.spawn("job", Box::new(move || tx.send(()).unwrap()))
            .unwrap();
        rx.recv().unwrap();
        assert_eq!(p.state().threads, 1);
        let until = Instant::now() + Duration::from_secs(5);
        while p.state().threads > 0 {
            assert!(Instant::now() < until, "{:?}", p.state());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_panicking_job_does_not_lose_its_thread() {
        let p = pool(1, Duration::from_secs(5));
        p.spawn("panics", Box::new(|| panic!("boom"))).unwrap();
        let (tx, rx) = mpsc::channel();
        p.spawn("after", Box::new(move || tx.send(()).unwrap()))
            .unwrap();
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the job after the panic ran");
        assert_eq!(p.state().threads, 1);
    }

    #[test]
    fn shutdown_waits_for_running_jobs_until_the_deadline_and_names_the_rest() {
        let p = pool(1, Duration::from_secs(5));
        let (started_tx, started) = mpsc::channel();
        p.spawn(
            "slow",
            Box::new(move || {
                started_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(400));
            }),
        )
        .unwrap();
        started.recv().unwrap();
        let (dropped_tx, dropped) = mpsc::channel::<()>();
        p.spawn("queued", Box::new(move || drop(dropped_tx)))
            .unwrap();
        let t = Instant::now();
        let a = p.shutdown(Instant::now() + Duration::from_millis(50));
        assert!(
            t.elapsed() < Duration::from_millis(300),
            "did not wait past the deadline"
        );
        assert_eq!(
            a,
            Abandoned {
                running: vec!["slow"],
                queued: vec!["queued"]
            }
        );
        assert!(
            dropped.recv().is_err(),
            "the queued job was dropped without running"
        );
        assert!(p.spawn("late", Box::new(|| ())).is_err());
        // With time enough, nothing is abandoned.
        let p = pool(1, Duration::from_secs(5));
        let (started_tx, started) = mpsc::channel();
        p.spawn(
            "quick",
            Box::new(move || {
                started_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }),
        )
        .unwrap();
        started.recv().unwrap();
        assert!(p
            .shutdown(Instant::now() + Duration::from_secs(5))
            .is_empty());
        assert_eq!(p.state().threads, 0);
    }
}
