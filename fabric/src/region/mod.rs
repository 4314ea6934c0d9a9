//! Registered memory: [`MemoryRegion`] (owner handle), [`MrSlice`] (a range to post),
//! [`RemoteKey`] (what a peer needs for RMA), [`RegionMemory`] (the bytes, shared with
//! providers) and [`Access`].

mod access;
mod keys;
mod memory;

pub use access::Access;
pub(crate) use keys::KEYED_GENERATION;
pub use keys::{random_u64, KeyGrant, RemoteKey};
pub use memory::{memlock_check, memlock_state, RegionMemory};

use crate::error::{FabricError, PostError};
use crate::provider::RegionProvider;
use bytes::Bytes;
use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

/// Shared state of a region: the memory, the provider's registration, and how many
/// operations in flight use it.
pub(crate) struct RegionInner {
    pub(crate) mem: Arc<RegionMemory>,
    pub(crate) access: Access,
    pub(crate) prov: Rc<dyn RegionProvider>,
    pub(crate) domain: u64,
    pub(crate) in_flight: Cell<usize>,
    pub(crate) closed: Cell<bool>,
}

/// Registered memory, owned by the program.
///
/// Dropping it revokes every remote key; the memory itself stays until the last
/// operation using it has completed, so deregistration can never happen under an
/// operation in flight. [`close`](Self::close) does the same but refuses while
/// operations use the region.
pub struct MemoryRegion {
    pub(crate) inner: Rc<RegionInner>,
}

impl MemoryRegion {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.inner.mem.len()
    }

    /// Never true: regions have at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The access the region was registered with.
    pub fn access(&self) -> Access {
        self.inner.access
    }

    /// Operations in flight that use the region.
    pub fn ops_in_flight(&self) -> usize {
        self.inner.in_flight.get()
    }

    /// The whole region, to post.
    pub fn all(&self) -> MrSlice {
        MrSlice {
            region: self.inner.clone(),
            offset: 0,
            len: self.len(),
        }
    }

    /// `range` of the region, to post.
    pub fn slice(&self, range: Range<usize>) -> Result<MrSlice, PostError> {
        if range.start > range.end {
            return Err(PostError::LocalRange {
                offset: range.start,
                len: 0,
                region_len: self.len(),
            });
        }
        self.inner.mem.check(range.start, range.len())?;
        Ok(MrSlice {
            region: self.inner.clone(),
            offset: range.start,
            len: range.len(),
        })
    }

    /// Copies `src` into the region at `offset` (see [`RegionMemory::write_at`]).
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<(), PostError> {
        self.inner.mem.write_at(offset, src)
    }

    /// Copies region bytes at `offset` into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), PostError> {
        self.inner.mem.read_at(offset, dst)
    }

    /// A copy of `range`.
    pub fn to_vec(&self, range: Range<usize>) -> Result<Vec<u8>, PostError> {
        let mut v = vec![0; range.len()];
        self.read(range.start, &mut v)?;
        Ok(v)
    }

    /// The memory (shared with the provider).
    pub fn memory(&self) -> &Arc<RegionMemory> {
        &self.inner.mem
    }

    /// Grants peers `access` (remote flags only) to `range`. The key is unguessable,
    /// carries a generation, and is valid until [`revoke`](Self::revoke),
    /// [`revoke_all`](Self::revoke_all) or the region's drop.
    pub fn remote(&self, range: Range<usize>, access: Access) -> Result<RemoteKey, FabricError> {
        self.grant_with(range, access, |p, r| p.grant(r, access))
    }

    /// [`remote`](Self::remote) with a key the program chose (libfabric's
    /// `requested_key` without `FI_MR_PROV_KEY`): peers present it as
    /// [`RemoteKey::raw`], so the target's check is the only one, and it has no
    /// generation to tell a re-registration from the old one. Fails when the key is
    /// already granted in the domain, or the provider picks its own keys.
    pub fn remote_keyed(
        &self,
        range: Range<usize>,
        access: Access,
        key: u64,
    ) -> Result<RemoteKey, FabricError> {
        self.grant_with(range, access, |p, r| p.grant_key(r, access, key))
    }

    /// Checks a grant of `access` to `range`, has `grant` make it, and turns it into
    /// the key peers present.
    fn grant_with(
        &self,
        range: Range<usize>,
        access: Access,
        grant: impl FnOnce(&dyn RegionProvider, Range<usize>) -> Result<KeyGrant, FabricError>,
    ) -> Result<RemoteKey, FabricError> {
        self.check_grant(&range, access)?;
        let g = grant(&*self.inner.prov, range.clone())?;
        Ok(RemoteKey {
            key: g.key,
            generation: g.generation,
            base: g.base,
            len: range.len() as u64,
            access,
        })
    }

    fn check_grant(&self, range: &Range<usize>, access: Access) -> Result<(), FabricError> {
        if range.start > range.end || range.end > self.len() || range.is_empty() {
            return Err(FabricError::invalid(
                "MemoryRegion::remote range",
                format!("{}..{}", range.start, range.end),
                format!(
                    "must be a non-empty range inside the region's {} bytes",
                    self.len()
                ),
            ));
        }
        if access.remote_part() != access || access == Access::empty() {
            return Err(FabricError::invalid(
                "MemoryRegion::remote access",
                access,
                "a remote key grants remote-read and/or remote-write only",
            ));
        }
        if !self.inner.access.contains(access) {
            return Err(FabricError::invalid(
                "MemoryRegion::remote access",
                access,
                format!("the region was registered with {} only", self.inner.access),
            ));
        }
        if self.inner.closed.get() {
            return Err(FabricError::Closed);
        }
        Ok(())
    }

    /// Revokes one key; later RMA with it fails at the target (`StaleKey`). Returns
    /// whether the key was live.
    pub fn revoke(&self, key: &RemoteKey) -> bool {
        self.inner.prov.revoke(key.key)
    }

    /// Revokes every key of this region.
    pub fn revoke_all(&self) {
        self.inner.prov.revoke_all();
    }

    /// Revokes every key and deregisters now; refuses (giving the region back) while
    /// operations use it.
    pub fn close(self) -> Result<(), (MemoryRegion, FabricError)> {
        let ops = self.inner.in_flight.get();
        if ops > 0 {
            return Err((
                self,
                FabricError::InUse {
                    what: "memory region",
                    ops,
                },
            ));
        }
        drop(self);
        Ok(())
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        self.inner.closed.set(true);
        self.inner.prov.revoke_all();
    }
}

impl fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("len", &self.len())
            .field("access", &self.inner.access)
            .field("ops_in_flight", &self.ops_in_flight())
            .finish()
    }
}

/// A range of a region, to post. Holding one keeps the memory alive.
#[derive(Clone)]
pub struct MrSlice {
    pub(crate) region: Rc<RegionInner>,
    offset: usize,
    len: usize,
}

impl MrSlice {
    /// Start within the region.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's memory.
    pub fn memory(&self) -> &Arc<RegionMemory> {
        &self.region.mem
    }

    /// The provider's registration of the region (providers downcast it).
    pub fn provider_region(&self) -> &dyn RegionProvider {
        &*self.region.prov
    }

    /// The region's access flags.
    pub fn access(&self) -> Access {
        self.region.access
    }

    /// A read-only, zero-copy view of the slice's bytes (for sending).
    pub fn bytes(&self) -> Bytes {
        match self.region.mem.bytes(self.offset..self.offset + self.len) {
            Ok(b) => b,
            // The slice was bounds-checked when made and regions never shrink.
            Err(_) => Bytes::new(),
        }
    }

    /// Copies `src` into the slice at `offset` (relative to the slice).
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<(), PostError> {
        if offset.saturating_add(src.len()) > self.len {
            return Err(PostError::LocalRange {
                offset: self.offset + offset,
                len: src.len(),
                region_len: self.region.mem.len(),
            });
        }
        self.region.mem.write_at(self.offset + offset, src)
    }

    /// The first `n` bytes (or all, when `n` is larger).
    pub fn prefix(&self, n: usize) -> MrSlice {
        MrSlice {
            region: self.region.clone(),
            offset: self.offset,
            len: n.min(self.len),
        }
    }
}

impl fmt::Debug for MrSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MrSlice")
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish()
    }
}

/// Counts one operation's use of a region for as long as it lives.
pub(crate) struct RegionUse(Rc<RegionInner>);

impl RegionUse {
    pub(crate) fn new(slice: &MrSlice) -> RegionUse {
        let r = slice.region.clone();
        r.in_flight.set(r.in_flight.get() + 1);
        RegionUse(r)
    }
}

impl Drop for RegionUse {
    fn drop(&mut self) {
        self.0
            .in_flight
            .set(self.0.in_flight.get().saturating_sub(1));
    }
}
