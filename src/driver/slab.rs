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
    /// A byte the owner keeps with the entry (the driver: the op's opcode), in room
    /// the generation leaves next to an 8-byte-aligned value anyway.
    label: u8,
    value: Option<T>,
}

/// Slots per page. The slab grows a page at a time, never by reallocating: every op
/// in flight (one per idle connection) costs about one slot, instead of up to two
/// after a `Vec` doubled, and a burst of ops never copies the whole slab.
const PAGE: usize = 64;

/// A slab whose keys carry a generation.
pub(crate) struct GenSlab<T> {
    pages: Vec<Box<[Slot<T>]>>,
    /// Vacant slots; the most recently freed (still cache-warm) is reused first.
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for GenSlab<T> {
    fn default() -> Self {
        GenSlab {
            pages: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> GenSlab<T> {
    fn slot_mut(&mut self, index: u32) -> Option<&mut Slot<T>> {
        let i = index as usize;
        self.pages.get_mut(i / PAGE)?.get_mut(i % PAGE)
    }

    /// Adds a page of vacant slots.
    fn grow(&mut self) {
        let first = self.pages.len() * PAGE;
        self.pages.push(
            (0..PAGE)
                .map(|_| Slot {
                    generation: 0,
                    label: 0,
                    value: None,
                })
                .collect(),
        );
        // Reversed, so the lowest index is used first.
        self.free
            .extend((first..first + PAGE).rev().map(|i| i as u32));
    }

    /// Inserts `value` and returns its key.
    pub(crate) fn insert(&mut self, value: T) -> Key {
        if self.free.is_empty() {
            self.grow();
        }
        let index = self.free.pop().unwrap_or_default();
        self.len += 1;
        // Every index on the free list names a slot of a page.
        let slot = &mut self.pages[index as usize / PAGE][index as usize % PAGE];
        slot.value = Some(value);
        slot.label = 0;
        Key::new(index, slot.generation)
    }

    /// The entry `key` names, if it is still the one that was inserted under `key`.
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let slot = self.slot_mut(key.index)?;
        if slot.generation != key.generation() {
            return None;
        }
        slot.value.as_mut()
    }

    /// Sets the label of the entry `key` names (nothing for a stale key).
    pub(crate) fn set_label(&mut self, key: Key, label: u8) {
        if let Some(slot) = self.slot_mut(key.index) {
            if slot.generation == key.generation() && slot.value.is_some() {
                slot.label = label;
            }
        }
    }

    /// Removes the entry `key` names; a stale key removes nothing.
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        let slot = self.slot_mut(key.index)?;
        if slot.generation != key.generation() {
            return None;
        }
        let value = slot.value.take()?;
        // Bumping the generation is what turns every outstanding copy of `key` stale.
        slot.generation = (slot.generation + 1) % GEN_LIMIT;
        self.free.push(key.index);
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

    /// Every live entry with its label.
    pub(crate) fn labelled(&self) -> impl Iterator<Item = (u8, &T)> {
        self.pages
            .iter()
            .flat_map(|page| page.iter())
            .filter_map(|slot| slot.value.as_ref().map(|v| (slot.label, v)))
    }

    /// Every live entry with its key.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (Key, &mut T)> {
        self.slots_mut().filter_map(|(index, slot)| {
            let generation = slot.generation;
            slot.value
                .as_mut()
                .map(|v| (Key::new(index, generation), v))
        })
    }

    /// Removes every live entry.
    pub(crate) fn drain(&mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len);
        let mut freed = Vec::new();
        for (index, slot) in self.slots_mut() {
            if let Some(v) = slot.value.take() {
                slot.generation = (slot.generation + 1) % GEN_LIMIT;
                freed.push(index);
                out.push(v);
            }
        }
        self.free.extend(freed);
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
        slab.set_label(new, 7);
        slab.set_label(old, 9);
        assert_eq!(slab.labelled().collect::<Vec<_>>(), vec![(7, &"second")]);
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
