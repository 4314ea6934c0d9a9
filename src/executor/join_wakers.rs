//! [`JoinWakers`]: the wakers of the `JoinHandle`s that wait on a worker's tasks, kept
//! by the worker instead of in each task. Most handles never wait (a spawned
//! connection's is dropped at once), so a waker slot in every task would be a word of
//! every idle connection spent on nothing; a waiting handle pays a lock instead.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

/// Above this many slots, an emptied map gives its memory back (a burst of waiting
/// handles must not keep its table for the worker's lifetime).
const KEEP_CAPACITY: usize = 64;

/// The waiting handles' wakers, by the address of their task (unique while the task
/// lives, and a handle keeps its task alive: see [`Header`](super::task::Header)).
#[derive(Default)]
pub(crate) struct JoinWakers {
    map: Mutex<HashMap<usize, Waker>>,
}

impl JoinWakers {
    /// The map, locked. Never held while a waker is cloned, woken or dropped: those
    /// run foreign code, which may reach this map again (dropping a task's last waker
    /// drops its future, which may drop a handle).
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<usize, Waker>> {
        // A panic never happens under this lock (only map operations run there), so
        // a poisoned map is still consistent.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the waker kept for `task`, if any.
    pub(crate) fn take(&self, task: usize) -> Option<Waker> {
        let mut map = self.lock();
        let waker = map.remove(&task);
        if map.is_empty() && map.capacity() > KEEP_CAPACITY {
            map.shrink_to_fit();
        }
        waker
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_map_gives_back_a_burst_s_memory() {
        let w = JoinWakers::default();
        for task in 0..1000 {
            w.lock().insert(task, Waker::noop().clone());
        }
        assert!(w.lock().capacity() >= 1000);
        for task in 0..1000 {
            assert!(w.take(task).is_some());
            assert!(w.take(task).is_none(), "taken once");
        }
        assert!(w.lock().capacity() <= KEEP_CAPACITY);
    }
}
