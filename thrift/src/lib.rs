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
//! - [`transport`]: framed/unframed, detection, whole messages out of received buffers.
//! - [`server`]: [`Server`] on every worker; [`client`]: [`Client`]. Over TCP, or a
//!   Unix domain socket ([`ServerBuilder::unix`], [`Client::connect_unix`]).
//!
//! The reference service `zerorx serve` runs (`bench.thrift`) is in the `zerorx-cli`
//! crate; a service of your own is its argument structs and a handler per method:
//!
//! ```
//! use zerorx_thrift::{
//!     read_field, read_struct, required, write_field, ApplicationException, Client,
//!     DecodeError, ProtocolRead, ProtocolWrite, Returns, Server, TType, ThriftDecode,
//!     ThriftEncode, ThriftType,
//! };
//!
//! /// `add(1: i64 a, 2: i64 b)`'s arguments.
//! struct AddArgs { a: i64, b: i64 }
//!
//! impl ThriftType for AddArgs {
//!     const TTYPE: TType = TType::Struct;
//! }
//! impl ThriftEncode for AddArgs {
//!     fn encode<W: ProtocolWrite>(&self, w: &mut W) {
//!         w.write_struct_begin();
//!         write_field(w, 1, &self.a);
//!         write_field(w, 2, &self.b);
//!         w.write_field_stop();
//!         w.write_struct_end();
//!     }
//! }
//! impl ThriftDecode for AddArgs {
//!     fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
//!         let (mut a, mut b) = (None, None);
//!         read_struct(r, |r, h| {
//!             match h.id {
//!                 1 => a = read_field(r, h)?,
//!                 2 => b = read_field(r, h)?,
//!                 _ => return Ok(false), // unknown fields are skipped
//!             }
//!             Ok(true)
//!         })?;
//!         Ok(AddArgs { a: required(a, "AddArgs", "a")?, b: required(b, "AddArgs", "b")? })
//!     }
//! }
//!
//! let rt = zerorx::Runtime::builder().threads(2).build()?;
//! let server = Server::builder()
//!     .method("add", |x: AddArgs| async move {
//!         Ok::<_, ApplicationException>(Returns(x.a + x.b))
//!     })
//!     .addr("127.0.0.1:0".parse().unwrap())
//!     .start(rt.handle())?; // one listener per worker
//! let addr = server.local_addr();
//! rt.block_on(async {
//!     let c = Client::connect(addr, Default::default()).await.unwrap();
//!     let r: Returns<i64> = c.call("add", &AddArgs { a: 40, b: 2 }).await.unwrap();
//!     assert_eq!(r.0, 42);
//! });
//! assert_eq!(server.stats().requests, 1);
//! let stop = server.shutdown_handle();
//! stop.shutdown(std::time::Duration::from_secs(1));
//! rt.block_on(server.stopped())?;
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod client;
mod codec;
mod detach;
mod error;
mod exception;
mod message;
mod out;
pub mod protocol;
mod result;
pub mod server;
mod service;
mod signal;
mod theader;
pub mod transport;
mod value;
mod writer;

/// The `bytes` crate, whose [`Bytes`](bytes::Bytes) carries `binary` fields (generated
/// code names it through here).
pub use bytes;
pub use client::{Client, ClientConfig, ClientError};
pub use codec::{
    read_field, read_struct, required, write_field, ThriftDecode, ThriftEncode, ThriftType,
    Utf8Bytes, Uuid,
};
pub use detach::Detach;
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
pub use service::{CallError, HandlerError, Service, ServiceClient};
pub use theader::HeaderInfo;
pub use value::Value;
