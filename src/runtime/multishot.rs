//! The futures of multishot ops: one SQE, a stream of CQEs until one arrives without
//! `F_MORE`. In the runtime, not the driver: they find the driver through the worker
//! that runs on this thread.

use super::op::not_in_runtime;
use crate::driver::op::{Lifecycle, Multi, OpData};
use crate::driver::slab::Key;
use crate::driver::{Completion, OpCode};
use crate::runtime::context;
use crate::runtime::worker::Core;
use std::io;
use std::marker::PhantomData;
use std::rc::Rc;
use std::task::{Context, Poll};

/// A multishot op on the current worker's ring. Completions queue in the driver until
/// taken; dropping it cancels the op and [`release`](OpCode::release)s every completion
/// nobody took.
pub struct MultiOp<T> {
    key: Option<Key>,
    core: Rc<Core>,
    _data: PhantomData<T>,
}

impl<T: OpCode> MultiOp<T> {
    /// Queues `data`'s SQE on the current worker's ring. Fails outside a worker thread.
    pub fn submit(data: T) -> io::Result<MultiOp<T>> {
        MultiOp::submit_data(OpData::boxed(Box::new(Multi::new(data))))
    }
}

impl<T: 'static> MultiOp<T> {
    fn submit_data(data: OpData) -> io::Result<MultiOp<T>> {
        let core = context::current().ok_or_else(not_in_runtime)?;
        let key = core.driver.borrow_mut().submit(
            data,
            Lifecycle::Streaming {
                waker: None,
                finished: false,
            },
        )?;
        Ok(MultiOp {
            key: Some(key),
            core,
            _data: PhantomData,
        })
    }

    /// The next completion; `None` once the op has ended (its last completion, the one
    /// without `F_MORE`, was returned before).
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Completion>> {
        let Some(key) = self.key else {
            return Poll::Ready(None);
        };
        let next = self.core.driver.borrow_mut().poll_multi(key, cx);
        if let Poll::Ready(None) = next {
            self.key = None;
        }
        next
    }
}

impl<T: 'static> MultiOp<T> {
    /// Runs `f` on the op's data (what [`OpCode::on_complete`] kept), while the op is
    /// streaming; `None` once it has ended.
    pub(crate) fn with_data<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let key = self.key?;
        self.core.driver.borrow_mut().with_stream_data(key, f)
    }
}

impl<T> Drop for MultiOp<T> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            if let Ok(mut driver) = self.core.driver.try_borrow_mut() {
                driver.drop_op(key);
            }
        }
    }
}
