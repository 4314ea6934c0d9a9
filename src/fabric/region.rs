//! Registered memory: [`MemoryRegion`] (owner handle), [`MrSlice`] (a range to post),
//! [`RemoteKey`] (what a peer needs for RMA), [`RegionMemory`] (the bytes, shared with
//! providers) and [`Access`].

use super::error::{FabricError, PostError};
use super::provider::RegionProvider;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::alloc::Layout;
use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::Arc;

/// What a region (or a remote key) may be used for.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Access(u8);

impl Access {
    /// Source of sends and RMA writes.
    pub const READ: Access = Access(1);
    /// Destination of receives and RMA reads.
    pub const WRITE: Access = Access(2);
    /// Peers may read it with RMA (needs [`READ`](Self::READ) too).
    pub const REMOTE_READ: Access = Access(4);
    /// Peers may write it with RMA (needs [`WRITE`](Self::WRITE) too).
    pub const REMOTE_WRITE: Access = Access(8);
    /// Local read and write.
    pub const LOCAL: Access = Access(3);
    /// Everything.
    pub const ALL: Access = Access(15);

    /// No access.
    pub const fn empty() -> Access {
        Access(0)
    }

    /// Whether every flag of `other` is set here.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// The raw bits (for wire formats).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// From raw bits; unknown bits are dropped.
    pub const fn from_bits(bits: u8) -> Access {
        Access(bits & 15)
    }

    /// Only the remote flags.
    pub const fn remote_part(self) -> Access {
        Access(self.0 & 12)
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Access::READ, "read"),
            (Access::WRITE, "write"),
            (Access::REMOTE_READ, "remote-read"),
            (Access::REMOTE_WRITE, "remote-write"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(a, _)| self.contains(*a))
            .map(|(_, n)| *n)
            .collect();
        if set.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&set.join("|"))
        }
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Access({self})")
    }
}

/// How the bytes were allocated, so they are freed the same way.
enum Owner {
    Layout(Layout),
    Vec { capacity: usize },
}

/// The bytes of a registered region. Shared (`Arc`) between the region handle, the
/// provider and operations in flight; freed when the last of them lets go.
///
/// The memory may be written by the provider at any time an operation or a remote key
/// allows it, so it is only ever accessed by copying through raw pointers
/// ([`read_at`](Self::read_at), [`write_at`](Self::write_at)); no `&[u8]` to it is
/// handed out except inside `Bytes` made for sending ([`bytes`](Self::bytes)).
pub struct RegionMemory {
    ptr: NonNull<u8>,
    len: usize,
    owner: Owner,
    locked: bool,
}

// SAFETY: the memory is plain heap bytes owned by this value; every access copies
// through raw pointers after a bounds check, and the provider contract makes the only
// concurrent writers (providers' progress, the kernel) follow the same rule.
unsafe impl Send for RegionMemory {}
// SAFETY: as above: shared access never creates overlapping Rust references.
unsafe impl Sync for RegionMemory {}

impl RegionMemory {
    /// `len` zeroed bytes, page aligned.
    pub(crate) fn zeroed(len: usize) -> Result<RegionMemory, FabricError> {
        if len == 0 {
            return Err(FabricError::invalid(
                "len",
                0,
                "a region needs at least one byte",
            ));
        }
        let layout = Layout::from_size_align(len, 4096)
            .map_err(|e| FabricError::invalid("len", len, e.to_string()))?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(FabricError::Io {
            call: "alloc",
            code: libc::ENOMEM,
            text: format!("could not allocate {len} bytes"),
        })?;
        Ok(RegionMemory {
            ptr,
            len,
            owner: Owner::Layout(layout),
            locked: false,
        })
    }

    /// Takes over `v`'s heap memory without copying.
    pub(crate) fn from_vec(v: Vec<u8>) -> Result<RegionMemory, FabricError> {
        if v.is_empty() {
            return Err(FabricError::invalid(
                "buf.len()",
                0,
                "a region needs at least one byte",
            ));
        }
        let mut v = std::mem::ManuallyDrop::new(v);
        let (len, capacity) = (v.len(), v.capacity());
        let ptr = NonNull::new(v.as_mut_ptr()).ok_or(FabricError::invalid(
            "buf",
            "null",
            "a vector with data has a non-null pointer",
        ))?;
        Ok(RegionMemory {
            ptr,
            len,
            owner: Owner::Vec { capacity },
            locked: false,
        })
    }

    /// Locks the pages in RAM (`mlock`), first checking `RLIMIT_MEMLOCK` so the error
    /// can say how much was asked and how to raise the limit.
    pub(crate) fn lock(&mut self) -> Result<(), FabricError> {
        memlock_check(self.len as u64)?;
        // SAFETY: `[ptr, ptr+len)` is memory this value owns.
        let rc = unsafe { libc::mlock(self.ptr.as_ptr().cast(), self.len) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOMEM) || e.raw_os_error() == Some(libc::EAGAIN) {
                let (limit, locked) = memlock_state();
                return Err(FabricError::MemlockLimit {
                    limit,
                    requested: self.len as u64,
                    locked,
                });
            }
            return Err(FabricError::io("mlock", &e));
        }
        self.locked = true;
        Ok(())
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (regions have at least one byte); here for symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start of the memory, for providers that hand it to a NIC or the kernel. Writes
    /// through it must stay inside `len` and follow the provider contract.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), PostError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(PostError::LocalRange {
                offset,
                len,
                region_len: self.len,
            }),
        }
    }

    /// Copies `src` into the region at `offset`.
    pub fn write_at(&self, offset: usize, src: &[u8]) -> Result<(), PostError> {
        self.check(offset, src.len())?;
        // SAFETY: bounds checked above; `src` is ordinary memory that cannot overlap
        // the region (no `&[u8]` into the region is ever handed out mutably, and
        // `Bytes` views are read-only and never passed here by the crate).
        unsafe {
            std::ptr::copy(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len());
        }
        Ok(())
    }

    /// Copies region bytes at `offset` into `dst`.
    pub fn read_at(&self, offset: usize, dst: &mut [u8]) -> Result<(), PostError> {
        self.check(offset, dst.len())?;
        // SAFETY: bounds checked; `dst` is a distinct `&mut` so it cannot alias the
        // region's bytes being read.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            );
        }
        Ok(())
    }

    /// A read-only view of `range` that keeps the memory alive, for sending without a
    /// user-space copy.
    pub fn bytes(self: &Arc<Self>, range: Range<usize>) -> Result<Bytes, PostError> {
        self.check(range.start, range.len())?;
        Ok(Bytes::from_owner(RegionView {
            mem: self.clone(),
            range,
        }))
    }
}

impl Drop for RegionMemory {
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: unlocking the range `lock` locked; failure leaves nothing to undo.
            unsafe { libc::munlock(self.ptr.as_ptr().cast(), self.len) };
        }
        match self.owner {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            Owner::Layout(layout) => unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) },
            // SAFETY: the parts of the vector taken over in `from_vec`.
            Owner::Vec { capacity } => unsafe {
                drop(Vec::from_raw_parts(self.ptr.as_ptr(), self.len, capacity));
            },
        }
    }
}

impl fmt::Debug for RegionMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionMemory")
            .field("len", &self.len)
            .field("locked", &self.locked)
            .finish()
    }
}

/// Owner of a `Bytes` made from region memory.
struct RegionView {
    mem: Arc<RegionMemory>,
    range: Range<usize>,
}

impl AsRef<[u8]> for RegionView {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the range was bounds-checked when the view was made and the Arc keeps
        // the memory alive. The bytes may change under the view if a receive or a
        // remote write targets them while a send is in flight — the usual RDMA rule
        // (do not modify a buffer under a posted send); they are only read and passed
        // to the kernel.
        unsafe {
            std::slice::from_raw_parts(
                self.mem.ptr.as_ptr().add(self.range.start),
                self.range.len(),
            )
        }
    }
}

/// `RLIMIT_MEMLOCK` (soft, bytes; `u64::MAX` when unlimited) and the bytes this process
/// has locked (`VmLck`).
pub fn memlock_state() -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid out-pointer for getrlimit.
    let limit = if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) } == 0 {
        if rl.rlim_cur == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            rl.rlim_cur
        }
    } else {
        u64::MAX
    };
    let locked = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmLck:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    (limit, locked)
}

/// Fails with [`FabricError::MemlockLimit`] when locking `requested` more bytes would
/// pass `RLIMIT_MEMLOCK`. Processes with `CAP_IPC_LOCK` are not limited by the kernel,
/// but the check stays conservative. Providers that pin memory call this before
/// pinning.
pub fn memlock_check(requested: u64) -> Result<(), FabricError> {
    let (limit, locked) = memlock_state();
    if limit != u64::MAX && locked.saturating_add(requested) > limit {
        return Err(FabricError::MemlockLimit {
            limit,
            requested,
            locked,
        });
    }
    Ok(())
}

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
        let grant = self.inner.prov.grant(range.clone(), access)?;
        Ok(RemoteKey {
            key: grant.key,
            generation: grant.generation,
            base: grant.base,
            len: range.len() as u64,
            access,
        })
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

/// What a provider returns for a granted range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyGrant {
    /// The key peers present (unguessable).
    pub key: u64,
    /// The grant's generation, checked with the key.
    pub generation: u32,
    /// What the provider adds to an RMA offset to address the range (0-based offset
    /// for the io_uring provider, a virtual address for `FI_MR_VIRT_ADDR` providers).
    pub base: u64,
}

/// What a peer needs to read or write a granted range: serialisable (serde, or
/// [`to_bytes`](Self::to_bytes)) for out-of-band exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RemoteKey {
    /// The key.
    pub key: u64,
    /// The grant's generation.
    pub generation: u32,
    /// Provider addressing base of the range (see [`KeyGrant::base`]).
    pub base: u64,
    /// Length of the granted range; RMA offsets are relative to its start.
    pub len: u64,
    /// What the key grants.
    pub access: Access,
}

impl RemoteKey {
    /// Encoded length of [`to_bytes`](Self::to_bytes).
    pub const ENCODED_LEN: usize = 29;

    /// A fixed little-endian encoding.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[0..8].copy_from_slice(&self.key.to_le_bytes());
        b[8..12].copy_from_slice(&self.generation.to_le_bytes());
        b[12..20].copy_from_slice(&self.base.to_le_bytes());
        b[20..28].copy_from_slice(&self.len.to_le_bytes());
        b[28] = self.access.bits();
        b
    }

    /// Decodes [`to_bytes`](Self::to_bytes); `None` for a wrong length.
    pub fn from_bytes(b: &[u8]) -> Option<RemoteKey> {
        if b.len() != Self::ENCODED_LEN {
            return None;
        }
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let mut g = [0u8; 4];
        g.copy_from_slice(&b[8..12]);
        Some(RemoteKey {
            key: u64_at(0),
            generation: u32::from_le_bytes(g),
            base: u64_at(12),
            len: u64_at(20),
            access: Access::from_bits(b[28]),
        })
    }

    /// Checks an RMA of `len` bytes at `offset` needing `need`, before posting.
    pub(crate) fn check(&self, offset: u64, len: u64, need: Access) -> Result<(), PostError> {
        if !self.access.contains(need) {
            return Err(PostError::RemoteAccess {
                key: self.key,
                need,
                have: self.access,
            });
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(PostError::RemoteRange {
                key: self.key,
                offset,
                len,
                limit: self.len,
            }),
        }
    }
}

/// 64 random bits from the kernel (`getrandom`), for keys and endpoint nonces.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let mut filled = 0;
    while filled < 8 {
        // SAFETY: writes at most `8 - filled` bytes into `b[filled..]`.
        let n = unsafe { libc::getrandom(b[filled..].as_mut_ptr().cast(), 8 - filled, 0) };
        if n > 0 {
            filled += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // getrandom cannot fail on Linux ≥ 3.17 once the pool is initialised; fall
            // back to a time- and address-mixed value rather than panicking.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            return t ^ (&b as *const _ as u64).rotate_left(32);
        }
    }
    u64::from_le_bytes(b)
}
