//! libfabric's own error codes (`FI_ERRNO_OFFSET` and up) as the `i32`s entry points
//! return negated; bindgen gives them as `u32` because they are enum members, while
//! the errno-valued ones (`FI_EINVAL`, ...) are already `i32`.

use zerorx_libfabric_sys as fi;

pub(crate) const EOTHER: i32 = fi::FI_EOTHER as i32;
pub(crate) const ETOOSMALL: i32 = fi::FI_ETOOSMALL as i32;
pub(crate) const EOPBADSTATE: i32 = fi::FI_EOPBADSTATE as i32;
pub(crate) const EAVAIL: i32 = fi::FI_EAVAIL as i32;
pub(crate) const EBADFLAGS: i32 = fi::FI_EBADFLAGS as i32;
pub(crate) const ENOCQ: i32 = fi::FI_ENOCQ as i32;
pub(crate) const ETRUNC: i32 = fi::FI_ETRUNC as i32;
pub(crate) const ENOAV: i32 = fi::FI_ENOAV as i32;
