//! The driver alone, against the real kernel: no runtime, no executor, no socket; ops
//! submitted into the slab, the ring turned by hand, results and releases checked.

use super::op::{Lifecycle, OpData, Single};
use super::ring::RingConfig;
use super::{Completion, Driver, OpCode};
use crate::metrics::WorkerMetrics;
use io_uring::{opcode, squeue, types};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

fn driver() -> Driver {
    let cfg = RingConfig {
        sq_entries: 8,
        cq_entries: 16,
        cqe32: false,
        wait_batch: None,
        busy_poll: None,
    };
    Driver::new(&cfg, None, Arc::new(WorkerMetrics::default())).expect("io_uring ring")
}

/// A NOP that counts the completions released for it (nobody took them).
struct Nop {
    released: Rc<Cell<u32>>,
}

// SAFETY: NOP references no memory and no fd.
unsafe impl OpCode for Nop {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::Nop::new().build()
    }

    fn release(&mut self, _: &Completion) {
        self.released.set(self.released.get() + 1);
    }
}

/// A timeout of a minute: in flight until cancelled. The timespec lives in the op.
struct LongTimeout {
    ts: Box<types::Timespec>,
    released: Rc<Cell<u32>>,
}

// SAFETY: the entry points at `ts`, boxed inside the op; no fd.
unsafe impl OpCode for LongTimeout {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::Timeout::new(&*self.ts).build()
    }

    fn release(&mut self, _: &Completion) {
        self.released.set(self.released.get() + 1);
    }
}

fn submit<T: OpCode>(d: &mut Driver, op: T) -> super::slab::Key {
    d.submit(
        OpData::boxed(Box::new(Single::new(op))),
        Lifecycle::Pending(None),
    )
    .expect("submit")
}

/// Turns the ring until `done` or a bounded number of turns.
fn turn_until(d: &mut Driver, mut done: impl FnMut(&mut Driver) -> bool) {
    for _ in 0..100 {
        if done(d) {
            return;
        }
        d.turn(true, Some(Duration::from_millis(50))).expect("turn");
    }
    panic!("the driver did not get there in 100 turns");
}

#[test]
fn a_completed_op_hands_back_its_result_and_its_data() {
    let mut d = driver();
    let released = Rc::new(Cell::new(0));
    let key = submit(
        &mut d,
        Nop {
            released: released.clone(),
        },
    );
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = None;
    turn_until(&mut d, |d| match d.poll_op(key, &mut cx) {
        Poll::Ready(r) => {
            out = r;
            true
        }
        Poll::Pending => false,
    });
    let (c, data) = out.expect("a result while the slot exists");
    assert_eq!(c.res, 0);
    assert!(
        data.into_any().downcast::<Single<Nop>>().is_ok(),
        "its own data back"
    );
    assert_eq!(released.get(), 0, "a taken result is not released");
    assert_eq!(d.ops_in_flight(), 0);
}

#[test]
fn a_result_nobody_takes_is_released_once() {
    let mut d = driver();
    let released = Rc::new(Cell::new(0));
    let key = submit(
        &mut d,
        Nop {
            released: released.clone(),
        },
    );
    let mut cx = Context::from_waker(Waker::noop());
    assert!(d.poll_op(key, &mut cx).is_pending(), "not submitted yet");
    // Let it complete, then drop its future's side without taking the result.
    turn_until(&mut d, |d| {
        matches!(
            d.ops.get_mut(key).map(|s| &s.lifecycle),
            Some(Lifecycle::Completed(_))
        )
    });
    d.drop_op(key);
    assert_eq!(released.get(), 1);
    assert_eq!(d.ops_in_flight(), 0);
}

#[test]
fn an_abandoned_op_keeps_its_memory_until_the_cancel_ends_it() {
    let mut d = driver();
    let released = Rc::new(Cell::new(0));
    let key = submit(
        &mut d,
        LongTimeout {
            ts: Box::new(types::Timespec::new().sec(60)),
            released: released.clone(),
        },
    );
    d.turn(false, None).expect("submit");
    d.drop_op(key);
    assert_eq!(
        d.ops_in_flight(),
        1,
        "in the slab until its final completion"
    );
    turn_until(&mut d, |d| d.ops_in_flight() == 0);
    assert_eq!(released.get(), 1, "the cancelled completion is released");
    let mut cx = Context::from_waker(Waker::noop());
    assert!(
        matches!(d.poll_op(key, &mut cx), Poll::Ready(None)),
        "the key is gone"
    );
}

struct CountWakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for CountWakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_peek_keeps_no_waker_and_leaves_the_kept_one() {
    use super::peek_waker::peek_waker;
    use std::task::{Context, Waker};
    let count = std::sync::Arc::new(CountWakes(Default::default()));
    let real = Waker::from(count.clone());
    let peek = peek_waker();
    let mut kept = None;
    super::keep_waker(&mut kept, &Context::from_waker(&peek));
    assert!(kept.is_none(), "a peek is not boxed and kept");
    super::keep_waker(&mut kept, &Context::from_waker(&real));
    assert!(kept.as_ref().is_some_and(|w| w.will_wake(&real)));
    super::keep_waker(&mut kept, &Context::from_waker(&real));
    assert_eq!(
        std::sync::Arc::strong_count(&count),
        3,
        "the same waker is kept, not cloned again"
    );
    super::keep_waker(&mut kept, &Context::from_waker(&peek));
    assert!(
        kept.as_ref().is_some_and(|w| w.will_wake(&real)),
        "a peek leaves the task's waker registered"
    );
    super::keep_waker(&mut kept, &Context::from_waker(Waker::noop()));
    assert!(
        kept.as_ref().is_some_and(|w| !w.will_wake(&real)),
        "any other waker replaces it: the last poll's waker wins"
    );
    assert_eq!(std::sync::Arc::strong_count(&count), 2);
    super::keep_waker(&mut kept, &Context::from_waker(&real));
    kept.take().expect("kept").into_waker().wake();
    assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// A multishot poll for input on `fd`: streams until cancelled (nothing is written).
struct PollIn {
    fd: std::os::fd::RawFd,
}

// SAFETY: POLL_ADD references no memory; the test keeps `fd` open until the op ends.
unsafe impl OpCode for PollIn {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::PollAdd::new(types::Fd(self.fd), libc::POLLIN as u32)
            .multi(true)
            .build()
    }

    fn release(&mut self, _: &Completion) {}

    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.fd)
    }
}

#[test]
fn cancelling_streams_by_opcode_ends_those_picked_and_leaves_them_to_their_futures() {
    use super::op::Multi;
    use std::os::fd::AsRawFd;
    let mut d = driver();
    let pairs: Vec<_> = (0..3)
        .map(|_| std::os::unix::net::UnixStream::pair().expect("socketpair"))
        .collect();
    let streams: Vec<_> = pairs
        .iter()
        .map(|(s, _)| {
            d.submit(
                OpData::boxed(Box::new(Multi::new(PollIn { fd: s.as_raw_fd() }))),
                Lifecycle::Streaming {
                    waker: None,
                    finished: false,
                },
            )
            .expect("submit")
        })
        .collect();
    let released = Rc::new(Cell::new(0));
    let other = submit(
        &mut d,
        LongTimeout {
            ts: Box::new(types::Timespec::new().sec(60)),
            released: released.clone(),
        },
    );
    d.turn(false, None).expect("submit");

    // The pick sees each streaming poll's data; it spares the third.
    let spared = pairs[2].0.as_raw_fd();
    let mut seen = 0;
    let picked = d.cancel_streaming(opcode::PollAdd::CODE, |data| {
        seen += 1;
        data.describe().0 != Some(spared)
    });
    assert_eq!((seen, picked), (3, 2));
    let mut cx = Context::from_waker(Waker::noop());
    for &key in &streams[..2] {
        let mut ends = Vec::new();
        turn_until(&mut d, |d| match d.poll_multi(key, &mut cx) {
            Poll::Ready(Some(c)) => {
                ends.push(c.res);
                false
            }
            Poll::Ready(None) => true,
            Poll::Pending => false,
        });
        assert_eq!(
            ends,
            [-libc::ECANCELED],
            "the stream's future sees its cancelled end, not an abandoned op"
        );
    }
    assert!(
        d.poll_multi(streams[2], &mut cx).is_pending(),
        "the spared poll streams on"
    );
    assert!(
        d.poll_op(other, &mut cx).is_pending(),
        "an op of another opcode stays in flight"
    );
    d.drop_op(streams[2]);
    d.drop_op(other);
    turn_until(&mut d, |d| d.ops_in_flight() == 0);
}

#[test]
fn a_send_at_once_is_given_once_between_turns_and_not_after_a_busy_turn() {
    let mut d = driver();
    // A quiet turn: the tasks after it may send at once, the first of them only.
    d.turn(false, None).expect("turn");
    assert!(d.take_at_once(), "the first send after a quiet turn");
    assert!(!d.take_at_once(), "a second send of the same turn");
    // The next turn gives it again.
    d.turn(false, None).expect("turn");
    assert!(d.take_at_once());
    // A turn that reaped two completions: its tasks' sends wait for the turn's end.
    let released = Rc::new(Cell::new(0));
    for _ in 0..2 {
        submit(
            &mut d,
            Nop {
                released: released.clone(),
            },
        );
    }
    turn_until(&mut d, |d| d.reaped >= 2);
    assert!(!d.take_at_once(), "after a turn that reaped {}", d.reaped);
    // While shutting down, never.
    d.turn(false, None).expect("turn");
    d.shutting_down = true;
    assert!(!d.take_at_once());
}
