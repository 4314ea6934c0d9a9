//! The C ABI: the `fi_prov_ini` entry point libfabric calls when it loads the
//! library, and every `fid` object and ops table applications call through. This is
//! the only module with `unsafe` code.
//!
//! # Contract
//! - **Objects.** Every object handed to C is a `#[repr(C)]` struct whose first field
//!   is libfabric's `fid_*` struct, allocated with `Box` and freed by its `close`. A
//!   `fid` pointer coming back is turned into our struct only after checking it is
//!   non-null and its `fclass` is the one that type was made with (`Obj::CLASS`);
//!   anything else is `-FI_EINVAL`, logged.
//! - **Tables.** Ops tables are `static`s built on the generated `enosys` tables, so
//!   no entry is NULL: what is not implemented logs and returns `-FI_ENOSYS`.
//! - **Panics** never cross into C: every entry point runs inside `guard`, which turns
//!   a panic into `-FI_EOTHER` and a log line.
//! - **Arguments** are checked before use (NULL pointers, lengths, flags, classes);
//!   a bad one is `-FI_EINVAL` (or the specific `FI_E*`) with a log line naming it,
//!   through libfabric's logger (`FI_LOG_LEVEL=warn`, `FI_LOG_PROV=zerorx`).
//! - **Memory the application passes** (buffers of posted operations, CQ entry
//!   arrays, addresses) is trusted to be as large as the call says and, for posted
//!   buffers, to stay valid and untouched until the operation's completion — the
//!   libfabric rule every provider relies on. The provider reads or writes posted
//!   buffers only in the domain's command loop (on its worker thread, or on the
//!   application's thread inside a call for a caller-driven domain), before the
//!   operation's completion is queued, and never after the endpoint's `fi_close`
//!   returns.
//! - **Memory handed to libfabric** (`fi_info` and its strings and addresses) is
//!   allocated with libfabric's `fi_dupinfo` and libc's `malloc`/`strdup`, because
//!   `fi_freeinfo` frees it with libc's `free`.
//! - **Threads.** Every entry point may be called from any thread at any time
//!   (`FI_THREAD_SAFE`): objects shared with the worker are `Sync` (`Arc`s of
//!   mutex-guarded queues and atomics), and nothing here blocks on the worker except
//!   control calls (`fi_enable`, endpoint `fi_close`, domain `fi_close`). A domain
//!   opened with `FI_THREAD_DOMAIN` and `FI_PROGRESS_MANUAL` is progressed by the
//!   thread that opened it, inside its calls (`crate::engine`): calls from other
//!   threads are still safe, but do not progress it, and control calls from them
//!   fail with a log line saying so.

mod av;
mod cntr;
mod cq;
#[rustfmt::skip]
mod enosys;
mod ep;
mod eq;
mod fabric;
mod info;
mod log;
pub(crate) use log::warn;
pub(crate) mod memory;
mod obj;

use crate::attrs;
use std::ptr::addr_of_mut;
use zerorx_libfabric_sys as fi;

/// The provider, as libfabric holds it. Mutable because libfabric writes its own
/// bookkeeping into `context` after `fi_prov_ini` returns.
static mut PROVIDER: fi::fi_provider = fi::fi_provider {
    version: attrs::VERSION,
    fi_version: attrs::API,
    context: fi::fi_context {
        internal: [std::ptr::null_mut(); 4],
    },
    name: c"zerorx".as_ptr(),
    getinfo: Some(info::getinfo),
    fabric: Some(fabric::fabric_open),
    cleanup: Some(cleanup),
};

/// The pointer to [`PROVIDER`] libfabric's logger takes (only the address is taken;
/// no reference to the mutable static is ever made).
fn provider() -> *const fi::fi_provider {
    addr_of_mut!(PROVIDER)
}

/// libfabric's entry point for a provider it loaded from `FI_PROVIDER_PATH`.
#[no_mangle]
pub extern "C" fn fi_prov_ini() -> *mut fi::fi_provider {
    addr_of_mut!(PROVIDER)
}

/// Nothing to release: every domain's worker is stopped by its `fi_close`.
unsafe extern "C" fn cleanup() {}

/// Runs an entry point's body; a panic becomes `fallback` and a log line instead
/// of unwinding into C.
fn guard<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::warn(&format!("internal error in {what}: {msg}"));
            fallback
        }
    }
}

/// A C string argument, when given and UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
unsafe fn c_str<'a>(p: *const std::os::raw::c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok()
}
