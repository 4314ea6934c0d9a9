//! The structs of `bench.thrift`: `Overloaded`, `Payload`, each method's argument
//! struct and `fail`'s result struct.

use bytes::Bytes;
use std::collections::BTreeMap;
use zerorx_thrift::{
    read_field, read_struct, required, write_field, DecodeError, ProtocolRead, ProtocolWrite,
    TType, ThriftDecode, ThriftEncode, ThriftType, Utf8Bytes,
};

/// A struct whose fields are all present on the wire (missing ones are a
/// `MissingField` error: the server answers it as bad arguments).
macro_rules! plain_struct {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $id:literal => $field:ident : $ty:ty),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty, )+
        }

        impl ThriftType for $name {
            const TTYPE: TType = TType::Struct;
        }

        impl ThriftEncode for $name {
            fn encode<W: ProtocolWrite>(&self, w: &mut W) {
                w.write_struct_begin();
                $( write_field(w, $id, &self.$field); )+
                w.write_field_stop();
                w.write_struct_end();
            }
        }

        impl ThriftDecode for $name {
            fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
                $( let mut $field: Option<$ty> = None; )+
                read_struct(r, |r, h| {
                    match h.id {
                        $( $id => {
                            if let Some(v) = read_field::<_, $ty>(r, h)? {
                                $field = Some(v);
                            }
                        } )+
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?;
                Ok($name {
                    $( $field: required($field, stringify!($name), stringify!($field))?, )+
                })
            }
        }
    };
}

plain_struct! {
    /// `exception Overloaded { 1: string reason, 2: i32 retry_after_ms }`
    Overloaded {
        /// Why.
        1 => reason: Utf8Bytes,
        /// When to retry.
        2 => retry_after_ms: i32,
    }
}

impl std::fmt::Display for Overloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "overloaded: {} (retry after {} ms)",
            self.reason, self.retry_after_ms
        )
    }
}

impl std::error::Error for Overloaded {}

/// `struct Payload { 1: i64 id, 2: binary data, 3: optional map<string, string> meta,
/// 4: list<i32> tags }`
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Payload {
    /// Field 1.
    pub id: i64,
    /// Field 2 (a slice of the request frame when decoded by the server).
    pub data: Bytes,
    /// Field 3, optional: absent on the wire when `None`.
    pub meta: Option<BTreeMap<Utf8Bytes, Utf8Bytes>>,
    /// Field 4.
    pub tags: Vec<i32>,
}

impl ThriftType for Payload {
    const TTYPE: TType = TType::Struct;
}

impl ThriftEncode for Payload {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_struct_begin();
        write_field(w, 1, &self.id);
        write_field(w, 2, &self.data);
        if let Some(meta) = &self.meta {
            write_field(w, 3, meta);
        }
        write_field(w, 4, &self.tags);
        w.write_field_stop();
        w.write_struct_end();
    }
}

impl ThriftDecode for Payload {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        let (mut id, mut data, mut meta, mut tags) = (None, None, None, None);
        read_struct(r, |r, h| {
            match h.id {
                1 => id = read_field(r, h)?.or(id.take()),
                2 => data = read_field(r, h)?.or(data.take()),
                3 => meta = read_field(r, h)?.or(meta.take()),
                4 => tags = read_field(r, h)?.or(tags.take()),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Payload {
            id: required(id, "Payload", "id")?,
            data: required(data, "Payload", "data")?,
            meta,
            tags: required(tags, "Payload", "tags")?,
        })
    }
}

plain_struct! {
    /// Arguments of `echo`.
    EchoArgs {
        /// The bytes to return.
        1 => data: Bytes,
    }
}

plain_struct! {
    /// Arguments of `roundtrip`.
    RoundtripArgs {
        /// The payload to return.
        1 => p: Payload,
    }
}

plain_struct! {
    /// Arguments of `add`.
    AddArgs {
        /// First addend.
        1 => a: i64,
        /// Second addend.
        2 => b: i64,
    }
}

plain_struct! {
    /// Arguments of `sum`.
    SumArgs {
        /// The values to add up.
        1 => values: Vec<i64>,
    }
}

plain_struct! {
    /// Arguments of `sleep_ms`.
    SleepMsArgs {
        /// Milliseconds to sleep.
        1 => ms: i32,
    }
}

plain_struct! {
    /// Arguments of `fire`.
    FireArgs {
        /// Ignored payload.
        1 => data: Bytes,
    }
}

plain_struct! {
    /// Arguments of `fail`.
    FailArgs {
        /// The reason to throw back.
        1 => reason: Utf8Bytes,
    }
}

/// Arguments of `fired` (none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FiredArgs;

impl ThriftType for FiredArgs {
    const TTYPE: TType = TType::Struct;
}

impl ThriftEncode for FiredArgs {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_struct_begin();
        w.write_field_stop();
        w.write_struct_end();
    }
}

impl ThriftDecode for FiredArgs {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        read_struct(r, |_, _| Ok(false))?;
        Ok(FiredArgs)
    }
}

/// The result struct of `fail` (`void ... throws (1: Overloaded o)`): empty on
/// success, field 1 when it throws.
#[derive(Clone, Debug, PartialEq)]
pub enum FailResult {
    /// Returned normally.
    Ok,
    /// Threw `Overloaded`.
    Overloaded(Overloaded),
}

impl ThriftType for FailResult {
    const TTYPE: TType = TType::Struct;
}

impl ThriftEncode for FailResult {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_struct_begin();
        if let FailResult::Overloaded(o) = self {
            write_field(w, 1, o);
        }
        w.write_field_stop();
        w.write_struct_end();
    }
}

impl ThriftDecode for FailResult {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        let mut out = FailResult::Ok;
        read_struct(r, |r, h| {
            if h.id == 1 {
                if let Some(o) = read_field(r, h)? {
                    out = FailResult::Overloaded(o);
                }
                return Ok(true);
            }
            Ok(false)
        })?;
        Ok(out)
    }
}
