//! One op per file: the data each io_uring request owns while in flight, and how its
//! SQE is built. Every op holds an `Rc` of its socket (`SocketFd`), so closing the socket
//! object early can never let the fd number be reused under an op still in the SQ or
//! the kernel: the fd is closed when its last op's final completion is handled.

pub(crate) mod accept;
mod close;
pub(crate) mod connect;
pub(crate) mod file;
mod handover;
mod overflow_recv;
pub(crate) mod poll;
pub(crate) mod recv;
pub(crate) mod recv_msg;
pub(crate) mod recv_zc;
pub(crate) mod send;
pub(crate) mod send_buf;
pub(crate) mod send_queue;
pub(crate) mod send_way;
mod shared_fd;
pub(crate) mod shutdown;
mod sqe;
pub(crate) mod stream_recv;
pub(crate) mod tcp_recv;

use std::cell::{Cell, UnsafeCell};
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use stream_recv::StreamRecv;
use tcp_recv::Receiver;

pub(crate) use shared_fd::SharedFd;

/// The owner count's bits in [`SocketFd::owners`].
const OWNERS: u32 = (1 << 28) - 1;
/// [`SocketFd::owners`]' flag: the receive state is borrowed ([`SocketFd::with_rx`]).
const RX_BUSY: u32 = 1 << 28;
/// [`SocketFd::owners`]' flag: the thread's queued-send writers know this socket
/// ([`SocketFd::writer_known`]).
const WRITER_KNOWN: u32 = 1 << 29;
/// [`SocketFd::owners`]' flag: the socket's sends go out plain
/// ([`SocketFd::sends_copy`]).
const SENDS_COPY: u32 = 1 << 31;
/// [`SocketFd::owners`]' flag: [`SocketFd::set_peer_checked`].
const PEER_CHECKED: u32 = 1 << 30;

/// A socket's fd and, for a TCP stream, its receive state and its armed receive op
/// beside it: one allocation per connection for all three. Ops keep the fd open
/// through their [`SharedFd`]; since the armed receive is such an op, a stream takes its
/// receive state out when it is dropped (which cancels the receive) instead of leaving
/// it to the last owner.
pub(crate) struct SocketFd {
    fd: OwnedFd,
    /// Live [`SharedFd`]s of this socket (and raw pointers from
    /// [`SharedFd::into_raw`]) in the low bits ([`OWNERS`]); `0` while it is not
    /// shared. Kept here, beside the fd's four bytes, rather than in a wrapper, where it
    /// would cost every connection a word of alignment. Above the count: [`RX_BUSY`],
    /// and the queued sends' (`send_queue`) [`SENDS_COPY`], the socket's sends go out
    /// plain, [`PEER_CHECKED`], whether the peer is this host was asked, and
    /// [`WRITER_KNOWN`]; an idle connection keeps them in no extra byte.
    owners: Cell<u32>,
    /// A TCP stream's receive state, made at its first receive (`None` for other
    /// sockets). Reached only through [`with_rx`](Self::with_rx) and
    /// [`take_rx`](Self::take_rx), which flag it borrowed ([`RX_BUSY`]).
    rx: UnsafeCell<Option<Receiver>>,
    /// The stream's multishot receive while it is in flight: touched only by the
    /// [`SocketOp`](stream_recv::SocketOp) the driver's slab holds for it.
    recv: UnsafeCell<Option<StreamRecv>>,
}

impl SocketFd {
    /// `fd`, with no receive state.
    pub(crate) fn new(fd: OwnedFd) -> SocketFd {
        SocketFd {
            fd,
            owners: Cell::new(0),
            rx: UnsafeCell::new(None),
            recv: UnsafeCell::new(None),
        }
    }

    /// `fd`, shared.
    pub(crate) fn shared(fd: OwnedFd) -> SharedFd {
        SharedFd::new(SocketFd::new(fd))
    }

    /// Whether the socket's sends go out plain: the kernel copied (or refused) one
    /// of its zero-copy sends, or its peer is this host.
    pub(crate) fn sends_copy(&self) -> bool {
        self.owners.get() & SENDS_COPY != 0
    }

    /// Marks the socket's sends to go out plain; `true` if they did not already.
    pub(crate) fn set_sends_copy(&self) -> bool {
        self.set_flag(SENDS_COPY)
    }

    /// Marks that the send policy asked whether the peer is this host; `true` the
    /// first time.
    pub(crate) fn set_peer_checked(&self) -> bool {
        self.set_flag(PEER_CHECKED)
    }

    /// Whether the thread's writers know this socket (it has a writer, or a send
    /// waiting for the end of the turn): a socket they do not know has nothing queued,
    /// which its queries learn without a look-up.
    pub(crate) fn writer_known(&self) -> bool {
        self.owners.get() & WRITER_KNOWN != 0
    }

    /// Sets [`writer_known`](Self::writer_known).
    pub(crate) fn set_writer_known(&self, known: bool) {
        let word = self.owners.get();
        self.owners.set(if known {
            word | WRITER_KNOWN
        } else {
            word & !WRITER_KNOWN
        });
    }

    /// Runs `f` on the receive state, made at the first use. The state is borrowed for
    /// the call (flagged in `owners`, which the owner count's changes leave alone): a
    /// call from inside `f`, which nothing makes, gets a fresh state instead, whose
    /// receive cannot be armed. (It used to be moved out of a `Cell` and back, two
    /// copies of the state per poll: ~50 instructions per echoed message, counted.)
    pub(crate) fn with_rx<R>(&self, f: impl FnOnce(&mut Receiver) -> R) -> R {
        if self.rx_busy() {
            return f(&mut Receiver::default());
        }
        /// Clears the flag, also when `f` unwinds.
        struct Release<'a>(&'a Cell<u32>);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() & !RX_BUSY);
            }
        }
        self.owners.set(self.owners.get() | RX_BUSY);
        let _release = Release(&self.owners);
        // SAFETY: the flag was clear and stays set until `_release` drops, and every
        // access to the state checks it first (this and `take_rx`), so this is the only
        // reference to it; the socket outlives `&self`.
        let rx = unsafe { &mut *self.rx.get() };
        f(rx.get_or_insert_with(Receiver::default))
    }

    fn rx_busy(&self) -> bool {
        self.owners.get() & RX_BUSY != 0
    }

    /// Takes the receive state out (`None` while it is borrowed, which a stream being
    /// dropped never sees).
    pub(crate) fn take_rx(&self) -> Option<Receiver> {
        if self.rx_busy() {
            return None;
        }
        // SAFETY: not borrowed (the flag is clear), so no reference to the state
        // exists; `take` ends before anything else runs.
        unsafe { (*self.rx.get()).take() }
    }

    fn set_flag(&self, flag: u32) -> bool {
        let word = self.owners.get();
        self.owners.set(word | flag);
        word & flag == 0
    }

    /// The fd back (its receive state, if any, is dropped).
    pub(crate) fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

impl AsFd for SocketFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Deref for SocketFd {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        &self.fd
    }
}

pub(crate) fn fd(f: &SharedFd) -> io_uring::types::Fd {
    io_uring::types::Fd(f.as_raw_fd())
}

#[cfg(test)]
mod tests {
    use super::tcp_recv::Path;
    use super::SocketFd;
    use std::os::fd::OwnedFd;

    fn socket() -> SocketFd {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("a socket");
        SocketFd::new(OwnedFd::from(s))
    }

    #[test]
    fn the_receive_state_is_borrowed_once_and_a_nested_call_gets_a_fresh_one() {
        let s = socket();
        s.with_rx(|rx| {
            rx.force_handover(3);
            s.with_rx(|inner| assert_eq!(inner.path(), None, "a nested call's own state"));
            assert!(s.take_rx().is_none(), "taken while borrowed");
        });
        assert_eq!(s.with_rx(|rx| rx.path()), Some(Path::Handover(3)));
        let taken = s.take_rx().expect("the state");
        assert_eq!(taken.path(), Some(Path::Handover(3)));
        assert_eq!(s.with_rx(|rx| rx.path()), None, "made anew after the take");
    }

    #[test]
    fn a_panic_inside_leaves_the_receive_state_usable() {
        let s = socket();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.with_rx(|rx| {
                rx.force_handover(5);
                panic!("inside");
            })
        }));
        assert!(r.is_err());
        assert_eq!(s.with_rx(|rx| rx.path()), Some(Path::Handover(5)));
    }
}
