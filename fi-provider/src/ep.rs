//! An endpoint as application threads see it: its bindings, credits, and the
//! checks a post passes before it is handed to the worker. Everything here answers
//! at once; the transfer itself happens on the worker.

use crate::av::AddressVector;
use crate::cntr::Counter;
use crate::codes;
use crate::cq::{CqStore, Credits};
use crate::domain::DomainShared;
use crate::worker::{Cmd, EpSetup, Post, PostKind, RecvMode, Rma};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use zerorx_fabric::Level;
use zerorx_libfabric_sys as fi;

/// Why a post fails once the domain's command loop has ended.
const LOOP_GONE: &str = "the domain's command loop is gone (its worker thread, or the thread \
                         that opened and progressed it, ended)";

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
    /// `FI_RX_CQ_DATA` mode: a write with immediate data consumes a posted receive,
    /// so `fi_writedata` is allowed.
    pub rx_cq_data: bool,
}

/// Where one direction's completions go: a CQ (and whether only operations
/// flagged `FI_COMPLETION` report there) and/or a counter.
#[derive(Default, Clone)]
pub(crate) struct Reports {
    pub cq: Option<(Arc<CqStore>, bool)>,
    pub cntr: Option<Arc<Counter>>,
}

impl Reports {
    /// Whether a success of an operation with `flags` gets a CQ entry; `Err` when
    /// nothing is bound to report it at all.
    fn entry_for(&self, flags: u64, what: &str) -> Result<bool, Refusal> {
        match (&self.cq, &self.cntr) {
            (Some((_, selective)), _) => Ok(!selective || flags & fi::FI_COMPLETION != 0),
            (None, Some(_)) => Ok(false),
            (None, None) => Err(refuse(
                codes::ENOCQ,
                format!("no CQ or counter bound with {what}"),
            )),
        }
    }
}

/// Bindings made before `fi_enable`.
#[derive(Default)]
struct Binds {
    tx: Reports,
    rx: Reports,
    av: Option<Arc<AddressVector>>,
}

/// What the data path reads after `fi_enable`, without a lock.
struct Enabled {
    local: SocketAddrV4,
    tx: Reports,
    rx: Reports,
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
    /// `FI_OPT_MIN_MULTI_RECV`.
    min_multi_recv: AtomicUsize,
}

/// `FI_OPT_MIN_MULTI_RECV` until the application sets it.
const MIN_MULTI_RECV: usize = 64;

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
            min_multi_recv: AtomicUsize::new(MIN_MULTI_RECV),
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
        let tx = flags & fi::FI_TRANSMIT != 0;
        let rx = flags & fi::FI_RECV != 0;
        if (tx && b.tx.cq.is_some()) || (rx && b.rx.cq.is_some()) {
            return Err(refuse(
                fi::FI_EINVAL,
                "a CQ is already bound for that direction",
            ));
        }
        if tx {
            b.tx.cq = Some((cq.clone(), selective));
        }
        if rx {
            b.rx.cq = Some((cq, selective));
        }
        Ok(())
    }

    /// Binds a counter for completed sends (`FI_SEND`) and/or receives (`FI_RECV`).
    pub(crate) fn bind_cntr(&self, cntr: Arc<Counter>, flags: u64) -> Result<(), Refusal> {
        if self.enabled.get().is_some() {
            return Err(refuse(codes::EOPBADSTATE, "bind after fi_enable"));
        }
        if flags & (fi::FI_REMOTE_READ | fi::FI_REMOTE_WRITE) != 0 {
            return Err(refuse(
                fi::FI_ENOSYS,
                "counting RMA at the target needs FI_RMA_EVENT, which zerorx does not offer",
            ));
        }
        // Sends, reads and writes this endpoint starts share its transmit counter.
        let tx = flags & (fi::FI_SEND | fi::FI_TRANSMIT | fi::FI_READ | fi::FI_WRITE) != 0;
        let rx = flags & fi::FI_RECV != 0;
        if !tx && !rx {
            return Err(refuse(
                fi::FI_EINVAL,
                "a counter binding needs FI_SEND and/or FI_RECV",
            ));
        }
        let mut b = self.binds();
        if (tx && b.tx.cntr.is_some()) || (rx && b.rx.cntr.is_some()) {
            return Err(refuse(
                fi::FI_EINVAL,
                "a counter is already bound for that direction",
            ));
        }
        if tx {
            b.tx.cntr = Some(cntr.clone());
        }
        if rx {
            b.rx.cntr = Some(cntr);
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
        let (tx, rx, av) = {
            let b = self.binds();
            (b.tx.clone(), b.rx.clone(), b.av.clone())
        };
        if av.is_none() {
            return Err(refuse(
                codes::ENOAV,
                "an RDM endpoint needs an AV bound before fi_enable",
            ));
        }
        if [&tx, &rx]
            .iter()
            .all(|r| r.cq.is_none() && r.cntr.is_none())
        {
            return Err(refuse(
                codes::ENOCQ,
                "bind a CQ or counter (transmit and/or receive) before fi_enable",
            ));
        }
        let setup = EpSetup {
            bind: self.attrs.src,
            tx_size: self.attrs.tx_size,
            rx_size: self.attrs.rx_size,
            max_msg: self.attrs.max_msg,
            tx: tx.clone(),
            rx: rx.clone(),
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
        let _ = self.enabled.set(Enabled { local, tx, rx, av });
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
        let entry = e.tx.entry_for(a.flags, "FI_TRANSMIT")?;
        let to = self.target(e, a.buf, a.len, a.dest)?;
        let completion = !a.inject && entry;
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
        let entry = e.rx.entry_for(a.flags, "FI_RECV")?;
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
        let mode = if a.flags & fi::FI_MULTI_RECV != 0 && a.mode == RecvMode::Post {
            if a.tag.is_some() {
                return Err(refuse(
                    fi::FI_EINVAL,
                    "FI_MULTI_RECV is for untagged receives",
                ));
            }
            RecvMode::Multi(self.min_multi_recv())
        } else {
            a.mode
        };
        let post = Post {
            kind: PostKind::Recv {
                tag: a.tag,
                from,
                mode,
            },
            ptr: a.buf,
            len: a.len,
            context: a.context,
            completion: entry,
            owned: None,
        };
        self.hand_over(post, &self.rx_credits)
    }

    /// The checks every transmit passes (size, buffer, destination): the peer's
    /// address. (`fi_inject*`'s size was checked before its bytes were copied.)
    fn target(
        &self,
        e: &Enabled,
        buf: usize,
        len: usize,
        dest: u64,
    ) -> Result<SocketAddrV4, Refusal> {
        if len > self.attrs.max_msg {
            return Err(refuse(
                fi::FI_EMSGSIZE,
                format!("len {len} is over max_msg_size {}", self.attrs.max_msg),
            ));
        }
        if buf == 0 && len > 0 {
            return Err(refuse(fi::FI_EINVAL, "buf is NULL with len > 0"));
        }
        e.av.as_ref()
            .and_then(|av| av.lookup(dest))
            .ok_or_else(|| refuse(fi::FI_EINVAL, format!("dest_addr {dest} is not in the AV")))
    }

    /// Checks and hands an RMA read or write to the worker.
    pub(crate) fn rma(&self, a: RmaArgs) -> Result<(), Refusal> {
        let e = self.ready()?;
        let entry = e.tx.entry_for(a.flags, "FI_TRANSMIT")?;
        if self.attrs.caps & fi::FI_RMA == 0 {
            return Err(refuse(
                fi::FI_EINVAL,
                "the endpoint was opened without FI_RMA",
            ));
        }
        if a.data.is_some() && !self.attrs.rx_cq_data {
            return Err(refuse(
                fi::FI_ENOSYS,
                "a write with immediate data consumes a receive at the target: it needs \
                 the FI_RX_CQ_DATA mode (ask for it in hints->mode)",
            ));
        }
        let peer = self.target(e, a.buf, a.len, a.dest)?;
        let rma = Rma {
            peer,
            addr: a.addr,
            key: a.key,
        };
        let ptr = a.owned.as_ref().map_or(a.buf, |b| b.as_ptr() as usize);
        let kind = if a.write {
            let level = if a.flags & fi::FI_DELIVERY_COMPLETE != 0 {
                Level::Delivered
            } else {
                Level::Sent
            };
            PostKind::Write {
                rma,
                data: a.data,
                level,
            }
        } else {
            PostKind::Read { rma }
        };
        let post = Post {
            kind,
            ptr,
            len: a.len,
            context: a.context,
            completion: !a.inject && entry,
            owned: a.owned,
        };
        self.hand_over(post, &self.tx_credits)
    }

    fn hand_over(&self, post: Post, credits: &Credits) -> Result<(), Refusal> {
        if !credits.take() {
            return Err(refuse(fi::FI_EAGAIN, ""));
        }
        if !self.domain.send(Cmd::Post { ep: self.id, post }) {
            credits.give();
            return Err(refuse(fi::FI_EIO, LOOP_GONE));
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
            return Err(refuse(fi::FI_EIO, LOOP_GONE));
        }
        Ok(())
    }

    /// `FI_OPT_MIN_MULTI_RECV`: a multi-receive buffer is done once fewer bytes
    /// than this are left.
    pub(crate) fn min_multi_recv(&self) -> usize {
        self.min_multi_recv.load(Ordering::Relaxed)
    }

    pub(crate) fn set_min_multi_recv(&self, n: usize) {
        self.min_multi_recv.store(n, Ordering::Relaxed);
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

/// One RMA as the application posted it.
pub(crate) struct RmaArgs {
    pub write: bool,
    pub buf: usize,
    pub len: usize,
    /// The target's `fi_addr`.
    pub dest: u64,
    /// Offset into the target's registration (`FI_MR_VIRT_ADDR` is not offered).
    pub addr: u64,
    pub key: u64,
    pub data: Option<u64>,
    pub flags: u64,
    pub context: usize,
    /// `fi_inject_write*`: no completion.
    pub inject: bool,
    /// The bytes copied at the call.
    pub owned: Option<Box<[u8]>>,
}

/// One receive as the application posted it.
pub(crate) struct RecvArgs {
    pub buf: usize,
    pub len: usize,
    /// A receive, a probe, or the receive of a claimed message.
    pub mode: RecvMode,
    /// Accept messages from this `fi_addr_t` only (`FI_DIRECTED_RECV`), or
    /// `FI_ADDR_UNSPEC`.
    pub src: u64,
    pub tag: Option<(u64, u64)>,
    pub flags: u64,
    pub context: usize,
}
