//! A generational slab: the index of an entry plus a generation counter, so that a key
//! (and the io_uring `user_data` built from it) that outlived its entry can never reach
//! the entry that reused the slot.

use std::num::NonZeroU32;

/// Generations stay below this bound so that an encoded `user_data` can never reach the
/// reserved values at the top of the `u64` space (see [`reserved`]).
const GEN_LIMIT: u32 = 1 << 31;

/// `user_data` values the driver keeps for its own requests. Op keys encode to
/// `generation << 32 | index` with `generation < 2^31`, so none of them collides.
pub(crate) mod reserved {
    /// The completion of the wake-up request (eventfd read or MSG_RING message).
    pub(crate) const WAKE: u64 = u64::MAX;
    /// Completions of ASYNC_CANCEL requests: nobody waits for them.
    pub(crate) const CANCEL: u64 = u64::MAX - 1;
    /// Completions of MSG_RING requests this ring sent to wake another ring.
    pub(crate) const MSG_SENT: u64 = u64::MAX - 2;
    /// Completions of CLOSE requests (posted only when one fails).
    pub(crate) const CLOSE: u64 = u64::MAX - 3;
    /// Event CQEs of the ZCRX instance this worker registered (Linux 7.2+): `res` is
    /// the event type; the worker hands them to the pool, which re-arms them.
    pub(crate) const ZCRX_EVENT: u64 = u64::MAX - 4;
}

/// The key of a slab entry: slot index plus the generation the slot had when the entry
/// was inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    index: u32,
    /// The generation plus one: never zero, so an `Option<Key>` (every op future holds
    /// one) is as small as a key.
    generation: NonZeroU32,
}

impl Key {
    fn new(index: u32, generation: u32) -> Key {
        Key {
            index,
            // Generations stay below `GEN_LIMIT`, so this never wraps to zero.
            generation: NonZeroU32::MIN.saturating_add(generation),
        }
    }

    fn generation(self) -> u32 {
        self.generation.get() - 1
    }

    /// Encodes the key as io_uring `user_data`.
    pub(crate) fn user_data(self) -> u64 {
        (u64::from(self.generation()) << 32) | u64::from(self.index)
    }

    /// Decodes `user_data`; `None` for values no key can produce (the reserved ones).
    pub(crate) fn from_user_data(user_data: u64) -> Option<Key> {
        let generation = (user_data >> 32) as u32;
        if generation >= GEN_LIMIT {
            return None;
        }
        Some(Key::new(user_data as u32, generation))
    }
}

struct Slot<T> {
    generation: u32,
    /// What the owner keeps with the entry (the driver: the op's opcode and when it
    /// was submitted), in the room the generation leaves next to an 8-byte-aligned
    /// value anyway.
    meta: Meta,
    entry: Entry<T>,
}

/// Four bytes an owner keeps with an entry: a label and a 24-bit stamp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) label: u8,
    stamp: [u8; 3],
}

impl Meta {
    /// `label` with the low 24 bits of `stamp`.
    pub(crate) fn new(label: u8, stamp: u32) -> Meta {
        let [a, b, c, _] = stamp.to_le_bytes();
        Meta {
            label,
            stamp: [a, b, c],
        }
    }

    /// The stamp (24 bits).
    pub(crate) fn stamp(self) -> u32 {
        let [a, b, c] = self.stamp;
        u32::from_le_bytes([a, b, c, 0])
    }
}

/// A slot's content. The free list lives in the vacant slots, so it costs no memory of
/// its own; a vacant slot's next index fits beside the value's spare tag values, so
/// the enum is as large as the value (checked for the driver's ops in `op`'s tests).
enum Entry<T> {
    /// The next vacant slot's index, or `NO_NEXT`.
    Vacant(u32),
    Occupied(T),
}

/// The end of the free list.
const NO_NEXT: u32 = u32::MAX;

impl<T> Entry<T> {
    fn as_mut(&mut self) -> Option<&mut T> {
        match self {
            Entry::Occupied(v) => Some(v),
            Entry::Vacant(_) => None,
        }
    }

    fn is_occupied(&self) -> bool {
        matches!(self, Entry::Occupied(_))
    }

    /// The value, leaving the slot vacant with `next` as its successor.
    fn take(&mut self, next: u32) -> Option<T> {
        if !self.is_occupied() {
            return None;
        }
        match std::mem::replace(self, Entry::Vacant(next)) {
            Entry::Occupied(v) => Some(v),
            Entry::Vacant(_) => None,
        }
    }
}

/// Slots per page. The slab grows a page at a time, never by reallocating: every op
/// in flight (one per idle connection) costs about one slot, instead of up to two
/// after a `Vec` doubled, and a burst of ops never copies the whole slab.
const PAGE: usize = 64;

/// A slab whose keys carry a generation.
pub(crate) struct GenSlab<T> {
    pages: Vec<Box<[Slot<T>]>>,
    /// The first vacant slot (`NO_NEXT`: none); the most recently freed (still
    /// cache-warm) is reused first.
    free: u32,
    len: usize,
}

impl<T> Default for GenSlab<T> {
    fn default() -> Self {
        GenSlab {
            pages: Vec::new(),
            free: NO_NEXT,
            len: 0,
        }
    }
}

impl<T> GenSlab<T> {
    fn slot_mut(&mut self, index: u32) -> Option<&mut Slot<T>> {
        let i = index as usize;
        self.pages.get_mut(i / PAGE)?.get_mut(i % PAGE)
    }

    /// Adds a page of vacant slots (the free list is empty), lowest index first.
    fn grow(&mut self) {
        let first = (self.pages.len() * PAGE) as u32;
        let last = first + PAGE as u32 - 1;
        self.pages.push(
            (first..=last)
                .map(|i| Slot {
                    generation: 0,
                    meta: Meta::default(),
                    entry: Entry::Vacant(if i == last { self.free } else { i + 1 }),
                })
                .collect(),
        );
        self.free = first;
    }

    /// Inserts `value` and returns its key.
    pub(crate) fn insert(&mut self, value: T) -> Key {
        if self.free == NO_NEXT {
            self.grow();
        }
        let index = self.free;
        // Every index on the free list names a vacant slot of a page.
        let slot = &mut self.pages[index as usize / PAGE][index as usize % PAGE];
        if let Entry::Vacant(next) = slot.entry {
            self.free = next;
        }
        self.len += 1;
        slot.entry = Entry::Occupied(value);
        slot.meta = Meta::default();
        Key::new(index, slot.generation)
    }

    /// The entry `key` names, if it is still the one that was inserted under `key`.
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let slot = self.slot_mut(key.index)?;
        if slot.generation != key.generation() {
            return None;
        }
        slot.entry.as_mut()
    }

    /// Sets what is kept with the entry `key` names (nothing for a stale key).
    pub(crate) fn set_meta(&mut self, key: Key, meta: Meta) {
        if let Some(slot) = self.slot_mut(key.index) {
            if slot.generation == key.generation() && slot.entry.is_occupied() {
                slot.meta = meta;
            }
        }
    }

    /// Removes the entry `key` names; a stale key removes nothing.
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        let free = self.free;
        let slot = self.slot_mut(key.index)?;
        if slot.generation != key.generation() {
            return None;
        }
        let value = slot.entry.take(free)?;
        // Bumping the generation is what turns every outstanding copy of `key` stale.
        slot.generation = (slot.generation + 1) % GEN_LIMIT;
        self.free = key.index;
        self.len -= 1;
        Some(value)
    }

    /// Number of live entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every slot with its index.
    fn slots_mut(&mut self) -> impl Iterator<Item = (u32, &mut Slot<T>)> {
        self.pages
            .iter_mut()
            .flat_map(|page| page.iter_mut())
            .enumerate()
            .map(|(index, slot)| (index as u32, slot))
    }

    /// Every live entry with what is kept with it.
    pub(crate) fn with_meta(&mut self) -> impl Iterator<Item = (Meta, &mut T)> {
        self.pages
            .iter_mut()
            .flat_map(|page| page.iter_mut())
            .filter_map(|slot| {
                let meta = slot.meta;
                slot.entry.as_mut().map(|v| (meta, v))
            })
    }

    /// Every live entry with its key and what is kept with it.
    pub(crate) fn iter_with_meta(&mut self) -> impl Iterator<Item = (Key, Meta, &mut T)> {
        self.slots_mut().filter_map(|(index, slot)| {
            let (generation, meta) = (slot.generation, slot.meta);
            slot.entry
                .as_mut()
                .map(|v| (Key::new(index, generation), meta, v))
        })
    }

    /// Every live entry with its key.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (Key, &mut T)> {
        self.slots_mut().filter_map(|(index, slot)| {
            let generation = slot.generation;
            slot.entry
                .as_mut()
                .map(|v| (Key::new(index, generation), v))
        })
    }

    /// Removes every live entry.
    pub(crate) fn drain(&mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len);
        let mut free = self.free;
        for (index, slot) in self.slots_mut() {
            if let Some(v) = slot.entry.take(free) {
                slot.generation = (slot.generation + 1) % GEN_LIMIT;
                free = index;
                out.push(v);
            }
        }
        self.free = free;
        self.len = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_key_is_rejected_after_reuse() {
        let mut slab = GenSlab::default();
        let old = slab.insert("first");
        assert_eq!(slab.remove(old), Some("first"));
        let new = slab.insert("second");
        // Same slot, different generation: the old user_data must not reach "second".
        assert_eq!(old.index, new.index);
        assert_ne!(old.user_data(), new.user_data());
        let stale = Key::from_user_data(old.user_data()).expect("op key");
        assert!(slab.get_mut(stale).is_none());
        assert!(slab.remove(stale).is_none());
        assert_eq!(slab.get_mut(new), Some(&mut "second"));
        // A label goes with its entry, not with a stale key.
        slab.set_meta(new, Meta::new(7, 0x12_3456));
        slab.set_meta(old, Meta::new(9, 1));
        let kept: Vec<_> = slab
            .with_meta()
            .map(|(m, v)| (m.label, m.stamp(), *v))
            .collect();
        assert_eq!(kept, vec![(7, 0x12_3456, "second")]);
    }

    #[test]
    fn reserved_user_data_never_decodes_to_a_key() {
        for ud in [reserved::WAKE, reserved::CANCEL, reserved::MSG_SENT] {
            assert!(Key::from_user_data(ud).is_none());
        }
        let k = Key::new(u32::MAX, GEN_LIMIT - 1);
        assert_eq!(Key::from_user_data(k.user_data()), Some(k));
    }

    #[test]
    fn generation_wraps_below_limit() {
        let mut slab = GenSlab::default();
        let mut key = slab.insert(0u8);
        slab.pages[0][0].generation = GEN_LIMIT - 1;
        key = Key::new(key.index, GEN_LIMIT - 1);
        slab.remove(key);
        let again = slab.insert(1u8);
        assert_eq!(again.generation(), 0);
        assert_eq!(slab.len(), 1);
        assert_eq!(slab.drain(), vec![1u8]);
        assert_eq!(slab.len(), 0);
    }

    #[test]
    fn an_op_slot_is_32_bytes() {
        // Every op in flight (one per idle connection) has one.
        assert_eq!(std::mem::size_of::<super::super::op::Lifecycle>(), 16);
        assert_eq!(std::mem::size_of::<Entry<super::super::op::OpSlot>>(), 24);
        assert_eq!(std::mem::size_of::<Slot<super::super::op::OpSlot>>(), 32);
    }

    #[test]
    fn the_free_list_is_last_freed_first_across_pages() {
        let mut slab = GenSlab::default();
        let keys: Vec<Key> = (0..PAGE + 2).map(|i| slab.insert(i)).collect();
        slab.remove(keys[3]);
        slab.remove(keys[PAGE + 1]);
        slab.remove(keys[0]);
        let order: Vec<u32> = (0..4).map(|i| slab.insert(100 + i).index).collect();
        let next = PAGE as u32 + 2;
        assert_eq!(order, vec![0, PAGE as u32 + 1, 3, next]);
        assert_eq!(slab.pages.len(), 2);
        let drained = slab.drain();
        assert_eq!(drained.len(), PAGE + 3);
        // After a drain every slot is on the free list again, each once.
        let again: std::collections::BTreeSet<u32> =
            (0..2 * PAGE).map(|i| slab.insert(i).index).collect();
        assert_eq!(again.len(), 2 * PAGE);
        assert_eq!(slab.pages.len(), 2);
        slab.insert(0);
        assert_eq!(slab.pages.len(), 3);
    }

    #[test]
    fn grows_by_pages_and_reuses_freed_slots() {
        let mut slab = GenSlab::default();
        let keys: Vec<Key> = (0..PAGE * 2 + 1).map(|i| slab.insert(i)).collect();
        assert_eq!(slab.pages.len(), 3);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(k.index as usize, i, "slots are handed out lowest first");
            assert_eq!(slab.get_mut(*k), Some(&mut { i }));
        }
        assert_eq!(slab.remove(keys[PAGE + 3]), Some(PAGE + 3));
        let again = slab.insert(7);
        assert_eq!(again.index, keys[PAGE + 3].index);
        assert_eq!(slab.pages.len(), 3, "a freed slot is reused before growing");
        assert!(slab.get_mut(keys[PAGE + 3]).is_none());
        assert_eq!(slab.iter_mut().count(), PAGE * 2 + 1);
        assert_eq!(slab.drain().len(), PAGE * 2 + 1);
        assert!(slab.get_mut(again).is_none());
        assert_eq!(slab.len(), 0);
    }
}
