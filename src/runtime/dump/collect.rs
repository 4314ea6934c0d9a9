//! A worker's part of the dump, built on the worker's own thread between two loop
//! turns (or inline, when a task of that worker asks), and the request that makes
//! other workers build theirs.

use super::kernel;
use super::{
    DumpStatus, OpDump, PoolDump, PoolKind, RingDump, RingFlag, SendsDump, TaskDump, TaskId,
    TimersDump, WorkerDump, WorkerPart,
};
use crate::executor::task::{task_of, TaskName, UNREGISTERED};
use crate::runtime::worker::{Core, WorkerShared};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;
use zcrx::StatsHandle;

/// Dumps asked of a worker and not yet answered. The flag is the only thing a loop
/// turn looks at (one relaxed load) when nobody asks.
#[derive(Default)]
pub(crate) struct DumpRequests {
    asked: std::sync::atomic::AtomicBool,
    waiting: Mutex<Vec<Sender<WorkerDump>>>,
}

impl DumpRequests {
    fn lock(&self) -> MutexGuard<'_, Vec<Sender<WorkerDump>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a request; the caller then unparks the worker.
    pub(crate) fn ask(&self, reply: Sender<WorkerDump>) {
        self.lock().push(reply);
        // SeqCst, paired with the worker's fence between setting `parked` and its
        // last look at this flag: either it sees the request or the asker sees it
        // parked and wakes it.
        self.asked.store(true, Ordering::SeqCst);
    }

    /// Whether a request waits (cheap: checked every loop turn).
    pub(crate) fn pending(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// Takes the waiting requests.
    fn take(&self) -> Vec<Sender<WorkerDump>> {
        self.asked.store(false, Ordering::Relaxed);
        std::mem::take(&mut *self.lock())
    }
}

/// The dump's id of task `t` (no key once it has left its registry).
pub(crate) fn task_id(t: TaskName) -> TaskId {
    TaskId::new(t.worker, (t.key != UNREGISTERED).then_some(t.key))
}

/// Milliseconds from `now` to `deadline` (negative when overdue).
fn ms_until(deadline: Instant, now: Instant) -> i64 {
    match deadline.checked_duration_since(now) {
        Some(d) => d.as_millis() as i64,
        None => -(now.duration_since(deadline).as_millis() as i64),
    }
}

fn pool(kind: PoolKind, stats: &StatsHandle) -> PoolDump {
    let s = stats.snapshot();
    PoolDump {
        kind,
        chunks: s.chunks_total,
        kernel: s
            .chunks_total
            .saturating_sub(s.in_use)
            .saturating_sub(s.returns_pending),
        user: s.in_use,
        returns_pending: s.returns_pending,
        high_water: s.high_water,
        overflow_held: s.overflow_held,
        overflow_receives: s.overflow_receives,
    }
}

/// The pools `shared`'s worker receives into.
fn pools(shared: &WorkerShared) -> Vec<PoolDump> {
    let mut out = Vec::new();
    if let Some(s) = shared.pool_stats.get() {
        out.push(pool(PoolKind::Copy, s));
    }
    if let Some(s) = shared.zc_pool_stats.get() {
        let imported = shared.zc_instance.get().is_some_and(|i| i.imported);
        out.push(pool(
            if imported {
                PoolKind::ZeroCopyImported
            } else {
                PoolKind::ZeroCopy
            },
            s,
        ));
    }
    if let Some(s) = shared.udp_pool_stats.get() {
        out.push(pool(PoolKind::Datagram, s));
    }
    out
}

impl Core {
    /// Answers the dumps other threads asked for.
    pub(crate) fn answer_dumps(&self) {
        let waiting = self.shared.dump_requests.take();
        if waiting.is_empty() {
            return;
        }
        let dump = self.dump();
        for reply in waiting {
            let _ = reply.send(dump.clone());
        }
    }

    /// This worker's part of a dump. Safe from a task of this worker: every borrow
    /// is tried, and a part whose state is borrowed (never, between turns) is left
    /// out, named in the status.
    pub(crate) fn dump(&self) -> WorkerDump {
        let shared = &self.shared;
        let metrics = shared.metrics.snapshot(shared.index);
        let mut out = WorkerDump {
            index: shared.index,
            pools: pools(shared),
            receives_waiting_for_buffers: self.rx.waiting(),
            pools_held_ms: self.rx.held_since().map(|t| t.elapsed().as_millis() as u64),
            sends: SendsDump {
                zero_copy: metrics.send_zc,
                copied: metrics.send_zc_copied,
                registered: metrics.send_zc_registered,
                registered_memory: self.send_memory.live(),
                sockets_plain: metrics.send_zc_off,
                arena_chunks: self
                    .send_arena
                    .try_borrow()
                    .ok()
                    .and_then(|a| a.as_ref().map(|a| a.chunk_counts())),
            },
            ..WorkerDump::default()
        };
        let mut busy = Vec::new();

        // Ops, and the ring.
        let mut ops_of: HashMap<TaskName, Vec<usize>> = HashMap::new();
        match self.driver.try_borrow_mut() {
            Ok(mut driver) => {
                let ring = driver.ring_state();
                let fd = driver.ring_fd();
                for (i, op) in driver.describe_ops().into_iter().enumerate() {
                    let task = op.waker.as_ref().and_then(task_of);
                    if let Some(t) = task {
                        ops_of.entry(t).or_default().push(i);
                    }
                    out.ops.push(OpDump {
                        opcode: op.opcode,
                        state: op.state,
                        multishot: op.multishot,
                        fd: op.fd,
                        socket: op.fd.and_then(kernel::socket_addrs),
                        age_ms: op.age.as_millis() as u64,
                        task: task.map(task_id),
                    });
                }
                let flags = shared.ring_flags.get().copied().unwrap_or_default();
                out.ring = Some(RingDump {
                    fd,
                    flags: [
                        (flags.defer_taskrun, RingFlag::DeferTaskrun),
                        (flags.coop_taskrun, RingFlag::CoopTaskrun),
                        (flags.cqe32, RingFlag::Cqe32),
                        (flags.napi_busy_poll, RingFlag::Napi),
                    ]
                    .into_iter()
                    .filter_map(|(on, flag)| on.then_some(flag))
                    .collect(),
                    sq_entries: ring.sq_entries,
                    sq_pending: ring.sq_pending,
                    cq_entries: ring.cq_entries,
                    cq_ready: ring.cq_ready,
                    cq_overflow: ring.cq_overflow,
                    cq_overflow_flushes: metrics.cq_overflows,
                    sq_dropped: ring.sq_dropped,
                    loop_turns: metrics.loop_turns,
                    kernel: kernel::ring_fdinfo(fd),
                });
            }
            Err(_) => busy.push(WorkerPart::Driver),
        }

        // Timers, by the task they wake.
        let now = Instant::now();
        let mut timers_of: HashMap<TaskName, Vec<i64>> = HashMap::new();
        match self.time.queue.try_borrow_mut() {
            Ok(mut queue) => {
                let mut next: Option<Instant> = None;
                queue.for_each_pending(|deadline, waker| {
                    out.timers.pending += 1;
                    next = Some(next.map_or(deadline, |n| n.min(deadline)));
                    if let Some(t) = waker.and_then(task_of) {
                        timers_of
                            .entry(t)
                            .or_default()
                            .push(ms_until(deadline, now));
                    }
                });
                out.timers = TimersDump {
                    next_ms: next.map(|d| ms_until(d, now)),
                    ..out.timers
                };
            }
            Err(_) => busy.push(WorkerPart::Timers),
        }

        // Tasks: every one not queued, with its ops and timers.
        match self.sched.tasks.try_borrow() {
            Ok(tasks) => tasks.for_each(|_, task| {
                out.tasks += 1;
                if task.is_scheduled() {
                    out.queued += 1;
                    return;
                }
                let name = task.name();
                let mut timers_ms = timers_of.remove(&name).unwrap_or_default();
                timers_ms.sort_unstable();
                out.waiting.push(TaskDump {
                    id: task_id(name),
                    ops: ops_of.remove(&name).unwrap_or_default(),
                    timers_ms,
                });
            }),
            Err(_) => busy.push(WorkerPart::Tasks),
        }
        if !busy.is_empty() {
            out.status = DumpStatus::Partial { busy };
        }
        out
    }
}
