//! [`RegisteredBuf`]: send memory registered with the worker's ring. Each worker keeps
//! one arena, made at its first `RegisteredBuf`: a [`FixedBuf`] (one slot of the
//! worker's fixed-buffer table) carved into [`REGISTERED_CHUNK`]-byte chunks. An
//! encoder writes a reply into a chunk and queues it; a zero-copy send of it names the
//! registered buffer (`IORING_RECVSEND_FIXED_BUF`), so the kernel pinned its pages
//! once, at registration, instead of on every send. The chunk returns to the arena
//! when the send is done with it (after the notification) and the buffer drops.
//!
//! Written by hand: the `bytes` crate cannot allocate from a registered region, and a
//! general allocator would not know to give the chunk back only after the kernel's
//! notification (the send op owns the buffer until then).

use super::context;
use super::fixed_buffers::FixedBuf;
use std::cell::RefCell;
use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::rc::Rc;

/// Bytes of one [`RegisteredBuf`] at most: a chunk of the arena.
pub const REGISTERED_CHUNK: usize = 64 << 10;

/// A worker's arena: the registered memory and its free chunks.
pub(crate) struct Arena {
    /// Owns and registers the memory (kept for its drop: it unregisters the slot
    /// before freeing).
    region: FixedBuf,
    /// The region's start and its fixed-buffer slot.
    base: NonNull<u8>,
    slot: u16,
    /// Chunks not handed out.
    free: RefCell<Vec<u32>>,
}

impl Arena {
    /// An arena of `bytes` (whole chunks, at least one) registered with the current
    /// worker's ring.
    fn new(bytes: usize) -> io::Result<Arena> {
        let chunks = (bytes / REGISTERED_CHUNK).max(1);
        let mut region = FixedBuf::new(chunks * REGISTERED_CHUNK)?;
        let (slot, base, _) = region.raw();
        let base = NonNull::new(base).ok_or_else(|| io::Error::other("a null fixed buffer"))?;
        Ok(Arena {
            region,
            base,
            slot,
            free: RefCell::new((0..chunks as u32).rev().collect()),
        })
    }

    /// Its slot, if `[start, start + len)` lies in it.
    pub(crate) fn slot_of(&self, start: usize, len: usize) -> Option<u16> {
        let base = self.base.as_ptr() as usize;
        let inside = start >= base && start + len <= base + self.region.capacity();
        inside.then_some(self.slot)
    }

    /// Its chunks: `(free, in all)`.
    pub(crate) fn chunk_counts(&self) -> (usize, usize) {
        (
            self.free.borrow().len(),
            self.region.capacity() / REGISTERED_CHUNK,
        )
    }
}

/// What the current worker's arena has: `(chunks free, chunks in all)`, `None` before
/// its first [`RegisteredBuf`] (or off a worker). Also in the state dump.
pub fn registered_chunks() -> Option<(usize, usize)> {
    context::with_core(|core| {
        let arena = core.send_arena.borrow();
        arena.as_ref().map(|a| a.chunk_counts())
    })
    .flatten()
}

/// Up to [`REGISTERED_CHUNK`] bytes of the current worker's registered send arena
/// (see the module): write a reply into it, then queue it with
/// [`Connection::queue_send`](crate::net::Connection::queue_send). A zero-copy send of
/// it (under the runtime's [`SendZeroCopy`](crate::SendZeroCopy) policy) names the
/// registered buffer, so the kernel does not pin its pages again; a plain send copies
/// it like any memory.
///
/// ```no_run
/// # async fn f(s: zerorx::net::TcpStream) -> std::io::Result<()> {
/// use zerorx::runtime::RegisteredBuf;
/// let body = [7u8; 48 << 10];
/// match RegisteredBuf::new()? {
///     Some(mut buf) => {
///         buf.extend_from_slice(&body)?;
///         s.queue_send(buf)?;
///     }
///     // The arena is full (or off): send from ordinary memory instead.
///     None => s.queue_send(bytes::Bytes::copy_from_slice(&body))?,
/// }
/// s.flush_sends().await
/// # }
/// ```
pub struct RegisteredBuf {
    arena: Rc<Arena>,
    chunk: u32,
    len: usize,
}

impl RegisteredBuf {
    /// An empty buffer from the current worker's arena, which is registered at the
    /// first call ([`Builder::send_arena`](crate::Builder::send_arena) bytes).
    /// `Ok(None)` when every chunk is in use or the arena is off (size 0): send from
    /// ordinary memory then; never waits. Fails off a worker, and the one time the
    /// kernel refuses to register the arena (the fixed-buffer table is full, or
    /// `RLIMIT_MEMLOCK`), naming the cause (also logged); the worker then has no
    /// arena, and later calls return `Ok(None)`.
    pub fn new() -> io::Result<Option<RegisteredBuf>> {
        let core = context::current().ok_or_else(crate::runtime::op::not_in_runtime)?;
        if core.send_arena_bytes.get() == 0 {
            return Ok(None);
        }
        let existing = core.send_arena.borrow().clone();
        let arena = match existing {
            Some(a) => a,
            None => match Arena::new(core.send_arena_bytes.get()) {
                Ok(a) => {
                    let a = Rc::new(a);
                    *core.send_arena.borrow_mut() = Some(a.clone());
                    a
                }
                Err(e) => {
                    core.send_arena_bytes.set(0);
                    let e = io::Error::new(
                        e.kind(),
                        format!("registering the send arena (sends go from ordinary memory): {e}"),
                    );
                    tracing::warn!(error = %e, "no registered send arena on this worker");
                    return Err(e);
                }
            },
        };
        let chunk = arena.free.borrow_mut().pop();
        Ok(chunk.map(|chunk| RegisteredBuf {
            arena,
            chunk,
            len: 0,
        }))
    }

    /// Bytes it can hold ([`REGISTERED_CHUNK`]).
    pub fn capacity(&self) -> usize {
        REGISTERED_CHUNK
    }

    /// Appends `data`; fails with `InvalidInput` when it would not fit (nothing is
    /// written then).
    pub fn extend_from_slice(&mut self, data: &[u8]) -> io::Result<()> {
        if data.len() > REGISTERED_CHUNK - self.len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} bytes do not fit: the registered buffer has {} of {REGISTERED_CHUNK} left",
                    data.len(),
                    REGISTERED_CHUNK - self.len
                ),
            ));
        }
        // SAFETY: `len + data.len() <= REGISTERED_CHUNK` bytes of this buffer's chunk,
        // which only this buffer reaches (`&mut self`), inside the arena's live
        // allocation (held by `arena`); `data` cannot overlap it.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.start().add(self.len), data.len())
        };
        self.len += data.len();
        Ok(())
    }

    /// The fixed-buffer slot its memory is registered in.
    pub(crate) fn slot(&self) -> u16 {
        self.arena.slot
    }

    fn start(&self) -> *mut u8 {
        // SAFETY: `chunk` is below the arena's chunk count, so the offset stays inside
        // the region's allocation.
        unsafe {
            self.arena
                .base
                .as_ptr()
                .add(self.chunk as usize * REGISTERED_CHUNK)
        }
    }
}

impl Deref for RegisteredBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of this buffer's chunk: initialised (the
        // region is zeroed at allocation, then written), reached by this buffer alone.
        unsafe { std::slice::from_raw_parts(self.start(), self.len) }
    }
}

impl DerefMut for RegisteredBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference. A buffer
        // the kernel reads is owned by its send op, so no `&mut` to it exists then.
        unsafe { std::slice::from_raw_parts_mut(self.start(), self.len) }
    }
}

impl std::fmt::Debug for RegisteredBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredBuf")
            .field("slot", &self.arena.slot)
            .field("chunk", &self.chunk)
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for RegisteredBuf {
    fn drop(&mut self) {
        self.arena.free.borrow_mut().push(self.chunk);
    }
}
