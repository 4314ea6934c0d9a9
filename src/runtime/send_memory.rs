//! Memory the application owns, registered with a worker's ring for zero-copy sends
//! ([`register_send_memory`]): a zero-copy send of bytes lying in it names the
//! registration (`IORING_RECVSEND_FIXED_BUF`), so the kernel pinned its pages once,
//! at registration, instead of on every send. For memory that lives long and is sent
//! from often: a fabric region, a blob a server hands out, a file's mapped contents.
//!
//! Sends find the registration by address ([`slot_of`]): a [`Bytes`](bytes::Bytes)
//! view of registered memory (`Bytes::from_owner`) goes out registered wherever it is
//! queued, also inside a Thrift reply that references it. A registration holds the
//! memory weakly: once its owner is gone the entry no longer matches, and its slot is
//! emptied at the next registration (its pages stay pinned by the kernel until then,
//! at most one table's worth).
//!
//! Written by hand: no crate registers memory with an io_uring ring for sends and
//! finds it again by address.

use super::context;
use super::fixed_buffers::FixedTable;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::{Arc, Weak};

/// Memory that can be registered for sending.
///
/// # Safety
/// [`range`](Self::range) returns the same start and length for the value's whole
/// life, and that memory stays allocated (not unmapped or remapped) until the value
/// drops. The runtime reads it only for sends of bytes that lie in it.
pub unsafe trait SendMemory: Send + Sync + 'static {
    /// The memory's start and length in bytes.
    fn range(&self) -> (*const u8, usize);
}

/// Registrations of send memory a worker holds at most: half its fixed-buffer table
/// ([`SLOTS`](super::fixed_buffers::SLOTS)), the rest left to
/// [`FixedBuf`](crate::fs::FixedBuf)s and the send arena.
pub const SEND_REGISTRATIONS: usize = 32;

/// The largest memory the kernel registers as one buffer (1 GiB).
const MAX_REGISTERED: usize = 1 << 30;

/// A worker's registrations of send memory.
#[derive(Default)]
pub(crate) struct SendRegistrations {
    entries: RefCell<Vec<Entry>>,
    /// The kernel refused a registration: later ones are not tried.
    refused: Cell<bool>,
}

struct Entry {
    start: usize,
    len: usize,
    slot: u16,
    table: Rc<FixedTable>,
    /// What keeps the memory allocated: the entry matches only while it lives.
    owner: Weak<dyn Any + Send + Sync>,
}

impl Entry {
    /// The slot of `[start, start + len)`, if it lies in this entry's memory, which
    /// still lives.
    fn slot_of(&self, start: usize, len: usize) -> Option<u16> {
        let inside = start >= self.start && start + len <= self.start + self.len;
        (inside && self.owner.strong_count() > 0).then_some(self.slot)
    }
}

impl SendRegistrations {
    /// The slot of `[start, start + len)`, if it lies in live registered memory.
    fn slot_of(&self, start: usize, len: usize) -> Option<u16> {
        let entries = self.entries.try_borrow().ok()?;
        entries.iter().find_map(|e| e.slot_of(start, len))
    }

    /// Live registrations.
    pub(crate) fn live(&self) -> usize {
        let entries = self.entries.borrow();
        entries
            .iter()
            .filter(|e| e.owner.strong_count() > 0)
            .count()
    }

    /// Empties the slots of entries whose memory is gone.
    fn sweep(&self) {
        self.entries.borrow_mut().retain(|e| {
            if e.owner.strong_count() > 0 {
                return true;
            }
            // The ring gone keeps the slot taken; the table went with it.
            e.table.empty_slot(e.slot);
            false
        });
    }
}

/// Registers `memory` with the current worker's ring for zero-copy sends (see the
/// module): `Ok(true)` once it is registered (now, or before: the call is cheap then),
/// `Ok(false)` when it is not and sends of it go unregistered: the worker holds
/// [`SEND_REGISTRATIONS`] live ones, its fixed-buffer table is full, or the memory is
/// empty or over 1 GiB. Fails off a worker, and the one time the kernel refuses to
/// pin memory (`RLIMIT_MEMLOCK`), naming the cause (also logged); the worker then
/// registers no more, and later calls return `Ok(false)`.
///
/// Registered memory goes out zero-copy only where the runtime's
/// [`SendZeroCopy`](crate::SendZeroCopy) policy sends zero-copy; the registration
/// saves the kernel pinning its pages per send.
///
/// ```no_run
/// use std::sync::Arc;
/// use zerorx::runtime::{register_send_memory, SendMemory};
///
/// struct Blob(Box<[u8]>);
/// // SAFETY: the boxed slice neither moves nor changes length while the value lives.
/// unsafe impl SendMemory for Blob {
///     fn range(&self) -> (*const u8, usize) {
///         (self.0.as_ptr(), self.0.len())
///     }
/// }
/// impl AsRef<[u8]> for Blob {
///     fn as_ref(&self) -> &[u8] {
///         &self.0
///     }
/// }
///
/// # async fn f(s: zerorx::net::TcpStream) -> std::io::Result<()> {
/// let blob = Arc::new(Blob(vec![7u8; 1 << 20].into()));
/// register_send_memory(&blob)?;
/// // A view of it goes out naming the registration (under the policy's size).
/// struct View(Arc<Blob>);
/// impl AsRef<[u8]> for View {
///     fn as_ref(&self) -> &[u8] {
///         self.0.as_ref().as_ref()
///     }
/// }
/// s.send(bytes::Bytes::from_owner(View(blob.clone()))).await
/// # }
/// ```
pub fn register_send_memory<M: SendMemory>(memory: &Arc<M>) -> io::Result<bool> {
    let core = context::current().ok_or_else(crate::runtime::op::not_in_runtime)?;
    let (ptr, len) = memory.range();
    let owner: Weak<dyn Any + Send + Sync> = Arc::downgrade(memory) as _;
    let regs = &core.send_memory;
    if regs.refused.get() {
        return Ok(false);
    }
    let registered = register(&core, ptr as usize, len, owner);
    if registered.is_err() {
        regs.refused.set(true);
    }
    registered
}

/// Registers `[start, start + len)`, kept allocated while `owner` lives, with the
/// worker `core`'s ring; see [`register_send_memory`].
fn register(
    core: &super::worker::Core,
    start: usize,
    len: usize,
    owner: Weak<dyn Any + Send + Sync>,
) -> io::Result<bool> {
    if len == 0 || len > MAX_REGISTERED {
        return Ok(false);
    }
    let regs = &core.send_memory;
    {
        let entries = regs.entries.borrow();
        if entries
            .iter()
            .any(|e| e.start == start && e.len == len && Weak::ptr_eq(&e.owner, &owner))
        {
            return Ok(true);
        }
    }
    regs.sweep();
    if regs.entries.borrow().len() >= SEND_REGISTRATIONS {
        return Ok(false);
    }
    let table = FixedTable::current()?;
    let Some(slot) = table.take_slot() else {
        return Ok(false);
    };
    let iov = libc::iovec {
        iov_base: start as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: the caller's owner keeps the range allocated while it lives
    // (`SendMemory`'s contract, `AreaMemory`'s); the entry holds the owner weakly and
    // matches no send once it is gone, and its slot is emptied then (at the next
    // sweep) or dies with the ring. Until then the kernel holds the pages it pinned,
    // not the addresses.
    if let Err(e) = unsafe { table.update(slot, iov) } {
        table.empty_slot(slot);
        let e = io::Error::new(
            e.kind(),
            format!("registering {len} bytes of send memory (sends of it go unregistered): {e}"),
        );
        tracing::warn!(error = %e, "send memory not registered");
        return Err(e);
    }
    regs.entries.borrow_mut().push(Entry {
        start,
        len,
        slot,
        table,
        owner,
    });
    Ok(true)
}

/// Registers the current worker's receive pools' areas for sends: a received buffer
/// sent on then names the registration (a proxy's [`forward`](crate::net::forward),
/// an echo, a Thrift value decoded in place), so the kernel does not pin the pool's
/// pages per zero-copy send. Returns how many areas are registered (the copy pool's,
/// and the zero-copy instance's when this worker registered it; areas it adds later
/// and instances imported from another worker are not). Calling again registers what
/// is missing. Fails off a worker, and when the kernel refuses to pin an area
/// (`RLIMIT_MEMLOCK` below the pool's size for an unprivileged user), naming the cause.
///
/// Not done by default: on loopback, where the kernel copies every zero-copy send
/// anyway, it halved a zero-copy proxy's throughput (the pool's buffers stayed out
/// longer; see docs/performance.md), and what it saves on a NIC could not be measured
/// here. It pins the pools' memory for as long as the worker lives.
///
/// ```no_run
/// # async fn f(client: zerorx::net::TcpStream, upstream: zerorx::net::TcpStream) -> std::io::Result<()> {
/// zerorx::runtime::register_receive_pools()?;
/// zerorx::net::forward_both(&client, &upstream, zerorx::net::FORWARD_BACKLOG).await?;
/// # Ok(())
/// # }
/// ```
pub fn register_receive_pools() -> io::Result<usize> {
    let core = context::current().ok_or_else(crate::runtime::op::not_in_runtime)?;
    let mut areas = Vec::new();
    areas.extend(core.rx.copy_pool().map(|p| p.area_memory()));
    if let super::zero_copy::ZcWorker::Local { ring, .. } = core.rx.zc() {
        if let super::zero_copy::ZcRing::Owner(pool) = &**ring {
            areas.push(pool.area_memory());
        }
    }
    let mut registered = 0;
    for area in areas {
        let len = area.range.len();
        if register(&core, area.range.start, len, area.alive).map_err(|e| {
            io::Error::new(e.kind(), format!("registering a receive pool's area: {e}"))
        })? {
            registered += 1;
        }
    }
    Ok(registered)
}

/// The fixed-buffer slot a send of `bytes` names: the worker's send arena's, or a
/// live registration's of memory `bytes` lies in entirely; `None` off a worker.
pub(crate) fn slot_of(bytes: &[u8]) -> Option<u16> {
    let (start, len) = (bytes.as_ptr() as usize, bytes.len());
    context::with_core(|core| {
        let arena = core.send_arena.try_borrow().ok();
        let in_arena = arena.as_ref().and_then(|a| a.as_ref()?.slot_of(start, len));
        in_arena.or_else(|| core.send_memory.slot_of(start, len))
    })
    .flatten()
}
