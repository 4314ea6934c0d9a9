//! TBinaryProtocol: fixed-width big-endian integers, `i32` lengths, one-byte type ids.
//!
//! Message headers come in two forms. Strict: `i32` version word `0x8001_0000 | type`,
//! name, seqid. Non-strict (older clients): name, type byte, seqid. The reader accepts
//! both unless [`BinaryReader::strict`] asks for the strict form; the writer writes
//! the form it was built for.
//!
//! Fuzz entry points: [`decode_message`], [`decode_value`], [`message_len`].

use super::{
    DecodeLimits, FieldHeader, ListHeader, MapHeader, MessageHeader, MessageType, ProtocolRead,
    ProtocolWrite, TType,
};
use crate::error::DecodeError;
use crate::out::OutBuf;
use crate::value::Value;
use bytes::{Buf, Bytes};

const VERSION_1: u32 = 0x8001_0000;
const VERSION_MASK: u32 = 0xffff_0000;

/// The binary protocol's id for a type.
pub fn type_id(t: TType) -> u8 {
    match t {
        TType::Bool => 2,
        TType::I8 => 3,
        TType::Double => 4,
        TType::I16 => 6,
        TType::I32 => 8,
        TType::I64 => 10,
        TType::Binary => 11,
        TType::Struct => 12,
        TType::Map => 13,
        TType::Set => 14,
        TType::List => 15,
        TType::Uuid => 16,
    }
}

/// The type for a binary protocol id (0, stop, is not a type).
pub fn type_from_id(id: u8) -> Result<TType, DecodeError> {
    Ok(match id {
        2 => TType::Bool,
        3 => TType::I8,
        4 => TType::Double,
        6 => TType::I16,
        8 => TType::I32,
        10 => TType::I64,
        11 => TType::Binary,
        12 => TType::Struct,
        13 => TType::Map,
        14 => TType::Set,
        15 => TType::List,
        16 => TType::Uuid,
        other => return Err(DecodeError::InvalidType(other)),
    })
}

/// Fewest bytes one value of `t` takes on the wire.
fn min_size(t: TType) -> usize {
    match t {
        TType::Bool | TType::I8 | TType::Struct => 1,
        TType::I16 => 2,
        TType::I32 | TType::Binary => 4,
        TType::Double | TType::I64 => 8,
        TType::List | TType::Set => 5,
        TType::Map => 6,
        TType::Uuid => 16,
    }
}

/// Reads the binary protocol from any [`Buf`].
#[derive(Debug)]
pub struct BinaryReader<B> {
    buf: B,
    limits: DecodeLimits,
    depth: usize,
    strict_only: bool,
    last_strict: bool,
}

impl<B: Buf> BinaryReader<B> {
    /// A reader with the default [`DecodeLimits`].
    pub fn new(buf: B) -> Self {
        Self::with_limits(buf, DecodeLimits::default())
    }

    /// A reader with the given limits.
    pub fn with_limits(buf: B, limits: DecodeLimits) -> Self {
        BinaryReader {
            buf,
            limits,
            depth: 0,
            strict_only: false,
            last_strict: true,
        }
    }

    /// Rejects non-strict message headers (`BadVersion`) when `on`.
    pub fn strict(mut self, on: bool) -> Self {
        self.strict_only = on;
        self
    }

    /// Whether the last message header read was strict (replies mirror it).
    pub fn last_message_strict(&self) -> bool {
        self.last_strict
    }

    /// The rest of the input.
    pub fn into_inner(self) -> B {
        self.buf
    }

    #[inline]
    fn need(&self, n: usize) -> Result<(), DecodeError> {
        let remaining = self.buf.remaining();
        if remaining < n {
            return Err(DecodeError::Truncated {
                needed: n,
                remaining,
            });
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), DecodeError> {
        if self.depth >= self.limits.max_depth {
            return Err(DecodeError::DepthLimit(self.limits.max_depth));
        }
        self.depth += 1;
        Ok(())
    }

    /// Validates an element count before anything is allocated for it.
    fn count(&self, n: i32, min_elem: usize) -> Result<usize, DecodeError> {
        let n = usize::try_from(n).map_err(|_| DecodeError::NegativeSize(n.into()))?;
        if n > self.limits.max_container_len {
            return Err(DecodeError::SizeLimit {
                size: n,
                limit: self.limits.max_container_len,
            });
        }
        self.need(n.saturating_mul(min_elem))?;
        Ok(n)
    }

    fn read_type(&mut self) -> Result<TType, DecodeError> {
        self.need(1)?;
        type_from_id(self.buf.get_u8())
    }

    fn read_len(&mut self) -> Result<usize, DecodeError> {
        let n = self.read_i32()?;
        let n = usize::try_from(n).map_err(|_| DecodeError::NegativeSize(n.into()))?;
        self.limits.check_string(n)?;
        self.need(n)?;
        Ok(n)
    }

    fn read_list_like(&mut self) -> Result<ListHeader, DecodeError> {
        let elem = self.read_type()?;
        let n = self.read_i32()?;
        let len = self.count(n, min_size(elem))?;
        self.enter()?;
        Ok(ListHeader { elem, len })
    }
}

impl<B: Buf> ProtocolRead for BinaryReader<B> {
    fn read_message_begin(&mut self) -> Result<MessageHeader, DecodeError> {
        let first = self.read_i32()?;
        if first < 0 {
            let word = first as u32;
            if word & VERSION_MASK != VERSION_1 {
                return Err(DecodeError::BadVersion(word));
            }
            let kind = MessageType::from_id((word & 0xff) as u8)?;
            let name = self.read_binary()?;
            let seqid = self.read_i32()?;
            self.last_strict = true;
            Ok(MessageHeader { name, kind, seqid })
        } else {
            if self.strict_only {
                return Err(DecodeError::BadVersion(first as u32));
            }
            let len = first as usize;
            self.need(len)?;
            let name = self.buf.copy_to_bytes(len);
            let kind = MessageType::from_id(self.read_i8()? as u8)?;
            let seqid = self.read_i32()?;
            self.last_strict = false;
            Ok(MessageHeader { name, kind, seqid })
        }
    }

    fn read_struct_begin(&mut self) -> Result<(), DecodeError> {
        self.enter()
    }

    fn read_struct_end(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    #[inline]
    fn read_field_begin(&mut self) -> Result<Option<FieldHeader>, DecodeError> {
        self.need(1)?;
        let t = self.buf.get_u8();
        if t == 0 {
            return Ok(None);
        }
        let ttype = type_from_id(t)?;
        let id = self.read_i16()?;
        Ok(Some(FieldHeader { id, ttype }))
    }

    fn read_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.read_i8()? != 0)
    }

    #[inline]
    fn read_i8(&mut self) -> Result<i8, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_i8())
    }

    #[inline]
    fn read_i16(&mut self) -> Result<i16, DecodeError> {
        self.need(2)?;
        Ok(self.buf.get_i16())
    }

    #[inline]
    fn read_i32(&mut self) -> Result<i32, DecodeError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }

    #[inline]
    fn read_i64(&mut self) -> Result<i64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }

    fn read_double(&mut self) -> Result<f64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_f64())
    }

    fn read_binary(&mut self) -> Result<Bytes, DecodeError> {
        let n = self.read_len()?;
        Ok(self.buf.copy_to_bytes(n))
    }

    fn skip_binary(&mut self) -> Result<(), DecodeError> {
        let n = self.read_len()?;
        self.buf.advance(n);
        Ok(())
    }

    fn read_uuid(&mut self) -> Result<[u8; 16], DecodeError> {
        self.need(16)?;
        let mut out = [0u8; 16];
        self.buf.copy_to_slice(&mut out);
        Ok(out)
    }

    fn read_list_begin(&mut self) -> Result<ListHeader, DecodeError> {
        self.read_list_like()
    }

    fn read_set_begin(&mut self) -> Result<ListHeader, DecodeError> {
        self.read_list_like()
    }

    fn read_map_begin(&mut self) -> Result<MapHeader, DecodeError> {
        let key = self.read_type()?;
        let value = self.read_type()?;
        let n = self.read_i32()?;
        let len = self.count(n, min_size(key) + min_size(value))?;
        self.enter()?;
        Ok(MapHeader {
            types: Some((key, value)),
            len,
        })
    }

    fn read_container_end(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn remaining(&self) -> usize {
        self.buf.remaining()
    }
}

/// Writes the binary protocol into an [`OutBuf`].
#[derive(Debug)]
pub struct BinaryWriter<'a> {
    out: &'a mut OutBuf,
    strict: bool,
}

impl<'a> BinaryWriter<'a> {
    /// A writer of strict (versioned) message headers, the Apache default.
    pub fn new(out: &'a mut OutBuf) -> Self {
        BinaryWriter { out, strict: true }
    }

    /// A writer of non-strict (old-style) message headers.
    pub fn non_strict(out: &'a mut OutBuf) -> Self {
        BinaryWriter { out, strict: false }
    }

    fn put_len(&mut self, len: usize) {
        let n = self.out.check_len(len);
        self.write_i32(n);
    }
}

impl ProtocolWrite for BinaryWriter<'_> {
    fn write_message_begin(&mut self, name: &[u8], kind: MessageType, seqid: i32) {
        if self.strict {
            self.out.put_array((VERSION_1 | kind as u32).to_be_bytes());
            self.write_binary(name);
        } else {
            self.write_binary(name);
            self.out.put_u8(kind as u8);
        }
        self.write_i32(seqid);
    }

    fn write_struct_begin(&mut self) {}

    fn write_struct_end(&mut self) {}

    #[inline]
    fn write_field_begin(&mut self, ttype: TType, id: i16) {
        let id = id.to_be_bytes();
        self.out.put_array([type_id(ttype), id[0], id[1]]);
    }

    fn write_field_stop(&mut self) {
        self.out.put_u8(0);
    }

    fn write_bool(&mut self, v: bool) {
        self.out.put_u8(u8::from(v));
    }

    fn write_i8(&mut self, v: i8) {
        self.out.put_u8(v as u8);
    }

    fn write_i16(&mut self, v: i16) {
        self.out.put_array(v.to_be_bytes());
    }

    fn write_i32(&mut self, v: i32) {
        self.out.put_array(v.to_be_bytes());
    }

    fn write_i64(&mut self, v: i64) {
        self.out.put_array(v.to_be_bytes());
    }

    fn write_double(&mut self, v: f64) {
        self.out.put_array(v.to_be_bytes());
    }

    fn write_binary(&mut self, v: &[u8]) {
        self.put_len(v.len());
        self.out.put_slice(v);
    }

    fn write_bytes(&mut self, v: &Bytes) {
        self.put_len(v.len());
        self.out.put_bytes(v);
    }

    fn write_uuid(&mut self, v: &[u8; 16]) {
        self.out.put_array(*v);
    }

    fn write_list_begin(&mut self, elem: TType, len: usize) {
        self.out.put_u8(type_id(elem));
        self.put_len(len);
    }

    fn write_set_begin(&mut self, elem: TType, len: usize) {
        self.write_list_begin(elem, len);
    }

    fn write_map_begin(&mut self, key: TType, value: TType, len: usize) {
        self.out.put_array([type_id(key), type_id(value)]);
        self.put_len(len);
    }
}

/// Decodes one message (header and body struct) from `input`. Bytes after the body
/// are left alone.
pub fn decode_message(
    input: Bytes,
    limits: DecodeLimits,
) -> Result<(MessageHeader, Value), DecodeError> {
    super::decode_message_from(BinaryReader::with_limits(input, limits))
}

/// Decodes one value of type `ttype` from `input`.
pub fn decode_value(
    input: Bytes,
    ttype: TType,
    limits: DecodeLimits,
) -> Result<Value, DecodeError> {
    Value::decode(&mut BinaryReader::with_limits(input, limits), ttype)
}

/// The length of the message at the front of `input`, found by skipping over it
/// without building anything; `Truncated` when `input` ends first (an unframed
/// transport then waits for more bytes).
pub fn message_len<B: Buf>(input: B, limits: DecodeLimits) -> Result<usize, DecodeError> {
    super::message_len_from(BinaryReader::with_limits(input, limits))
}
