//! The frame format of the io_uring TCP provider: a 64-byte little-endian header,
//! then `len` payload bytes for frames that carry data.
//!
//! ```text
//! 0 op | 1 flags | 2 fault | 3 access | 4..8 generation | 8..16 id | 16..24 len
//! 24..32 tag | 32..40 imm | 40..48 key | 48..56 offset | 56..64 extra
//! ```
//!
//! One TCP connection per direction and peer: the connecting side sends HELLO, then
//! requests (SEND, WRITE, READ_REQ); the accepting side answers (ACK, NAK, READ_RESP)
//! on the same connection. Every header field comes from an untrusted peer and is
//! checked by [`Header::decode`] and the handlers.

use crate::error::AccessFault;
use crate::region::Access;

/// Header length.
pub(super) const HDR: usize = 64;
/// `key` field of HELLO: "ZRXFAB01".
pub(super) const HELLO_MAGIC: u64 = u64::from_le_bytes(*b"ZRXFAB01");
/// Protocol version, in HELLO's `generation` field.
pub(super) const VERSION: u32 = 1;
/// Longest listen address a HELLO may carry.
pub(super) const MAX_HELLO_ADDR: u64 = 256;

/// Frame types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Hello = 1,
    Send = 2,
    Write = 3,
    ReadReq = 4,
    Ack = 5,
    Nak = 6,
    ReadResp = 7,
}

/// The message is tagged (`tag` valid).
pub(super) const F_TAGGED: u8 = 1;
/// Immediate data (`imm` valid).
pub(super) const F_IMM: u8 = 2;
/// The initiator waits for an ACK (delivery complete).
pub(super) const F_ACK: u8 = 4;

/// One decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    pub op: Op,
    pub flags: u8,
    pub fault: u8,
    pub access: u8,
    pub generation: u32,
    pub id: u64,
    pub len: u64,
    pub tag: u64,
    pub imm: u64,
    pub key: u64,
    pub offset: u64,
    pub extra: u64,
}

impl Header {
    pub(super) fn new(op: Op, id: u64) -> Header {
        Header {
            op,
            flags: 0,
            fault: 0,
            access: 0,
            generation: 0,
            id,
            len: 0,
            tag: 0,
            imm: 0,
            key: 0,
            offset: 0,
            extra: 0,
        }
    }

    pub(super) fn encode(&self) -> [u8; HDR] {
        let mut b = [0u8; HDR];
        b[0] = self.op as u8;
        b[1] = self.flags;
        b[2] = self.fault;
        b[3] = self.access;
        b[4..8].copy_from_slice(&self.generation.to_le_bytes());
        for (i, v) in [
            self.id,
            self.len,
            self.tag,
            self.imm,
            self.key,
            self.offset,
            self.extra,
        ]
        .into_iter()
        .enumerate()
        {
            b[8 + i * 8..16 + i * 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub(super) fn decode(b: &[u8; HDR]) -> Result<Header, String> {
        let op = match b[0] {
            1 => Op::Hello,
            2 => Op::Send,
            3 => Op::Write,
            4 => Op::ReadReq,
            5 => Op::Ack,
            6 => Op::Nak,
            7 => Op::ReadResp,
            x => return Err(format!("protocol error: unknown frame type {x}")),
        };
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let mut g = [0u8; 4];
        g.copy_from_slice(&b[4..8]);
        Ok(Header {
            op,
            flags: b[1],
            fault: b[2],
            access: b[3],
            generation: u32::from_le_bytes(g),
            id: u64_at(8),
            len: u64_at(16),
            tag: u64_at(24),
            imm: u64_at(32),
            key: u64_at(40),
            offset: u64_at(48),
            extra: u64_at(56),
        })
    }

    /// Whether this frame type is followed by `len` payload bytes.
    pub(super) fn has_payload(&self) -> bool {
        matches!(self.op, Op::Hello | Op::Send | Op::Write | Op::ReadResp)
    }

    pub(super) fn tag(&self) -> Option<u64> {
        (self.flags & F_TAGGED != 0).then_some(self.tag)
    }

    pub(super) fn imm(&self) -> Option<u64> {
        (self.flags & F_IMM != 0).then_some(self.imm)
    }

    /// A NAK for request `id` carrying `fault`.
    pub(super) fn nak(id: u64, key: u64, fault: AccessFault) -> Header {
        let mut h = Header::new(Op::Nak, id);
        h.key = key;
        match fault {
            AccessFault::BadKey => h.fault = 1,
            AccessFault::StaleKey => h.fault = 2,
            AccessFault::OutOfBounds { offset, len, limit } => {
                h.fault = 3;
                h.offset = offset;
                h.len = len;
                h.extra = limit;
            }
            AccessFault::NoAccess { need } => {
                h.fault = 4;
                h.access = need.bits();
            }
        }
        h
    }

    /// The fault a NAK carries.
    pub(super) fn fault(&self) -> Result<AccessFault, String> {
        Ok(match self.fault {
            1 => AccessFault::BadKey,
            2 => AccessFault::StaleKey,
            3 => AccessFault::OutOfBounds {
                offset: self.offset,
                len: self.len,
                limit: self.extra,
            },
            4 => AccessFault::NoAccess {
                need: Access::from_bits(self.access),
            },
            x => return Err(format!("protocol error: unknown NAK reason {x}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let mut h = Header::new(Op::Write, 7);
        h.flags = F_IMM | F_ACK;
        h.generation = 3;
        h.len = 1 << 40;
        h.imm = u64::MAX;
        h.key = 0xdead_beef;
        h.offset = 12;
        assert_eq!(Header::decode(&h.encode()), Ok(h));
    }

    #[test]
    fn unknown_frame_type_is_an_error() {
        let mut b = [0u8; HDR];
        b[0] = 99;
        assert!(Header::decode(&b).is_err_and(|e| e.contains("unknown frame type 99")));
    }

    #[test]
    fn nak_faults_round_trip() {
        for f in [
            AccessFault::BadKey,
            AccessFault::StaleKey,
            AccessFault::OutOfBounds {
                offset: 1,
                len: 2,
                limit: 3,
            },
            AccessFault::NoAccess {
                need: Access::REMOTE_READ,
            },
        ] {
            let h = Header::decode(&Header::nak(1, 2, f).encode()).expect("decode");
            assert_eq!(h.fault(), Ok(f));
        }
    }
}
