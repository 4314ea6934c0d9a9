//! What a libfabric provider guarantees under the API, capability by capability, with
//! the reason in words for each one it lacks.

use super::info::{Profile, Traits, CAPS};
use crate::{Cap, CapReport, Discovery, EndpointKind, FabricError, Limits, Requirements, Support};
use zerorx_libfabric_sys as fi;

/// Why no libfabric provider offers [`Cap::Accept`].
pub(super) const ACCEPT_MISSING: &str = "libfabric RDM endpoints learn of peers only \
     through their address vector: exchange addresses out of band and insert them";

/// Why no libfabric provider offers [`Cap::RmaWriteImm`].
const WRITE_IMM_MISSING: &str = "libfabric 1.17 reports the remote CQ data of an RMA write \
     as a separate target event that consumes no posted receive and carries no length \
     (FI_RX_CQ_DATA is not offered), so the API's write-with-immediate cannot be built on it";

/// The report for `req` of the provider named `name`, from its `fi_getinfo` answer (or
/// the failure to get one, which makes every capability missing with that reason).
pub(super) fn report(
    name: &str,
    profile: &Profile,
    traits: Result<&Traits, &FabricError>,
    req: &Requirements,
) -> Discovery {
    let t = match traits {
        Ok(t) => t,
        Err(e) => return unavailable(name, e, req),
    };
    let caps = Cap::ALL
        .iter()
        .map(|&cap| CapReport {
            cap,
            support: support(cap, profile, t),
        })
        .collect();
    Discovery {
        provider: name.to_string(),
        kind: EndpointKind::ReliableDatagram,
        requested: req.caps,
        caps,
        limits: Limits {
            max_msg_size: t.max_msg_size,
            max_depth: t.tx_size.min(t.rx_size).max(1),
        },
        ordering: ordering(t.msg_order, profile),
        progress: progress(t.manual_progress),
    }
}

/// Why probing is not offered over libfabric providers.
const PROBE_MISSING: &str = "not wired to libfabric's FI_PEEK / FI_CLAIM yet: this \
     provider passes receives to libfabric as they are posted";

/// Why multi-receive buffers are not offered over libfabric providers.
const MULTI_RECV_MISSING: &str = "not wired to libfabric's FI_MULTI_RECV yet: a receive \
     here completes once";

fn support(cap: Cap, profile: &Profile, t: &Traits) -> Support {
    use Support::{Guaranteed as Yes, Missing as No};
    let rma = |what: &str| match profile.rma {
        Ok(()) if t.caps & (fi::FI_RMA | fi::FI_READ | fi::FI_WRITE) != 0 => Yes(format!(
            "{what} with FI_DELIVERY_COMPLETE at every level; bounds and access are checked \
             against the key before posting, and later operations to the peer wait for it"
        )),
        Ok(()) => No(format!("{} grants no FI_RMA", profile.prov)),
        Err(why) => No(why.to_string()),
    };
    match cap {
        Cap::Msg => Yes("fi_sendmsg/fi_recvmsg on a reliable datagram (RDM) endpoint".into()),
        Cap::Tagged => match profile.tagged {
            Ok(()) => Yes("fi_tsendmsg/fi_trecvmsg: 64-bit tags with an ignore mask".into()),
            Err(why) => No(why.to_string()),
        },
        Cap::SendImm if t.cq_data_size >= 8 => {
            Yes("8 bytes of remote CQ data (FI_REMOTE_CQ_DATA) per send".into())
        }
        Cap::SendImm => No(format!(
            "{} carries {} bytes of remote CQ data; the API needs 8",
            profile.prov, t.cq_data_size
        )),
        Cap::RmaWrite => rma("fi_writemsg"),
        Cap::RmaRead => rma("fi_readmsg"),
        Cap::RmaWriteImm => match profile.rma {
            Ok(()) => No(WRITE_IMM_MISSING.into()),
            Err(why) => No(why.to_string()),
        },
        Cap::SourceFilter
            if t.caps & (fi::FI_DIRECTED_RECV | fi::FI_SOURCE)
                == (fi::FI_DIRECTED_RECV | fi::FI_SOURCE) =>
        {
            Yes("FI_DIRECTED_RECV receives; FI_SOURCE names the sender of every message".into())
        }
        Cap::SourceFilter => No(format!(
            "{} grants no FI_DIRECTED_RECV/FI_SOURCE (caps {:#x} of {CAPS:#x})",
            profile.prov, t.caps
        )),
        Cap::Cancel => Yes(
            "fi_cancel of a receive not matched yet; the answer is known before cancel returns"
                .into(),
        ),
        Cap::LeaseRecv if !t.mr_local => Yes(
            "the message lands in a fresh heap buffer handed over without copying (libfabric \
             has no receive pool to lend)"
                .into(),
        ),
        Cap::LeaseRecv => No(format!(
            "{} needs registered receive buffers (FI_MR_LOCAL)",
            profile.prov
        )),
        Cap::DeliveryComplete => match profile.send_delivery {
            Ok(()) => Yes(
                "FI_DELIVERY_COMPLETE: a send completes once the target matched it to a receive"
                    .into(),
            ),
            Err(why) => No(why.to_string()),
        },
        Cap::Accept => No(ACCEPT_MISSING.into()),
        Cap::TargetValidation => No(profile.target_validation.to_string()),
        Cap::PeerRemove => Yes(
            "fi_av_remove; operations outstanding to the peer complete with Canceled at once"
                .into(),
        ),
        Cap::Probe => No(PROBE_MISSING.into()),
        Cap::MultiRecv => No(MULTI_RECV_MISSING.into()),
    }
}

/// Every capability missing because libfabric could not be asked.
fn unavailable(name: &str, e: &FabricError, req: &Requirements) -> Discovery {
    let why = format!(
        "libfabric has no usable {name} here ({e}); install libfabric1 (Debian: apt-get install \
         libfabric1) or pick another provider"
    );
    Discovery {
        provider: name.to_string(),
        kind: EndpointKind::ReliableDatagram,
        requested: req.caps,
        caps: Cap::ALL
            .iter()
            .map(|&cap| CapReport {
                cap,
                support: Support::Missing(why.clone()),
            })
            .collect(),
        limits: Limits {
            max_msg_size: 0,
            max_depth: 0,
        },
        ordering: "none (provider unavailable)".into(),
        progress: "none (provider unavailable)".into(),
    }
}

/// libfabric's transmit ordering bits in words, plus the fence zerorx adds.
fn ordering(bits: u64, profile: &Profile) -> String {
    let names = [
        (fi::FI_ORDER_SAS, "send after send"),
        (fi::FI_ORDER_SAW, "send after write"),
        (fi::FI_ORDER_SAR, "send after read"),
        (fi::FI_ORDER_WAW, "write after write"),
        (fi::FI_ORDER_WAS, "write after send"),
        (fi::FI_ORDER_WAR, "write after read"),
        (fi::FI_ORDER_RAW, "read after write"),
        (fi::FI_ORDER_RAR, "read after read"),
        (fi::FI_ORDER_RAS, "read after send"),
    ];
    let have: Vec<&str> = names
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    let mut s = format!("libfabric guarantees {} to one peer", have.join(", "));
    if profile.rma_fence {
        s.push_str("; zerorx also holds every operation to a peer until its RMAs completed");
    }
    s
}

fn progress(manual: bool) -> String {
    let who = if manual {
        "libfabric's progress is manual"
    } else {
        "libfabric progresses on its own"
    };
    format!(
        "{who}; a zerorx task on the endpoint's worker reads the completion queue, sleeping on \
         its wait fd where the provider has one (else polling every 20 µs to 1 ms when idle)"
    )
}
