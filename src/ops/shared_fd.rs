//! [`SharedFd`]: the `Rc` of a [`SocketFd`] with one count instead of two, kept in
//! the socket itself (`SocketFd::owners`, 28 bits of a `u32` beside the fd). Every connection has
//! one allocation of it (with its receive state and armed receive in the socket), and
//! nothing needs a weak reference to a socket, so `Rc`'s weak count, or a `usize`
//! count in a wrapper, would be eight bytes of every idle connection spent on nothing.

use super::SocketFd;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

/// A socket shared between its owner and its in-flight ops, on one thread (it is
/// neither `Send` nor `Sync`, like `Rc`). One pointer, transparently: a socket's
/// receive op is this pointer, kept in the driver's slab word (`ops::stream_recv`).
#[repr(transparent)]
pub(crate) struct SharedFd {
    ptr: NonNull<SocketFd>,
    /// Owns a `SocketFd` (for drop check), and is `!Send`/`!Sync` through the pointer.
    _owns: PhantomData<SocketFd>,
}

impl SharedFd {
    /// `socket`, with one owner.
    pub(crate) fn new(socket: SocketFd) -> SharedFd {
        socket.owners.set(1);
        SharedFd {
            ptr: NonNull::from(Box::leak(Box::new(socket))),
            _owns: PhantomData,
        }
    }

    fn socket(&self) -> &SocketFd {
        // SAFETY: `ptr` came from `Box::leak` and the allocation lives while any
        // `SharedFd` (this one included) counts in `owners`; it is only read through
        // shared references (the socket's mutable parts are cells).
        unsafe { self.ptr.as_ref() }
    }

    /// The number of owners (this one included).
    pub(crate) fn count(this: &SharedFd) -> usize {
        (this.socket().owners.get() & super::OWNERS) as usize
    }

    /// The socket, if `this` is its only owner.
    pub(crate) fn try_unwrap(this: SharedFd) -> Result<SocketFd, SharedFd> {
        if SharedFd::count(&this) != 1 {
            return Err(this);
        }
        let ptr = this.ptr;
        std::mem::forget(this);
        // SAFETY: the last owner (count 1, and `this` is forgotten): nobody else can
        // reach the allocation, which `Box::leak` made, so it is taken back once.
        let socket = *unsafe { Box::from_raw(ptr.as_ptr()) };
        socket.owners.set(0);
        Ok(socket)
    }

    /// The pointer, carrying this owner's count (given back by
    /// [`from_raw`](Self::from_raw)). 8-byte aligned (the socket holds pointers).
    pub(crate) fn into_raw(this: SharedFd) -> NonNull<u8> {
        let ptr = this.ptr;
        std::mem::forget(this);
        ptr.cast()
    }

    /// The owner [`into_raw`](Self::into_raw) made `ptr` of.
    ///
    /// # Safety
    /// `ptr` came from `into_raw`, and each such pointer is given back once.
    pub(crate) unsafe fn from_raw(ptr: NonNull<u8>) -> SharedFd {
        SharedFd {
            ptr: ptr.cast(),
            _owns: PhantomData,
        }
    }
}

impl Clone for SharedFd {
    fn clone(&self) -> SharedFd {
        let word = &self.socket().owners;
        // As `Rc`: a count that would wrap (only reachable by leaking owners in a
        // loop) aborts rather than let the socket be freed under an owner, or reach
        // the flag bits above the count.
        if word.get() & super::OWNERS == super::OWNERS {
            std::process::abort()
        }
        word.set(word.get() + 1);
        SharedFd {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl Drop for SharedFd {
    fn drop(&mut self) {
        let word = &self.socket().owners;
        // The count is at least one (this owner), so the flags above it stay.
        word.set(word.get() - 1);
        if word.get() & super::OWNERS == 0 {
            // SAFETY: the last owner is going: nobody else can reach the allocation,
            // which `Box::leak` made; freed once.
            let socket = unsafe { Box::from_raw(self.ptr.as_ptr()) };
            // A failed queued send's writer goes with its socket.
            super::send_queue::forget(&socket);
            // No op refers to the fd any more (each holds an owner), so it may close
            // through the ring, batched with the worker's next submit.
            super::close::close(socket.into_fd());
        }
    }
}

impl Deref for SharedFd {
    type Target = SocketFd;

    fn deref(&self) -> &SocketFd {
        self.socket()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, OwnedFd};

    fn socket() -> SocketFd {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("pair");
        SocketFd::new(OwnedFd::from(a))
    }

    #[test]
    fn counts_owners_and_frees_with_the_last() {
        let a = SharedFd::new(socket());
        let fd = a.as_raw_fd();
        let b = a.clone();
        assert_eq!(SharedFd::count(&a), 2);
        let Err(a) = SharedFd::try_unwrap(a) else {
            panic!("unwrapped with two owners")
        };
        let raw = SharedFd::into_raw(b);
        assert_eq!(SharedFd::count(&a), 2, "a raw pointer still owns");
        // SAFETY: from `into_raw` just above, given back once.
        let b = unsafe { SharedFd::from_raw(raw) };
        assert_eq!(b.as_raw_fd(), fd);
        drop(a);
        assert_eq!(SharedFd::count(&b), 1);
        let Ok(back) = SharedFd::try_unwrap(b) else {
            panic!("the last owner did not unwrap")
        };
        assert_eq!(back.into_fd().as_raw_fd(), fd);
    }

    #[test]
    fn is_one_word_and_its_count_costs_the_socket_no_room() {
        assert_eq!(std::mem::size_of::<SharedFd>(), 8);
        // The count shares a word with the fd.
        assert_eq!(
            std::mem::size_of::<SocketFd>(),
            8 + std::mem::size_of::<std::cell::Cell<Option<crate::ops::tcp_recv::Receiver>>>()
                + std::mem::size_of::<Option<super::super::stream_recv::StreamRecv>>()
        );
    }
}
