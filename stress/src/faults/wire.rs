//! The two languages a fault connection can misbehave in: the harness's frames
//! ([`crate::wire`]) or framed Thrift (binary protocol) for the `Bench` service. Each
//! knows how to build a good request, a cut one, garbage, an oversized header and a
//! corrupt request, and how to judge what comes back.

use crate::client::ledger::{Judgement, Ledger, Pending};
use crate::client::LoadPlan;
use crate::errors::ErrorKind;
use crate::framer::Framer;
use crate::wire::{request, Header, Kind};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::collections::HashMap;
use std::time::Instant;
use zerorx_cli::bench::EchoArgs;
use zerorx_thrift::{encode_message, DecodeLimits, MessageReader, MessageType, Protocol, Returns};

/// Which language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireKind {
    /// The harness's frames.
    Frames,
    /// Framed Thrift, binary protocol.
    Thrift,
}

/// What a reply turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The correct answer to request `id`.
    Ok(u64),
    /// The server refused request `id` as broken (a reject frame, or a Thrift
    /// exception naming its sequence id).
    Refused(u64),
    /// Anything else, in words.
    Wrong(String),
}

/// The per-connection state of one language.
pub enum Wire {
    /// Harness frames.
    Frames {
        /// Requests in flight.
        ledger: Ledger,
        /// Reply splitter.
        framer: Framer,
    },
    /// Thrift.
    Thrift {
        /// Next sequence id.
        seqid: i32,
        /// Echo data sent, by sequence id.
        sent: HashMap<i32, Bytes>,
        /// Bytes received and not yet a whole frame.
        buf: BytesMut,
        /// Largest frame accepted.
        max_frame: usize,
    },
}

impl Wire {
    /// A fresh connection's state.
    pub fn new(kind: WireKind, conn: u32, max_frame: u32) -> Wire {
        match kind {
            WireKind::Frames => Wire::Frames {
                ledger: Ledger::new(conn),
                framer: Framer::new(max_frame),
            },
            WireKind::Thrift => Wire::Thrift {
                seqid: 1,
                sent: HashMap::new(),
                buf: BytesMut::new(),
                max_frame: max_frame as usize,
            },
        }
    }

    /// A correct echo request of `size` bytes, remembered for judging its reply.
    pub fn good(&mut self, load: &LoadPlan, size: usize) -> (Vec<Bytes>, u64) {
        match self {
            Wire::Frames { ledger, .. } => {
                let id = ledger.next_id();
                let payload = load.payloads.payload(id, size);
                let (h, crc) = request(Kind::Echo, ledger.conn(), id, &payload);
                ledger.sent(id, pending(payload.len(), crc));
                (vec![h, payload], id)
            }
            Wire::Thrift {
                seqid,
                sent,
                max_frame,
                ..
            } => {
                let s = next(seqid);
                let data = load.payloads.payload(s as u64, size);
                sent.insert(s, data.clone());
                let segs = encode_message(
                    Protocol::Binary,
                    true,
                    *max_frame,
                    b"echo",
                    MessageType::Call,
                    s,
                    &EchoArgs { data },
                )
                .unwrap_or_default();
                (segs, s as u64)
            }
        }
    }

    /// A request announcing `size` bytes of which only half follow.
    pub fn cut(&mut self, load: &LoadPlan, size: usize) -> Vec<Bytes> {
        let (mut segs, _) = self.good(load, size);
        let total: usize = segs.iter().map(Bytes::len).sum();
        let keep = total / 2;
        let mut out = Vec::new();
        let mut left = keep;
        for s in segs.drain(..) {
            if left == 0 {
                break;
            }
            let n = s.len().min(left);
            out.push(s.slice(..n));
            left -= n;
        }
        out
    }

    /// Bytes that are not a request at all.
    pub fn garbage(&self) -> Bytes {
        match self {
            Wire::Frames { .. } => Bytes::from_static(b"GARBAGE!GARBAGE!GARBAGE!GARBAGE!"),
            // A 16-byte frame of 0xff: no Thrift message header starts like that.
            Wire::Thrift { .. } => {
                let mut b = BytesMut::with_capacity(20);
                b.put_u32(16);
                b.put_bytes(0xff, 16);
                b.freeze()
            }
        }
    }

    /// A header announcing one byte over `max`; `None` if `max` is the largest length.
    pub fn oversized(&mut self, max: u32) -> Option<Bytes> {
        let len = max.checked_add(1)?;
        Some(match self {
            Wire::Frames { ledger, .. } => {
                let h = Header {
                    kind: Kind::Echo,
                    conn: ledger.conn(),
                    len,
                    id: ledger.next_id(),
                    crc: 0,
                    aux: 0,
                };
                Bytes::copy_from_slice(&h.encode(&[]).0)
            }
            // The length, then the start of a strict binary call header: enough for
            // a server that detects the transport from the first bytes to know this
            // is a frame, and that it is too large.
            Wire::Thrift { .. } => {
                let mut b = BytesMut::with_capacity(8);
                b.put_u32(len);
                b.put_u32(0x8001_0001);
                b.freeze()
            }
        })
    }

    /// A request that is broken inside (frames: a payload that does not match its CRC;
    /// Thrift: a struct field of an unknown type) and its id.
    pub fn corrupt(&mut self, load: &LoadPlan, size: usize) -> (Vec<Bytes>, u64) {
        match self {
            Wire::Frames { ledger, .. } => {
                let id = ledger.next_id();
                let payload = load.payloads.payload(id, size.max(1));
                let (h, crc) = request(Kind::Echo, ledger.conn(), id, &payload);
                ledger.sent(id, pending(payload.len(), crc));
                let mut bad = payload.to_vec();
                bad[0] ^= 0x01;
                (vec![h, Bytes::from(bad)], id)
            }
            Wire::Thrift { seqid, .. } => {
                let s = next(seqid);
                let name = b"echo";
                let mut body = BytesMut::new();
                body.put_u32(0x8001_0001); // strict binary, call
                body.put_u32(name.len() as u32);
                body.put_slice(name);
                body.put_i32(s);
                body.put_u8(0x7f); // a field type id Thrift does not have
                body.put_i16(1);
                body.put_u8(0);
                let mut framed = BytesMut::with_capacity(body.len() + 4);
                framed.put_u32(body.len() as u32);
                framed.put_slice(&body);
                (vec![framed.freeze()], s as u64)
            }
        }
    }

    /// Judges the received bytes `chunk`, returning every reply they complete.
    pub fn replies(&mut self, chunk: Bytes) -> Result<Vec<Reply>, String> {
        match self {
            Wire::Frames { ledger, framer } => {
                framer.push(chunk);
                let mut out = Vec::new();
                while let Some(f) = framer.next_frame().map_err(|e| e.to_string())? {
                    out.push(match ledger.judge(&f) {
                        Judgement::Ok { id, .. } => Reply::Ok(id),
                        Judgement::Bad {
                            kind: ErrorKind::Rejected,
                            id: Some(id),
                            ..
                        } => Reply::Refused(id),
                        Judgement::Bad {
                            kind, id, detail, ..
                        } => Reply::Wrong(format!("{kind} reply (id {id:x?}): {detail}")),
                    });
                }
                Ok(out)
            }
            Wire::Thrift {
                sent,
                buf,
                max_frame,
                ..
            } => {
                buf.extend_from_slice(&chunk);
                let mut out = Vec::new();
                while buf.len() >= 4 {
                    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    if len > *max_frame {
                        return Err(format!("reply frame of {len} bytes"));
                    }
                    if buf.len() < 4 + len {
                        break;
                    }
                    buf.advance(4);
                    let body = buf.split_to(len).freeze();
                    out.push(judge_thrift(sent, body));
                }
                Ok(out)
            }
        }
    }
}

fn next(seqid: &mut i32) -> i32 {
    let s = *seqid;
    *seqid = seqid.wrapping_add(1);
    s
}

fn pending(len: usize, crc: u32) -> Pending {
    Pending {
        intended: Instant::now(),
        kind: Kind::Echo,
        len: len as u32,
        crc,
    }
}

fn judge_thrift(sent: &mut HashMap<i32, Bytes>, body: Bytes) -> Reply {
    let mut r = MessageReader::new(Protocol::Binary, body, DecodeLimits::default());
    let h = match r.read_header() {
        Ok(h) => h,
        Err(e) => return Reply::Wrong(format!("reply header: {e}")),
    };
    match h.kind {
        MessageType::Exception => Reply::Refused(h.seqid as u64),
        MessageType::Reply => {
            let Some(want) = sent.remove(&h.seqid) else {
                return Reply::Wrong(format!("reply to seqid {} never sent", h.seqid));
            };
            match r.decode::<Returns<Bytes>>() {
                Ok(Returns(got)) if got == want => Reply::Ok(h.seqid as u64),
                Ok(_) => Reply::Wrong(format!("echo of seqid {} came back different", h.seqid)),
                Err(e) => Reply::Wrong(format!("reply to seqid {}: {e}", h.seqid)),
            }
        }
        other => Reply::Wrong(format!("message type {other:?} from the server")),
    }
}
