//! Driver tests against the real kernel, run through the op futures inside a
//! one-worker runtime.

use super::op::Op;
use crate::driver::slab::Key;
use crate::driver::{Completion, OpCode};
use crate::runtime::context;
use crate::Runtime;
use io_uring::{opcode, squeue, types};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

struct Nop(u32);

// SAFETY: NOP references no memory.
unsafe impl OpCode for Nop {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::Nop::new().build()
    }
}

/// A read of a pipe into an owned buffer.
struct PipeRead {
    fd: std::rc::Rc<OwnedFd>,
    buf: Box<[u8; 16]>,
}

// SAFETY: the buffer is boxed inside the op; the fd is kept open by the `Rc`.
unsafe impl OpCode for PipeRead {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::Read::new(types::Fd(self.fd.as_raw_fd()), self.buf.as_mut_ptr(), 16).build()
    }
}

fn pipe() -> (std::rc::Rc<OwnedFd>, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid two-element array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh fds owned by nobody else.
    unsafe {
        (
            std::rc::Rc::new(OwnedFd::from_raw_fd(fds[0])),
            OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

fn write_all(fd: &OwnedFd, data: &[u8]) {
    // SAFETY: writes `data` to an open pipe.
    let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    assert_eq!(n, data.len() as isize);
}

fn rt(entries: u32, cq: u32) -> Runtime {
    Runtime::builder()
        .threads(1)
        .ring_entries(entries)
        .cq_entries(cq)
        .build()
        .expect("runtime")
}

#[test]
fn stale_completion_is_rejected_by_generation() {
    let rt = rt(8, 32);
    rt.block_on(async {
        let core = context::current().expect("core");
        // A finished op frees its slot, bumping the generation.
        let key_old = {
            let op = Op::submit(Nop(1)).expect("submit");
            let key = op_key(&op);
            let (c, data) = op.await.expect("nop");
            assert_eq!((c.res, data.0), (0, 1));
            key
        };
        let (rd, wr) = pipe();
        let read = Op::submit(PipeRead {
            fd: rd,
            buf: Box::new([0; 16]),
        })
        .expect("submit");
        let key_new = op_key(&read);
        assert_ne!(key_old.user_data(), key_new.user_data());
        // A late CQE carrying the old user_data: it must not complete the new op.
        let before = core.shared.metrics.stale_cqes.load(Relaxed);
        core.driver.borrow_mut().dispatch_for_test(Completion {
            user_data: key_old.user_data(),
            res: 99,
            flags: 0,
            big_cqe: [0; 2],
        });
        assert_eq!(core.shared.metrics.stale_cqes.load(Relaxed), before + 1);
        write_all(&wr, b"hello");
        let (c, data) = read.await.expect("read");
        assert_eq!(c.res, 5);
        assert_eq!(&data.buf[..5], b"hello");
    });
}

fn op_key<T: OpCode>(op: &Op<T>) -> Key {
    op.key_for_test()
}

#[test]
fn dropped_op_is_cancelled_and_slot_freed_at_final_cqe() {
    let rt = rt(8, 32);
    rt.block_on(async {
        let core = context::current().expect("core");
        let (rd, _wr) = pipe();
        let weak = std::rc::Rc::downgrade(&rd);
        let read = Op::submit(PipeRead {
            fd: rd,
            buf: Box::new([0; 16]),
        })
        .expect("submit");
        // Pending: the pipe has no data.
        let r = crate::time::timeout(Duration::from_millis(20), read).await;
        assert!(r.is_err(), "read must still be pending");
        // Dropped by the timeout: the slot holds the buffer and fd until the CQE.
        assert_eq!(core.driver.borrow().ops_in_flight(), 1);
        assert!(weak.upgrade().is_some(), "fd kept by the abandoned op");
        for _ in 0..100 {
            if core.driver.borrow().ops_in_flight() == 0 {
                break;
            }
            crate::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(core.driver.borrow().ops_in_flight(), 0);
        assert!(weak.upgrade().is_none(), "fd released after the final CQE");
    });
}

#[test]
fn sq_full_and_cq_overflow_lose_nothing() {
    // 4 SQ entries, 4 CQ entries, 200 NOPs queued at once: the SQ fills (submit and
    // retry) and the CQ overflows (flushed later); every op must still complete.
    let rt = rt(4, 4);
    rt.block_on(async {
        let core = context::current().expect("core");
        let ops: Vec<_> = (0..200)
            .map(|i| Op::submit(Nop(i)).expect("submit"))
            .collect();
        let mut seen = Vec::new();
        for op in ops {
            let (c, d) = op.await.expect("nop");
            assert_eq!(c.res, 0);
            seen.push(d.0);
        }
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
        let m = core.shared.metrics.snapshot(0);
        assert!(m.sq_full > 0, "{m:?}");
        assert!(m.cq_overflows > 0, "{m:?}");
        assert_eq!(core.driver.borrow().ops_in_flight(), 0);
    });
}

#[test]
fn completions_arrive_while_another_task_keeps_yielding() {
    // With DEFER_TASKRUN the kernel posts CQEs only when we enter; a busy worker must
    // still enter (the TASKRUN flag says so) and not starve I/O behind runnable tasks.
    let rt = rt(8, 32);
    rt.block_on(async {
        let spins = std::rc::Rc::new(std::cell::Cell::new(0u32));
        let stop = std::rc::Rc::new(std::cell::Cell::new(false));
        let spinner = {
            let (spins, stop) = (spins.clone(), stop.clone());
            crate::spawn(async move {
                while !stop.get() && spins.get() < 1_000_000 {
                    spins.set(spins.get() + 1);
                    crate::yield_now().await;
                }
            })
        };
        let (rd, wr) = pipe();
        let read = Op::submit(PipeRead {
            fd: rd,
            buf: Box::new([0; 16]),
        })
        .expect("submit");
        write_all(&wr, b"x");
        let (c, _) = read.await.expect("read");
        assert_eq!(c.res, 1);
        assert!(
            spins.get() < 1_000_000,
            "I/O completed while the spinner ran"
        );
        stop.set(true);
        spinner.await.expect("spinner");
    });
}

#[test]
fn a_task_waker_is_kept_as_its_pointer_and_wakes_its_task() {
    use crate::driver::slim_waker::SlimWaker;
    let rt = rt(8, 32);
    rt.block_on(async {
        let task = crate::spawn(async {
            let mut polls = 0;
            std::future::poll_fn(|cx| {
                polls += 1;
                if polls == 1 {
                    let slim = SlimWaker::new(cx.waker().clone());
                    assert!(slim.is_task_pointer(), "a task waker takes no box");
                    assert!(slim.will_wake(cx.waker()));
                    assert!(!slim.will_wake(std::task::Waker::noop()));
                    assert!(slim.to_waker().will_wake(cx.waker()));
                    // Woken through the slim waker, the task runs again.
                    slim.into_waker().wake();
                    return std::task::Poll::Pending;
                }
                std::task::Poll::Ready(polls)
            })
            .await
        });
        assert_eq!(task.await.expect("task"), 2);
        let foreign = SlimWaker::new(std::task::Waker::noop().clone());
        assert!(!foreign.is_task_pointer(), "any other waker is boxed");
    });
}
