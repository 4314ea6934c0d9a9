//! Completions of the operations sent to one peer are reported in post order, as the
//! io_uring provider (one stream per peer) reports them. libfabric completes them in
//! any order (`comp_order` is `FI_ORDER_NONE`: rxm finishes an eager send before a
//! rendezvous send posted earlier), so outcomes that arrive early wait here for the
//! ones before them.

use crate::{OpId, OpOutcome, PeerId};
use std::collections::{HashMap, VecDeque};

/// Per-peer queues of transmit operations in post order, with the outcomes known so far.
#[derive(Default)]
pub(super) struct TxOrder {
    lanes: HashMap<PeerId, VecDeque<(OpId, Option<OpOutcome>)>>,
}

impl TxOrder {
    /// Records a transmit operation to `peer`, posted after all recorded before.
    pub(super) fn push(&mut self, peer: PeerId, op: OpId) {
        self.lanes.entry(peer).or_default().push_back((op, None));
    }

    /// Stores `op`'s outcome; returns the outcomes now reportable, in post order (just
    /// this one when `op` was not recorded).
    pub(super) fn finish(
        &mut self,
        peer: PeerId,
        op: OpId,
        outcome: OpOutcome,
    ) -> Vec<(OpId, OpOutcome)> {
        let Some(lane) = self.lanes.get_mut(&peer) else {
            return vec![(op, outcome)];
        };
        let Some(slot) = lane.iter_mut().find(|(o, _)| *o == op) else {
            return vec![(op, outcome)];
        };
        slot.1 = Some(outcome);
        let mut out = Vec::new();
        while let Some((_, Some(_))) = lane.front() {
            if let Some((op, Some(outcome))) = lane.pop_front() {
                out.push((op, outcome));
            }
        }
        if lane.is_empty() {
            self.lanes.remove(&peer);
        }
        out
    }

    /// Forgets everything (the endpoint closed and reported every operation itself).
    pub(super) fn clear(&mut self) {
        self.lanes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(v: &[(OpId, OpOutcome)]) -> Vec<u64> {
        v.iter().map(|(o, _)| o.0).collect()
    }

    #[test]
    fn early_outcomes_wait_for_earlier_posts() {
        let mut t = TxOrder::default();
        let p = PeerId(1);
        for i in 1..=3 {
            t.push(p, OpId(i));
        }
        assert!(t.finish(p, OpId(2), OpOutcome::ok(2)).is_empty());
        assert!(t.finish(p, OpId(3), OpOutcome::ok(3)).is_empty());
        assert_eq!(ops(&t.finish(p, OpId(1), OpOutcome::ok(1))), [1, 2, 3]);
        // Lanes are independent, and unknown ops pass straight through.
        t.push(PeerId(2), OpId(10));
        t.push(p, OpId(4));
        assert_eq!(ops(&t.finish(p, OpId(4), OpOutcome::ok(0))), [4]);
        assert_eq!(ops(&t.finish(p, OpId(99), OpOutcome::ok(0))), [99]);
        assert_eq!(ops(&t.finish(PeerId(2), OpId(10), OpOutcome::ok(0))), [10]);
        assert!(t.lanes.is_empty());
    }
}
