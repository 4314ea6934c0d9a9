//! Which worker receives with what: the pure decision behind zero-copy sharing.
//!
//! A zero-copy pool is bound to one NIC receive queue (or is one device-less instance),
//! and a worker owns at most one. With `N` workers and `M` queues (`M ≤ N`) the first
//! `M` workers own pools; each of the others is paired with owner `i % M` and either
//! imports that owner's instance into its own ring (when the kernel can share an
//! instance, Linux 6.19+) or has its receives served by the owner's ring and handed
//! over. Kept free of I/O so every combination is unit-tested.

use serde::Serialize;
use std::fmt;

/// What one worker receives with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "role", rename_all = "kebab-case")]
pub enum ReceiveRole {
    /// Copy mode: multishot `recv` into the worker's provided-buffer pool.
    Copy,
    /// Owns the zero-copy pool of instance `instance` (queue `queues[instance]`, or the
    /// `instance`-th device-less instance), registered with this worker's ring.
    Owner {
        /// Index into the zero-copy target's queues / instances.
        instance: usize,
    },
    /// Receives with RECV_ZC on its own ring into worker `owner`'s pool, imported
    /// (exported on the owner's thread, imported on this one).
    Import {
        /// The owning worker.
        owner: usize,
    },
    /// Its zero-copy receives run on worker `owner`'s ring and the buffers are handed
    /// over (the kernel cannot share an instance between rings).
    Handover {
        /// The owning worker.
        owner: usize,
    },
}

impl ReceiveRole {
    /// The worker whose pool this worker's zero-copy receives land in (itself for an
    /// owner), or `None` in copy mode.
    pub fn pool_owner(&self, me: usize) -> Option<usize> {
        match *self {
            ReceiveRole::Copy => None,
            ReceiveRole::Owner { .. } => Some(me),
            ReceiveRole::Import { owner } | ReceiveRole::Handover { owner } => Some(owner),
        }
    }
}

impl fmt::Display for ReceiveRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiveRole::Copy => f.write_str("copy"),
            ReceiveRole::Owner { instance } => write!(f, "owns pool {instance}"),
            ReceiveRole::Import { owner } => write!(f, "imports worker {owner}'s pool"),
            ReceiveRole::Handover { owner } => write!(f, "served by worker {owner}"),
        }
    }
}

/// The roles of `threads` workers.
///
/// `zero_copy` is `None` in copy mode, else `Some((instances, import))`: the number of
/// zero-copy instances (queues, or device-less instances) and whether the kernel can
/// import an instance into another ring. Instances beyond `threads` are not used (the
/// caller refuses such a configuration before asking); `instances == 0` means copy.
pub fn plan_receive(threads: usize, zero_copy: Option<(usize, bool)>) -> Vec<ReceiveRole> {
    let Some((instances, import)) = zero_copy.filter(|&(m, _)| m > 0) else {
        return vec![ReceiveRole::Copy; threads];
    };
    let owners = instances.min(threads);
    (0..threads)
        .map(|i| {
            if i < owners {
                ReceiveRole::Owner { instance: i }
            } else if import {
                ReceiveRole::Import { owner: i % owners }
            } else {
                ReceiveRole::Handover { owner: i % owners }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReceiveRole::*;

    #[test]
    fn copy_mode_is_copy_everywhere() {
        assert_eq!(plan_receive(3, None), vec![Copy, Copy, Copy]);
        assert_eq!(plan_receive(2, Some((0, true))), vec![Copy, Copy]);
        assert_eq!(plan_receive(0, None), Vec::<ReceiveRole>::new());
    }

    #[test]
    fn one_queue_per_worker_means_every_worker_owns() {
        for import in [false, true] {
            assert_eq!(
                plan_receive(3, Some((3, import))),
                vec![
                    Owner { instance: 0 },
                    Owner { instance: 1 },
                    Owner { instance: 2 }
                ]
            );
        }
    }

    #[test]
    fn fewer_queues_than_workers_import_when_the_kernel_can() {
        assert_eq!(
            plan_receive(5, Some((2, true))),
            vec![
                Owner { instance: 0 },
                Owner { instance: 1 },
                Import { owner: 0 },
                Import { owner: 1 },
                Import { owner: 0 },
            ]
        );
        assert_eq!(
            plan_receive(3, Some((1, true))),
            vec![
                Owner { instance: 0 },
                Import { owner: 0 },
                Import { owner: 0 }
            ]
        );
    }

    #[test]
    fn fewer_queues_than_workers_hand_over_without_import() {
        assert_eq!(
            plan_receive(4, Some((3, false))),
            vec![
                Owner { instance: 0 },
                Owner { instance: 1 },
                Owner { instance: 2 },
                Handover { owner: 0 },
            ]
        );
        assert_eq!(
            plan_receive(2, Some((1, false))),
            vec![Owner { instance: 0 }, Handover { owner: 0 }]
        );
    }

    #[test]
    fn more_queues_than_workers_use_only_the_first() {
        assert_eq!(
            plan_receive(2, Some((4, false))),
            vec![Owner { instance: 0 }, Owner { instance: 1 }]
        );
        assert_eq!(
            plan_receive(1, Some((1, true))),
            vec![Owner { instance: 0 }]
        );
    }

    #[test]
    fn every_combination_pairs_each_worker_with_a_valid_owner() {
        for threads in 1..=9 {
            for instances in 0..=10 {
                for import in [false, true] {
                    let plan = plan_receive(threads, Some((instances, import)));
                    assert_eq!(plan.len(), threads);
                    let owners = instances.min(threads);
                    for (i, role) in plan.iter().enumerate() {
                        match *role {
                            Copy => assert_eq!(instances, 0),
                            Owner { instance } => {
                                assert!(i < owners);
                                assert_eq!(instance, i);
                            }
                            Import { owner } | Handover { owner } => {
                                assert!(i >= owners, "{threads}/{instances}: {i}");
                                assert!(matches!(plan[owner], Owner { .. }));
                                assert_eq!(matches!(role, Import { .. }), import);
                                assert_eq!(role.pool_owner(i), Some(owner));
                            }
                        }
                    }
                    // Importers and handovers spread evenly over the owners.
                    if owners > 0 {
                        let mut per_owner = vec![0usize; owners];
                        for r in &plan {
                            if let Some(o) = r.pool_owner(usize::MAX) {
                                if o != usize::MAX {
                                    per_owner[o] += 1;
                                }
                            }
                        }
                        let (lo, hi) = (
                            per_owner.iter().min().copied().unwrap_or(0),
                            per_owner.iter().max().copied().unwrap_or(0),
                        );
                        assert!(hi - lo <= 1, "{threads}/{instances}: {per_owner:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn roles_print_and_serialize() {
        assert_eq!(Handover { owner: 1 }.to_string(), "served by worker 1");
        assert_eq!(Import { owner: 0 }.to_string(), "imports worker 0's pool");
        let json = serde_json::to_value(Owner { instance: 2 }).expect("json");
        assert_eq!(json["role"], "owner");
        assert_eq!(json["instance"], 2);
    }
}
