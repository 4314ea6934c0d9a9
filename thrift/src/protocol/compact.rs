//! TCompactProtocol: zigzag varints, field ids as deltas, `bool` fields folded into
//! their field header, little-endian doubles.
//!
//! Fuzz entry points: [`decode_message`], [`decode_value`], [`message_len`].

use super::{
    DecodeLimits, FieldHeader, FieldIdStack, ListHeader, MapHeader, MessageHeader, MessageType,
    ProtocolRead, ProtocolWrite, TType,
};
use crate::error::DecodeError;
use crate::out::OutBuf;
use crate::value::Value;
use bytes::{Buf, Bytes};

/// First byte of every compact message.
pub const PROTOCOL_ID: u8 = 0x82;
const VERSION: u8 = 1;
const VERSION_MASK: u8 = 0x1f;
const TYPE_SHIFT: u8 = 5;

const CT_TRUE: u8 = 1;
const CT_FALSE: u8 = 2;

/// The compact protocol's id for a type (`bool` as "true", as in collections).
pub fn type_id(t: TType) -> u8 {
    match t {
        TType::Bool => CT_TRUE,
        TType::I8 => 3,
        TType::I16 => 4,
        TType::I32 => 5,
        TType::I64 => 6,
        TType::Double => 7,
        TType::Binary => 8,
        TType::List => 9,
        TType::Set => 10,
        TType::Map => 11,
        TType::Struct => 12,
        TType::Uuid => 13,
    }
}

/// The type for a compact protocol id (1 and 2 are both `bool`; 0, stop, is not a type).
pub fn type_from_id(id: u8) -> Result<TType, DecodeError> {
    Ok(match id {
        CT_TRUE | CT_FALSE => TType::Bool,
        3 => TType::I8,
        4 => TType::I16,
        5 => TType::I32,
        6 => TType::I64,
        7 => TType::Double,
        8 => TType::Binary,
        9 => TType::List,
        10 => TType::Set,
        11 => TType::Map,
        12 => TType::Struct,
        13 => TType::Uuid,
        other => return Err(DecodeError::InvalidType(other)),
    })
}

fn min_size(t: TType) -> usize {
    match t {
        TType::Double => 8,
        TType::Uuid => 16,
        _ => 1,
    }
}

fn zigzag_encode_64(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn zigzag_decode_64(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

/// Reads the compact protocol from any [`Buf`].
#[derive(Debug)]
pub struct CompactReader<B> {
    buf: B,
    limits: DecodeLimits,
    depth: usize,
    last_field: i16,
    fields: FieldIdStack,
    /// The value of a `bool` field, carried by its header.
    pending_bool: Option<bool>,
}

impl<B: Buf> CompactReader<B> {
    /// A reader with the default [`DecodeLimits`].
    pub fn new(buf: B) -> Self {
        Self::with_limits(buf, DecodeLimits::default())
    }

    /// A reader with the given limits.
    pub fn with_limits(buf: B, limits: DecodeLimits) -> Self {
        CompactReader {
            buf,
            limits,
            depth: 0,
            last_field: 0,
            fields: FieldIdStack::default(),
            pending_bool: None,
        }
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

    fn byte(&mut self) -> Result<u8, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }

    /// An unsigned varint of at most `max_bytes` bytes.
    #[inline]
    fn varint(&mut self, max_bytes: u32) -> Result<u64, DecodeError> {
        let mut out = 0u64;
        for i in 0..max_bytes {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(DecodeError::VarintTooLong)
    }

    fn varint32(&mut self) -> Result<u32, DecodeError> {
        // Bits past 32 in the fifth byte are dropped, as Apache's readers do.
        Ok(self.varint(5)? as u32)
    }

    /// A varint size, negative when read as `i32` (as Apache reads it).
    fn size(&mut self) -> Result<usize, DecodeError> {
        let n = self.varint32()? as i32;
        usize::try_from(n).map_err(|_| DecodeError::NegativeSize(n.into()))
    }

    /// The length of a `string` or `binary`, within the string limit.
    fn string_len(&mut self) -> Result<usize, DecodeError> {
        let n = self.size()?;
        self.limits.check_string(n)?;
        self.need(n)?;
        Ok(n)
    }

    fn count(&self, n: usize, min_elem: usize) -> Result<usize, DecodeError> {
        if n > self.limits.max_container_len {
            return Err(DecodeError::SizeLimit {
                size: n,
                limit: self.limits.max_container_len,
            });
        }
        self.need(n.saturating_mul(min_elem))?;
        Ok(n)
    }

    fn read_list_like(&mut self) -> Result<ListHeader, DecodeError> {
        let b = self.byte()?;
        let elem = type_from_id(b & 0x0f)?;
        let short = usize::from(b >> 4);
        let n = if short == 15 { self.size()? } else { short };
        let len = self.count(n, min_size(elem))?;
        self.enter()?;
        Ok(ListHeader { elem, len })
    }
}

impl<B: Buf> ProtocolRead for CompactReader<B> {
    fn read_message_begin(&mut self) -> Result<MessageHeader, DecodeError> {
        let id = self.byte()?;
        if id != PROTOCOL_ID {
            return Err(DecodeError::BadVersion(id.into()));
        }
        let vt = self.byte()?;
        if vt & VERSION_MASK != VERSION {
            return Err(DecodeError::BadVersion(u32::from(id) << 8 | u32::from(vt)));
        }
        let kind = MessageType::from_id(vt >> TYPE_SHIFT)?;
        let seqid = self.varint32()? as i32;
        let name = self.read_binary()?;
        Ok(MessageHeader { name, kind, seqid })
    }

    fn read_struct_begin(&mut self) -> Result<(), DecodeError> {
        self.enter()?;
        self.fields.push(self.last_field);
        self.last_field = 0;
        Ok(())
    }

    fn read_struct_end(&mut self) {
        self.last_field = self.fields.pop();
        self.depth = self.depth.saturating_sub(1);
    }

    #[inline]
    fn read_field_begin(&mut self) -> Result<Option<FieldHeader>, DecodeError> {
        let b = self.byte()?;
        let tid = b & 0x0f;
        if tid == 0 {
            return Ok(None);
        }
        let ttype = type_from_id(tid)?;
        let delta = b >> 4;
        let id = if delta == 0 {
            self.read_i16()?
        } else {
            self.last_field.wrapping_add(i16::from(delta))
        };
        if ttype == TType::Bool {
            self.pending_bool = Some(tid == CT_TRUE);
        }
        self.last_field = id;
        Ok(Some(FieldHeader { id, ttype }))
    }

    fn read_bool(&mut self) -> Result<bool, DecodeError> {
        if let Some(v) = self.pending_bool.take() {
            return Ok(v);
        }
        match self.byte()? {
            CT_TRUE => Ok(true),
            0 | CT_FALSE => Ok(false),
            other => Err(DecodeError::InvalidType(other)),
        }
    }

    fn read_i8(&mut self) -> Result<i8, DecodeError> {
        Ok(self.byte()? as i8)
    }

    fn read_i16(&mut self) -> Result<i16, DecodeError> {
        Ok(zigzag_decode_64(self.varint(3)?) as i16)
    }

    #[inline]
    fn read_i32(&mut self) -> Result<i32, DecodeError> {
        Ok(zigzag_decode_64(u64::from(self.varint32()?)) as i32)
    }

    #[inline]
    fn read_i64(&mut self) -> Result<i64, DecodeError> {
        Ok(zigzag_decode_64(self.varint(10)?))
    }

    fn read_double(&mut self) -> Result<f64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_f64_le())
    }

    fn read_binary(&mut self) -> Result<Bytes, DecodeError> {
        let n = self.string_len()?;
        Ok(self.buf.copy_to_bytes(n))
    }

    fn skip_binary(&mut self) -> Result<(), DecodeError> {
        let n = self.string_len()?;
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
        let n = self.size()?;
        if n == 0 {
            self.enter()?;
            return Ok(MapHeader {
                types: None,
                len: 0,
            });
        }
        let kv = self.byte()?;
        let key = type_from_id(kv >> 4)?;
        let value = type_from_id(kv & 0x0f)?;
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

/// Writes the compact protocol into an [`OutBuf`].
#[derive(Debug)]
pub struct CompactWriter<'a> {
    out: &'a mut OutBuf,
    last_field: i16,
    fields: FieldIdStack,
    /// A `bool` field whose header waits for its value.
    pending_bool: Option<i16>,
}

impl<'a> CompactWriter<'a> {
    /// A writer into `out`.
    pub fn new(out: &'a mut OutBuf) -> Self {
        CompactWriter {
            out,
            last_field: 0,
            fields: FieldIdStack::default(),
            pending_bool: None,
        }
    }

    fn varint(&mut self, mut n: u64) {
        let mut tmp = [0u8; 10];
        let mut i = 0;
        while n >= 0x80 {
            tmp[i] = (n as u8) | 0x80;
            n >>= 7;
            i += 1;
        }
        tmp[i] = n as u8;
        self.out.put_slice(&tmp[..=i]);
    }

    fn size(&mut self, len: usize) {
        let n = self.out.check_len(len);
        self.varint(u64::from(n as u32));
    }

    fn field_header(&mut self, tid: u8, id: i16) {
        let delta = i32::from(id) - i32::from(self.last_field);
        if id > self.last_field && delta <= 15 {
            self.out.put_u8(((delta as u8) << 4) | tid);
        } else {
            self.out.put_u8(tid);
            self.write_i16(id);
        }
        self.last_field = id;
    }
}

impl ProtocolWrite for CompactWriter<'_> {
    fn write_message_begin(&mut self, name: &[u8], kind: MessageType, seqid: i32) {
        self.out
            .put_array([PROTOCOL_ID, VERSION | ((kind as u8) << TYPE_SHIFT)]);
        self.varint(u64::from(seqid as u32));
        self.write_binary(name);
    }

    fn write_struct_begin(&mut self) {
        self.fields.push(self.last_field);
        self.last_field = 0;
    }

    fn write_struct_end(&mut self) {
        self.last_field = self.fields.pop();
    }

    fn write_field_begin(&mut self, ttype: TType, id: i16) {
        if ttype == TType::Bool {
            self.pending_bool = Some(id);
        } else {
            self.field_header(type_id(ttype), id);
        }
    }

    fn write_field_stop(&mut self) {
        self.out.put_u8(0);
    }

    fn write_bool(&mut self, v: bool) {
        let tid = if v { CT_TRUE } else { CT_FALSE };
        match self.pending_bool.take() {
            Some(id) => self.field_header(tid, id),
            None => self.out.put_u8(tid),
        }
    }

    fn write_i8(&mut self, v: i8) {
        self.out.put_u8(v as u8);
    }

    fn write_i16(&mut self, v: i16) {
        self.varint(zigzag_encode_64(v.into()));
    }

    fn write_i32(&mut self, v: i32) {
        self.varint(zigzag_encode_64(v.into()));
    }

    fn write_i64(&mut self, v: i64) {
        self.varint(zigzag_encode_64(v));
    }

    fn write_double(&mut self, v: f64) {
        self.out.put_array(v.to_le_bytes());
    }

    fn write_binary(&mut self, v: &[u8]) {
        self.size(v.len());
        self.out.put_slice(v);
    }

    fn write_bytes(&mut self, v: &Bytes) {
        self.size(v.len());
        self.out.put_bytes(v);
    }

    fn write_uuid(&mut self, v: &[u8; 16]) {
        self.out.put_array(*v);
    }

    fn write_list_begin(&mut self, elem: TType, len: usize) {
        let tid = type_id(elem);
        if len < 15 {
            self.out.put_u8(((len as u8) << 4) | tid);
        } else {
            self.out.put_u8(0xf0 | tid);
            self.size(len);
        }
    }

    fn write_set_begin(&mut self, elem: TType, len: usize) {
        self.write_list_begin(elem, len);
    }

    fn write_map_begin(&mut self, key: TType, value: TType, len: usize) {
        if len == 0 {
            self.out.put_u8(0);
        } else {
            self.size(len);
            self.out.put_u8((type_id(key) << 4) | type_id(value));
        }
    }
}

/// Decodes one message (header and body struct) from `input`. Bytes after the body
/// are left alone.
pub fn decode_message(
    input: Bytes,
    limits: DecodeLimits,
) -> Result<(MessageHeader, Value), DecodeError> {
    super::decode_message_from(CompactReader::with_limits(input, limits))
}

/// Decodes one value of type `ttype` from `input`.
pub fn decode_value(
    input: Bytes,
    ttype: TType,
    limits: DecodeLimits,
) -> Result<Value, DecodeError> {
    Value::decode(&mut CompactReader::with_limits(input, limits), ttype)
}

/// The length of the message at the front of `input`, found by skipping over it;
/// `Truncated` when `input` ends first.
pub fn message_len<B: Buf>(input: B, limits: DecodeLimits) -> Result<usize, DecodeError> {
    super::message_len_from(CompactReader::with_limits(input, limits))
}
