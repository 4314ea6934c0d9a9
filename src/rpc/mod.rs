//! Apache Thrift on the runtime: wire protocols, typed codecs, a server and a client.
//!
//! - [`protocol`]: TBinaryProtocol (strict and non-strict headers) and
//!   TCompactProtocol readers/writers over [`bytes::Buf`], with decode limits.
//! - [`ThriftEncode`] / [`ThriftDecode`]: typed values; `binary` and `string` decode
//!   into [`bytes::Bytes`] slices of the received frame (no copy).
//! - [`OutBuf`]: encoding into a per-thread arena, large payloads referenced, sent as
//!   one vectored write.
//! - [`Value`]: any value without a schema.
//! - [`ApplicationException`] is `TApplicationException`.

pub mod bench;
pub mod client;
mod codec;
mod error;
mod exception;
mod message;
mod out;
pub mod protocol;
mod result;
pub mod server;
mod signal;
pub mod transport;
mod value;
mod writer;

pub use client::{Client, ClientConfig, ClientError};
pub use codec::{
    read_field, read_struct, required, write_field, ThriftDecode, ThriftEncode, ThriftType,
    Utf8Bytes, Uuid,
};
pub use error::{DecodeError, EncodeError};
pub use exception::{ApplicationException, ApplicationExceptionKind};
pub use message::{encode_message, write_message, MessageBody, MessageReader};
pub use out::{OutBuf, SHARE_MIN};
pub use protocol::{
    DecodeLimits, FieldHeader, ListHeader, MapHeader, MessageHeader, MessageType, Protocol,
    ProtocolRead, ProtocolWrite, TType,
};
pub use result::{Returns, Void};
pub use server::{Server, ServerBuilder, ServerConfig, ServerStats};
pub use value::Value;
