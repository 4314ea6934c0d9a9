//! Application memory as zerorx-fabric regions: where libfabric's memory contract
//! (a posted buffer stays valid and untouched until its completion; a registered one
//! until the MR's close) becomes the safety of `Domain::register_foreign`.

use zerorx_fabric::{Access, Domain, FabricError, MemoryRegion};

/// Where the address-space region starts (a region needs a non-null base) and how
/// long it is: every user-space address of x86-64 and aarch64 Linux lies inside.
pub(crate) const SPACE_BASE: usize = 1;
const SPACE_LEN: usize = (isize::MAX as usize) - SPACE_BASE;

/// The local-only region over the whole address space that posts name application
/// buffers in, by address (no registration per operation).
pub(crate) fn address_space(domain: &Domain) -> Result<MemoryRegion, FabricError> {
    // SAFETY: no key is ever granted on this region, so only posts reach it, and
    // libfabric's contract makes the application keep a posted buffer valid and
    // untouched until the operation's completion; zerorx-fabric touches a posted
    // range only until then, and not after the endpoint's close.
    unsafe { domain.register_foreign(SPACE_BASE as *mut u8, SPACE_LEN, Access::LOCAL) }
}

/// An `fi_mr_reg` with remote access: `[ptr, ptr+len)` registered for `access`.
pub(crate) fn application_region(
    domain: &Domain,
    ptr: usize,
    len: usize,
    access: Access,
) -> Result<MemoryRegion, FabricError> {
    // SAFETY: libfabric's contract for fi_mr_reg: the application keeps the memory
    // valid until fi_close of the MR, which deregisters it (the worker drops the
    // region) before returning.
    unsafe { domain.register_foreign(ptr as *mut u8, len, access) }
}
