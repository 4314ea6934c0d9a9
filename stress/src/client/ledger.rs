//! The per-connection record of requests in flight, and the judgement of each reply.
//!
//! Request ids are `conn << 32 | seq`: unique in a run, and they say which connection
//! and which request a reply belongs to, so every wrong reply can be named precisely.

use super::LoadPlan;
use crate::errors::ErrorKind;
use crate::wire::{request, Frame, Kind, Reject};
use bytes::Bytes;
use std::collections::HashMap;
use std::time::Instant;

/// What the harness remembers about a request until its reply arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// When the request should have been sent (open loop) or was sent (closed loop):
    /// latency is measured from here.
    pub intended: Instant,
    /// Echo or Sink.
    pub kind: Kind,
    /// Payload length.
    pub len: u32,
    /// The CRC the request was sent with.
    pub crc: u32,
}

/// The judgement of one reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// The right reply to request `id`.
    Ok {
        /// The request.
        id: u64,
        /// When it was due.
        intended: Instant,
    },
    /// A wrong reply.
    Bad {
        /// Which kind of wrong.
        kind: ErrorKind,
        /// The request id it concerns (as read from the reply, when readable).
        id: Option<u64>,
        /// What exactly.
        detail: String,
        /// Whether this resolved an outstanding request (its slot in the window is free).
        resolved: bool,
    },
}

/// Requests in flight on one connection.
#[derive(Debug)]
pub struct Ledger {
    conn: u32,
    next_seq: u32,
    outstanding: HashMap<u64, Pending>,
}

impl Ledger {
    /// An empty ledger for connection `conn`.
    pub fn new(conn: u32) -> Ledger {
        Ledger {
            conn,
            next_seq: 0,
            outstanding: HashMap::new(),
        }
    }

    /// The connection number.
    pub fn conn(&self) -> u32 {
        self.conn
    }

    /// Allocates the next request id.
    pub fn next_id(&mut self) -> u64 {
        let id = (u64::from(self.conn) << 32) | u64::from(self.next_seq);
        self.next_seq = self.next_seq.wrapping_add(1);
        id
    }

    /// Records request `id` as sent.
    pub fn sent(&mut self, id: u64, p: Pending) {
        self.outstanding.insert(id, p);
    }

    /// Makes the `seq`-th request of a connection following `plan` and records it as
    /// sent, due at `intended` (closed loop: now). Returns its header and payload.
    pub fn issue(
        &mut self,
        plan: &LoadPlan,
        seq: u64,
        intended: Option<Instant>,
    ) -> (Bytes, Bytes) {
        let (size, kind) = plan.request_shape(seq);
        let id = self.next_id();
        let payload = plan.payloads.payload(id, size);
        let (header, crc) = request(kind, self.conn, id, &payload);
        self.sent(
            id,
            Pending {
                intended: intended.unwrap_or_else(Instant::now),
                kind,
                len: payload.len() as u32,
                crc,
            },
        );
        (header, payload)
    }

    /// Requests still waiting for a reply.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// When the oldest outstanding request was due.
    pub fn oldest(&self) -> Option<Instant> {
        self.outstanding.values().map(|p| p.intended).min()
    }

    /// Removes every outstanding request (they are lost), in id order.
    pub fn take_outstanding(&mut self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.outstanding.drain().map(|(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }

    /// Judges a reply frame.
    pub fn judge(&mut self, f: &Frame) -> Judgement {
        let h = f.header;
        let id = h.id;
        if !f.crc_ok() {
            // The header may be damaged too: blame the id only if it is one of ours.
            let resolved = self.outstanding.remove(&id).is_some();
            return Judgement::Bad {
                kind: ErrorKind::Corrupted,
                id: resolved.then_some(id),
                detail: format!(
                    "reply CRC {:#010x} does not match its bytes ({:#010x})",
                    h.crc,
                    f.computed_crc()
                ),
                resolved,
            };
        }
        let owner = (id >> 32) as u32;
        if h.conn != self.conn || owner != self.conn {
            return Judgement::Bad {
                kind: ErrorKind::Misrouted,
                id: Some(id),
                detail: format!(
                    "reply for conn {} (id names conn {owner}) arrived on conn {}",
                    h.conn, self.conn
                ),
                resolved: false,
            };
        }
        let Some(p) = self.outstanding.remove(&id) else {
            let seq = id as u32;
            let (kind, detail) = if seq < self.next_seq {
                (ErrorKind::Duplicate, "a second reply to this request")
            } else {
                (ErrorKind::UnknownId, "this connection never sent that id")
            };
            return Judgement::Bad {
                kind,
                id: Some(id),
                detail: detail.to_owned(),
                resolved: false,
            };
        };
        let wrong = |detail: String| Judgement::Bad {
            kind: ErrorKind::Corrupted,
            id: Some(id),
            detail,
            resolved: true,
        };
        match (p.kind, h.kind) {
            (_, Kind::Reject) => Judgement::Bad {
                kind: ErrorKind::Rejected,
                id: Some(id),
                detail: Reject::describe(h.aux).to_owned(),
                resolved: true,
            },
            (Kind::Echo, Kind::Echo) if h.len != p.len => wrong(format!(
                "echo of {} bytes came back with {} bytes",
                p.len, h.len
            )),
            (Kind::Echo, Kind::Echo) if h.crc != p.crc => wrong(format!(
                "echo came back with CRC {:#010x}, sent {:#010x}",
                h.crc, p.crc
            )),
            (Kind::Echo, Kind::Echo) => Judgement::Ok {
                id,
                intended: p.intended,
            },
            (Kind::Sink, Kind::Ack) if h.aux != p.crc => wrong(format!(
                "server received bytes with CRC {:#010x}, sent {:#010x}",
                h.aux, p.crc
            )),
            (Kind::Sink, Kind::Ack) => Judgement::Ok {
                id,
                intended: p.intended,
            },
            (sent, got) => wrong(format!("a {sent:?} request answered with {got:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{reply, request, Header, PayloadSource, HEADER_LEN};
    use bytes::Bytes;

    fn frame(bytes: Vec<u8>) -> Frame {
        let h: [u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().expect("32");
        Frame {
            header: Header::decode(&h, 1 << 20).expect("valid header"),
            bytes: Bytes::from(bytes),
            assembled: false,
        }
    }

    fn send(l: &mut Ledger, src: &PayloadSource, kind: Kind) -> (u64, Vec<u8>) {
        let id = l.next_id();
        let p = src.payload(id, 100);
        let (h, crc) = request(kind, l.conn(), id, &p);
        l.sent(
            id,
            Pending {
                intended: Instant::now(),
                kind,
                len: 100,
                crc,
            },
        );
        let mut whole = h.to_vec();
        whole.extend_from_slice(&p);
        (id, whole)
    }

    fn bad_kind(j: Judgement) -> ErrorKind {
        match j {
            Judgement::Bad { kind, .. } => kind,
            Judgement::Ok { .. } => panic!("judged ok"),
        }
    }

    #[test]
    fn right_reply_then_duplicate() {
        let src = PayloadSource::new(128, 1);
        let mut l = Ledger::new(5);
        let (id, bytes) = send(&mut l, &src, Kind::Echo);
        assert!(
            matches!(l.judge(&frame(bytes.clone())), Judgement::Ok { id: got, .. } if got == id)
        );
        assert_eq!(bad_kind(l.judge(&frame(bytes))), ErrorKind::Duplicate);
        assert_eq!(l.outstanding(), 0);
    }

    #[test]
    fn flipped_payload_byte_is_corrupted_with_its_id() {
        let src = PayloadSource::new(128, 1);
        let mut l = Ledger::new(5);
        let (id, mut bytes) = send(&mut l, &src, Kind::Echo);
        bytes[HEADER_LEN + 17] ^= 0x40;
        match l.judge(&frame(bytes)) {
            Judgement::Bad {
                kind: ErrorKind::Corrupted,
                id: Some(got),
                resolved: true,
                ..
            } => assert_eq!(got, id),
            other => panic!("{other:?}"),
        }
        assert_eq!(l.outstanding(), 0);
    }

    #[test]
    fn another_requests_payload_is_corrupted_even_with_a_valid_crc() {
        let src = PayloadSource::new(128, 1);
        let mut l = Ledger::new(5);
        let (id, _) = send(&mut l, &src, Kind::Echo);
        // A self-consistent frame with our id but other bytes: the CRC differs from the
        // one we sent.
        let other = src.payload(id + 1000, 100);
        let (h, _) = request(Kind::Echo, 5, id, &other);
        let mut whole = h.to_vec();
        whole.extend_from_slice(&other);
        assert_eq!(bad_kind(l.judge(&frame(whole))), ErrorKind::Corrupted);
    }

    #[test]
    fn misrouted_unknown_rejected_and_sink_checks() {
        let src = PayloadSource::new(128, 1);
        let mut a = Ledger::new(1);
        let mut b = Ledger::new(2);
        let (_, from_a) = send(&mut a, &src, Kind::Echo);
        assert_eq!(bad_kind(b.judge(&frame(from_a))), ErrorKind::Misrouted);
        let unknown = reply(Kind::Ack, 2, (2 << 32) | 77, 0);
        assert_eq!(
            bad_kind(b.judge(&frame(unknown.to_vec()))),
            ErrorKind::UnknownId
        );
        let (id, _) = send(&mut b, &src, Kind::Sink);
        let rej = reply(Kind::Reject, 2, id, Reject::BadChecksum as u32);
        assert_eq!(bad_kind(b.judge(&frame(rej.to_vec()))), ErrorKind::Rejected);
        let (id, _) = send(&mut b, &src, Kind::Sink);
        let wrong_ack = reply(Kind::Ack, 2, id, 0xdead_beef);
        assert_eq!(
            bad_kind(b.judge(&frame(wrong_ack.to_vec()))),
            ErrorKind::Corrupted
        );
        let (id2, _) = send(&mut b, &src, Kind::Sink);
        let p = src.payload(id2, 100);
        let (_, good_crc) = request(Kind::Sink, 2, id2, &p);
        let ack = reply(Kind::Ack, 2, id2, good_crc);
        assert!(matches!(
            b.judge(&frame(ack.to_vec())),
            Judgement::Ok { .. }
        ));
        let (lost, _) = send(&mut b, &src, Kind::Echo);
        assert_eq!(b.take_outstanding(), vec![lost]);
    }
}
