//! Turning `fid` pointers from C back into our objects, and back.

use zerorx_libfabric_sys as fi;

/// A provider object whose first field is a libfabric `fid_*` struct.
///
/// # Safety
/// Implementors are `#[repr(C)]` with a `fid` (directly or as the first field of
/// their first field) at offset 0 whose `fclass` is set to `CLASS` at creation.
pub(crate) unsafe trait Obj: Sized {
    const CLASS: u32;
    const NAME: &'static str;
}

/// The object behind `p`, if `p` is one of ours of type `T`.
///
/// # Safety
/// `p` is NULL or points to a `fid` that is live for the returned lifetime (the
/// libfabric rule: an application never uses a closed fid).
pub(crate) unsafe fn get<'a, T: Obj>(p: *mut fi::fid) -> Option<&'a T> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and live by the caller's contract; `fclass` is the first field
    // of every fid.
    let class = unsafe { (*p).fclass };
    if class != T::CLASS as usize {
        return None;
    }
    // SAFETY: the class says it was made as a `T`, whose fid is at offset 0 (`Obj`).
    Some(unsafe { &*(p as *const T) })
}

/// Frees an object made by [`into_fid`].
///
/// # Safety
/// `p` is a live `T` made by `into_fid`, not used again after this.
pub(crate) unsafe fn free<T: Obj>(p: *mut fi::fid) {
    // SAFETY: by the contract, `p` came from `Box::into_raw` of a `T`.
    drop(unsafe { Box::from_raw(p as *mut T) });
}

/// Hands an object to C; its `fid` pointer is the object's address.
pub(crate) fn into_fid<T: Obj>(obj: T) -> *mut T {
    Box::into_raw(Box::new(obj))
}

/// A `fid` header for a new object of class `T`.
pub(crate) fn header<T: Obj>(context: *mut std::ffi::c_void, ops: &'static fi::fi_ops) -> fi::fid {
    fi::fid {
        fclass: T::CLASS as usize,
        context,
        ops: ops as *const fi::fi_ops as *mut fi::fi_ops,
    }
}

/// A static ops table as the `*mut` the `fid_*` structs hold (libfabric never
/// writes through it).
pub(crate) fn table<T>(t: &'static T) -> *mut T {
    t as *const T as *mut T
}

/// [`get`], or the refusal to return: `-FI_EINVAL` with a log line naming `call`.
///
/// # Safety
/// As [`get`].
pub(crate) unsafe fn need<'a, T: Obj>(p: *mut fi::fid, call: &str) -> Result<&'a T, i32> {
    // SAFETY: as `get`.
    unsafe { get::<T>(p) }.ok_or_else(|| {
        super::log::refuse(call, fi::FI_EINVAL, &format!("not a zerorx {}", T::NAME))
    })
}
