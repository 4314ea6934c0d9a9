//! Whole messages: encode a header and body with a [`Protocol`], and read one back
//! with [`MessageReader`] (header first, then the body as the method's type).

use super::codec::{ThriftDecode, ThriftEncode};
use super::error::{DecodeError, EncodeError};
use super::out::{Framing, OutBuf, Segments};
use super::protocol::binary::{BinaryReader, BinaryWriter};
use super::protocol::compact::{CompactReader, CompactWriter};
use super::protocol::ProtocolWrite;
use super::protocol::{DecodeLimits, MessageHeader, MessageType, Protocol, ProtocolRead, TType};
use super::value::Value;
use bytes::Bytes;

/// What can follow a message header: any [`ThriftEncode`] struct (args, result,
/// exception), or a [`Value`] (which should be a struct).
pub trait MessageBody {
    /// Writes the body.
    fn encode_body<W: ProtocolWrite>(&self, w: &mut W);
}

impl<T: ThriftEncode + ?Sized> MessageBody for T {
    fn encode_body<W: ProtocolWrite>(&self, w: &mut W) {
        self.encode(w)
    }
}

impl MessageBody for Value {
    fn encode_body<W: ProtocolWrite>(&self, w: &mut W) {
        self.encode(w)
    }
}

/// Encodes one message: header, then `body` (the args or result struct). `framed`
/// adds the 4-byte length prefix; the message may not exceed `max_frame` bytes.
pub fn encode_message<T: MessageBody + ?Sized>(
    protocol: Protocol,
    framed: bool,
    max_frame: usize,
    name: &[u8],
    kind: MessageType,
    seqid: i32,
    body: &T,
) -> Result<Vec<Bytes>, EncodeError> {
    let framing = if framed {
        Framing::Length
    } else {
        Framing::None
    };
    encode_framed(framing, protocol, max_frame, name, kind, seqid, body).map(Segments::into_vec)
}

/// [`encode_message`] with any framing, THeader included.
pub(crate) fn encode_framed<T: MessageBody + ?Sized>(
    framing: Framing,
    protocol: Protocol,
    max_frame: usize,
    name: &[u8],
    kind: MessageType,
    seqid: i32,
    body: &T,
) -> Result<Segments, EncodeError> {
    let mut out = OutBuf::with_framing(framing, seqid);
    write_message(&mut out, protocol, name, kind, seqid, body);
    out.finish_segments(max_frame)
}

/// Writes one message into `out`.
pub fn write_message<T: MessageBody + ?Sized>(
    out: &mut OutBuf,
    protocol: Protocol,
    name: &[u8],
    kind: MessageType,
    seqid: i32,
    body: &T,
) {
    match protocol {
        Protocol::Binary | Protocol::BinaryNonStrict => {
            let mut w = if protocol == Protocol::Binary {
                BinaryWriter::new(out)
            } else {
                BinaryWriter::non_strict(out)
            };
            w.write_message_begin(name, kind, seqid);
            body.encode_body(&mut w);
        }
        Protocol::Compact => {
            let mut w = CompactWriter::new(out);
            w.write_message_begin(name, kind, seqid);
            body.encode_body(&mut w);
        }
    }
}

/// Reads one message from a contiguous buffer: [`read_header`](Self::read_header),
/// then the body with [`decode`](Self::decode) or [`skip_body`](Self::skip_body).
#[derive(Debug)]
pub enum MessageReader {
    /// TBinaryProtocol (either header form).
    Binary(BinaryReader<Bytes>),
    /// TCompactProtocol.
    Compact(CompactReader<Bytes>),
}

impl MessageReader {
    /// A reader of `protocol` over `input` (`Binary` and `BinaryNonStrict` read both
    /// header forms).
    pub fn new(protocol: Protocol, input: Bytes, limits: DecodeLimits) -> MessageReader {
        match protocol {
            Protocol::Binary | Protocol::BinaryNonStrict => {
                MessageReader::Binary(BinaryReader::with_limits(input, limits))
            }
            Protocol::Compact => MessageReader::Compact(CompactReader::with_limits(input, limits)),
        }
    }

    /// The message header.
    pub fn read_header(&mut self) -> Result<MessageHeader, DecodeError> {
        match self {
            MessageReader::Binary(r) => r.read_message_begin(),
            MessageReader::Compact(r) => r.read_message_begin(),
        }
    }

    /// The protocol the last header was written in (a reply mirrors it).
    pub fn protocol(&self) -> Protocol {
        match self {
            MessageReader::Binary(r) if r.last_message_strict() => Protocol::Binary,
            MessageReader::Binary(_) => Protocol::BinaryNonStrict,
            MessageReader::Compact(_) => Protocol::Compact,
        }
    }

    /// Decodes the body as `T`.
    pub fn decode<T: ThriftDecode>(&mut self) -> Result<T, DecodeError> {
        match self {
            MessageReader::Binary(r) => T::decode(r),
            MessageReader::Compact(r) => T::decode(r),
        }
    }

    /// Decodes the body without a schema.
    pub fn decode_value(&mut self) -> Result<Value, DecodeError> {
        match self {
            MessageReader::Binary(r) => Value::decode(r, TType::Struct),
            MessageReader::Compact(r) => Value::decode(r, TType::Struct),
        }
    }

    /// Skips the body, checking it is well-formed.
    pub fn skip_body(&mut self) -> Result<(), DecodeError> {
        match self {
            MessageReader::Binary(r) => r.skip(TType::Struct),
            MessageReader::Compact(r) => r.skip(TType::Struct),
        }
    }

    /// Bytes left after what was read.
    pub fn remaining(&self) -> usize {
        match self {
            MessageReader::Binary(r) => r.remaining(),
            MessageReader::Compact(r) => r.remaining(),
        }
    }
}
