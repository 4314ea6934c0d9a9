//! [`Detach`]: a decoded value that no longer pins the receive buffers it was sliced
//! from.
//!
//! Decoded `binary` and `string` fields are slices of the frame the server received,
//! so decoding copies nothing. But a slice keeps its whole receive chunk (64 KiB by
//! default) from the kernel for as long as it lives: a handler that stores 100 bytes of
//! every request pins a chunk per request until the pool is dry, and every connection
//! of the worker then receives into ordinary memory (see zerorx's
//! `Builder::receive_memory_limit`). What a handler keeps past the request should be
//! detached first: one allocation per string or binary value, exactly its length.
//!
//! ```
//! use zerorx_thrift::{Detach, Utf8Bytes};
//! use zerorx_thrift::bytes::Bytes;
//!
//! let frame = Bytes::from_static(b"key=value");      // stands for a received frame
//! let key = Utf8Bytes::try_from_bytes(frame.slice(0..3)).unwrap();
//! let kept = key.detach();                           // its own 3 bytes
//! assert_eq!(&*kept, "key");
//! ```
//!
//! Generated types implement it field by field (`zerorx-thrift-build`).

use super::codec::{Utf8Bytes, Uuid};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;

/// A value that can let go of the receive buffers it borrows from.
pub trait Detach {
    /// This value with every received slice it holds copied into memory of its own
    /// (one allocation per `string`/`binary` value), so keeping it holds no receive
    /// buffer. Values without slices come back as they are.
    #[must_use = "detach returns the detached value"]
    fn detach(self) -> Self;
}

impl Detach for Bytes {
    fn detach(self) -> Self {
        // A slice of a receive buffer cannot be told from any other shared `Bytes`,
        // so every non-empty one is copied: an empty one holds nothing worth keeping.
        if self.is_empty() {
            Bytes::new()
        } else {
            Bytes::copy_from_slice(&self)
        }
    }
}

impl Detach for Utf8Bytes {
    fn detach(self) -> Self {
        // A copy of bytes already checked to be UTF-8.
        Utf8Bytes(self.0.detach())
    }
}

macro_rules! owned {
    ($($t:ty),*) => {$(
        impl Detach for $t {
            #[inline]
            fn detach(self) -> Self {
                self
            }
        }
    )*};
}

owned!(bool, i8, i16, i32, i64, f64, String, Uuid);

impl<T: Detach> Detach for Box<T> {
    fn detach(self) -> Self {
        Box::new((*self).detach())
    }
}

impl<T: Detach> Detach for Option<T> {
    fn detach(self) -> Self {
        self.map(Detach::detach)
    }
}

impl<T: Detach> Detach for Vec<T> {
    fn detach(self) -> Self {
        self.into_iter().map(Detach::detach).collect()
    }
}

impl<T: Detach + Ord> Detach for BTreeSet<T> {
    fn detach(self) -> Self {
        self.into_iter().map(Detach::detach).collect()
    }
}

impl<T: Detach + Hash + Eq> Detach for HashSet<T> {
    fn detach(self) -> Self {
        self.into_iter().map(Detach::detach).collect()
    }
}

impl<K: Detach + Ord, V: Detach> Detach for BTreeMap<K, V> {
    fn detach(self) -> Self {
        self.into_iter()
            .map(|(k, v)| (k.detach(), v.detach()))
            .collect()
    }
}

impl<K: Detach + Hash + Eq, V: Detach> Detach for HashMap<K, V> {
    fn detach(self) -> Self {
        self.into_iter()
            .map(|(k, v)| (k.detach(), v.detach()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A frame whose memory says when it is freed, as a receive chunk would.
    struct Frame(Vec<u8>, Arc<AtomicUsize>);

    impl AsRef<[u8]> for Frame {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }

    impl Drop for Frame {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn detached_values_keep_their_bytes_and_release_the_frame() {
        let freed = Arc::new(AtomicUsize::new(0));
        let frame = Bytes::from_owner(Frame(b"alpha-beta-gamma".to_vec(), freed.clone()));
        let key = Utf8Bytes::try_from_bytes(frame.slice(0..5)).expect("utf-8");
        let mut map = HashMap::new();
        map.insert(key, vec![Some(frame.slice(6..10)), None]);
        let set: BTreeSet<Bytes> = [frame.slice(11..16)].into();
        drop(frame);
        assert_eq!(freed.load(Ordering::SeqCst), 0, "the slices hold the frame");

        let map = map.detach();
        let set = set.detach();
        assert_eq!(
            freed.load(Ordering::SeqCst),
            1,
            "detached: the frame is freed"
        );
        let (k, v) = map.iter().next().expect("entry");
        assert_eq!((&**k, &v[0].as_deref()), ("alpha", &Some(&b"beta"[..])));
        assert_eq!(v[1], None);
        assert_eq!(set.first().map(|b| &b[..]), Some(&b"gamma"[..]));
    }

    #[test]
    fn values_without_slices_come_back_unchanged() {
        assert_eq!(7i64.detach(), 7);
        assert_eq!(String::from("s").detach(), "s");
        assert_eq!(Bytes::new().detach(), Bytes::new());
        assert_eq!(Box::new(Uuid([1; 16])).detach(), Box::new(Uuid([1; 16])));
    }
}
