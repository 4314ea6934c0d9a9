//! Typed encoding and decoding: [`ThriftEncode`] / [`ThriftDecode`] for Rust types,
//! and helpers for hand-written structs.
//!
//! | Thrift | Rust |
//! |---|---|
//! | `bool`, `byte`, `i16`, `i32`, `i64`, `double` | `bool`, `i8`, `i16`, `i32`, `i64`, `f64` |
//! | `binary` | [`Bytes`] (a slice of the received frame, no copy) |
//! | `string` | [`Utf8Bytes`] (same, checked UTF-8) or `String` (copied) |
//! | `uuid` | [`Uuid`] |
//! | `list<T>` | `Vec<T>` |
//! | `set<T>` | `BTreeSet<T>`, `HashSet<T>` |
//! | `map<K, V>` | `BTreeMap<K, V>`, `HashMap<K, V>` |
//! | a struct holding itself | `Box<T>` |
//!
//! A struct implements the traits by hand with [`write_field`], [`read_struct`],
//! [`read_field`] and [`required`]; see `rpc::bench` for the reference service's types.

use super::error::DecodeError;
use super::protocol::{FieldHeader, ProtocolRead, ProtocolWrite, TType};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};

/// A Rust type's Thrift type.
pub trait ThriftType {
    /// The type on the wire.
    const TTYPE: TType;
}

/// Writes a value with any protocol.
pub trait ThriftEncode: ThriftType {
    /// Writes `self` (for a struct: its fields and the stop byte).
    fn encode<W: ProtocolWrite>(&self, w: &mut W);
}

/// Reads a value with any protocol.
pub trait ThriftDecode: ThriftType + Sized {
    /// Reads one value.
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError>;
}

macro_rules! primitive {
    ($t:ty, $tt:expr, $read:ident, $write:ident) => {
        impl ThriftType for $t {
            const TTYPE: TType = $tt;
        }
        impl ThriftEncode for $t {
            #[inline]
            fn encode<W: ProtocolWrite>(&self, w: &mut W) {
                w.$write(*self)
            }
        }
        impl ThriftDecode for $t {
            #[inline]
            fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
                r.$read()
            }
        }
    };
}

primitive!(bool, TType::Bool, read_bool, write_bool);
primitive!(i8, TType::I8, read_i8, write_i8);
primitive!(i16, TType::I16, read_i16, write_i16);
primitive!(i32, TType::I32, read_i32, write_i32);
primitive!(i64, TType::I64, read_i64, write_i64);
primitive!(f64, TType::Double, read_double, write_double);

impl ThriftType for Bytes {
    const TTYPE: TType = TType::Binary;
}

impl ThriftEncode for Bytes {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_bytes(self)
    }
}

impl ThriftDecode for Bytes {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        r.read_binary()
    }
}

impl ThriftType for String {
    const TTYPE: TType = TType::Binary;
}

impl ThriftEncode for String {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_binary(self.as_bytes())
    }
}

impl ThriftDecode for String {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        Ok(Utf8Bytes::decode(r)?.as_str().to_owned())
    }
}

/// A Thrift `string` without a copy: [`Bytes`] checked to be UTF-8.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Utf8Bytes(pub(crate) Bytes);

impl Utf8Bytes {
    /// Wraps `bytes` if they are UTF-8.
    pub fn try_from_bytes(bytes: Bytes) -> Result<Utf8Bytes, DecodeError> {
        match std::str::from_utf8(&bytes) {
            Ok(_) => Ok(Utf8Bytes(bytes)),
            Err(_) => Err(DecodeError::InvalidUtf8),
        }
    }

    /// A string from static text, without allocating.
    pub const fn from_static(s: &'static str) -> Utf8Bytes {
        Utf8Bytes(Bytes::from_static(s.as_bytes()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor checks or guarantees UTF-8, and `Bytes` is
        // immutable, so the bytes stay what was checked.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// The underlying bytes.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

impl std::ops::Deref for Utf8Bytes {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Utf8Bytes {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Hash for Utf8Bytes {
    // Hashes as `str`, so maps keyed by it can be looked up with a `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl From<String> for Utf8Bytes {
    fn from(s: String) -> Self {
        Utf8Bytes(Bytes::from(s))
    }
}

impl From<&str> for Utf8Bytes {
    fn from(s: &str) -> Self {
        Utf8Bytes(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl fmt::Debug for Utf8Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Utf8Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ThriftType for Utf8Bytes {
    const TTYPE: TType = TType::Binary;
}

impl ThriftEncode for Utf8Bytes {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_bytes(&self.0)
    }
}

impl ThriftDecode for Utf8Bytes {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        Utf8Bytes::try_from_bytes(r.read_binary()?)
    }
}

/// A Thrift `uuid`: 16 bytes in network order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

impl ThriftType for Uuid {
    const TTYPE: TType = TType::Uuid;
}

impl ThriftEncode for Uuid {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_uuid(&self.0)
    }
}

impl ThriftDecode for Uuid {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        Ok(Uuid(r.read_uuid()?))
    }
}

/// Preallocation cap: a container grows past it only as elements actually decode,
/// so a large declared count cannot make a small input allocate much.
const PREALLOC_MAX: usize = 1024;

fn check_elem(expected: TType, found: TType, len: usize) -> Result<(), DecodeError> {
    if len > 0 && expected != found {
        return Err(DecodeError::WrongElementType { expected, found });
    }
    Ok(())
}

// A boxed value is the value: generated code boxes a field that would otherwise make
// its struct contain itself.
impl<T: ThriftType> ThriftType for Box<T> {
    const TTYPE: TType = T::TTYPE;
}

impl<T: ThriftEncode> ThriftEncode for Box<T> {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        (**self).encode(w)
    }
}

impl<T: ThriftDecode> ThriftDecode for Box<T> {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        T::decode(r).map(Box::new)
    }
}

impl<T: ThriftType> ThriftType for Vec<T> {
    const TTYPE: TType = TType::List;
}

impl<T: ThriftEncode> ThriftEncode for Vec<T> {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_list_begin(T::TTYPE, self.len());
        for v in self {
            v.encode(w);
        }
    }
}

impl<T: ThriftDecode> ThriftDecode for Vec<T> {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        let h = r.read_list_begin()?;
        check_elem(T::TTYPE, h.elem, h.len)?;
        let mut out = Vec::with_capacity(h.len.min(PREALLOC_MAX));
        for _ in 0..h.len {
            out.push(T::decode(r)?);
        }
        r.read_container_end();
        Ok(out)
    }
}

macro_rules! set {
    ($set:ident, $($bound:path),+) => {
        impl<T: ThriftType> ThriftType for $set<T> {
            const TTYPE: TType = TType::Set;
        }
        impl<T: ThriftEncode> ThriftEncode for $set<T> {
            fn encode<W: ProtocolWrite>(&self, w: &mut W) {
                w.write_set_begin(T::TTYPE, self.len());
                for v in self {
                    v.encode(w);
                }
            }
        }
        impl<T: ThriftDecode $(+ $bound)+> ThriftDecode for $set<T> {
            fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
                let h = r.read_set_begin()?;
                check_elem(T::TTYPE, h.elem, h.len)?;
                let mut out = $set::new();
                for _ in 0..h.len {
                    out.insert(T::decode(r)?);
                }
                r.read_container_end();
                Ok(out)
            }
        }
    };
}

set!(BTreeSet, Ord);
set!(HashSet, Hash, Eq);

macro_rules! map {
    ($map:ident, $($bound:path),+) => {
        impl<K: ThriftType, V: ThriftType> ThriftType for $map<K, V> {
            const TTYPE: TType = TType::Map;
        }
        impl<K: ThriftEncode, V: ThriftEncode> ThriftEncode for $map<K, V> {
            fn encode<W: ProtocolWrite>(&self, w: &mut W) {
                w.write_map_begin(K::TTYPE, V::TTYPE, self.len());
                for (k, v) in self {
                    k.encode(w);
                    v.encode(w);
                }
            }
        }
        impl<K: ThriftDecode $(+ $bound)+, V: ThriftDecode> ThriftDecode for $map<K, V> {
            fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
                let h = r.read_map_begin()?;
                if let Some((k, v)) = h.types {
                    check_elem(K::TTYPE, k, h.len)?;
                    check_elem(V::TTYPE, v, h.len)?;
                }
                let mut out = $map::new();
                for _ in 0..h.len {
                    let k = K::decode(r)?;
                    out.insert(k, V::decode(r)?);
                }
                r.read_container_end();
                Ok(out)
            }
        }
    };
}

map!(BTreeMap, Ord);
map!(HashMap, Hash, Eq);

/// Writes field `id` holding `v`.
#[inline]
pub fn write_field<W: ProtocolWrite, T: ThriftEncode>(w: &mut W, id: i16, v: &T) {
    w.write_field_begin(T::TTYPE, id);
    v.encode(w);
}

/// Reads a struct, calling `field` for each field header; the fields it does not
/// consume (it returns `false`) are skipped, as unknown fields must be.
pub fn read_struct<R, F>(r: &mut R, mut field: F) -> Result<(), DecodeError>
where
    R: ProtocolRead,
    F: FnMut(&mut R, FieldHeader) -> Result<bool, DecodeError>,
{
    r.read_struct_begin()?;
    while let Some(h) = r.read_field_begin()? {
        if !field(r, h)? {
            r.skip(h.ttype)?;
        }
    }
    r.read_struct_end();
    Ok(())
}

/// Reads the value of the field `h` introduces if its wire type is `T`'s; a field of
/// another type is skipped and `None` returned (what Apache-generated code does).
#[inline]
pub fn read_field<R: ProtocolRead, T: ThriftDecode>(
    r: &mut R,
    h: FieldHeader,
) -> Result<Option<T>, DecodeError> {
    if h.ttype != T::TTYPE {
        r.skip(h.ttype)?;
        return Ok(None);
    }
    T::decode(r).map(Some)
}

/// A field that must have been present.
pub fn required<T>(
    v: Option<T>,
    strukt: &'static str,
    field: &'static str,
) -> Result<T, DecodeError> {
    v.ok_or(DecodeError::MissingField { strukt, field })
}
