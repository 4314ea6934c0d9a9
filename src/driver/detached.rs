//! [`DetachedCx`]: what a detached op's completion handler
//! ([`OpCode::on_detached`](super::OpCode::on_detached)) may reach besides its own
//! state: the wakers to wake once the driver is free, the worker's counters, and a way
//! to make a follow-up op. A zero-copy send whose result came keeps its memory (and
//! its slot) until the notification, so the socket's next bytes go out in a new op
//! it makes here, without waiting for the notification.

use super::op::{OpCode, OpData, Single};
use super::spare::SpareBoxes;
use crate::metrics::WorkerMetrics;
use std::task::Waker;

/// A detached op's view of the driver while one of its completions is handled.
pub struct DetachedCx<'a> {
    pub(crate) wake: &'a mut Vec<Waker>,
    pub(crate) metrics: &'a WorkerMetrics,
    spare: &'a mut SpareBoxes,
    deferred: &'a mut Vec<OpData>,
    batch: u64,
}

impl<'a> DetachedCx<'a> {
    pub(crate) fn new(
        wake: &'a mut Vec<Waker>,
        metrics: &'a WorkerMetrics,
        spare: &'a mut SpareBoxes,
        deferred: &'a mut Vec<OpData>,
        batch: u64,
    ) -> DetachedCx<'a> {
        DetachedCx {
            wake,
            metrics,
            spare,
            deferred,
            batch,
        }
    }

    /// Makes `op` a detached op, submitted with the driver's next kernel entry as
    /// [`Driver::defer_detached`](super::Driver::defer_detached) does (the place it
    /// returns is valid for `with_deferred` until then).
    pub(crate) fn defer<T: OpCode>(&mut self, op: T) -> (u64, u32) {
        let data = self.spare.boxed(Single::new(op));
        defer_into(self.deferred, self.batch, OpData::boxed(data))
    }
}

/// Adds `data` to the deferred ops of batch `batch`; returns its place.
pub(crate) fn defer_into(deferred: &mut Vec<OpData>, batch: u64, data: OpData) -> (u64, u32) {
    deferred.push(data);
    (batch, (deferred.len() - 1) as u32)
}
