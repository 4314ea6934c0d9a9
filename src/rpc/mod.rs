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
//! - [`server`]: [`Server`] on every worker; [`client`]: [`Client`].
//! - [`bench`](mod@bench): the reference service (`bench.thrift`), its typed client, `zerorx serve`.
//!
//! ```
//! use zerorx::rpc::{bench, ApplicationException, Returns, Server, Void};
//!
//! let rt = zerorx::Runtime::builder().threads(2).build()?;
//! let server = bench::register(Server::builder(), Default::default())
//!     .method("ping", |_: bench::FiredArgs| async { Ok::<_, ApplicationException>(Void) })
//!     .addr("127.0.0.1:0".parse().unwrap())
//!     .start(rt.handle())?; // one listener per worker
//! let addr = server.local_addr();
//! rt.block_on(async {
//!     let c = bench::BenchClient::connect(addr, Default::default()).await.unwrap();
//!     assert_eq!(c.add(40, 2).await.unwrap(), 42);
//!     let r: Returns<i64> = c.client().call("add", &bench::AddArgs { a: 1, b: 2 }).await.unwrap();
//!     assert_eq!(r.0, 3);
//!     let _: Void = c.client().call("ping", &bench::FiredArgs).await.unwrap();
//! });
//! assert_eq!(server.stats().requests, 3);
//! let stop = server.shutdown_handle();
//! stop.shutdown(std::time::Duration::from_secs(1));
//! rt.block_on(server.stopped())?;
//! # Ok::<(), std::io::Error>(())
//! ```

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
