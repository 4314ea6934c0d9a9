//! `libzerorx-fi.so`: zerorx's io_uring TCP transport (zerorx-fabric's `uring-tcp`)
//! as a libfabric provider, so programs written against libfabric run over it
//! unmodified:
//!
//! ```text
//! scripts/fi-provider                       # builds target/fi/libzerorx-fi.so
//! FI_PROVIDER_PATH=target/fi fi_info -p zerorx
//! FI_PROVIDER_PATH=target/fi fi_pingpong -p zerorx -e rdm &
//! FI_PROVIDER_PATH=target/fi fi_pingpong -p zerorx -e rdm 127.0.0.1
//! ```
//!
//! What it offers (`attrs`): reliable-datagram endpoints (`FI_EP_RDM`) with
//! `FI_MSG` and `FI_TAGGED` sends and receives, RMA, immediate data, inject, IPv4
//! socket addresses. Each domain runs a one-worker zerorx runtime that is the only
//! thread touching the ring and the zerorx-fabric objects (`worker`): on a worker
//! thread of its own (thread-safe domains, automatic progress), or on the thread that
//! opened it, inside that thread's calls (`engine`: `FI_THREAD_DOMAIN` with manual
//! progress). Application threads hand it operations and read completions from shared
//! queues (`cq`). DESIGN.md ("libfabric provider") says why, and what each choice
//! costs per operation.
//!
//! All `unsafe` code — the C ABI libfabric and applications call — is in `ffi`,
//! whose module comment is the contract.

mod addr;
mod attrs;
mod av;
mod cntr;
mod codes;
mod cq;
mod domain;
mod engine;
mod ep;
mod eq;
mod errors;
mod ffi;
mod poll;
mod worker;
