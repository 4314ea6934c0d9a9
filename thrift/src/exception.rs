//! [`ApplicationException`]: Thrift's `TApplicationException`, the error every Thrift
//! peer understands (unknown method, protocol error, internal error, ...).

use super::codec::{read_field, read_struct, write_field, ThriftDecode, ThriftEncode, ThriftType};
use super::error::DecodeError;
use super::protocol::{ProtocolRead, ProtocolWrite, TType};
use bytes::Bytes;
use std::fmt;

/// What went wrong, as `TApplicationException.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApplicationExceptionKind {
    /// 0: unknown.
    Unknown,
    /// 1: the method does not exist.
    UnknownMethod,
    /// 2: a message type the receiver did not expect.
    InvalidMessageType,
    /// 3: a reply for a different method.
    WrongMethodName,
    /// 4: a reply with an unexpected sequence id.
    BadSequenceId,
    /// 5: a reply without a result.
    MissingResult,
    /// 6: the handler failed.
    InternalError,
    /// 7: the request could not be decoded.
    ProtocolError,
    /// 8: unsupported transform.
    InvalidTransform,
    /// 9: unsupported protocol.
    InvalidProtocol,
    /// 10: unsupported client type.
    UnsupportedClientType,
    /// Any other code.
    Other(i32),
}

impl ApplicationExceptionKind {
    /// The wire code.
    pub fn code(self) -> i32 {
        match self {
            Self::Unknown => 0,
            Self::UnknownMethod => 1,
            Self::InvalidMessageType => 2,
            Self::WrongMethodName => 3,
            Self::BadSequenceId => 4,
            Self::MissingResult => 5,
            Self::InternalError => 6,
            Self::ProtocolError => 7,
            Self::InvalidTransform => 8,
            Self::InvalidProtocol => 9,
            Self::UnsupportedClientType => 10,
            Self::Other(c) => c,
        }
    }

    /// The kind for a wire code.
    pub fn from_code(code: i32) -> Self {
        match code {
            0 => Self::Unknown,
            1 => Self::UnknownMethod,
            2 => Self::InvalidMessageType,
            3 => Self::WrongMethodName,
            4 => Self::BadSequenceId,
            5 => Self::MissingResult,
            6 => Self::InternalError,
            7 => Self::ProtocolError,
            8 => Self::InvalidTransform,
            9 => Self::InvalidProtocol,
            10 => Self::UnsupportedClientType,
            c => Self::Other(c),
        }
    }
}

/// A `TApplicationException`: `struct { 1: string message, 2: i32 type }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplicationException {
    /// What went wrong.
    pub kind: ApplicationExceptionKind,
    /// A human-readable message.
    pub message: String,
}

impl ApplicationException {
    /// An exception of `kind` with `message`.
    pub fn new(kind: ApplicationExceptionKind, message: impl Into<String>) -> Self {
        ApplicationException {
            kind,
            message: message.into(),
        }
    }

    /// An `InternalError`, what a failing handler returns.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ApplicationExceptionKind::InternalError, message)
    }
}

impl fmt::Display for ApplicationException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TApplicationException({:?}): {}",
            self.kind, self.message
        )
    }
}

impl std::error::Error for ApplicationException {}

impl ThriftType for ApplicationException {
    const TTYPE: TType = TType::Struct;
}

impl ThriftEncode for ApplicationException {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_struct_begin();
        w.write_field_begin(TType::Binary, 1);
        w.write_binary(self.message.as_bytes());
        write_field(w, 2, &self.kind.code());
        w.write_field_stop();
        w.write_struct_end();
    }
}

impl ThriftDecode for ApplicationException {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        let mut message = None;
        let mut code = None;
        read_struct(r, |r, h| {
            match h.id {
                1 => message = read_field::<_, Bytes>(r, h)?,
                2 => code = read_field::<_, i32>(r, h)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(ApplicationException {
            kind: ApplicationExceptionKind::from_code(code.unwrap_or(0)),
            // A peer's message is shown, not trusted: invalid UTF-8 is replaced.
            message: message
                .map(|m| String::from_utf8_lossy(&m).into_owned())
                .unwrap_or_default(),
        })
    }
}
