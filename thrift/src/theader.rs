//! THeader (Apache's `THeaderTransport`, the framing fbthrift uses): a frame whose
//! payload is one binary or compact message, preceded by a header.
//!
//! ```text
//! u32 length | 0x0FFF | u16 flags | u32 sequence id | u16 header size (4-byte words)
//! | varint protocol id (0 binary, 2 compact) | varint transform count, ids (1 zlib)
//! | info headers (1: key/value pairs) | zero padding | payload
//! ```
//!
//! Written by hand: it is a dozen lines of layout around the message codecs this
//! crate already has, and the payload must stay a slice of the received frame (no
//! library hands one out). Replies go back in the request's dialect with its flags and
//! protocol, without transforms or info headers, as Apache's servers answer.
//! Apache's test clients wrap the header frame in a plain frame when given
//! `--transport=framed`; [`Transport::FramedHeader`](crate::transport::Transport)
//! is that.

use crate::protocol::Protocol;
use crate::transport::ReadError;
use bytes::{Buf, Bytes};
use std::io::Read;

/// The magic after a THeader frame's length.
pub(crate) const MAGIC: [u8; 2] = [0x0f, 0xff];

/// Bytes before a header frame's payload as [`prefix`] writes it.
pub(crate) const PREFIX_LEN: usize = 18;

/// Protocol ids in the header.
const BINARY_ID: u64 = 0;
const COMPACT_ID: u64 = 2;
/// The zlib transform.
const ZLIB: u64 = 1;
/// Info header kinds.
const INFO_KEY_VALUE: u64 = 1;

/// What a received header says about its message, and how to answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderInfo {
    /// The payload's protocol.
    pub protocol: Protocol,
    /// The header's flags (echoed in the reply).
    pub flags: u16,
}

fn protocol_id(p: Protocol) -> u8 {
    match p {
        Protocol::Compact => COMPACT_ID as u8,
        Protocol::Binary | Protocol::BinaryNonStrict => BINARY_ID as u8,
    }
}

/// The 18 bytes before a header frame's payload of `payload_len` bytes, from its
/// length to its padding: no transforms, no info headers.
pub(crate) fn prefix(payload_len: u32, info: HeaderInfo, seqid: i32) -> [u8; PREFIX_LEN] {
    let mut p = [0u8; PREFIX_LEN];
    p[..4].copy_from_slice(&(payload_len + (PREFIX_LEN as u32 - 4)).to_be_bytes());
    p[4..6].copy_from_slice(&MAGIC);
    p[6..8].copy_from_slice(&info.flags.to_be_bytes());
    p[8..12].copy_from_slice(&seqid.to_be_bytes());
    p[12..14].copy_from_slice(&1u16.to_be_bytes()); // one word of variable header:
    p[14] = protocol_id(info.protocol); // the protocol, no transforms, padding
    p
}

fn varint(b: &mut &[u8]) -> Result<u64, ReadError> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = b.split_first() else {
            return Err(bad("header ends inside a varint"));
        };
        *b = rest;
        out |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err(bad("varint too long in header"))
}

fn bad(why: &str) -> ReadError {
    ReadError::Protocol(format!("THeader: {why}"))
}

/// Splits a header frame (without its length prefix) into its message and what the
/// header says; a zlib payload is inflated, up to `max` bytes.
pub(crate) fn parse(frame: Bytes, max: usize) -> Result<(Bytes, HeaderInfo), ReadError> {
    if frame.len() < 10 || frame[..2] != MAGIC {
        return Err(bad("not a header frame"));
    }
    let flags = u16::from_be_bytes([frame[2], frame[3]]);
    let words = usize::from(u16::from_be_bytes([frame[8], frame[9]]));
    let end = 10 + words * 4;
    if end > frame.len() {
        return Err(bad("header longer than its frame"));
    }
    let mut h = &frame[10..end];
    let protocol = match varint(&mut h)? {
        BINARY_ID => Protocol::Binary,
        COMPACT_ID => Protocol::Compact,
        other => return Err(bad(&format!("unknown protocol id {other}"))),
    };
    let transforms = varint(&mut h)?;
    let mut zlib = 0;
    for _ in 0..transforms {
        match varint(&mut h)? {
            ZLIB => zlib += 1,
            other => return Err(bad(&format!("unknown transform {other}"))),
        }
    }
    // Info headers are read past (no handler asks for them); an unknown kind or the
    // padding ends them, as in Apache's readers.
    while !h.is_empty() {
        if varint(&mut h)? != INFO_KEY_VALUE {
            break;
        }
        for _ in 0..varint(&mut h)?.saturating_mul(2) {
            let n = usize::try_from(varint(&mut h)?).unwrap_or(usize::MAX);
            if n > h.len() {
                return Err(bad("info header longer than the header"));
            }
            h.advance(n);
        }
    }
    let mut payload = frame.slice(end..);
    for _ in 0..zlib {
        payload = inflate(&payload, max)?;
    }
    Ok((payload, HeaderInfo { protocol, flags }))
}

/// A zlib stream's content, refused past `max` bytes (a small frame must not become
/// a large allocation).
fn inflate(data: &[u8], max: usize) -> Result<Bytes, ReadError> {
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::ZlibDecoder::new(data)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| bad(&format!("zlib: {e}")))?;
    if out.len() > max {
        return Err(ReadError::TooLarge {
            size: out.len(),
            limit: max,
        });
    }
    Ok(Bytes::from(out))
}

/// True when a frame's first bytes (after its length) are the THeader magic.
pub(crate) fn is_header(frame_start: &[u8]) -> bool {
    frame_start.get(..2) == Some(&MAGIC[..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn frame(var: &[u8], payload: &[u8]) -> Bytes {
        let mut v = vec![0x0f, 0xff, 0x00, 0x05, 0, 0, 0, 9];
        assert!(var.len().is_multiple_of(4));
        v.extend_from_slice(&((var.len() / 4) as u16).to_be_bytes());
        v.extend_from_slice(var);
        v.extend_from_slice(payload);
        Bytes::from(v)
    }

    #[test]
    fn the_written_prefix_parses_back() {
        let info = HeaderInfo {
            protocol: Protocol::Compact,
            flags: 7,
        };
        let p = prefix(3, info, -2);
        assert_eq!(
            u32::from_be_bytes(p[..4].try_into().unwrap()) as usize,
            3 + 14
        );
        let mut f = p[4..].to_vec();
        f.extend_from_slice(b"abc");
        let (payload, got) = parse(Bytes::from(f), 100).unwrap();
        assert_eq!((&payload[..], got), (&b"abc"[..], info));
        assert_eq!(i32::from_be_bytes(p[8..12].try_into().unwrap()), -2);
    }

    #[test]
    fn info_headers_are_skipped_and_zlib_is_inflated() {
        // binary, no transforms, one key/value pair "k"="vv", padding.
        let f = frame(&[0, 0, 1, 1, 1, b'k', 2, b'v', b'v', 0, 0, 0], b"msg");
        assert_eq!(&parse(f, 100).unwrap().0[..], b"msg");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&[b'x'; 1000]).unwrap();
        let packed = z.finish().unwrap();
        let f = frame(&[2, 1, 1, 0], &packed);
        let (payload, info) = parse(f.clone(), 1000).unwrap();
        assert_eq!((payload.len(), info.protocol), (1000, Protocol::Compact));
        assert!(matches!(
            parse(f, 999),
            Err(ReadError::TooLarge {
                size: 1000,
                limit: 999
            })
        ));
    }

    #[test]
    fn malformed_headers_are_errors() {
        for (f, why) in [
            (Bytes::from_static(b"\x0f\xff\0"), "not a header frame"),
            (frame(&[9, 0, 0, 0], b""), "unknown protocol id 9"),
            (frame(&[0, 1, 5, 0], b""), "unknown transform 5"),
            (
                frame(&[0, 0, 1, 1, 9, 0, 0, 0], b""),
                "longer than the header",
            ),
            (frame(&[0, 0x80, 0x80, 0x80], b""), "inside a varint"),
            (
                Bytes::from_static(&[0x0f, 0xff, 0, 0, 0, 0, 0, 0, 0, 9]),
                "longer than its frame",
            ),
        ] {
            match parse(f, 100) {
                Err(ReadError::Protocol(m)) => assert!(m.contains(why), "{m} / {why}"),
                other => panic!("{why}: {other:?}"),
            }
        }
        let f = frame(&[0, 1, 1, 0], b"not zlib");
        assert!(matches!(parse(f, 100), Err(ReadError::Protocol(m)) if m.contains("zlib")));
    }
}
