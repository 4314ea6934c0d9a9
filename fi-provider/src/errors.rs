//! How zerorx-fabric's failures reach libfabric programs: the `FI_E*` code of a
//! completion error entry, zerorx's own `prov_errno` (which `fi_cq_strerror` explains)
//! and the text naming the cause.

use crate::codes;
use std::ffi::{CStr, CString};
use zerorx_fabric::OpError;
use zerorx_libfabric_sys as fi;

/// `prov_errno` values: which of zerorx's failures it was.
pub(crate) const TRUNCATED: i32 = 1;
pub(crate) const CANCELED: i32 = 2;
pub(crate) const CONNECTION_LOST: i32 = 3;
pub(crate) const REMOTE_ACCESS: i32 = 4;
pub(crate) const PROVIDER: i32 = 5;
pub(crate) const POST_REFUSED: i32 = 6;
pub(crate) const NO_MESSAGE: i32 = 7;

/// The error code, `prov_errno` and overflow length (`olen`) of a failed operation.
pub(crate) fn of_op(e: &OpError) -> (i32, i32, usize) {
    match e {
        OpError::Truncated { needed, posted } => (
            codes::ETRUNC,
            TRUNCATED,
            needed.map_or(0, |n| n.saturating_sub(*posted)),
        ),
        OpError::Canceled => (fi::FI_ECANCELED, CANCELED, 0),
        OpError::NoMessage => (fi::FI_ENOMSG, NO_MESSAGE, 0),
        OpError::ConnectionLost { .. } => (fi::FI_ECONNRESET, CONNECTION_LOST, 0),
        OpError::RemoteAccess { .. } => (fi::FI_EACCES, REMOTE_ACCESS, 0),
        OpError::Provider { code, .. } => (code.abs(), PROVIDER, 0),
    }
}

/// What a `prov_errno` means, when `fi_cq_strerror` has no entry text to give.
pub(crate) fn describe(prov_errno: i32) -> &'static CStr {
    match prov_errno {
        TRUNCATED => c"zerorx: the message was longer than the posted receive",
        CANCELED => c"zerorx: the operation was cancelled",
        CONNECTION_LOST => c"zerorx: the connection to the peer was lost",
        REMOTE_ACCESS => c"zerorx: the target refused the access",
        PROVIDER => c"zerorx: transport error",
        POST_REFUSED => c"zerorx: the operation could not be started",
        NO_MESSAGE => c"zerorx: no waiting message matches the probe or claim",
        _ => c"zerorx: unknown error",
    }
}

/// `text` as a C string (interior NULs, which no zerorx message has, become `?`).
pub(crate) fn c_text(text: String) -> CString {
    CString::new(text.replace('\0', "?")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncation_reports_the_bytes_that_did_not_fit() {
        let (err, prov, olen) = of_op(&OpError::Truncated {
            needed: Some(100),
            posted: 64,
        });
        assert_eq!((err, prov, olen), (codes::ETRUNC, TRUNCATED, 36));
        assert!(describe(prov)
            .to_str()
            .unwrap()
            .contains("longer than the posted receive"));
        assert_eq!(of_op(&OpError::Canceled).0, fi::FI_ECANCELED);
        assert_eq!(c_text("a\0b".into()).to_str().unwrap(), "a?b");
    }
}
