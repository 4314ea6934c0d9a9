//! An endpoint as application threads see it: its bindings, credits, and the
//! checks a post passes before it is handed to the worker. Everything here answers
//! at once; the transfer itself happens on the worker.

use crate::av::AddressVector;
use crate::codes;
use crate::cq::{CqStore, Credits};
use crate::domain::DomainShared;
use crate::worker::{Cmd, EpSetup, Post, PostKind};
use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex, OnceLock};
use zerorx_fabric::Level;
use zerorx_libfabric_sys as fi;

/// An error for the application: the negated `FI_E*` code and what to log.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub code: i32,
    pub why: String,
}

fn refuse(code: i32, why: impl Into<String>) -> Refusal {
    Refusal {
        code,
        why: why.into(),
    }
}

/// Attributes fixed at `fi_endpoint`.
#[derive(Debug, Clone)]
pub(crate) struct EpAttrs {
    /// The capabilities of the `fi_info` it was opened with.
    pub caps: u64,
    pub src: SocketAddrV4,
    pub tx_size: usize,
    pub rx_size: usize,
    pub max_msg: usize,
    pub inject_size: usize,
    pub tx_op_flags: u64,
    pub rx_op_flags: u64,
}

/// Bindings made before `fi_enable`.
#[derive(Default)]
struct Binds {
    tx_cq: Option<(Arc<CqStore>, bool)>,
    rx_cq: Option<(Arc<CqStore>, bool)>,
    av: Option<Arc<AddressVector>>,
}

/// What the data path reads after `fi_enable`, without a lock.
struct Enabled {
    local: SocketAddrV4,
    tx_cq: Option<(Arc<CqStore>, bool)>,
    rx_cq: Option<(Arc<CqStore>, bool)>,
    av: Option<Arc<AddressVector>>,
}

pub(crate) struct EpShared {
    id: u64,
    pub domain: Arc<DomainShared>,
    pub attrs: EpAttrs,
    binds: Mutex<Binds>,
    enabled: OnceLock<Enabled>,
    tx_credits: Arc<Credits>,
    rx_credits: Arc<Credits>,
}

/// One send as the application posted it.
pub(crate) struct SendArgs {
    pub buf: usize,
    pub len: usize,
    pub dest: u64,
    pub tag: Option<u64>,
    pub data: Option<u64>,
    /// The operation's flags (`fi_*msg`'s, or the endpoint's `op_flags`).
    pub flags: u64,
    pub context: usize,
    /// `fi_inject`: no completion, whatever the flags say.
    pub inject: bool,
    /// The bytes copied at the call (`fi_inject`, `FI_INJECT`).
    pub owned: Option<Box<[u8]>>,
}

impl EpShared {
    pub(crate) fn new(domain: Arc<DomainShared>, attrs: EpAttrs) -> EpShared {
        EpShared {
            id: domain.next_id(),
            tx_credits: Credits::new(attrs.tx_size),
            rx_credits: Credits::new(attrs.rx_size),
            domain,
            attrs,
            binds: Mutex::new(Binds::default()),
            enabled: OnceLock::new(),
        }
    }

    fn binds(&self) -> std::sync::MutexGuard<'_, Binds> {
        self.binds.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Binds a CQ for transmits and/or receives (`FI_TRANSMIT`, `FI_RECV`,
    /// `FI_SELECTIVE_COMPLETION`).
    pub(crate) fn bind_cq(&self, cq: Arc<CqStore>, flags: u64) -> Result<(), Refusal> {
        if self.enabled.get().is_some() {
            return Err(refuse(codes::EOPBADSTATE, "bind after fi_enable"));
        }
        if flags & (fi::FI_TRANSMIT | fi::FI_RECV) == 0 {
            return Err(refuse(
                fi::FI_EINVAL,
                "a CQ binding needs FI_TRANSMIT and/or FI_RECV",
            ));
        }
        let selective = flags & fi::FI_SELECTIVE_COMPLETION != 0;
        let mut b = self.binds();
        if flags & fi::FI_TRANSMIT != 0 {
            if b.tx_cq.is_some() {
                return Err(refuse(fi::FI_EINVAL, "a transmit CQ is already bound"));
            }
            b.tx_cq = Some((cq.clone(), selective));
        }
        if flags & fi::FI_RECV != 0 {
            if b.rx_cq.is_some() {
                return Err(refuse(fi::FI_EINVAL, "a receive CQ is already bound"));
            }
            b.rx_cq = Some((cq, selective));
        }
        Ok(())
    }

    pub(crate) fn bind_av(&self, av: Arc<AddressVector>) -> Result<(), Refusal> {
        if self.enabled.get().is_some() {
            return Err(refuse(codes::EOPBADSTATE, "bind after fi_enable"));
        }
        let mut b = self.binds();
        if b.av.is_some() {
            return Err(refuse(fi::FI_EINVAL, "an AV is already bound"));
        }
        b.av = Some(av);
        Ok(())
    }

    /// Opens the endpoint on the worker (`fi_enable`).
    pub(crate) fn enable(&self) -> Result<(), Refusal> {
        if self.enabled.get().is_some() {
            return Ok(());
        }
        let (tx_cq, rx_cq, av) = {
            let b = self.binds();
            (b.tx_cq.clone(), b.rx_cq.clone(), b.av.clone())
        };
        if av.is_none() {
            return Err(refuse(
                codes::ENOAV,
                "an RDM endpoint needs an AV bound before fi_enable",
            ));
        }
        if tx_cq.is_none() && rx_cq.is_none() {
            return Err(refuse(
                codes::ENOCQ,
                "bind a CQ (FI_TRANSMIT and/or FI_RECV) before fi_enable",
            ));
        }
        let setup = EpSetup {
            bind: self.attrs.src,
            tx_size: self.attrs.tx_size,
            rx_size: self.attrs.rx_size,
            max_msg: self.attrs.max_msg,
            tx_cq: tx_cq.as_ref().map(|c| c.0.clone()),
            rx_cq: rx_cq.as_ref().map(|c| c.0.clone()),
            tx_credits: self.tx_credits.clone(),
            rx_credits: self.rx_credits.clone(),
            av: av.clone().ok_or_else(|| refuse(fi::FI_EINVAL, "no AV"))?,
        };
        let id = self.id;
        let local = self
            .domain
            .call(|reply| Cmd::OpenEp { id, setup, reply })
            .and_then(|r| r)
            .map_err(|e| refuse(codes::EOTHER, format!("opening the endpoint: {e}")))?;
        let _ = self.enabled.set(Enabled {
            local,
            tx_cq,
            rx_cq,
            av,
        });
        Ok(())
    }

    /// The address peers insert (`fi_getname`).
    pub(crate) fn local(&self) -> Option<SocketAddrV4> {
        self.enabled.get().map(|e| e.local)
    }

    fn ready(&self) -> Result<&Enabled, Refusal> {
        self.enabled
            .get()
            .ok_or_else(|| refuse(codes::EOPBADSTATE, "post before fi_enable"))
    }

    /// Checks and hands a send to the worker.
    pub(crate) fn send(&self, a: SendArgs) -> Result<(), Refusal> {
        let e = self.ready()?;
        let Some((_, selective)) = &e.tx_cq else {
            return Err(refuse(codes::ENOCQ, "no CQ bound with FI_TRANSMIT"));
        };
        if a.len > self.attrs.max_msg {
            return Err(refuse(
                fi::FI_EMSGSIZE,
                format!("len {} is over max_msg_size {}", a.len, self.attrs.max_msg),
            ));
        }
        if a.inject && a.len > self.attrs.inject_size {
            return Err(refuse(
                fi::FI_EMSGSIZE,
                format!(
                    "len {} is over inject_size {}",
                    a.len, self.attrs.inject_size
                ),
            ));
        }
        if a.buf == 0 && a.len > 0 {
            return Err(refuse(fi::FI_EINVAL, "buf is NULL with len > 0"));
        }
        let to =
            e.av.as_ref()
                .and_then(|av| av.lookup(a.dest))
                .ok_or_else(|| {
                    refuse(
                        fi::FI_EINVAL,
                        format!("dest_addr {} is not in the AV", a.dest),
                    )
                })?;
        let completion = !a.inject && (!selective || a.flags & fi::FI_COMPLETION != 0);
        let level = if a.flags & fi::FI_DELIVERY_COMPLETE != 0 {
            Level::Delivered
        } else {
            Level::Sent
        };
        let ptr = a.owned.as_ref().map_or(a.buf, |b| b.as_ptr() as usize);
        let post = Post {
            kind: PostKind::Send {
                to,
                tag: a.tag,
                data: a.data,
                level,
            },
            ptr,
            len: a.len,
            context: a.context,
            completion,
            owned: a.owned,
        };
        self.hand_over(post, &self.tx_credits)
    }

    /// Checks and hands a receive to the worker.
    pub(crate) fn recv(&self, a: RecvArgs) -> Result<(), Refusal> {
        let e = self.ready()?;
        let Some((_, selective)) = &e.rx_cq else {
            return Err(refuse(codes::ENOCQ, "no CQ bound with FI_RECV"));
        };
        if a.buf == 0 && a.len > 0 {
            return Err(refuse(fi::FI_EINVAL, "buf is NULL with len > 0"));
        }
        // Without FI_DIRECTED_RECV the source address is ignored (libfabric's rule).
        let from = if self.attrs.caps & fi::FI_DIRECTED_RECV != 0 && a.src != fi::FI_ADDR_UNSPEC {
            let found = e.av.as_ref().and_then(|av| av.lookup(a.src));
            Some(found.ok_or_else(|| {
                refuse(
                    fi::FI_EINVAL,
                    format!("src_addr {} is not in the AV", a.src),
                )
            })?)
        } else {
            None
        };
        let post = Post {
            kind: PostKind::Recv { tag: a.tag, from },
            ptr: a.buf,
            len: a.len,
            context: a.context,
            completion: !selective || a.flags & fi::FI_COMPLETION != 0,
            owned: None,
        };
        self.hand_over(post, &self.rx_credits)
    }

    fn hand_over(&self, post: Post, credits: &Credits) -> Result<(), Refusal> {
        if !credits.take() {
            return Err(refuse(fi::FI_EAGAIN, ""));
        }
        if !self.domain.send(Cmd::Post { ep: self.id, post }) {
            credits.give();
            return Err(refuse(fi::FI_EIO, "the domain's worker thread is gone"));
        }
        Ok(())
    }

    /// Asks the worker to cancel the receive posted with `context` (`fi_cancel`); its
    /// `FI_ECANCELED` entry follows in the receive CQ when it was still unmatched.
    pub(crate) fn cancel(&self, context: usize) -> Result<(), Refusal> {
        self.ready()?;
        if !self.domain.send(Cmd::Cancel {
            ep: self.id,
            context,
        }) {
            return Err(refuse(fi::FI_EIO, "the domain's worker thread is gone"));
        }
        Ok(())
    }

    /// Sends still possible before `-FI_EAGAIN` (`fi_tx_size_left`).
    pub(crate) fn tx_left(&self) -> usize {
        self.tx_credits.left()
    }

    /// Receives still possible before `-FI_EAGAIN` (`fi_rx_size_left`).
    pub(crate) fn rx_left(&self) -> usize {
        self.rx_credits.left()
    }

    /// Closes it on the worker (`fi_close`): its connections close, and the memory
    /// of operations still posted is not touched after this returns.
    pub(crate) fn close(&self) {
        if self.enabled.get().is_some() {
            let id = self.id;
            let _ = self.domain.call(|reply| Cmd::CloseEp { ep: id, reply });
        }
    }
}

/// One receive as the application posted it.
pub(crate) struct RecvArgs {
    pub buf: usize,
    pub len: usize,
    /// Accept messages from this `fi_addr_t` only (`FI_DIRECTED_RECV`), or
    /// `FI_ADDR_UNSPEC`.
    pub src: u64,
    pub tag: Option<(u64, u64)>,
    pub flags: u64,
    pub context: usize,
}
