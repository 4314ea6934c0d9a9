//! Log lines through libfabric's logger, so `FI_LOG_LEVEL` and `FI_LOG_PROV` apply
//! to them as to any provider's.

use super::provider;
use std::ffi::CString;
use zerorx_libfabric_sys as fi;

fn emit(level: fi::fi_log_level, subsys: fi::fi_log_subsys, msg: &str) {
    // SAFETY: `provider()` is our static provider; libfabric only reads it.
    if unsafe { fi::fi_log_enabled(provider(), level, subsys) } == 0 {
        return;
    }
    let text = CString::new(msg.replace('\0', "?")).unwrap_or_default();
    // SAFETY: every pointer is a valid NUL-terminated string for the call, and the
    // format consumes exactly the one `%s` argument given.
    unsafe {
        fi::fi_log(
            provider(),
            level,
            subsys,
            c"zerorx".as_ptr(),
            0,
            c"%s\n".as_ptr(),
            text.as_ptr(),
        )
    };
}

/// A warning (`FI_LOG_LEVEL=warn` shows it).
pub(crate) fn warn(msg: &str) {
    emit(fi::FI_LOG_WARN, fi::FI_LOG_CORE, msg);
}

/// Why `fi_getinfo` had nothing to offer, how a domain is progressed
/// (`FI_LOG_LEVEL=info`).
pub(crate) fn info(msg: &str) {
    emit(fi::FI_LOG_INFO, fi::FI_LOG_CORE, msg);
}

/// An argument refused: logs which and why, returns the negated code.
pub(crate) fn refuse(call: &str, code: i32, why: &str) -> i32 {
    if !why.is_empty() {
        warn(&format!("{call}: {why}"));
    }
    -code
}

/// An entry the provider does not implement was called.
pub(crate) fn unsupported(entry: &str) {
    warn(&format!("{entry} is not supported by zerorx"));
}
