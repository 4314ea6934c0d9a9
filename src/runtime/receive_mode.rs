//! The receive mode: what the application asks for ([`ReceiveMode`]), what the runtime
//! resolved it to against the kernel probe ([`ReceiveModeReport`]), and why zero-copy
//! was refused ([`ZeroCopyUnavailable`]).

use super::receive_plan::{plan_receive, ReceiveRole};
use serde::Serialize;
use std::fmt;
use std::io;
use zcrx::probe::{Reason, ReceiveModeDecision, ZcrxVerdict};
use zcrx::ZcrxFeatures;

pub use zcrx::probe::ReceiveMode as ResolvedMode;

/// How received bytes should reach the application.
///
/// Zero-copy receive (RECV_ZC) binds NIC receive queues to the runtime's memory. Only
/// flows the NIC delivers on a bound queue are received without a copy, so the
/// application's flows must be **steered** there: carve the queues out of RSS
/// (`ethtool -X IF equal K` or an RSS context) and add a flow rule per listening port
/// (`ethtool -N IF flow-type tcp4 dst-port P action Q`). A flow that lands on a queue
/// bound to another instance fails RECV_ZC with `EFAULT`; the stream then falls back to
/// copy receives (counted in `recv_steering_fallbacks`). Connections from loopback
/// always use the copy pool (their bytes never cross a NIC queue).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum ReceiveMode {
    /// Zero-copy on the interface queue the kernel probe (`zerorx doctor`) found able to
    /// bind a ZCRX instance, else copy. The decision and its reason are logged once
    /// (`tracing`, info) and readable from [`Handle::receive_mode`](crate::Handle::receive_mode).
    #[default]
    Auto,
    /// Zero-copy on `queues` of `interface`; [`Builder::build`](crate::Builder::build)
    /// fails with a [`ZeroCopyUnavailable`] naming the reason and its fix when any queue
    /// cannot be bound. With fewer queues than workers, the first workers own the pools
    /// and the others share them (see [`ReceiveRole`]).
    ZeroCopy {
        /// Interface name (`ip link`).
        interface: String,
        /// Hardware receive queues to bind, at most one per worker.
        queues: Vec<u32>,
    },
    /// The ZCRX ABI without a device (`ZCRX_REG_NODEV`, Linux 7.1+): `instances` pools
    /// receiving any TCP flow, every byte copied by the kernel. For testing the
    /// zero-copy path on loopback.
    DeviceLess {
        /// Number of instances (owning workers), at most the number of workers.
        instances: usize,
    },
    /// Multishot `recv` into each worker's provided-buffer pool.
    Copy,
}

impl fmt::Display for ReceiveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiveMode::Auto => f.write_str("auto"),
            ReceiveMode::ZeroCopy { interface, queues } => {
                write!(f, "zero-copy on {interface} queues {queues:?}")
            }
            ReceiveMode::DeviceLess { instances } => {
                write!(f, "device-less zero-copy ({instances} instances)")
            }
            ReceiveMode::Copy => f.write_str("copy"),
        }
    }
}

impl ReceiveMode {
    /// The command-line form `FromStr` parses back (`device-less:2`), for handing the
    /// mode to another process.
    pub fn to_arg(&self) -> String {
        match self {
            ReceiveMode::Auto => "auto".to_owned(),
            ReceiveMode::Copy => "copy".to_owned(),
            ReceiveMode::DeviceLess { instances } => format!("device-less:{instances}"),
            ReceiveMode::ZeroCopy { interface, queues } => {
                let queues: Vec<String> = queues.iter().map(u32::to_string).collect();
                format!("zero-copy:{interface}:{}", queues.join(","))
            }
        }
    }
}

/// The words [`ReceiveMode`]'s `FromStr` takes, for usage texts and errors.
pub const RECEIVE_MODE_SYNTAX: &str =
    "auto, copy, device-less:N (N instances), or zero-copy:IF:Q[,Q...] (queues of interface IF)";

/// Parses the command-line form of a receive mode: `auto`, `copy`, `device-less:N`, or
/// `zero-copy:IF:Q[,Q...]`. The error names what was wrong and the accepted forms.
impl std::str::FromStr for ReceiveMode {
    type Err = String;

    fn from_str(s: &str) -> Result<ReceiveMode, String> {
        let bad =
            |what: &str| format!("receive mode {s:?}: {what} (expected {RECEIVE_MODE_SYNTAX})");
        let (kind, rest) = match s.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (s, None),
        };
        match (kind, rest) {
            ("auto", None) => Ok(ReceiveMode::Auto),
            ("copy", None) => Ok(ReceiveMode::Copy),
            ("device-less", Some(n)) => match n.parse::<usize>() {
                Ok(instances) if instances > 0 => Ok(ReceiveMode::DeviceLess { instances }),
                _ => Err(bad(
                    "the instance count must be a whole number of at least 1",
                )),
            },
            ("device-less", None) => Err(bad("say how many instances: device-less:N")),
            ("zero-copy", Some(rest)) => {
                let (interface, queues) = rest
                    .split_once(':')
                    .ok_or_else(|| bad("name the interface and its queues: zero-copy:IF:Q"))?;
                if interface.is_empty() {
                    return Err(bad("the interface name is empty"));
                }
                let queues = queues
                    .split(',')
                    .map(|q| q.parse::<u32>())
                    .collect::<Result<Vec<u32>, _>>()
                    .map_err(|_| bad("queues are whole numbers separated by commas"))?;
                Ok(ReceiveMode::ZeroCopy {
                    interface: interface.to_owned(),
                    queues,
                })
            }
            ("zero-copy", None) => Err(bad("name the interface and its queues: zero-copy:IF:Q")),
            _ => Err(bad("unknown mode")),
        }
    }
}

/// Where zero-copy pools are bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ZeroCopyTarget {
    /// Hardware queues of one interface.
    Device {
        /// Interface name.
        interface: String,
        /// Its index.
        ifindex: u32,
        /// One queue per owning worker.
        queues: Vec<u32>,
    },
    /// Device-less instances (`ZCRX_REG_NODEV`).
    DeviceLess {
        /// One instance per owning worker.
        instances: usize,
    },
}

impl ZeroCopyTarget {
    fn instances(&self) -> usize {
        match self {
            ZeroCopyTarget::Device { queues, .. } => queues.len(),
            ZeroCopyTarget::DeviceLess { instances } => *instances,
        }
    }
}

/// The receive mode a runtime runs in, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReceiveModeReport {
    /// What the builder asked for.
    pub requested: ReceiveMode,
    /// What the runtime runs: zero-copy or copy.
    pub mode: ResolvedMode,
    /// Why, in words: the probe's named reason when zero-copy was not possible.
    pub reason: String,
    /// Where the zero-copy pools are bound (zero-copy only).
    pub target: Option<ZeroCopyTarget>,
    /// What each worker receives with, by worker index.
    pub roles: Vec<ReceiveRole>,
}

impl fmt::Display for ReceiveModeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.mode, self.reason)?;
        if self.mode == ResolvedMode::ZeroCopy {
            let roles: Vec<String> = self
                .roles
                .iter()
                .enumerate()
                .map(|(i, r)| format!("worker {i} {r}"))
                .collect();
            write!(f, "; {}", roles.join(", "))?;
        }
        Ok(())
    }
}

/// Zero-copy receive was asked for and is not possible here.
///
/// Carries the probe's named [`Reason`] (with its errno and fix). `Builder::build`
/// returns it inside an `io::Error` of kind `Unsupported`; get it back with
/// `err.get_ref().and_then(|e| e.downcast_ref::<ZeroCopyUnavailable>())`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZeroCopyUnavailable {
    target: String,
    reason: Reason,
}

impl ZeroCopyUnavailable {
    pub(crate) fn new(target: impl Into<String>, reason: Reason) -> ZeroCopyUnavailable {
        ZeroCopyUnavailable {
            target: target.into(),
            reason,
        }
    }

    /// What could not be bound (`eth0 queue 0`, `device-less ZCRX`).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The probe's named reason.
    pub fn reason(&self) -> &Reason {
        &self.reason
    }

    /// What to do about it.
    pub fn fix(&self) -> String {
        self.reason.fix()
    }
}

impl fmt::Display for ZeroCopyUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "zero-copy receive on {} is not possible: {} [{}]; fix: {}",
            self.target,
            self.reason,
            self.reason.name(),
            self.reason.fix()
        )
    }
}

impl std::error::Error for ZeroCopyUnavailable {}

impl From<ZeroCopyUnavailable> for io::Error {
    fn from(e: ZeroCopyUnavailable) -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, e)
    }
}

/// What resolution asks the kernel probe. The runtime uses [`KernelProbe`]; tests use
/// a fake so every branch runs on any machine.
pub(crate) trait ProbeView {
    /// ZCRX features of the running kernel.
    fn features(&self) -> ZcrxFeatures;
    /// The probe's own choice (for `Auto`).
    fn auto_choice(&self) -> ReceiveModeDecision;
    /// Whether `queue` of `interface` can bind an instance (a real registration).
    fn queue(&self, interface: &str, queue: u32) -> ZcrxVerdict;
    /// The interface's index.
    fn ifindex(&self, interface: &str) -> Option<u32>;
}

/// The real probe (`zcrx::probe`), cached per process except per-queue checks.
pub(crate) struct KernelProbe;

impl ProbeView for KernelProbe {
    fn features(&self) -> ZcrxFeatures {
        zcrx::probe::capabilities().zcrx.clone()
    }

    fn auto_choice(&self) -> ReceiveModeDecision {
        zcrx::probe::capabilities().receive_mode.clone()
    }

    fn queue(&self, interface: &str, queue: u32) -> ZcrxVerdict {
        zcrx::probe::probe_queue(interface, queue)
    }

    fn ifindex(&self, interface: &str) -> Option<u32> {
        zcrx::probe::capabilities()
            .interface(interface)
            .map(|i| i.ifindex)
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

pub(crate) fn copy_report(
    requested: &ReceiveMode,
    threads: usize,
    reason: String,
) -> ReceiveModeReport {
    ReceiveModeReport {
        requested: requested.clone(),
        mode: ResolvedMode::Copy,
        reason,
        target: None,
        roles: plan_receive(threads, None),
    }
}

fn zero_copy_report(
    requested: &ReceiveMode,
    threads: usize,
    target: ZeroCopyTarget,
    import: bool,
    why: String,
) -> ReceiveModeReport {
    let instances = target.instances();
    let sharing = if instances >= threads {
        String::new()
    } else if import {
        format!("; {instances} pools shared with the other workers by import")
    } else {
        format!(
            "; {instances} pools; the other workers' receives are served by the owners and \
             handed over (this kernel cannot import an instance: ZCRX_REG_IMPORT needs Linux 6.19)"
        )
    };
    ReceiveModeReport {
        requested: requested.clone(),
        mode: ResolvedMode::ZeroCopy,
        reason: format!("{why}{sharing}"),
        roles: plan_receive(threads, Some((instances, import))),
        target: Some(target),
    }
}

/// Resolves the requested mode for `threads` workers. `Auto` never fails; `ZeroCopy`
/// and `DeviceLess` fail with [`ZeroCopyUnavailable`] (kind `Unsupported`) when the
/// kernel or NIC cannot, and with `InvalidInput` for a configuration no kernel could
/// run.
pub(crate) fn resolve(
    requested: &ReceiveMode,
    threads: usize,
    probe: &dyn ProbeView,
    allow_import: bool,
) -> io::Result<ReceiveModeReport> {
    match requested {
        ReceiveMode::Copy => Ok(copy_report(
            requested,
            threads,
            "copy mode was requested".into(),
        )),
        ReceiveMode::Auto => {
            let d = probe.auto_choice();
            let chosen = match (d.mode, &d.interface, d.queue) {
                (ResolvedMode::ZeroCopy, Some(interface), Some(queue)) => probe
                    .ifindex(interface)
                    .map(|ifindex| (interface.clone(), ifindex, queue)),
                _ => None,
            };
            Ok(match chosen {
                Some((interface, ifindex, queue)) => zero_copy_report(
                    requested,
                    threads,
                    ZeroCopyTarget::Device {
                        interface,
                        ifindex,
                        queues: vec![queue],
                    },
                    probe.features().import && allow_import,
                    format!("auto: {}", d.reason),
                ),
                None => copy_report(requested, threads, format!("auto: {}", d.reason)),
            })
        }
        ReceiveMode::ZeroCopy { interface, queues } => {
            if queues.is_empty() {
                return Err(invalid(format!(
                    "ReceiveMode::ZeroCopy on {interface} names no queue"
                )));
            }
            let mut sorted = queues.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != queues.len() {
                return Err(invalid(format!(
                    "ReceiveMode::ZeroCopy names a queue twice: {queues:?}"
                )));
            }
            if queues.len() > threads {
                return Err(invalid(format!(
                    "ReceiveMode::ZeroCopy binds {} queues but the runtime has {threads} \
                     workers; each worker owns at most one queue's pool",
                    queues.len()
                )));
            }
            for &q in queues {
                if let ZcrxVerdict::Unavailable(reason) = probe.queue(interface, q) {
                    return Err(
                        ZeroCopyUnavailable::new(format!("{interface} queue {q}"), reason).into(),
                    );
                }
            }
            let Some(ifindex) = probe.ifindex(interface) else {
                return Err(ZeroCopyUnavailable::new(
                    interface.clone(),
                    Reason::NoSuchInterface {
                        interface: interface.clone(),
                    },
                )
                .into());
            };
            Ok(zero_copy_report(
                requested,
                threads,
                ZeroCopyTarget::Device {
                    interface: interface.clone(),
                    ifindex,
                    queues: queues.clone(),
                },
                probe.features().import && allow_import,
                format!("zero-copy requested; {interface} queues {queues:?} accepted a ZCRX registration"),
            ))
        }
        ReceiveMode::DeviceLess { instances } => {
            if *instances == 0 || *instances > threads {
                return Err(invalid(format!(
                    "ReceiveMode::DeviceLess needs 1..={threads} instances (one per owning \
                     worker), got {instances}"
                )));
            }
            let features = probe.features();
            let missing = if !features.recv_zc {
                Some("Linux 6.15")
            } else if !features.nodev {
                Some("Linux 7.1 (ZCRX_REG_NODEV)")
            } else {
                None
            };
            if let Some(needs) = missing {
                return Err(ZeroCopyUnavailable::new(
                    "a device-less ZCRX instance",
                    Reason::KernelTooOld {
                        needs,
                        errno: libc::EINVAL,
                    },
                )
                .into());
            }
            Ok(zero_copy_report(
                requested,
                threads,
                ZeroCopyTarget::DeviceLess {
                    instances: *instances,
                },
                features.import && allow_import,
                "device-less zero-copy requested (ZCRX_REG_NODEV: the kernel copies every byte)"
                    .into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests;
