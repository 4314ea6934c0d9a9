//! Transports: how messages are delimited on a connection, detecting the transport
//! and protocol from a connection's first bytes, and [`MessageStream`], which cuts
//! whole messages out of the received buffers.
//!
//! - Framed: a 4-byte big-endian length, then the message. The frame is handed on as
//!   the received buffer itself when it lies in one; otherwise it is assembled once,
//!   into a buffer recycled per thread.
//! - Unframed ("buffered" in Apache's terms): messages back to back. Where one ends is
//!   found by skipping over it ([`binary::message_len`], [`compact::message_len`]) in
//!   what has arrived; an incomplete message waits for at least the bytes it is known
//!   to need. Always assembled when it spans buffers.

use super::error::DecodeError;
use super::protocol::{binary, compact, DecodeLimits, Protocol};
use super::theader::{self, HeaderInfo};
use bytes::Bytes;
use std::fmt;
use std::io;
use std::rc::Rc;
use zerorx::net::{BytesChain, Connection, CopyStats, FrameReader};

/// How messages are delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// TFramedTransport: a 4-byte big-endian length before each message.
    Framed,
    /// TBufferedTransport / raw socket: messages back to back.
    Unframed,
    /// THeader: a frame with a header before each message, which names the
    /// message's protocol (see [`HeaderInfo`]).
    Header,
    /// A THeader frame inside a plain frame: what Apache's header clients and servers
    /// send when also given `--transport=framed`.
    FramedHeader,
}

/// The default maximum frame (or unframed message) size: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 << 20;

/// What a connection's first bytes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detected {
    /// More bytes are needed to tell (at most 10 in total).
    NeedMore(usize),
    /// The transport and protocol (binary here means either header form).
    Found(Transport, Protocol),
    /// Not Thrift in any transport/protocol this crate speaks.
    Unknown(&'static str),
}

/// Tells the transport and protocol from a connection's first bytes:
///
/// - `0x80` first: unframed strict binary (a frame length that large is impossible);
/// - `0x82` first: unframed compact;
/// - otherwise byte 4 decides: `0x80` framed binary, `0x82` framed compact, `0x0F`
///   `0xFF` (bytes 4 and 5) THeader; `0x00` is framed non-strict binary (the name
///   length's high byte) unless bytes 8 and 9 are the THeader magic, which makes it a
///   THeader frame inside a plain frame; any other byte with a zero first byte is
///   unframed non-strict binary (a small name length followed by the name).
///
/// For THeader the protocol returned is a placeholder: each frame's header names
/// its own.
pub fn detect(prefix: &[u8]) -> Detected {
    match prefix.first() {
        None => return Detected::NeedMore(1),
        Some(0x80) => return Detected::Found(Transport::Unframed, Protocol::Binary),
        Some(&compact::PROTOCOL_ID) => {
            return Detected::Found(Transport::Unframed, Protocol::Compact)
        }
        Some(_) => {}
    }
    if prefix.len() < 5 {
        return Detected::NeedMore(5);
    }
    // THeader is told by bytes 4 and 5: with byte 4 the magic's first, wait for byte 5
    // rather than answer from 5 bytes what 6 would contradict.
    if prefix[4] == theader::MAGIC[0] {
        match prefix.get(5) {
            None => return Detected::NeedMore(6),
            Some(&b) if b == theader::MAGIC[1] => {
                return Detected::Found(Transport::Header, Protocol::Binary)
            }
            Some(_) => {}
        }
    }
    match prefix[4] {
        0x80 => Detected::Found(Transport::Framed, Protocol::Binary),
        compact::PROTOCOL_ID => Detected::Found(Transport::Framed, Protocol::Compact),
        // A non-strict name length, or the length of a header frame inside this one:
        // bytes 8 and 9 tell (a message is longer than 10 bytes either way).
        0x00 if prefix[0] == 0 => match prefix.get(8..10) {
            None => Detected::NeedMore(10),
            Some(m) if theader::is_header(m) => {
                Detected::Found(Transport::FramedHeader, Protocol::Binary)
            }
            Some(_) => Detected::Found(Transport::Framed, Protocol::BinaryNonStrict),
        },
        0x00 => Detected::Found(Transport::Framed, Protocol::BinaryNonStrict),
        _ if prefix[0] == 0 => Detected::Found(Transport::Unframed, Protocol::BinaryNonStrict),
        _ => Detected::Unknown("not a Thrift binary or compact message"),
    }
}

/// Why no message could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The socket failed.
    Io(io::Error),
    /// A frame (or unframed message) larger than the limit.
    TooLarge {
        /// Its size, or the least it is known to need.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The peer closed inside a message.
    Truncated,
    /// Bytes that are not a message (unframed transport, or detection).
    Protocol(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "i/o error: {e}"),
            ReadError::TooLarge { size, limit } => {
                write!(f, "message of {size} bytes exceeds the limit of {limit}")
            }
            ReadError::Truncated => f.write_str("connection closed inside a message"),
            ReadError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// One message cut out of the stream.
#[derive(Debug)]
pub struct Incoming {
    /// The message (without a frame prefix or header).
    pub bytes: Bytes,
    /// What its THeader said (THeader transports only).
    pub header: Option<HeaderInfo>,
    /// True when it was copied: together from several received buffers, or by the
    /// reader (past its hold limit, or because the receive pool ran low).
    pub copied: bool,
}

/// Whole messages from a connection.
pub struct MessageStream {
    reader: FrameReader<Rc<Connection>>,
    transport: Transport,
    protocol: Protocol,
    max: usize,
    limits: DecodeLimits,
}

impl MessageStream {
    /// Messages of `transport`/`protocol` from `reader` (which may already hold bytes,
    /// e.g. the ones detection looked at).
    pub fn new(
        reader: FrameReader<Rc<Connection>>,
        transport: Transport,
        protocol: Protocol,
        max: usize,
        limits: DecodeLimits,
    ) -> MessageStream {
        MessageStream {
            reader,
            transport,
            protocol,
            max,
            limits,
        }
    }

    /// Bytes received and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.reader.buffered().len()
    }

    /// What the reader has copied out of receive buffers so far.
    pub fn copy_stats(&self) -> CopyStats {
        self.reader.copy_stats()
    }

    /// The next message; `Ok(None)` when the peer closed between messages.
    /// Cancel-safe: dropping the future loses nothing.
    pub async fn next(&mut self) -> Result<Option<Incoming>, ReadError> {
        match self.transport {
            Transport::Framed => self.next_framed().await,
            Transport::Unframed => self.next_unframed().await,
            Transport::Header | Transport::FramedHeader => {
                let Some(mut incoming) = self.next_framed().await? else {
                    return Ok(None);
                };
                let mut frame = incoming.bytes;
                if self.transport == Transport::FramedHeader {
                    // The inner frame's length must cover exactly the rest.
                    let inner = frame
                        .get(..4)
                        .map(|l| u32::from_be_bytes([l[0], l[1], l[2], l[3]]));
                    if inner.map(|n| n as usize) != Some(frame.len().saturating_sub(4)) {
                        return Err(ReadError::Protocol(
                            "THeader: the inner frame's length is not the outer frame's".into(),
                        ));
                    }
                    frame = frame.slice(4..);
                }
                let (payload, info) = theader::parse(frame, self.max)?;
                incoming.bytes = payload;
                incoming.header = Some(info);
                Ok(Some(incoming))
            }
        }
    }

    async fn next_framed(&mut self) -> Result<Option<Incoming>, ReadError> {
        match self.reader.read_frame(self.max).await {
            Ok(None) => Ok(None),
            Ok(Some(chain)) => Ok(Some(self.incoming(chain))),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(ReadError::Truncated),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let mut header = [0u8; 4];
                self.reader.buffered().copy_prefix(&mut header);
                Err(ReadError::TooLarge {
                    size: u32::from_be_bytes(header) as usize,
                    limit: self.max,
                })
            }
            Err(e) => Err(ReadError::Io(e)),
        }
    }

    async fn next_unframed(&mut self) -> Result<Option<Incoming>, ReadError> {
        loop {
            let buffered = self.reader.buffered();
            let have = buffered.len();
            if have > 0 {
                let scan = match self.protocol {
                    Protocol::Compact => compact::message_len(buffered.clone(), self.limits),
                    _ => binary::message_len(buffered.clone(), self.limits),
                };
                match scan {
                    Ok(n) if n > self.max => {
                        return Err(ReadError::TooLarge {
                            size: n,
                            limit: self.max,
                        })
                    }
                    Ok(n) => {
                        let chain = self.reader.consume(n);
                        return Ok(Some(self.incoming(chain)));
                    }
                    Err(DecodeError::Truncated { needed, remaining }) => {
                        // Everything up to the failed read was there: the message is
                        // at least this long.
                        let at_least = (have - remaining).saturating_add(needed);
                        if at_least > self.max {
                            return Err(ReadError::TooLarge {
                                size: at_least,
                                limit: self.max,
                            });
                        }
                        if !self.fill(at_least).await? {
                            return Err(ReadError::Truncated);
                        }
                        continue;
                    }
                    Err(e) => return Err(ReadError::Protocol(e.to_string())),
                }
            }
            if !self.fill(1).await? {
                return Ok(None);
            }
        }
    }

    async fn fill(&mut self, n: usize) -> Result<bool, ReadError> {
        self.reader.fill(n).await.map_err(ReadError::Io)
    }

    fn incoming(&self, chain: BytesChain) -> Incoming {
        let copied = self.reader.last_copied() || !chain.is_contiguous();
        Incoming {
            bytes: chain.into_contiguous(),
            header: None,
            copied,
        }
    }
}

/// The frame length a connection's first 4 bytes announce when they can only be a
/// framed message: every unframed message starts with `0x80`, `0x82` or `0x00`, so a
/// non-zero first byte (other than those) is the high byte of a frame length.
fn framed_only_length(prefix: &[u8]) -> Option<usize> {
    match *prefix {
        [first, b1, b2, b3, ..] if !matches!(first, 0 | 0x80 | compact::PROTOCOL_ID) => {
            Some(u32::from_be_bytes([first, b1, b2, b3]) as usize)
        }
        _ => None,
    }
}

/// Waits for enough of a connection's first bytes to [`detect`] its transport and
/// protocol. `Ok(None)` if the peer closed before sending anything. A frame length
/// over `max_frame` that arrives alone is refused from its 4 bytes, so a client that
/// sends only an oversized length is not held open waiting for a fifth byte.
pub async fn detect_stream(
    reader: &mut FrameReader<Rc<Connection>>,
    max_frame: usize,
) -> Result<Option<(Transport, Protocol)>, ReadError> {
    let mut want = 1;
    loop {
        let got = reader.fill(want).await.map_err(ReadError::Io)?;
        let mut prefix = [0u8; 10];
        let n = reader.buffered().copy_prefix(&mut prefix);
        if !got && n == 0 {
            return Ok(None);
        }
        // With 5 bytes `detect` decides (garbage is a protocol error); with exactly 4 an
        // over-limit length is refused now rather than waiting for a fifth byte.
        let early = if n == 4 {
            framed_only_length(&prefix[..n])
        } else {
            None
        };
        if let Some(size) = early.filter(|&len| len > max_frame) {
            return Err(ReadError::TooLarge {
                size,
                limit: max_frame,
            });
        }
        match detect(&prefix[..n]) {
            Detected::Found(t, p) => return Ok(Some((t, p))),
            Detected::Unknown(why) => return Err(ReadError::Protocol(why.to_owned())),
            Detected::NeedMore(_) if !got => return Err(ReadError::Truncated),
            Detected::NeedMore(k) => want = k.max(n + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonzero_first_byte_can_only_be_a_frame_length() {
        assert_eq!(
            framed_only_length(&[0x7f, 0xff, 0xff, 0xff]),
            Some(0x7fff_ffff)
        );
        assert_eq!(framed_only_length(&[1, 0, 0, 0, 0x80]), Some(1 << 24));
        // Too short, or a start an unframed message can have: not decided here.
        assert_eq!(framed_only_length(&[0x7f, 0xff, 0xff]), None);
        assert_eq!(framed_only_length(&[0, 0xff, 0xff, 0xff]), None);
        assert_eq!(framed_only_length(&[0x80, 1, 0, 1]), None);
        assert_eq!(framed_only_length(&[0x82, 0x21, 0, 1]), None);
    }

    #[test]
    fn detects_every_transport_and_protocol() {
        use Protocol::*;
        use Transport::*;
        assert_eq!(detect(&[]), Detected::NeedMore(1));
        assert_eq!(detect(&[0x80, 1, 0, 1]), Detected::Found(Unframed, Binary));
        assert_eq!(detect(&[0x82, 0x21]), Detected::Found(Unframed, Compact));
        assert_eq!(detect(&[0, 0, 0]), Detected::NeedMore(5));
        assert_eq!(
            detect(&[0, 0, 0, 20, 0x80]),
            Detected::Found(Framed, Binary)
        );
        assert_eq!(
            detect(&[0, 0, 0, 20, 0x82]),
            Detected::Found(Framed, Compact)
        );
        assert_eq!(detect(&[0, 0, 0, 20, 0]), Detected::NeedMore(10));
        assert_eq!(
            detect(&[0, 0, 0, 20, 0, 0, 0, 4, b'n', b'a']),
            Detected::Found(Framed, BinaryNonStrict)
        );
        assert_eq!(
            detect(&[0, 0, 0, 40, 0, 0, 0, 36, 0x0f, 0xff]),
            Detected::Found(FramedHeader, Binary)
        );
        assert_eq!(
            detect(&[0, 0, 0, 36, 0x0f, 0xff]),
            Detected::Found(Header, Binary)
        );
        assert_eq!(
            detect(&[0, 0, 0, 3, b'a']),
            Detected::Found(Unframed, BinaryNonStrict)
        );
        assert!(matches!(detect(b"GET / HTTP/1.1"), Detected::Unknown(_)));
    }
}
