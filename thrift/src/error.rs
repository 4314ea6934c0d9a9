//! Errors of decoding untrusted bytes and of encoding values.

use super::protocol::TType;
use std::fmt;

/// Why bytes could not be decoded. Every variant is a clean error: decoders never
/// panic on input and never allocate by a length before the bytes it covers arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside a value: `needed` more bytes were expected where only
    /// `remaining` were left. Also reported when a container declares more elements
    /// than the remaining bytes could hold (each element takes at least one byte).
    Truncated {
        /// Bytes the decoder needed at that point.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length or element count was negative.
    NegativeSize(i64),
    /// A container declared more elements than the configured limit.
    SizeLimit {
        /// The declared element count.
        size: usize,
        /// The limit ([`DecodeLimits::max_container_len`](super::protocol::DecodeLimits)).
        limit: usize,
    },
    /// A `string` or `binary` longer than the configured limit.
    StringLimit {
        /// The declared length.
        len: usize,
        /// The limit ([`DecodeLimits::max_string_len`](super::protocol::DecodeLimits)).
        limit: usize,
    },
    /// Structs and containers were nested deeper than the configured limit.
    DepthLimit(usize),
    /// A type id that names no Thrift type.
    InvalidType(u8),
    /// A message header whose version or protocol id is not one this decoder speaks.
    BadVersion(u32),
    /// A message type outside call/reply/exception/oneway.
    InvalidMessageType(u8),
    /// A varint longer than its type allows.
    VarintTooLong,
    /// A `string` that is not UTF-8.
    InvalidUtf8,
    /// A container's element type differs from the one the decoded type expects.
    WrongElementType {
        /// The type the decoder expected.
        expected: TType,
        /// The type the input declared.
        found: TType,
    },
    /// A field every valid value of the struct has was absent.
    MissingField {
        /// The struct being decoded.
        strukt: &'static str,
        /// The absent field.
        field: &'static str,
    },
    /// A reply struct with no result field (a non-void method's reply must carry one).
    MissingResult(&'static str),
    /// A union with no field, or more than one, set (exactly one must be).
    UnionFields {
        /// The union being decoded.
        union: &'static str,
        /// How many of its fields were on the wire.
        set: usize,
    },
}

impl DecodeError {
    /// True when the bytes ended before the value did (more input could complete it).
    pub fn is_truncated(&self) -> bool {
        matches!(self, DecodeError::Truncated { .. })
    }

    /// True for errors about what a well-formed message *contains* (a missing field, a
    /// container of the wrong element type, a non-UTF-8 string), as opposed to bytes
    /// that are not valid Thrift at all. A server answers the former with a
    /// `TApplicationException` and keeps the connection; the latter close it.
    pub fn is_bad_content(&self) -> bool {
        matches!(
            self,
            DecodeError::InvalidUtf8
                | DecodeError::WrongElementType { .. }
                | DecodeError::MissingField { .. }
                | DecodeError::MissingResult(_)
                | DecodeError::UnionFields { .. }
        )
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { needed, remaining } => write!(
                f,
                "input truncated: {needed} more bytes needed, {remaining} remaining"
            ),
            DecodeError::NegativeSize(n) => write!(f, "negative size {n}"),
            DecodeError::SizeLimit { size, limit } => {
                write!(
                    f,
                    "container of {size} elements exceeds the limit of {limit}"
                )
            }
            DecodeError::StringLimit { len, limit } => {
                write!(f, "string of {len} bytes exceeds the limit of {limit}")
            }
            DecodeError::DepthLimit(d) => write!(f, "nesting deeper than the limit of {d}"),
            DecodeError::InvalidType(t) => write!(f, "invalid type id {t}"),
            DecodeError::BadVersion(v) => write!(f, "bad protocol version {v:#010x}"),
            DecodeError::InvalidMessageType(t) => write!(f, "invalid message type {t}"),
            DecodeError::VarintTooLong => f.write_str("varint too long"),
            DecodeError::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            DecodeError::WrongElementType { expected, found } => write!(
                f,
                "container element type {found:?} where {expected:?} was expected"
            ),
            DecodeError::MissingField { strukt, field } => {
                write!(f, "{strukt}: required field `{field}` is missing")
            }
            DecodeError::MissingResult(method) => {
                write!(f, "{method}: reply carries no result")
            }
            DecodeError::UnionFields { union, set } => {
                write!(
                    f,
                    "{union}: {set} fields of the union set where exactly one must be"
                )
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a value could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// A string, binary or container longer than the protocol can express (`i32::MAX`).
    TooLong(usize),
    /// The encoded message is larger than the frame limit.
    FrameTooLarge {
        /// Encoded size in bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::TooLong(n) => write!(f, "length {n} exceeds i32::MAX"),
            EncodeError::FrameTooLarge { size, limit } => {
                write!(
                    f,
                    "encoded message of {size} bytes exceeds the frame limit of {limit}"
                )
            }
        }
    }
}

impl std::error::Error for EncodeError {}
