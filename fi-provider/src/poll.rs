//! A libfabric poll set: which of its CQs and counters have something new, in one
//! call (`fi_poll`). A CQ has something when it holds an entry; a counter when its
//! value moved since the set last looked.

use crate::cntr::Counter;
use crate::cq::CqStore;
use std::sync::{Arc, Mutex};

pub(crate) enum Source {
    Cq(Arc<CqStore>),
    Counter(Arc<Counter>),
}

struct Member {
    /// What the member's `fid` is (its address), to remove it by.
    id: usize,
    /// Its `fid->context`, what `fi_poll` reports.
    context: usize,
    source: Source,
    /// A counter's value when last reported.
    seen: u64,
}

#[derive(Default)]
pub(crate) struct PollSet {
    members: Mutex<Vec<Member>>,
}

impl PollSet {
    pub(crate) fn add(&self, id: usize, context: usize, source: Source) {
        let seen = match &source {
            Source::Counter(c) => c.read(),
            Source::Cq(_) => 0,
        };
        self.lock().push(Member {
            id,
            context,
            source,
            seen,
        });
    }

    /// Removes member `id`; false when it was not there.
    pub(crate) fn remove(&self, id: usize) -> bool {
        let mut m = self.lock();
        let before = m.len();
        m.retain(|x| x.id != id);
        m.len() != before
    }

    /// The contexts of up to `max` members with something new.
    pub(crate) fn poll(&self, max: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for m in self.lock().iter_mut() {
            if out.len() == max {
                break;
            }
            let ready = match &m.source {
                Source::Cq(cq) => cq.len() > 0,
                Source::Counter(c) => {
                    let v = c.read();
                    let moved = v != m.seen;
                    m.seen = v;
                    moved
                }
            };
            if ready {
                out.push(m.context);
            }
        }
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cq::{Entry, Item};

    #[test]
    fn members_with_news_are_reported_once_per_change() {
        let set = PollSet::default();
        let cq = Arc::new(CqStore::default());
        let c = Arc::new(Counter::default());
        set.add(1, 10, Source::Cq(cq.clone()));
        set.add(2, 20, Source::Counter(c.clone()));
        assert!(set.poll(8).is_empty());
        cq.push(Item::Ok(Entry::default()), None);
        c.add(1);
        assert_eq!(set.poll(8), [10, 20]);
        assert_eq!(
            set.poll(8),
            [10],
            "the CQ still holds its entry; the counter is seen"
        );
        assert_eq!(set.poll(1).len(), 1, "at most max");
        assert!(set.remove(1));
        assert!(!set.remove(1));
        assert!(set.poll(8).is_empty());
    }
}
