//! [`Registry`]: every unfinished task of a worker, so shutdown can drop their futures
//! on the worker's thread. Every idle connection's task has an entry, so an entry is
//! one word: a task's thin pointer, or (vacant) the index of the next vacant entry,
//! told apart by the low bit (a task pointer is 8-byte aligned). The free list lives
//! in the vacant entries themselves, and the registry grows a page at a time, never by
//! reallocating: a `Vec` that doubled would keep up to twice the entries (a word each)
//! per connection, and copy them all at each doubling.

use super::task::{TaskRef, UNREGISTERED};
use std::ptr::NonNull;

/// An occupied entry holds a `TaskRef`'s pointer (its reference); a vacant one
/// `next << 1 | VACANT`, without provenance.
struct Entry(*mut ());

/// The low bit of a vacant entry.
const VACANT: usize = 1;

/// The end of the free list.
const NO_NEXT: u32 = u32::MAX;

/// Entries per page (a 512-byte allocation).
const PAGE: usize = 64;

/// A slab of task references with `u32` keys.
pub(crate) struct Registry {
    /// Pages of `PAGE` entries each.
    pages: Vec<Box<[Entry]>>,
    /// The first vacant entry (most recently freed first), or `NO_NEXT`.
    free: u32,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            pages: Vec::new(),
            free: NO_NEXT,
        }
    }
}

impl Entry {
    fn vacant(next: u32) -> Entry {
        Entry(std::ptr::without_provenance_mut(
            ((next as usize) << 1) | VACANT,
        ))
    }

    /// The next vacant index, for a vacant entry.
    fn next(&self) -> Option<u32> {
        let a = self.0.addr();
        (a & VACANT != 0).then_some((a >> 1) as u32)
    }

    fn task(&self) -> Option<NonNull<()>> {
        NonNull::new(self.0).filter(|_| self.next().is_none())
    }
}

impl Registry {
    fn entry_mut(&mut self, key: u32) -> Option<&mut Entry> {
        let k = key as usize;
        self.pages.get_mut(k / PAGE)?.get_mut(k % PAGE)
    }

    /// Adds a page of vacant entries (the free list is empty), lowest key first.
    fn grow(&mut self) {
        let first = self.pages.len() * PAGE;
        // Keys stop below `UNREGISTERED` (and `NO_NEXT`, the same value): four billion
        // live tasks on one worker would have exhausted memory long before.
        let Some(first) = u32::try_from(first + PAGE)
            .ok()
            .filter(|end| *end < UNREGISTERED)
            .map(|end| end - PAGE as u32)
        else {
            std::process::abort()
        };
        let last = first + PAGE as u32 - 1;
        self.pages.push(
            (first..=last)
                .map(|key| Entry::vacant(if key == last { NO_NEXT } else { key + 1 }))
                .collect(),
        );
        self.free = first;
    }

    /// Keeps `task` and returns its key.
    pub(crate) fn insert(&mut self, task: TaskRef) -> u32 {
        if self.free == NO_NEXT {
            self.grow();
        }
        let key = self.free;
        let ptr = task.into_raw().as_ptr();
        debug_assert_eq!(ptr.addr() & VACANT, 0, "task pointers are aligned");
        // The free list names vacant entries of existing pages only.
        if let Some(entry) = self.entry_mut(key) {
            let next = entry.next().unwrap_or(NO_NEXT);
            entry.0 = ptr;
            self.free = next;
        }
        key
    }

    /// The task under `key`, removed; `None` for a vacant or unknown key.
    pub(crate) fn remove(&mut self, key: u32) -> Option<TaskRef> {
        let free = self.free;
        let entry = self.entry_mut(key)?;
        let task = entry.task()?;
        *entry = Entry::vacant(free);
        self.free = key;
        // SAFETY: an occupied entry holds a pointer `TaskRef::into_raw` made, with its
        // reference, given back once (the entry is vacant now).
        Some(unsafe { TaskRef::from_raw(task) })
    }

    /// Every task with its key, for the state dump.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u32, &TaskRef)) {
        for (key, entry) in self.pages.iter().flat_map(|page| page.iter()).enumerate() {
            if let Some(task) = entry.task() {
                // SAFETY: an occupied entry holds a pointer `TaskRef::into_raw` made,
                // whose reference the entry keeps; the copy is never dropped, so the
                // count stays the entry's.
                let task = std::mem::ManuallyDrop::new(unsafe { TaskRef::from_raw(task) });
                f(key as u32, &task);
            }
        }
    }

    /// Removes every task (and gives the entries' memory back).
    pub(crate) fn drain(&mut self) -> Vec<TaskRef> {
        let pages = std::mem::take(&mut self.pages);
        self.free = NO_NEXT;
        pages
            .iter()
            .flat_map(|page| page.iter())
            .filter_map(Entry::task)
            // SAFETY: as in `remove`; the pages (freed after this) are no longer
            // reachable, so each occupied entry's reference is given back once.
            .map(|t| unsafe { TaskRef::from_raw(t) })
            .collect()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        drop(self.drain());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::scheduler::Shared;
    use crate::wake::{Unparker, WakeMode};
    use std::sync::Arc;

    fn owner() -> Arc<Shared> {
        Arc::new(Shared::new(
            0,
            Unparker::new(WakeMode::EventFd).expect("unparker"),
            Arc::default(),
        ))
    }

    #[test]
    fn entries_are_one_word_and_keys_are_reused() {
        assert_eq!(std::mem::size_of::<Entry>(), 8);
        let owner = owner();
        let mut r = Registry::default();
        let tasks: Vec<_> = (0..5)
            .map(|_| TaskRef::new(std::future::ready(()), owner.clone()))
            .collect();
        let keys: Vec<u32> = tasks.iter().map(|(t, _)| r.insert(t.clone())).collect();
        assert_eq!(keys, vec![0, 1, 2, 3, 4]);
        assert!(r.remove(3).is_some());
        assert!(r.remove(1).is_some());
        assert!(r.remove(1).is_none(), "a vacant entry holds no task");
        assert!(r.remove(9).is_none(), "an unknown key holds no task");
        // Most recently freed first, then the one before.
        assert_eq!(r.insert(tasks[1].0.clone()), 1);
        assert_eq!(r.insert(tasks[3].0.clone()), 3);
        assert_eq!(r.insert(tasks[0].0.clone()), 5);
        assert_eq!(r.pages.len(), 1);
        // A second page once the first is full.
        let more: Vec<u32> = (0..PAGE).map(|_| r.insert(tasks[2].0.clone())).collect();
        assert_eq!(more.first(), Some(&6));
        assert_eq!(more.last(), Some(&(PAGE as u32 + 5)));
        assert_eq!(r.pages.len(), 2);
        assert!(r.remove(PAGE as u32 + 5).is_some());
        assert_eq!(r.drain().len(), 6 + PAGE - 1);
        assert!(r.pages.is_empty() && r.free == NO_NEXT);
        // Every reference given back: the tasks are shut down (never polled) and
        // freed with `tasks`, not leaked by the registry.
        for (t, h) in tasks {
            t.shutdown();
            assert!(h.is_complete());
            // SAFETY: `h` is the handle reference `new` made; dropped as a handle.
            unsafe { h.drop_handle() };
        }
    }
}
