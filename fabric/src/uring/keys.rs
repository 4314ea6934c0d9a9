//! Remote keys of one domain: grants, revocation, and the check the target runs on
//! every RMA.

use crate::error::{AccessFault, FabricError};
use crate::provider::RegionProvider;
use crate::region::{random_u64, Access, KeyGrant, RegionMemory, KEYED_GENERATION};
use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

/// Revoked keys remembered (to answer `StaleKey` rather than `BadKey`); older ones are
/// forgotten and then answer `BadKey`.
const REVOKED_REMEMBERED: usize = 4096;

struct Grant {
    /// `None` once revoked.
    mem: Option<Arc<RegionMemory>>,
    start: u64,
    len: u64,
    access: Access,
    generation: u32,
}

/// Every key granted in a domain.
#[derive(Default)]
pub(super) struct KeyTable {
    grants: HashMap<u64, Grant>,
    revoked: VecDeque<u64>,
    generation: u32,
}

/// A validated RMA target: the memory and the absolute offset into it.
pub(super) struct Target {
    pub mem: Arc<RegionMemory>,
    pub at: usize,
}

impl KeyTable {
    fn grant(&mut self, mem: &Arc<RegionMemory>, range: Range<usize>, access: Access) -> KeyGrant {
        let mut key = random_u64();
        while key == 0 || self.grants.contains_key(&key) {
            key = random_u64();
        }
        // Generation KEYED_GENERATION belongs to program-chosen keys.
        self.generation = self.generation.wrapping_add(1);
        if self.generation == KEYED_GENERATION {
            self.generation = 1;
        }
        self.insert(key, self.generation, mem, range, access)
    }

    /// A grant under the program's `key`.
    fn grant_keyed(
        &mut self,
        mem: &Arc<RegionMemory>,
        range: Range<usize>,
        access: Access,
        key: u64,
    ) -> Result<KeyGrant, FabricError> {
        if self.grants.get(&key).is_some_and(|g| g.mem.is_some()) {
            return Err(FabricError::invalid(
                "key",
                key,
                "already granted in this domain",
            ));
        }
        self.revoked.retain(|k| *k != key);
        Ok(self.insert(key, KEYED_GENERATION, mem, range, access))
    }

    fn insert(
        &mut self,
        key: u64,
        generation: u32,
        mem: &Arc<RegionMemory>,
        range: Range<usize>,
        access: Access,
    ) -> KeyGrant {
        self.grants.insert(
            key,
            Grant {
                mem: Some(mem.clone()),
                start: range.start as u64,
                len: range.len() as u64,
                access,
                generation,
            },
        );
        KeyGrant {
            key,
            generation,
            base: range.start as u64,
        }
    }

    fn revoke(&mut self, key: u64) -> bool {
        match self.grants.get_mut(&key) {
            Some(g) if g.mem.is_some() => {
                g.mem = None;
                self.revoked.push_back(key);
                while self.revoked.len() > REVOKED_REMEMBERED {
                    if let Some(old) = self.revoked.pop_front() {
                        self.grants.remove(&old);
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// The target's check of an RMA: `addr` is the key's base plus the initiator's
    /// offset.
    pub(super) fn check(
        &self,
        key: u64,
        generation: u32,
        addr: u64,
        len: u64,
        need: Access,
    ) -> Result<Target, AccessFault> {
        let g = self.grants.get(&key).ok_or(AccessFault::BadKey)?;
        if g.generation != generation {
            return Err(AccessFault::StaleKey);
        }
        let mem = g.mem.as_ref().ok_or(AccessFault::StaleKey)?;
        if !g.access.contains(need) {
            return Err(AccessFault::NoAccess { need });
        }
        let offset = addr.wrapping_sub(g.start);
        let inside = addr >= g.start && offset.checked_add(len).is_some_and(|e| e <= g.len);
        if !inside {
            return Err(AccessFault::OutOfBounds {
                offset,
                len,
                limit: g.len,
            });
        }
        Ok(Target {
            mem: mem.clone(),
            at: addr as usize,
        })
    }
}

/// The io_uring provider's registration of a region: its keys in the domain table.
pub(super) struct UringRegion {
    pub mem: Arc<RegionMemory>,
    pub table: Rc<RefCell<KeyTable>>,
    pub keys: RefCell<Vec<u64>>,
}

impl RegionProvider for UringRegion {
    fn grant(&self, range: Range<usize>, access: Access) -> Result<KeyGrant, FabricError> {
        let g = self.table.borrow_mut().grant(&self.mem, range, access);
        self.keys.borrow_mut().push(g.key);
        Ok(g)
    }

    fn grant_key(
        &self,
        range: Range<usize>,
        access: Access,
        key: u64,
    ) -> Result<KeyGrant, FabricError> {
        let g = self
            .table
            .borrow_mut()
            .grant_keyed(&self.mem, range, access, key)?;
        self.keys.borrow_mut().push(g.key);
        Ok(g)
    }

    fn revoke(&self, key: u64) -> bool {
        let mut keys = self.keys.borrow_mut();
        let Some(i) = keys.iter().position(|k| *k == key) else {
            return false;
        };
        keys.swap_remove(i);
        self.table.borrow_mut().revoke(key)
    }

    fn revoke_all(&self) {
        let keys = std::mem::take(&mut *self.keys.borrow_mut());
        let mut t = self.table.borrow_mut();
        for k in keys {
            t.revoke(k);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for UringRegion {
    fn drop(&mut self) {
        self.revoke_all();
    }
}
