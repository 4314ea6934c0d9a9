//! Thrift wire protocols: the types every protocol shares and the [`ProtocolRead`] /
//! [`ProtocolWrite`] traits that typed values ([`ThriftEncode`](super::ThriftEncode),
//! [`ThriftDecode`](super::ThriftDecode)) are written against.
//!
//! - [`binary`]: TBinaryProtocol, strict (versioned) and non-strict message headers.
//! - [`compact`] is TCompactProtocol.
//!
//! Readers work over any [`bytes::Buf`]. Over a [`Bytes`] (a received frame),
//! `binary`/`string` values come out as slices of it, without copying. Each module has
//! entry points that decode a whole message or value from a buffer
//! ([`binary::decode_message`], [`compact::decode_message`], ...): the fuzz targets call
//! those.
//!
//! Readers are defensive: every read checks the bytes are there first, container
//! counts are checked against the remaining input (each element takes at least one
//! byte) and [`DecodeLimits`] before anything is allocated, nesting is bounded, and
//! unknown type ids are errors.

pub mod binary;
pub mod compact;
mod stack;

pub(crate) use stack::FieldIdStack;

use super::error::DecodeError;
use bytes::Bytes;

/// A Thrift value type (what a field, element, key or value is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TType {
    /// `bool`
    Bool,
    /// `byte` / `i8`
    I8,
    /// `double`
    Double,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `binary` and `string` (the same on the wire)
    Binary,
    /// `struct`, `union`, `exception`
    Struct,
    /// `map`
    Map,
    /// `set`
    Set,
    /// `list`
    List,
    /// `uuid` (16 bytes)
    Uuid,
}

impl TType {
    /// Every type, for exhaustive tests.
    pub const ALL: [TType; 12] = [
        TType::Bool,
        TType::I8,
        TType::Double,
        TType::I16,
        TType::I32,
        TType::I64,
        TType::Binary,
        TType::Struct,
        TType::Map,
        TType::Set,
        TType::List,
        TType::Uuid,
    ];
}

/// The kind of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// A request that expects a reply.
    Call = 1,
    /// A successful reply (the result struct may still carry a declared exception).
    Reply = 2,
    /// A reply carrying a `TApplicationException`.
    Exception = 3,
    /// A request that gets no reply.
    Oneway = 4,
}

impl MessageType {
    /// The type for a wire id.
    pub fn from_id(id: u8) -> Result<MessageType, DecodeError> {
        match id {
            1 => Ok(MessageType::Call),
            2 => Ok(MessageType::Reply),
            3 => Ok(MessageType::Exception),
            4 => Ok(MessageType::Oneway),
            other => Err(DecodeError::InvalidMessageType(other)),
        }
    }
}

/// The header of a message: method name, kind, sequence id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageHeader {
    /// Method name, a slice of the input.
    pub name: Bytes,
    /// Call, reply, exception or oneway.
    pub kind: MessageType,
    /// The id a reply echoes back.
    pub seqid: i32,
}

/// A field header inside a struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldHeader {
    /// The field id.
    pub id: i16,
    /// The field's type.
    pub ttype: TType,
}

/// A list or set header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListHeader {
    /// Element type.
    pub elem: TType,
    /// Element count, already checked against the input and the limits.
    pub len: usize,
}

/// A map header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapHeader {
    /// Key and value types; `None` only for an empty map in the compact protocol,
    /// which does not carry them.
    pub types: Option<(TType, TType)>,
    /// Entry count, already checked against the input and the limits.
    pub len: usize,
}

/// The wire protocol of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// TBinaryProtocol with versioned (strict) message headers, what Apache Thrift
    /// writes by default.
    Binary,
    /// TBinaryProtocol with old-style (non-strict) message headers: name first, no
    /// version.
    BinaryNonStrict,
    /// TCompactProtocol.
    Compact,
}

/// Bounds a reader enforces on untrusted input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Deepest nesting of structs and containers (default 64).
    pub max_depth: usize,
    /// Most elements (or map entries) in one container (default 16 Mi). Independently
    /// of it, a container may never declare more elements than the remaining input
    /// could hold.
    pub max_container_len: usize,
    /// Longest `string` or `binary`, in bytes (default: no limit beyond the frame's;
    /// Apache's `TConfiguration` string limit, `--string-limit` in its test servers).
    pub max_string_len: usize,
}

impl DecodeLimits {
    /// A `string` or `binary` of `len` bytes is within the limit.
    pub(crate) fn check_string(&self, len: usize) -> Result<(), DecodeError> {
        if len > self.max_string_len {
            return Err(DecodeError::StringLimit {
                len,
                limit: self.max_string_len,
            });
        }
        Ok(())
    }
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_depth: 64,
            max_container_len: 16 << 20,
            max_string_len: usize::MAX,
        }
    }
}

/// Reads Thrift values from a buffer. Implemented by [`binary::BinaryReader`] and
/// [`compact::CompactReader`]; typed decoders are generic over it.
///
/// Every `*_begin` of a struct or container counts one nesting level, given back by
/// the matching `*_end`.
pub trait ProtocolRead {
    /// Reads a message header.
    fn read_message_begin(&mut self) -> Result<MessageHeader, DecodeError>;
    /// Enters a struct.
    fn read_struct_begin(&mut self) -> Result<(), DecodeError>;
    /// Leaves a struct (after [`read_field_begin`](Self::read_field_begin) returned `None`).
    fn read_struct_end(&mut self);
    /// The next field's header, or `None` at the struct's stop byte.
    fn read_field_begin(&mut self) -> Result<Option<FieldHeader>, DecodeError>;
    /// A `bool`.
    fn read_bool(&mut self) -> Result<bool, DecodeError>;
    /// An `i8`.
    fn read_i8(&mut self) -> Result<i8, DecodeError>;
    /// An `i16`.
    fn read_i16(&mut self) -> Result<i16, DecodeError>;
    /// An `i32`.
    fn read_i32(&mut self) -> Result<i32, DecodeError>;
    /// An `i64`.
    fn read_i64(&mut self) -> Result<i64, DecodeError>;
    /// A `double`.
    fn read_double(&mut self) -> Result<f64, DecodeError>;
    /// A `binary` or `string`: a slice of the input when the input is a [`Bytes`] (or
    /// the bytes lie in one segment of a chain), a copy otherwise.
    fn read_binary(&mut self) -> Result<Bytes, DecodeError>;
    /// Skips a `binary` or `string` without looking at it.
    fn skip_binary(&mut self) -> Result<(), DecodeError>;
    /// A `uuid`.
    fn read_uuid(&mut self) -> Result<[u8; 16], DecodeError>;
    /// Enters a list.
    fn read_list_begin(&mut self) -> Result<ListHeader, DecodeError>;
    /// Enters a set.
    fn read_set_begin(&mut self) -> Result<ListHeader, DecodeError>;
    /// Enters a map.
    fn read_map_begin(&mut self) -> Result<MapHeader, DecodeError>;
    /// Leaves a list, set or map.
    fn read_container_end(&mut self);
    /// Bytes left in the input.
    fn remaining(&self) -> usize;

    /// Skips one value of type `ttype`, whatever it contains (unknown fields).
    fn skip(&mut self, ttype: TType) -> Result<(), DecodeError>
    where
        Self: Sized,
    {
        skip(self, ttype)
    }
}

/// Decodes one message (header and body struct) from a reader at its start: the body
/// of both protocols' `decode_message`.
pub(crate) fn decode_message_from<R: ProtocolRead>(
    mut r: R,
) -> Result<(MessageHeader, crate::value::Value), DecodeError> {
    let header = r.read_message_begin()?;
    let body = crate::value::Value::decode(&mut r, TType::Struct)?;
    Ok((header, body))
}

/// The length of the message at the reader's front, found by skipping over it: the
/// body of both protocols' `message_len`.
pub(crate) fn message_len_from<R: ProtocolRead>(mut r: R) -> Result<usize, DecodeError> {
    let total = r.remaining();
    r.read_message_begin()?;
    r.skip(TType::Struct)?;
    Ok(total - r.remaining())
}

/// Skips one value of type `ttype`. Recursion is bounded by the reader's depth limit.
pub fn skip<R: ProtocolRead>(r: &mut R, ttype: TType) -> Result<(), DecodeError> {
    match ttype {
        TType::Bool => r.read_bool().map(drop),
        TType::I8 => r.read_i8().map(drop),
        TType::I16 => r.read_i16().map(drop),
        TType::I32 => r.read_i32().map(drop),
        TType::I64 => r.read_i64().map(drop),
        TType::Double => r.read_double().map(drop),
        TType::Binary => r.skip_binary(),
        TType::Uuid => r.read_uuid().map(drop),
        TType::Struct => {
            r.read_struct_begin()?;
            while let Some(h) = r.read_field_begin()? {
                skip(r, h.ttype)?;
            }
            r.read_struct_end();
            Ok(())
        }
        TType::List | TType::Set => {
            let h = if ttype == TType::List {
                r.read_list_begin()?
            } else {
                r.read_set_begin()?
            };
            for _ in 0..h.len {
                skip(r, h.elem)?;
            }
            r.read_container_end();
            Ok(())
        }
        TType::Map => {
            let h = r.read_map_begin()?;
            if let Some((k, v)) = h.types {
                for _ in 0..h.len {
                    skip(r, k)?;
                    skip(r, v)?;
                }
            }
            r.read_container_end();
            Ok(())
        }
    }
}

/// Writes Thrift values into an [`OutBuf`](super::OutBuf). Implemented by
/// [`binary::BinaryWriter`] and [`compact::CompactWriter`].
///
/// Writing never fails on the spot: a length the protocol cannot express is recorded
/// in the output buffer and reported by [`OutBuf::finish`](super::OutBuf::finish).
pub trait ProtocolWrite {
    /// Writes a message header.
    fn write_message_begin(&mut self, name: &[u8], kind: MessageType, seqid: i32);
    /// Enters a struct.
    fn write_struct_begin(&mut self);
    /// Leaves a struct (writes nothing; see [`write_field_stop`](Self::write_field_stop)).
    fn write_struct_end(&mut self);
    /// A field header; the value follows.
    fn write_field_begin(&mut self, ttype: TType, id: i16);
    /// The stop byte that ends a struct's fields.
    fn write_field_stop(&mut self);
    /// A `bool`.
    fn write_bool(&mut self, v: bool);
    /// An `i8`.
    fn write_i8(&mut self, v: i8);
    /// An `i16`.
    fn write_i16(&mut self, v: i16);
    /// An `i32`.
    fn write_i32(&mut self, v: i32);
    /// An `i64`.
    fn write_i64(&mut self, v: i64);
    /// A `double`.
    fn write_double(&mut self, v: f64);
    /// A `binary` or `string`, copied.
    fn write_binary(&mut self, v: &[u8]);
    /// A `binary` or `string` held in [`Bytes`]: large ones are sent from `v` itself
    /// (a reference, no copy).
    fn write_bytes(&mut self, v: &Bytes);
    /// A `uuid`.
    fn write_uuid(&mut self, v: &[u8; 16]);
    /// A list header; `len` elements follow.
    fn write_list_begin(&mut self, elem: TType, len: usize);
    /// A set header; `len` elements follow.
    fn write_set_begin(&mut self, elem: TType, len: usize);
    /// A map header; `len` key/value pairs follow.
    fn write_map_begin(&mut self, key: TType, value: TType, len: usize);
}
