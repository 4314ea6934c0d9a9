//! [`Value`]: any Thrift value, decoded without a schema (tools, tests, fuzzing).

use super::error::DecodeError;
use super::protocol::{ProtocolRead, ProtocolWrite, TType};
use bytes::Bytes;

/// A Thrift value of any type. Structs keep their fields in wire order (duplicates
/// included), containers their element types.
///
/// Equality compares doubles with `==` (so a NaN is unequal to itself).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `bool`
    Bool(bool),
    /// `i8`
    I8(i8),
    /// `i16`
    I16(i16),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `double`
    Double(f64),
    /// `binary` or `string`
    Binary(Bytes),
    /// `uuid`
    Uuid([u8; 16]),
    /// A struct: `(field id, value)` in wire order.
    Struct(Vec<(i16, Value)>),
    /// A list of `elem` values.
    List {
        /// Element type.
        elem: TType,
        /// Elements, each of type `elem`.
        items: Vec<Value>,
    },
    /// A set of `elem` values (order as on the wire, duplicates kept).
    Set {
        /// Element type.
        elem: TType,
        /// Elements, each of type `elem`.
        items: Vec<Value>,
    },
    /// A map. `types` is `None` only for an empty map read from the compact protocol,
    /// which does not carry them; written to the binary protocol such a map declares
    /// `binary` keys and values.
    Map {
        /// Key and value types.
        types: Option<(TType, TType)>,
        /// Entries in wire order.
        entries: Vec<(Value, Value)>,
    },
}

/// Preallocation cap: containers grow past it only as elements actually decode.
const PREALLOC_MAX: usize = 1024;

impl Value {
    /// The value's type.
    pub fn ttype(&self) -> TType {
        match self {
            Value::Bool(_) => TType::Bool,
            Value::I8(_) => TType::I8,
            Value::I16(_) => TType::I16,
            Value::I32(_) => TType::I32,
            Value::I64(_) => TType::I64,
            Value::Double(_) => TType::Double,
            Value::Binary(_) => TType::Binary,
            Value::Uuid(_) => TType::Uuid,
            Value::Struct(_) => TType::Struct,
            Value::List { .. } => TType::List,
            Value::Set { .. } => TType::Set,
            Value::Map { .. } => TType::Map,
        }
    }

    /// Reads one value of type `ttype`.
    pub fn decode<R: ProtocolRead>(r: &mut R, ttype: TType) -> Result<Value, DecodeError> {
        Ok(match ttype {
            TType::Bool => Value::Bool(r.read_bool()?),
            TType::I8 => Value::I8(r.read_i8()?),
            TType::I16 => Value::I16(r.read_i16()?),
            TType::I32 => Value::I32(r.read_i32()?),
            TType::I64 => Value::I64(r.read_i64()?),
            TType::Double => Value::Double(r.read_double()?),
            TType::Binary => Value::Binary(r.read_binary()?),
            TType::Uuid => Value::Uuid(r.read_uuid()?),
            TType::Struct => {
                r.read_struct_begin()?;
                let mut fields = Vec::new();
                while let Some(h) = r.read_field_begin()? {
                    fields.push((h.id, Value::decode(r, h.ttype)?));
                }
                r.read_struct_end();
                Value::Struct(fields)
            }
            TType::List | TType::Set => {
                let h = if ttype == TType::List {
                    r.read_list_begin()?
                } else {
                    r.read_set_begin()?
                };
                let mut items = Vec::with_capacity(h.len.min(PREALLOC_MAX));
                for _ in 0..h.len {
                    items.push(Value::decode(r, h.elem)?);
                }
                r.read_container_end();
                if ttype == TType::List {
                    Value::List {
                        elem: h.elem,
                        items,
                    }
                } else {
                    Value::Set {
                        elem: h.elem,
                        items,
                    }
                }
            }
            TType::Map => {
                let h = r.read_map_begin()?;
                let mut entries = Vec::with_capacity(h.len.min(PREALLOC_MAX));
                if let Some((k, v)) = h.types {
                    for _ in 0..h.len {
                        let key = Value::decode(r, k)?;
                        entries.push((key, Value::decode(r, v)?));
                    }
                }
                r.read_container_end();
                Value::Map {
                    types: h.types,
                    entries,
                }
            }
        })
    }

    /// Writes the value. Elements whose type differs from their container's declared
    /// type are written as they are (the result is then not valid Thrift); build values
    /// consistently.
    pub fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        match self {
            Value::Bool(v) => w.write_bool(*v),
            Value::I8(v) => w.write_i8(*v),
            Value::I16(v) => w.write_i16(*v),
            Value::I32(v) => w.write_i32(*v),
            Value::I64(v) => w.write_i64(*v),
            Value::Double(v) => w.write_double(*v),
            Value::Binary(v) => w.write_bytes(v),
            Value::Uuid(v) => w.write_uuid(v),
            Value::Struct(fields) => {
                w.write_struct_begin();
                for (id, v) in fields {
                    w.write_field_begin(v.ttype(), *id);
                    v.encode(w);
                }
                w.write_field_stop();
                w.write_struct_end();
            }
            Value::List { elem, items } => {
                w.write_list_begin(*elem, items.len());
                for v in items {
                    v.encode(w);
                }
            }
            Value::Set { elem, items } => {
                w.write_set_begin(*elem, items.len());
                for v in items {
                    v.encode(w);
                }
            }
            Value::Map { types, entries } => {
                let (k, v) = types.unwrap_or((TType::Binary, TType::Binary));
                w.write_map_begin(k, v, entries.len());
                for (key, value) in entries {
                    key.encode(w);
                    value.encode(w);
                }
            }
        }
    }
}
