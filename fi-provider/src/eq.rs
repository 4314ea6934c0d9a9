//! A libfabric event queue's contents. RDM endpoints report no connection events
//! (and so no error events), so events come from `fi_eq_write` (applications and
//! tests use it to wake themselves); the queue keeps them in order with their bytes.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// One event: its type and the entry bytes written with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub event: u32,
    pub bytes: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct EqStore {
    events: Mutex<VecDeque<Event>>,
    ready: Condvar,
}

impl EqStore {
    pub(crate) fn write(&self, ev: Event) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(ev);
        self.ready.notify_all();
    }

    /// The next event; `peek` leaves it queued. With `wait`, waits up to its
    /// duration (`None`: forever) for one.
    pub(crate) fn read(&self, peek: bool, wait: Option<Option<Duration>>) -> Option<Event> {
        let deadline = wait.flatten().map(|t| Instant::now() + t);
        let mut q = self.events.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(e) = q.front() {
                return if peek { Some(e.clone()) } else { q.pop_front() };
            }
            let limit = wait?;
            q = match (limit, deadline) {
                (Some(_), Some(d)) => {
                    let now = Instant::now();
                    if now >= d {
                        return None;
                    }
                    self.ready
                        .wait_timeout(q, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                _ => self.ready.wait(q).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_back_in_order_and_a_peek_leaves_them() {
        let eq = EqStore::default();
        assert_eq!(eq.read(false, None), None);
        let ev = |n: u32| Event {
            event: n,
            bytes: vec![n as u8; 4],
        };
        eq.write(ev(1));
        eq.write(ev(2));
        assert_eq!(eq.read(true, None), Some(ev(1)), "peek leaves it");
        assert_eq!(eq.read(false, None), Some(ev(1)));
        assert_eq!(eq.read(false, None), Some(ev(2)));
        assert_eq!(
            eq.read(false, Some(Some(Duration::from_millis(10)))),
            None,
            "times out"
        );
    }
}
