//! Memory regions on libfabric: one registration for local use (only when the provider
//! needs local descriptors) and one registration per granted key, so revoking a key is
//! closing exactly its registration.

use super::errors;
use super::res::{DomainRes, MrRes};
use crate::provider::RegionProvider;
use crate::{memlock_state, random_u64, Access, FabricError, KeyGrant, RegionMemory};
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ops::Range;
use std::ptr;
use std::sync::Arc;
use zerorx_libfabric_sys as fi;

/// Attempts at a fresh random key before giving up (a collision needs 2^-64 luck).
const KEY_ATTEMPTS: usize = 4;

/// A region registered with libfabric.
pub(super) struct LfRegion {
    mem: Arc<RegionMemory>,
    domain: Arc<DomainRes>,
    local: Option<MrRes>,
    grants: RefCell<HashMap<u64, MrRes>>,
}

impl LfRegion {
    /// Registers `mem`. A local registration is made only when the provider asks for
    /// local descriptors (`FI_MR_LOCAL`); remote access is granted per key.
    pub(super) fn register(
        domain: &Arc<DomainRes>,
        mem: &Arc<RegionMemory>,
        access: Access,
    ) -> Result<LfRegion, FabricError> {
        let local = if domain.traits.mr_local {
            let mut flags = 0;
            if access.contains(Access::READ) {
                flags |= fi::FI_SEND | fi::FI_WRITE;
            }
            if access.contains(Access::WRITE) {
                flags |= fi::FI_RECV | fi::FI_READ;
            }
            // SAFETY: `mem` is kept alive by this region (the Arc field) for as long as
            // the registration exists.
            let mr = unsafe { MrRes::register(domain, mem.as_ptr(), mem.len(), flags, 0) };
            Some(mr.map_err(|rc| {
                errors::registration_failed(
                    domain.prov(),
                    rc.into(),
                    mem.len() as u64,
                    memlock_state(),
                )
            })?)
        } else {
            None
        };
        Ok(LfRegion {
            mem: mem.clone(),
            domain: domain.clone(),
            local,
            grants: RefCell::new(HashMap::new()),
        })
    }

    /// The local descriptor to post with (null when the provider needs none).
    pub(super) fn desc(&self) -> *mut c_void {
        self.local.as_ref().map_or(ptr::null_mut(), MrRes::desc)
    }
}

impl RegionProvider for LfRegion {
    fn grant(&self, range: Range<usize>, access: Access) -> Result<KeyGrant, FabricError> {
        let mut flags = 0;
        if access.contains(Access::REMOTE_READ) {
            flags |= fi::FI_REMOTE_READ;
        }
        if access.contains(Access::REMOTE_WRITE) {
            flags |= fi::FI_REMOTE_WRITE;
        }
        // SAFETY: the generic layer checked range ⊆ region.
        let start = unsafe { self.mem.as_ptr().add(range.start) };
        let len = range.len();
        let mut last = 0;
        for _ in 0..KEY_ATTEMPTS {
            let want = random_u64();
            // SAFETY: the registration lives in self.grants, dropped before (or with)
            // self, which holds the memory's Arc.
            match unsafe { MrRes::register(&self.domain, start, len, flags, want) } {
                Ok(mr) => {
                    let key = if self.domain.traits.prov_key {
                        mr.key()
                    } else {
                        want
                    };
                    let base = if self.domain.traits.virt_addr {
                        start as u64
                    } else {
                        0
                    };
                    self.grants.borrow_mut().insert(key, mr);
                    return Ok(KeyGrant {
                        key,
                        generation: random_u64() as u32,
                        base,
                    });
                }
                Err(rc) if rc == -(fi::FI_ENOKEY as i32) || rc == -fi::FI_EBUSY => last = rc,
                Err(rc) => {
                    return Err(errors::registration_failed(
                        self.domain.prov(),
                        rc.into(),
                        len as u64,
                        memlock_state(),
                    ))
                }
            }
        }
        Err(errors::call_failed(
            self.domain.prov(),
            "fi_mr_reg",
            last.into(),
        ))
    }

    fn revoke(&self, key: u64) -> bool {
        self.grants.borrow_mut().remove(&key).is_some()
    }

    fn revoke_all(&self) {
        let all = std::mem::take(&mut *self.grants.borrow_mut());
        drop(all);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
