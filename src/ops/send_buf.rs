//! [`SendBuf`]: the bytes a send hands to the kernel, either shared [`Bytes`] or a
//! received [`RxBuf`] sent back as it is.

use crate::runtime::RegisteredBuf;
use bytes::Bytes;
use std::ops::Deref;
use zcrx::RxBuf;

/// What [`Connection::send`](crate::net::Connection::send) and its variants send from.
///
/// A received [`RxBuf`] is sent without first becoming [`Bytes`] (which would allocate
/// a shared owner for it): an echo or a proxy forwards pool buffers with no allocation.
/// Either way the send owns the buffer until the kernel's final completion for it (for
/// `SEND_ZC`, the notification), even when the send future is dropped first; an
/// `RxBuf`'s chunk goes back to its pool then.
///
/// A [`RegisteredBuf`] is memory registered with the ring: a zero-copy send of it
/// names the registration, so the kernel does not pin it per send.
///
/// Every kind keeps its bytes where they are while the value moves (`Bytes` on the
/// heap or in static memory, `RxBuf` in the pool's mapped area, `RegisteredBuf` in the
/// worker's arena), which is what lets a send op point the kernel at them.
#[derive(Debug)]
pub enum SendBuf {
    /// Shared bytes.
    Bytes(Bytes),
    /// A receive-pool buffer.
    Rx(RxBuf),
    /// A chunk of the worker's registered send arena.
    Registered(RegisteredBuf),
}

impl From<RegisteredBuf> for SendBuf {
    fn from(b: RegisteredBuf) -> SendBuf {
        SendBuf::Registered(b)
    }
}

impl SendBuf {
    /// The fixed-buffer slot of registered memory the bytes lie in, if they do: an
    /// arena chunk, a received buffer of a pool registered for sends, or shared bytes
    /// viewing such memory or memory the application registered
    /// ([`register_send_memory`](crate::runtime::register_send_memory)).
    pub(crate) fn registered_slot(&self) -> Option<u16> {
        match self {
            SendBuf::Registered(b) => Some(b.slot()),
            SendBuf::Bytes(b) => crate::runtime::send_memory::slot_of(b),
            SendBuf::Rx(b) => crate::runtime::send_memory::slot_of(b),
        }
    }
}

impl From<Bytes> for SendBuf {
    fn from(b: Bytes) -> SendBuf {
        SendBuf::Bytes(b)
    }
}

impl From<RxBuf> for SendBuf {
    fn from(b: RxBuf) -> SendBuf {
        SendBuf::Rx(b)
    }
}

impl Deref for SendBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SendBuf::Bytes(b) => b,
            SendBuf::Rx(b) => b,
            SendBuf::Registered(b) => b,
        }
    }
}

impl AsRef<[u8]> for SendBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::SendBuf;
    use bytes::Bytes;

    #[test]
    fn bytes_deref_to_their_contents() {
        let b = SendBuf::from(Bytes::from_static(b"abc"));
        assert_eq!(&*b, b"abc");
        assert_eq!(b.as_ref(), b"abc");
        assert!(matches!(b, SendBuf::Bytes(_)));
    }
}
