//! The harness's own frame format for the `stream`, `churn` and fault scenarios.
//!
//! Every frame is a 32-byte header followed by `len` payload bytes:
//!
//! ```text
//! 0  magic "ZRXS"   4  version (1)   5  kind   6  flags (0)
//! 8  conn (u32)     12 len (u32)     16 id (u64)
//! 24 crc (u32)      28 aux (u32)
//! ```
//!
//! All integers are big-endian. `crc` is CRC-32 over header bytes `0..24` and the payload,
//! so a flipped byte anywhere but in `crc`/`aux` is caught (CRC-32 detects every error
//! burst up to 32 bits). `conn` names the connection the request was sent on, which
//! lets the harness tell a misrouted reply from a corrupted one.

use bytes::{BufMut, Bytes, BytesMut};
use std::fmt;

/// Header size in bytes.
pub const HEADER_LEN: usize = 32;
/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"ZRXS";
/// The only version this harness speaks.
pub const VERSION: u8 = 1;

/// What a frame asks for or answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Request: send this frame back unchanged.
    Echo = 1,
    /// Request: consume the payload and answer with an [`Kind::Ack`].
    Sink = 2,
    /// Reply to a `Sink`: `aux` is the CRC the server computed over the request.
    Ack = 3,
    /// Reply: the server rejected the request with `id`; `aux` is a [`Reject`] code.
    Reject = 4,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Echo,
            2 => Kind::Sink,
            3 => Kind::Ack,
            4 => Kind::Reject,
            _ => return None,
        })
    }
}

/// Why a server rejected a request (the `aux` of a [`Kind::Reject`] frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// The request's CRC did not match its bytes.
    BadChecksum = 1,
    /// A request kind the server does not serve (a reply kind sent as a request).
    BadKind = 2,
}

impl Reject {
    /// The code's meaning, for reports.
    pub fn describe(code: u32) -> &'static str {
        match code {
            1 => "server found a bad checksum",
            2 => "server got a reply kind as a request",
            _ => "server rejected it (unknown code)",
        }
    }
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Frame kind.
    pub kind: Kind,
    /// Connection number the request was sent on.
    pub conn: u32,
    /// Payload length.
    pub len: u32,
    /// Request id, unique in a run.
    pub id: u64,
    /// CRC-32 over header bytes `0..24` and the payload.
    pub crc: u32,
    /// Kind-specific word (see [`Kind`]).
    pub aux: u32,
}

/// Why bytes are not a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Wrong magic, version or kind.
    Malformed {
        /// The first four bytes that were found.
        magic: [u8; 4],
        /// The version byte.
        version: u8,
        /// The kind byte.
        kind: u8,
    },
    /// `len` is over the receiver's limit; nothing was allocated for it.
    Oversized {
        /// The announced payload length.
        len: u32,
        /// The receiver's limit.
        max: u32,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Malformed {
                magic,
                version,
                kind,
            } => write!(
                f,
                "malformed frame header (magic {magic:02x?}, version {version}, kind {kind})"
            ),
            FrameError::Oversized { len, max } => {
                write!(f, "frame of {len} bytes is over the limit of {max}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

impl Header {
    /// Decodes and validates a header; `max_len` bounds the payload.
    pub fn decode(b: &[u8; HEADER_LEN], max_len: u32) -> Result<Header, FrameError> {
        let magic = [b[0], b[1], b[2], b[3]];
        let kind = Kind::from_u8(b[5]);
        let (true, VERSION, Some(kind)) = (magic == MAGIC, b[4], kind) else {
            return Err(FrameError::Malformed {
                magic,
                version: b[4],
                kind: b[5],
            });
        };
        let len = u32_at(b, 12);
        if len > max_len {
            return Err(FrameError::Oversized { len, max: max_len });
        }
        Ok(Header {
            kind,
            conn: u32_at(b, 8),
            len,
            id: u64::from_be_bytes([b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23]]),
            crc: u32_at(b, 24),
            aux: u32_at(b, 28),
        })
    }

    /// Encodes the header, computing `crc` over it and `payload` (the `crc` field of
    /// `self` is ignored). Returns the bytes and the CRC.
    pub fn encode(&self, payload: &[u8]) -> ([u8; HEADER_LEN], u32) {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = self.kind as u8;
        b[8..12].copy_from_slice(&self.conn.to_be_bytes());
        b[12..16].copy_from_slice(&self.len.to_be_bytes());
        b[16..24].copy_from_slice(&self.id.to_be_bytes());
        let crc = crc_of(&b[..24], payload);
        b[24..28].copy_from_slice(&crc.to_be_bytes());
        b[28..32].copy_from_slice(&self.aux.to_be_bytes());
        (b, crc)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// CRC-32 over a header's first 24 bytes and a payload.
pub fn crc_of(header24: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header24);
    h.update(payload);
    h.finalize()
}

/// A whole frame: header and payload in one `Bytes` (a slice of a receive buffer when
/// the frame arrived in one piece).
#[derive(Clone, Debug)]
pub struct Frame {
    /// The decoded header.
    pub header: Header,
    /// Header and payload bytes, exactly as received.
    pub bytes: Bytes,
    /// The frame spanned several receive buffers and was copied together.
    pub assembled: bool,
}

impl Frame {
    /// The payload.
    pub fn payload(&self) -> Bytes {
        self.bytes.slice(HEADER_LEN..)
    }

    /// Whether the CRC matches the bytes.
    pub fn crc_ok(&self) -> bool {
        crc_of(&self.bytes[..24], &self.bytes[HEADER_LEN..]) == self.header.crc
    }

    /// The CRC of the bytes as received (what the sender's CRC should have been).
    pub fn computed_crc(&self) -> u32 {
        crc_of(&self.bytes[..24], &self.bytes[HEADER_LEN..])
    }
}

/// A reply frame without payload (`Ack` or `Reject`).
pub fn reply(kind: Kind, conn: u32, id: u64, aux: u32) -> Bytes {
    let h = Header {
        kind,
        conn,
        len: 0,
        id,
        crc: 0,
        aux,
    };
    let (b, _) = h.encode(&[]);
    Bytes::copy_from_slice(&b)
}

/// A request header for `payload`; returns the header bytes and the frame's CRC.
pub fn request(kind: Kind, conn: u32, id: u64, payload: &[u8]) -> (Bytes, u32) {
    let h = Header {
        kind,
        conn,
        len: payload.len() as u32,
        id,
        crc: 0,
        aux: 0,
    };
    let (b, crc) = h.encode(payload);
    (Bytes::copy_from_slice(&b), crc)
}

/// A pool of pseudo-random bytes that payloads are sliced from without copying; the
/// offset depends on the request id, so neighbouring requests carry different bytes
/// and a reply swapped with another one fails its CRC.
#[derive(Clone, Debug)]
pub struct PayloadSource {
    pool: Bytes,
    max: usize,
}

impl PayloadSource {
    /// Bytes for payloads of up to `max` bytes, from `seed`.
    pub fn new(max: usize, seed: u64) -> PayloadSource {
        let len = max * 2 + 4096;
        let mut b = BytesMut::with_capacity(len);
        let mut x = seed | 1;
        while b.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.put_u64(x);
        }
        b.truncate(len);
        PayloadSource {
            pool: b.freeze(),
            max,
        }
    }

    /// `size` bytes (at most `max`) for request `id`.
    pub fn payload(&self, id: u64, size: usize) -> Bytes {
        let size = size.min(self.max);
        let span = self.pool.len() - size;
        let off = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize % span.max(1);
        self.pool.slice(off..off + size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_crc_catches_every_single_byte_flip() {
        let src = PayloadSource::new(256, 7);
        let payload = src.payload(42, 200);
        let (hdr, crc) = request(Kind::Echo, 9, 42, &payload);
        let mut whole = hdr.to_vec();
        whole.extend_from_slice(&payload);
        let arr: [u8; HEADER_LEN] = whole[..HEADER_LEN].try_into().expect("32 bytes");
        let h = Header::decode(&arr, 1024).expect("valid");
        assert_eq!(
            (h.kind, h.conn, h.len, h.id, h.crc),
            (Kind::Echo, 9, 200, 42, crc)
        );
        for i in (0..24).chain(HEADER_LEN..whole.len()) {
            let mut bad = whole.clone();
            bad[i] ^= 0x01;
            assert_ne!(crc_of(&bad[..24], &bad[HEADER_LEN..]), crc, "flip at {i}");
        }
    }

    #[test]
    fn bad_headers_are_named() {
        let (hdr, _) = request(Kind::Sink, 1, 1, &[0u8; 10]);
        let mut b: [u8; HEADER_LEN] = hdr[..].try_into().expect("32");
        assert_eq!(
            Header::decode(&b, 5),
            Err(FrameError::Oversized { len: 10, max: 5 })
        );
        b[5] = 99;
        assert!(matches!(
            Header::decode(&b, 1 << 20),
            Err(FrameError::Malformed { kind: 99, .. })
        ));
        b[5] = 1;
        b[0] = b'X';
        assert!(matches!(
            Header::decode(&b, 1 << 20),
            Err(FrameError::Malformed { .. })
        ));
    }

    #[test]
    fn payloads_differ_by_id() {
        let src = PayloadSource::new(64, 1);
        assert_ne!(src.payload(1, 64), src.payload(2, 64));
        assert_eq!(src.payload(5, 64), src.payload(5, 64));
        assert_eq!(src.payload(5, 1000).len(), 64);
    }
}
