//! [`Op`]: the future of a single-completion op on the current worker's ring, and the
//! recycling of op boxes. It lives in the runtime, not the driver: it finds the driver
//! through the worker that runs on this thread.

use crate::driver::op::{Lifecycle, OpData, Single};
use crate::driver::slab::Key;
use crate::driver::{Completion, OpCode};
use crate::runtime::context;
use crate::runtime::worker::Core;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

pub(crate) fn not_in_runtime() -> io::Error {
    io::Error::other("not inside a zerorx runtime worker")
}

/// A single-completion op on the current worker's ring. Resolves to the completion
/// and the op's data back. Dropping it before completion cancels the op; its data stays
/// in the driver until the kernel is done with it.
pub struct Op<T: OpCode> {
    key: Option<Key>,
    core: Rc<Core>,
    _data: PhantomData<T>,
}

impl<T: OpCode> Op<T> {
    /// Queues `data`'s SQE on the current worker's ring; it is submitted with the
    /// worker's next `io_uring_enter`. Fails outside a worker thread.
    pub fn submit(data: T) -> io::Result<Op<T>> {
        let core = context::current().ok_or_else(not_in_runtime)?;
        let key = {
            let mut driver = core.driver.borrow_mut();
            let data = driver.spare.boxed(Single::new(data));
            driver.submit(OpData::boxed(data), Lifecycle::Pending(None))?
        };
        Ok(Op {
            key: Some(key),
            core,
            _data: PhantomData,
        })
    }

    /// [`submit`](Self::submit) of data boxed already (by [`boxed_op`]), e.g. the box
    /// a finished op of a loop gave back.
    pub(crate) fn submit_boxed(data: Box<Single<T>>) -> io::Result<Op<T>> {
        let core = context::current().ok_or_else(not_in_runtime)?;
        let key = core
            .driver
            .borrow_mut()
            .submit(OpData::boxed(data), Lifecycle::Pending(None))?;
        Ok(Op {
            key: Some(key),
            core,
            _data: PhantomData,
        })
    }

    /// The result of a zero-copy send whose notification has not come (see
    /// `Driver::partial_result`).
    pub(crate) fn partial_result(&self) -> Option<i32> {
        let key = self.key?;
        self.core.driver.try_borrow_mut().ok()?.partial_result(key)
    }

    /// Like polling the future, but gives the op's data back in its box, for a loop
    /// that submits it again ([`submit_boxed`](Self::submit_boxed)) or recycles it
    /// ([`recycle_op`]).
    pub(crate) fn poll_boxed(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(Completion, Box<Single<T>>)>> {
        let Some(key) = self.key else {
            return Poll::Ready(Err(io::Error::from_raw_os_error(libc::ECANCELED)));
        };
        let ready = self.core.driver.borrow_mut().poll_op(key, cx);
        let done = match ready {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(done) => done,
        };
        self.key = None;
        let Some((c, data)) = done else {
            return Poll::Ready(Err(io::Error::from_raw_os_error(libc::ECANCELED)));
        };
        match data.into_any().downcast::<Single<T>>() {
            Ok(data) => Poll::Ready(Ok((c, data))),
            Err(_) => Poll::Ready(Err(io::Error::other("op slot held a foreign op type"))),
        }
    }
}

/// Boxes `data` for [`Op::submit_boxed`], in a recycled op box of the current worker
/// when it has one of the right size (a plain allocation otherwise).
pub(crate) fn boxed_op<T: OpCode>(data: T) -> Box<Single<T>> {
    let core = context::current();
    let boxed = match core.as_ref().map(|c| c.driver.try_borrow_mut()) {
        Some(Ok(mut driver)) => driver.spare.boxed(Single::new(data)),
        _ => Box::new(Single::new(data)),
    };
    boxed
}

/// Moves the data out of an op box and keeps the box for the next op of its size.
pub(crate) fn recycle_op<T: OpCode>(data: Box<Single<T>>) -> T {
    let core = context::current();
    let value = match core.as_ref().map(|c| c.driver.try_borrow_mut()) {
        Some(Ok(mut driver)) => driver.spare.recycle(data).0,
        _ => data.0,
    };
    value
}

#[cfg(test)]
impl<T: OpCode> Op<T> {
    pub(crate) fn key_for_test(&self) -> Key {
        self.key.expect("submitted op")
    }
}

// The op's data lives in the slab, not in the future, so the future may move freely.
impl<T: OpCode> Unpin for Op<T> {}

impl<T: OpCode> Future for Op<T> {
    /// The completion and the op's data, or `ECANCELED` when the runtime shut down
    /// (and freed the op) before the completion was taken.
    type Output = io::Result<(Completion, T)>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (c, data) = std::task::ready!(self.poll_boxed(cx))?;
        let data = self.core.driver.borrow_mut().spare.recycle(data).0;
        Poll::Ready(Ok((c, data)))
    }
}

impl<T: OpCode> Drop for Op<T> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            if let Ok(mut driver) = self.core.driver.try_borrow_mut() {
                driver.drop_op(key);
            }
        }
    }
}
