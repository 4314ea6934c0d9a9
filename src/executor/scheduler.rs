//! A worker's scheduler, owned by the executor and embedded in the worker: the part
//! other threads reach ([`Shared`]: the remote queue, the parked flag and the wake-up,
//! the wakers of join handles) and the part only the worker's thread touches
//! ([`Local`]: the run queue and the task registry). A task's owner is its worker's
//! `Shared`, so the executor needs nothing of the worker that embeds it (tokio keeps
//! its tasks generic over a `Schedule` trait for the same reason).

use super::join_wakers::JoinWakers;
use super::registry::Registry;
use super::task::TaskRef;
use crate::metrics::{add_owned, add_shared, WorkerMetrics};
use crate::wake::Unparker;
use crossbeam_channel::{Receiver, Sender};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A message for a worker's scheduler from another thread.
pub(crate) enum Remote {
    /// A task spawned from elsewhere: register it, then run it.
    Spawn(TaskRef),
    /// A registered task woken from elsewhere.
    Wake(TaskRef),
}

/// The part of a worker's scheduler other threads may touch.
pub(crate) struct Shared {
    /// The worker's index (tasks are named by it in a state dump).
    pub(crate) index: usize,
    remote_tx: Sender<Remote>,
    remote_rx: Receiver<Remote>,
    /// Messages sent and not yet taken: counted before each send, so zero means the
    /// channel holds nothing a drain could take. One load per loop turn instead of
    /// the channel's own checks (~120 instructions a turn, counted by `--count`).
    queued: AtomicUsize,
    /// True while the worker is (about to be) blocked in its kernel wait.
    parked: AtomicBool,
    /// Set once the worker has shut down: senders then drain what they sent.
    closed: AtomicBool,
    unparker: Unparker,
    /// The worker's counters (spawns, wake-ups sent, tasks polled).
    pub(crate) metrics: Arc<WorkerMetrics>,
    /// The wakers of handles waiting on this worker's tasks.
    pub(crate) join_wakers: JoinWakers,
}

impl Shared {
    pub(crate) fn new(index: usize, unparker: Unparker, metrics: Arc<WorkerMetrics>) -> Shared {
        let (remote_tx, remote_rx) = crossbeam_channel::unbounded();
        Shared {
            index,
            remote_tx,
            remote_rx,
            queued: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            unparker,
            metrics,
            join_wakers: JoinWakers::default(),
        }
    }

    /// Enqueues `msg` and wakes the worker if it is parked.
    pub(crate) fn push_remote(&self, msg: Remote) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.remote_tx.send(msg).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        fence(Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            // The worker is gone and will not drain again: drop what is queued here, so
            // the handles of spawned tasks resolve as cancelled.
            self.drop_remote();
            return;
        }
        self.unpark();
    }

    /// Drops every queued message: never-run spawns are shut down (their futures are
    /// `Send`, so any thread may), wakes are let go.
    fn drop_remote(&self) {
        while let Ok(msg) = self.remote_rx.try_recv() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            match msg {
                Remote::Spawn(task) => task.shutdown(),
                Remote::Wake(task) => drop(task),
            }
        }
    }

    /// How the worker is woken from its kernel wait.
    pub(crate) fn unparker(&self) -> &Unparker {
        &self.unparker
    }

    /// Whether the worker has shut down.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Wakes the worker if it is parked; no syscall otherwise.
    pub(crate) fn unpark(&self) {
        if self.parked.load(Ordering::SeqCst) && self.parked.swap(false, Ordering::SeqCst) {
            add_shared(&self.metrics.wakeups_sent, 1);
            if let Err(e) = self.unparker.unpark() {
                tracing::error!(worker = self.index, error = %e, "wake-up failed");
            }
        }
    }

    /// Marks the worker parked (about to wait in the kernel) and returns whether
    /// messages came meanwhile, in which case it must not wait. The fence orders the
    /// mark before the check, against `push_remote`'s count and send before its check
    /// of the mark. A message counted but not yet sent also keeps the worker awake: the
    /// next turn's drain takes it once the send is done.
    pub(crate) fn park(&self) -> bool {
        self.parked.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.queued.load(Ordering::SeqCst) > 0
    }

    /// Marks the worker awake (back from its kernel wait).
    pub(crate) fn unpark_self(&self) {
        self.parked.store(false, Ordering::SeqCst);
    }
}

/// The part of a worker's scheduler only its thread touches.
pub(crate) struct Local {
    pub(crate) shared: Arc<Shared>,
    pub(crate) run_queue: RefCell<VecDeque<TaskRef>>,
    /// Every unfinished task owned by this worker, so shutdown can drop their futures
    /// on this thread.
    pub(crate) tasks: RefCell<Registry>,
}

impl Local {
    pub(crate) fn new(shared: Arc<Shared>) -> Local {
        Local {
            shared,
            run_queue: RefCell::new(VecDeque::new()),
            tasks: RefCell::new(Registry::default()),
        }
    }

    /// Puts `task` in the registry (it is then shut down with the worker).
    pub(crate) fn register(&self, task: &TaskRef) {
        let key = self.tasks.borrow_mut().insert(task.clone());
        task.set_registry_key(key);
    }

    /// Takes in what other threads spawned and woke.
    pub(crate) fn drain_remote(&self) {
        // A count not yet seen here is seen by `park`, which then does not wait.
        if self.shared.queued.load(Ordering::Relaxed) == 0 {
            return;
        }
        while let Ok(msg) = self.shared.remote_rx.try_recv() {
            self.shared.queued.fetch_sub(1, Ordering::Relaxed);
            match msg {
                Remote::Spawn(task) => {
                    add_owned(&self.shared.metrics.tasks_spawned, 1);
                    self.register(&task);
                    self.run_queue.borrow_mut().push_back(task);
                }
                Remote::Wake(task) => self.run_queue.borrow_mut().push_back(task),
            }
        }
    }

    /// Polls up to `budget` queued tasks, in order.
    pub(crate) fn run(&self, budget: usize) {
        for _ in 0..budget {
            let Some(task) = self.run_queue.borrow_mut().pop_front() else {
                break;
            };
            add_owned(&self.shared.metrics.tasks_polled, 1);
            task.run(self);
        }
    }

    /// Whether no task is queued to run.
    pub(crate) fn is_idle(&self) -> bool {
        self.run_queue.borrow().is_empty()
    }

    /// Drops every task's future on this thread, then closes the remote queue (later
    /// messages are dropped by their senders).
    pub(crate) fn shutdown(&self) {
        // Dropping a future can spawn or wake others; a few rounds settle it.
        for _ in 0..16 {
            self.drain_remote();
            let tasks = self.tasks.borrow_mut().drain();
            let queued: Vec<_> = self.run_queue.borrow_mut().drain(..).collect();
            if tasks.is_empty() && queued.is_empty() {
                break;
            }
            for t in tasks {
                t.shutdown();
            }
            drop(queued);
        }
        self.shared.closed.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.shared.drop_remote();
    }
}
