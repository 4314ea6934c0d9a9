//! The rpc bench's parts: the client load, the report, and the servers it measures
//! (zerorx's own, a tokio server with zerorx's codecs, the `thrift` crate's threaded
//! server, Apache C++ `TNonblockingServer`, volo-thrift).

pub mod load;
pub mod report;
pub mod servers;
pub mod thrift_crate_server;
pub mod tnonblocking;
pub mod tokio_server;
pub mod volo;
