//! Posted receives and unexpected messages of one endpoint: who matches what, and the
//! bound on unexpected messages that turns into backpressure.

use crate::provider::{ProbeAction, ProbeRequest, RecvTarget, TagMatch};
use crate::{OpId, PeerId};
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::task::Waker;

/// A receive waiting for a message.
pub(super) struct Posted {
    pub op: OpId,
    pub target: RecvTarget,
    pub tag: Option<TagMatch>,
    pub from: Option<PeerId>,
    /// A multi-receive's `min_free`.
    pub multi: Option<usize>,
    /// Bytes of a multi-receive's buffer taken by earlier messages.
    pub used: usize,
}

/// A message (or an RMA write with immediate data) that arrived before a receive
/// accepting it was posted.
pub(super) struct Unexpected {
    pub peer: PeerId,
    pub tag: Option<u64>,
    pub imm: Option<u64>,
    pub data: Bytes,
    /// Set for an RMA write with immediate data: its length (no bytes in `data`).
    pub write_len: Option<usize>,
}

/// Whether a receive (or probe) for `want` from `from` takes a message from `peer`
/// tagged `tag`.
fn matches(want: Option<TagMatch>, from: Option<PeerId>, peer: PeerId, tag: Option<u64>) -> bool {
    if from.is_some_and(|f| f != peer) {
        return false;
    }
    match (want, tag) {
        (None, None) => true,
        (Some(m), Some(t)) => m.accepts(t),
        _ => false,
    }
}

impl Posted {
    fn accepts(&self, peer: PeerId, tag: Option<u64>) -> bool {
        matches(self.tag, self.from, peer, tag)
    }
}

/// What a probe reports of the message it found.
pub(super) struct Probed {
    pub peer: PeerId,
    pub tag: Option<u64>,
    pub imm: Option<u64>,
    pub len: usize,
}

/// Matching state.
pub(super) struct RxMatch {
    posted: VecDeque<Posted>,
    unexpected: VecDeque<Unexpected>,
    /// Messages probes claimed, by probe, until a receive names the probe.
    claimed: HashMap<OpId, Unexpected>,
    bytes: usize,
    max_msgs: usize,
    max_bytes: usize,
    waiters: Vec<Waker>,
}

impl RxMatch {
    pub(super) fn new(max_msgs: usize, max_bytes: usize) -> RxMatch {
        RxMatch {
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
            claimed: HashMap::new(),
            bytes: 0,
            max_msgs,
            max_bytes,
            waiters: Vec::new(),
        }
    }

    /// Takes the oldest posted receive accepting a message from `peer` with `tag`,
    /// with its place in the queue.
    pub(super) fn take_posted(
        &mut self,
        peer: PeerId,
        tag: Option<u64>,
    ) -> Option<(usize, Posted)> {
        let i = self.posted.iter().position(|p| p.accepts(peer, tag))?;
        Some((i, self.posted.remove(i)?))
    }

    /// Puts a receive back at place `i` (a multi-receive with room left).
    pub(super) fn put_back(&mut self, i: usize, p: Posted) {
        self.posted.insert(i.min(self.posted.len()), p);
    }

    /// Posts a receive: if an unexpected message matches, both come back (the receive
    /// is not queued) along with the wakers of readers waiting for room.
    pub(super) fn post(&mut self, p: Posted) -> Option<(Posted, Unexpected, Vec<Waker>)> {
        match self
            .unexpected
            .iter()
            .position(|u| p.accepts(u.peer, u.tag))
        {
            Some(i) => {
                let (u, wake) = self.take_unexpected(i)?;
                Some((p, u, wake))
            }
            None => {
                self.posted.push_back(p);
                None
            }
        }
    }

    /// Removes waiting message `i`, with the wakers of readers that may go on.
    fn take_unexpected(&mut self, i: usize) -> Option<(Unexpected, Vec<Waker>)> {
        let u = self.unexpected.remove(i)?;
        self.bytes -= u.data.len();
        let wake = if self.over_limit() {
            Vec::new()
        } else {
            std::mem::take(&mut self.waiters)
        };
        Some((u, wake))
    }

    /// The first waiting message a probe for `req` matches, with the wakers of
    /// readers that may go on; claimed by `op` or dropped as `req.action` says.
    pub(super) fn probe(&mut self, op: OpId, req: &ProbeRequest) -> Option<(Probed, Vec<Waker>)> {
        let i = self
            .unexpected
            .iter()
            .position(|u| matches(Some(req.tag), req.from, u.peer, u.tag))?;
        let u = &self.unexpected[i];
        let found = Probed {
            peer: u.peer,
            tag: u.tag,
            imm: u.imm,
            len: u.write_len.unwrap_or(u.data.len()),
        };
        let wake = match req.action {
            ProbeAction::Peek => Vec::new(),
            ProbeAction::Claim => {
                let (u, wake) = self.take_unexpected(i)?;
                self.claimed.insert(op, u);
                wake
            }
            ProbeAction::Discard => self.take_unexpected(i)?.1,
        };
        Some((found, wake))
    }

    /// The message probe `claim` claimed.
    pub(super) fn take_claimed(&mut self, claim: OpId) -> Option<Unexpected> {
        self.claimed.remove(&claim)
    }

    /// Queues a message nobody was waiting for.
    pub(super) fn push_unexpected(&mut self, u: Unexpected) {
        self.bytes += u.data.len();
        self.unexpected.push_back(u);
    }

    /// Removes a posted receive not matched yet.
    pub(super) fn cancel(&mut self, op: OpId) -> Option<Posted> {
        let i = self.posted.iter().position(|p| p.op == op)?;
        self.posted.remove(i)
    }

    /// Removes the receives that only accept `peer`.
    pub(super) fn take_directed(&mut self, peer: PeerId) -> Vec<Posted> {
        let (gone, keep): (Vec<Posted>, Vec<Posted>) = std::mem::take(&mut self.posted)
            .into_iter()
            .partition(|p| p.from == Some(peer));
        self.posted = keep.into();
        gone
    }

    /// Every posted receive (endpoint close).
    pub(super) fn take_all(&mut self) -> Vec<Posted> {
        self.unexpected.clear();
        self.claimed.clear();
        self.bytes = 0;
        std::mem::take(&mut self.posted).into()
    }

    /// Whether unexpected messages hold more than the bound; readers then wait.
    pub(super) fn over_limit(&self) -> bool {
        self.unexpected.len() >= self.max_msgs || self.bytes >= self.max_bytes
    }

    /// Registers a reader waiting for room.
    pub(super) fn wait_room(&mut self, w: &Waker) {
        if !self.waiters.iter().any(|x| x.will_wake(w)) {
            self.waiters.push(w.clone());
        }
    }
}
