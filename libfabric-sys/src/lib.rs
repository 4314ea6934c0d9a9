//! Raw bindings to the libfabric installed on the system (Debian 12: 1.17), generated at build
//! time by bindgen from `rdma/fabric.h`, `fi_domain.h`, `fi_endpoint.h`, `fi_cm.h`, `fi_eq.h`,
//! `fi_errno.h`, `fi_tagged.h` and `fi_rma.h`.
//!
//! The header's `static inline` functions (`fi_send`, `fi_recv`, `fi_tsend`, `fi_read`,
//! `fi_write`, `fi_cq_read`, `fi_mr_reg`, `fi_close`, ...) are bound under their own names through
//! C wrappers bindgen generates (`wrap_static_fns`), so they follow whatever header version the
//! system has. Every function here is `unsafe` and follows the libfabric man pages; the safe
//! layer lives in `zerorx_fabric::libfabric`.
//!
//! Enum variants are plain constants without the enum's name (`FI_EP_RDM`, `FI_WAIT_FD`), every
//! `FI_*` flag macro is a `u64`, and the `fi_errno.h` codes are `i32`s (return values are their
//! negation). Header macros that bindgen cannot evaluate are written out below.

mod generated {
    #![allow(
        missing_docs,
        non_upper_case_globals,
        non_camel_case_types,
        non_snake_case,
        unsafe_op_in_unsafe_fn,
        clippy::all,
        clippy::undocumented_unsafe_blocks
    )]
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

pub use generated::*;

/// `FI_ADDR_UNSPEC` (`((uint64_t) -1)` in `fabric.h`): "any source" / "no address".
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;

/// `FI_ADDR_NOTAVAIL` (`((uint64_t) -1)`): what `fi_av_insert` stores for an address it could
/// not insert.
pub const FI_ADDR_NOTAVAIL: fi_addr_t = u64::MAX;

/// `FI_KEY_NOTAVAIL` (`((uint64_t) -1)`): the key of a registration with no remote key yet.
pub const FI_KEY_NOTAVAIL: u64 = u64::MAX;

/// `FI_VERSION(major, minor)`, the function-like macro `fi_getinfo` expects its version in.
pub const fn fi_version_of(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

/// The API version these bindings were generated against (`FI_MAJOR_VERSION.FI_MINOR_VERSION`
/// of the installed headers), the version to pass to `fi_getinfo`.
pub const FI_HEADER_VERSION: u32 = fi_version_of(FI_MAJOR_VERSION as u32, FI_MINOR_VERSION as u32);
