//! libfabric's return codes and error completions turned into the API's typed errors.
//!
//! What libfabric 1.17 reports was measured on this machine (`shared/design/fabric-api.md`
//! section 3, plus the provider tests here): the sign of `err` varies (`shm` reports
//! `-FI_ETRUNC`), `olen` is sometimes 0 on truncation, a rejected RMA on `tcp;ofi_rxm`
//! with delivery-complete is `FI_ECANCELED` with `prov_errno` `ENOENT`, and a lost
//! connection shows up as `FI_ECANCELED`/`ENOTCONN`/`ECONNRESET`/`EPIPE` in either field.
//! Everything here is a pure function of those numbers, so it is tested without a network.

use crate::{AccessFault, FabricError, OpError, PeerId};
use std::ffi::CStr;
use zerorx_libfabric_sys as fi;

/// libfabric's text for an error code (either sign).
pub(super) fn strerror(code: i64) -> String {
    let code = code.unsigned_abs().min(i32::MAX as u64) as i32;
    // SAFETY: fi_strerror returns a pointer to a static NUL-terminated string for any
    // code, known or not.
    unsafe { CStr::from_ptr(fi::fi_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}

/// A failed setup call (`fi_getinfo`, `fi_endpoint`, `fi_mr_reg`, ...).
pub(super) fn call_failed(provider: &str, call: &'static str, rc: i64) -> FabricError {
    FabricError::Provider {
        provider: provider.to_string(),
        call,
        code: abs_code(rc),
        text: strerror(rc),
    }
}

/// `Ok` for a zero return, the typed error otherwise.
pub(super) fn check(provider: &str, call: &'static str, rc: i32) -> Result<(), FabricError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(call_failed(provider, call, i64::from(rc)))
    }
}

fn abs_code(rc: i64) -> i32 {
    rc.unsigned_abs().min(i32::MAX as u64) as i32
}

/// What kind of operation an error completion belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// A send.
    Send,
    /// A receive (region or lease).
    Recv,
    /// An RMA write or read.
    Rma,
}

/// One error completion as `fi_cq_readerr` returned it.
#[derive(Debug, Clone)]
pub(super) struct ErrCompletion {
    /// `err` (either sign: shm reports it negated).
    pub(super) err: i32,
    /// `prov_errno` (either sign).
    pub(super) prov_errno: i32,
    /// `olen`: bytes that did not fit (0 when the provider does not say).
    pub(super) olen: usize,
    /// `fi_cq_strerror`'s text.
    pub(super) text: String,
}

/// errno values that mean the connection to the peer is gone.
const CONNECTION_ERRNOS: [i32; 10] = [
    libc::ENOTCONN,
    libc::ECONNRESET,
    libc::EPIPE,
    libc::ECONNABORTED,
    libc::ECONNREFUSED,
    libc::ETIMEDOUT,
    libc::EHOSTUNREACH,
    libc::ENETUNREACH,
    libc::ESHUTDOWN,
    libc::EHOSTDOWN,
];

fn is_connection_errno(e: i32) -> bool {
    CONNECTION_ERRNOS.contains(&e)
}

/// The API error for one error completion.
///
/// - truncation (`FI_ETRUNC`, either sign): `Truncated`, with the full length when the
///   provider reports the overflow (`posted + olen`), else `needed: None`;
/// - `FI_ECANCELED` of a receive: `Canceled` (only receives are ever cancelled);
/// - an RMA refused by the target (`FI_ECANCELED` with `ENOENT`, `EACCES`,
///   `FI_EKEYREJECTED`, `FI_ENOKEY`): `RemoteAccess`. libfabric does not say whether the
///   key was never granted or revoked, so the fault is `BadKey`;
/// - connection errnos in `err` or `prov_errno`, and `FI_ECANCELED` of a send or RMA
///   (the provider flushed it): `ConnectionLost`;
/// - anything else: `Provider`, with the absolute codes and the provider's text.
pub(super) fn op_error(
    provider: &str,
    dir: Dir,
    peer: Option<PeerId>,
    key: Option<u64>,
    posted: usize,
    e: &ErrCompletion,
) -> OpError {
    let err = e.err.unsigned_abs() as i32;
    let prov = e.prov_errno.unsigned_abs() as i32;
    let etrunc = fi::FI_ETRUNC as i32;
    let ecanceled = fi::FI_ECANCELED;
    if err == etrunc {
        return OpError::Truncated {
            needed: (e.olen > 0).then(|| posted.saturating_add(e.olen)),
            posted,
        };
    }
    if dir == Dir::Recv && err == ecanceled {
        return OpError::Canceled;
    }
    if dir == Dir::Rma {
        let refused = (err == ecanceled && prov == libc::ENOENT)
            || err == fi::FI_EACCES
            || err == fi::FI_EKEYREJECTED
            || err == fi::FI_ENOKEY as i32;
        if refused {
            return OpError::RemoteAccess {
                key: key.unwrap_or(0),
                fault: AccessFault::BadKey,
            };
        }
    }
    if is_connection_errno(err)
        || is_connection_errno(prov)
        || (err == ecanceled && dir != Dir::Recv)
    {
        return OpError::ConnectionLost {
            peer,
            cause: format!("{provider}: {}", describe(e)),
        };
    }
    OpError::Provider {
        provider: provider.to_string(),
        code: err,
        prov_errno: prov,
        text: describe(e),
    }
}

/// The error's text, with libfabric's name for the code when the provider's text differs.
fn describe(e: &ErrCompletion) -> String {
    let generic = strerror(i64::from(e.err));
    if e.text.is_empty() || e.text == generic {
        generic
    } else {
        format!("{generic} ({})", e.text)
    }
}

/// Whether a completion error means the peer can no longer be reached.
pub(super) fn is_connection_loss(e: &OpError) -> bool {
    matches!(e, OpError::ConnectionLost { .. })
}

/// `fi_mr_reg` failed: `ENOMEM` while the memlock limit would be passed is reported as
/// that limit, with the numbers and how to raise it.
pub(super) fn registration_failed(
    provider: &str,
    rc: i64,
    requested: u64,
    memlock: (u64, u64),
) -> FabricError {
    let (limit, locked) = memlock;
    let enomem = rc.unsigned_abs() == fi::FI_ENOMEM as u64;
    if enomem && limit != u64::MAX && locked.saturating_add(requested) > limit {
        return FabricError::MemlockLimit {
            limit,
            requested,
            locked,
        };
    }
    call_failed(provider, "fi_mr_reg", rc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(err: i32, prov_errno: i32, olen: usize) -> ErrCompletion {
        ErrCompletion {
            err,
            prov_errno,
            olen,
            text: String::new(),
        }
    }

    #[test]
    fn truncation_either_sign_with_or_without_olen() {
        let trunc = fi::FI_ETRUNC as i32;
        // tcp;ofi_rxm with bounce buffers: positive err, olen = the overflow.
        assert_eq!(
            op_error("p", Dir::Recv, None, None, 8, &e(trunc, -trunc, 32)),
            OpError::Truncated {
                needed: Some(40),
                posted: 8
            }
        );
        // shm: negative err, olen 0.
        assert_eq!(
            op_error("p", Dir::Recv, None, None, 16, &e(-trunc, trunc, 0)),
            OpError::Truncated {
                needed: None,
                posted: 16
            }
        );
    }

    #[test]
    fn cancel_of_a_receive_is_canceled_but_of_a_send_is_a_lost_connection() {
        let c = e(fi::FI_ECANCELED, -fi::FI_ECANCELED, 0);
        assert_eq!(
            op_error("p", Dir::Recv, None, None, 0, &c),
            OpError::Canceled
        );
        let peer = Some(PeerId(3));
        assert!(matches!(
            op_error("p", Dir::Send, peer, None, 0, &c),
            OpError::ConnectionLost {
                peer: Some(PeerId(3)),
                ..
            }
        ));
    }

    #[test]
    fn refused_rma_is_remote_access_with_the_key() {
        // tcp;ofi_rxm + FI_DELIVERY_COMPLETE: ECANCELED, prov_errno ENOENT.
        let refused = e(fi::FI_ECANCELED, libc::ENOENT, 0);
        assert_eq!(
            op_error("p", Dir::Rma, Some(PeerId(1)), Some(0xabc), 100, &refused),
            OpError::RemoteAccess {
                key: 0xabc,
                fault: AccessFault::BadKey
            }
        );
        assert!(matches!(
            op_error("p", Dir::Rma, None, Some(1), 1, &e(-fi::FI_EACCES, 0, 0)),
            OpError::RemoteAccess { key: 1, .. }
        ));
        // The same RMA flushed because the connection went: ECANCELED + ENOTCONN.
        let flushed = e(fi::FI_ECANCELED, libc::ENOTCONN, 0);
        assert!(matches!(
            op_error("p", Dir::Rma, Some(PeerId(1)), Some(1), 1, &flushed),
            OpError::ConnectionLost { .. }
        ));
    }

    #[test]
    fn connection_errnos_in_either_field() {
        for (err, prov) in [
            (libc::ECONNRESET, 0),
            (fi::FI_EIO, libc::EPIPE),
            (-libc::ENOTCONN, 0),
        ] {
            let got = op_error("p", Dir::Send, Some(PeerId(9)), None, 4, &e(err, prov, 0));
            assert!(is_connection_loss(&got), "{err}/{prov}: {got:?}");
        }
    }

    #[test]
    fn anything_else_keeps_the_raw_codes_as_absolute_values() {
        let got = op_error(
            "shm",
            Dir::Send,
            None,
            None,
            4,
            &ErrCompletion {
                err: -fi::FI_EIO,
                prov_errno: -7,
                olen: 0,
                text: "provider words".into(),
            },
        );
        match got {
            OpError::Provider {
                provider,
                code,
                prov_errno,
                text,
            } => {
                assert_eq!(
                    (provider.as_str(), code, prov_errno),
                    ("shm", fi::FI_EIO, 7)
                );
                assert!(text.contains("provider words"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn enomem_past_the_memlock_limit_names_the_limit() {
        let enomem = -i64::from(fi::FI_ENOMEM);
        assert_eq!(
            registration_failed("p", enomem, 4 << 20, (8 << 20, 6 << 20)),
            FabricError::MemlockLimit {
                limit: 8 << 20,
                requested: 4 << 20,
                locked: 6 << 20
            }
        );
        // Within the limit (or unlimited) ENOMEM is a plain provider failure.
        assert!(matches!(
            registration_failed("p", enomem, 4096, (8 << 20, 0)),
            FabricError::Provider {
                call: "fi_mr_reg",
                ..
            }
        ));
        assert!(matches!(
            registration_failed("p", enomem, 1 << 40, (u64::MAX, 0)),
            FabricError::Provider { .. }
        ));
        let text = registration_failed("p", enomem, 4 << 20, (8 << 20, 6 << 20)).to_string();
        assert!(
            text.contains("ulimit -l") && text.contains("CAP_IPC_LOCK"),
            "{text}"
        );
    }

    #[test]
    fn strerror_accepts_either_sign() {
        assert_eq!(
            strerror(-i64::from(fi::FI_EAGAIN)),
            strerror(i64::from(fi::FI_EAGAIN))
        );
        assert!(!strerror(fi::FI_ETRUNC.into()).is_empty());
    }
}
