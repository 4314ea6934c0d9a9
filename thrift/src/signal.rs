//! One-shot signals: [`LocalSignal`] between tasks of one worker (no locks), and
//! [`SharedSignal`] from any thread (a mutex, for the few tasks that wait on it).
//!
//! Waiters are kept in a slab under `(index, id)`: a slot drained by a wake-up and
//! reused by another waiter is told apart by its id.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

type Key = (usize, u64);

/// Puts `waker` under `key` (in place when the key is still ours).
fn register(waiters: &mut slab::Slab<(u64, Waker)>, key: &mut Option<Key>, id: u64, waker: &Waker) {
    if let Some((k, kid)) = *key {
        if let Some((eid, w)) = waiters.get_mut(k) {
            if *eid == kid {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                return;
            }
        }
    }
    *key = Some((waiters.insert((id, waker.clone())), id));
}

fn unregister(waiters: &mut slab::Slab<(u64, Waker)>, key: Option<Key>) {
    if let Some((k, kid)) = key {
        if waiters.get(k).is_some_and(|(eid, _)| *eid == kid) {
            waiters.remove(k);
        }
    }
}

/// A flag that, once set, wakes every task waiting on it; also a plain "something
/// changed" notifier ([`notify`](Self::notify)). Single worker only.
#[derive(Default)]
pub(crate) struct LocalSignal {
    set: Cell<bool>,
    next_id: Cell<u64>,
    waiters: RefCell<slab::Slab<(u64, Waker)>>,
    /// Counts the notifications that took the waiters: a waiter registered since the
    /// last one is still registered.
    woken: Cell<u64>,
}

impl LocalSignal {
    pub(crate) fn is_set(&self) -> bool {
        self.set.get()
    }

    /// Sets the flag and wakes every waiter.
    pub(crate) fn set(&self) {
        self.set.set(true);
        self.notify();
    }

    /// Wakes current waiters without setting the flag (they re-check their state).
    pub(crate) fn notify(&self) {
        // The waiters are moved out before waking (a woken task may register again
        // or drop its wait), and their storage is put back afterwards: no allocation
        // per notification, which the server makes for every reply.
        let mut waiters = {
            let mut w = self.waiters.borrow_mut();
            if w.is_empty() {
                return;
            }
            self.woken.set(self.woken.get() + 1);
            std::mem::take(&mut *w)
        };
        for (_, w) in waiters.drain() {
            w.wake();
        }
        let mut w = self.waiters.borrow_mut();
        if w.is_empty() && w.capacity() < waiters.capacity() {
            *w = waiters;
        }
    }

    /// A waiter: [`LocalWait::poll_set`] is ready once the flag is set, and registers
    /// for [`notify`](Self::notify) otherwise.
    pub(crate) fn wait(self: &Rc<Self>) -> LocalWait {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        LocalWait {
            signal: self.clone(),
            id,
            key: None,
            registered: None,
        }
    }
}

/// The future of [`LocalSignal::wait`].
pub(crate) struct LocalWait {
    signal: Rc<LocalSignal>,
    id: u64,
    key: Option<Key>,
    /// The signal's notification count and the waker's identity (data and vtable
    /// pointers, as `Waker::will_wake` compares them) at the last registration: while
    /// both are unchanged the registration stands, and a poll looks at nothing else
    /// (counted: a connection's three waits cost ~145 instructions per request through
    /// the slab).
    registered: Option<(u64, *const (), *const std::task::RawWakerVTable)>,
}

impl LocalWait {
    /// Ready if the flag is set; otherwise registers `cx` to be woken by `set` or
    /// `notify`. Usable repeatedly inside a hand-written select.
    pub(crate) fn poll_set(&mut self, cx: &Context<'_>) -> Poll<()> {
        if self.signal.is_set() {
            return Poll::Ready(());
        }
        let waker = cx.waker();
        let now = Some((
            self.signal.woken.get(),
            waker.data(),
            std::ptr::from_ref(waker.vtable()),
        ));
        if self.registered != now {
            register(
                &mut self.signal.waiters.borrow_mut(),
                &mut self.key,
                self.id,
                waker,
            );
            self.registered = now;
        }
        Poll::Pending
    }
}

impl Future for LocalWait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_set(cx)
    }
}

impl Drop for LocalWait {
    fn drop(&mut self) {
        if let Ok(mut w) = self.signal.waiters.try_borrow_mut() {
            unregister(&mut w, self.key.take());
        }
    }
}

/// A flag any thread may set, waking every task waiting on it.
#[derive(Default)]
pub(crate) struct SharedSignal {
    set: AtomicBool,
    next_id: AtomicU64,
    waiters: Mutex<slab::Slab<(u64, Waker)>>,
}

impl SharedSignal {
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    pub(crate) fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        let wakers: Vec<(u64, Waker)> = self.lock().drain().collect();
        for (_, w) in wakers {
            w.wake();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, slab::Slab<(u64, Waker)>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn wait(self: &Arc<Self>) -> SharedWait {
        SharedWait {
            signal: self.clone(),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            key: None,
        }
    }
}

/// The future of [`SharedSignal::wait`].
pub(crate) struct SharedWait {
    signal: Arc<SharedSignal>,
    id: u64,
    key: Option<Key>,
}

impl Future for SharedWait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.is_set() {
            return Poll::Ready(());
        }
        let this = &mut *self;
        register(&mut this.signal.lock(), &mut this.key, this.id, cx.waker());
        // `set` may have drained between the check and the registration.
        if this.signal.is_set() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for SharedWait {
    fn drop(&mut self) {
        unregister(&mut self.signal.lock(), self.key.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Count(std::sync::atomic::AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn reused_slots_do_not_steal_registrations() {
        let sig = Rc::new(LocalSignal::default());
        let a_count = Arc::new(Count(Default::default()));
        let b_count = Arc::new(Count(Default::default()));
        let a_waker = Waker::from(a_count.clone());
        let b_waker = Waker::from(b_count.clone());
        let mut a = sig.wait();
        let mut b = sig.wait();
        assert!(a.poll_set(&Context::from_waker(&a_waker)).is_pending());
        sig.notify();
        assert_eq!(a_count.0.load(Ordering::SeqCst), 1);
        // b takes the slot a had; a dropping must not remove b's registration.
        assert!(b.poll_set(&Context::from_waker(&b_waker)).is_pending());
        drop(a);
        sig.set();
        assert_eq!(b_count.0.load(Ordering::SeqCst), 1);
        assert!(b.poll_set(&Context::from_waker(&b_waker)).is_ready());
    }

    #[test]
    fn a_wait_polled_again_stays_registered_until_a_notification_and_follows_a_new_waker() {
        let sig = Rc::new(LocalSignal::default());
        let a_count = Arc::new(Count(Default::default()));
        let b_count = Arc::new(Count(Default::default()));
        let a_waker = Waker::from(a_count.clone());
        let b_waker = Waker::from(b_count.clone());
        let mut w = sig.wait();
        // Polled twice with one waker: one registration, one wake-up.
        assert!(w.poll_set(&Context::from_waker(&a_waker)).is_pending());
        assert!(w.poll_set(&Context::from_waker(&a_waker)).is_pending());
        assert_eq!(sig.waiters.borrow().len(), 1);
        sig.notify();
        assert_eq!(a_count.0.load(Ordering::SeqCst), 1);
        // The notification took the registration: the next poll registers again.
        assert!(w.poll_set(&Context::from_waker(&a_waker)).is_pending());
        sig.notify();
        assert_eq!(a_count.0.load(Ordering::SeqCst), 2);
        // Another waker replaces the registered one.
        assert!(w.poll_set(&Context::from_waker(&a_waker)).is_pending());
        assert!(w.poll_set(&Context::from_waker(&b_waker)).is_pending());
        sig.set();
        assert_eq!(
            a_count.0.load(Ordering::SeqCst),
            2,
            "the old waker was replaced"
        );
        assert_eq!(b_count.0.load(Ordering::SeqCst), 1);
        assert!(w.poll_set(&Context::from_waker(&b_waker)).is_ready());
    }

    #[test]
    fn shared_signal_wakes_and_stays_set() {
        let sig = Arc::new(SharedSignal::default());
        let count = Arc::new(Count(Default::default()));
        let waker = Waker::from(count.clone());
        let mut w = sig.wait();
        assert!(Pin::new(&mut w)
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        let s2 = sig.clone();
        std::thread::spawn(move || s2.set()).join().expect("setter");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(Pin::new(&mut w)
            .poll(&mut Context::from_waker(&waker))
            .is_ready());
        assert!(sig.lock().is_empty());
    }
}
