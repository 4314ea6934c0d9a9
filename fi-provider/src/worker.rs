//! The domain's command loop ([`serve`]): it owns every zerorx-fabric object of the
//! domain and runs on the domain's one-worker zerorx runtime, which is the only
//! thread that touches them (zerorx's rule: a ring and what it drives belong to one
//! thread). That runtime runs on a worker thread of its own ([`run`]), or, for a
//! domain the application progresses itself, on the application's thread
//! (`crate::engine`). Application threads reach the loop through [`Cmd`]s and read
//! what it reports from the shared [`CqStore`]s. DESIGN.md ("libfabric provider")
//! says why this shape and what it costs per operation.

use crate::av::AddressVector;
use crate::cntr::Counter;
use crate::cq::{CqStore, Credits, Entry, ErrEntry, Item};
use crate::ep::Reports;
use crate::errors;
use crate::ffi::memory::{self, SPACE_BASE};
use futures_channel::mpsc::UnboundedReceiver;
use futures_util::StreamExt;
use rustc_hash::FxHashMap;
use slab::Slab;
use std::cell::RefCell;
use std::net::{SocketAddr, SocketAddrV4};
use std::rc::{Rc, Weak};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use zerorx_fabric::provider::ProbeAction;
use zerorx_fabric::{
    Access, Cap, Completion, CompletionQueue, Endpoint, EndpointConfig, EpAddr, Fabric, Level,
    MemoryRegion, OpId, PeerId, RemoteKey, Requirements,
};
use zerorx_libfabric_sys as fi;

/// What an endpoint is opened with.
pub(crate) struct EpSetup {
    pub bind: SocketAddrV4,
    pub tx_size: usize,
    pub rx_size: usize,
    pub max_msg: usize,
    pub tx: Reports,
    pub rx: Reports,
    pub tx_credits: Arc<Credits>,
    pub rx_credits: Arc<Credits>,
    /// The AV bound to the endpoint: senders' addresses become `fi_addr_t`s there.
    pub av: Arc<AddressVector>,
}

/// One operation for the worker to start.
pub(crate) struct Post {
    pub kind: PostKind,
    /// The application's buffer (or `owned`'s bytes).
    pub ptr: usize,
    pub len: usize,
    /// The application's `context`, echoed in the completion.
    pub context: usize,
    /// Whether a success is reported (errors always are).
    pub completion: bool,
    /// An injected send's copy of the application's bytes.
    pub owned: Option<Box<[u8]>>,
}

pub(crate) enum PostKind {
    Send {
        to: SocketAddrV4,
        tag: Option<u64>,
        data: Option<u64>,
        level: Level,
    },
    Write {
        rma: Rma,
        data: Option<u64>,
        level: Level,
    },
    Read {
        rma: Rma,
    },
    Recv {
        /// Tag and ignore mask of a tagged receive.
        tag: Option<(u64, u64)>,
        /// Only from this peer (`FI_DIRECTED_RECV`).
        from: Option<SocketAddrV4>,
        mode: RecvMode,
    },
}

/// An RMA: the target's `fi_addr` resolved, the offset into its key's range.
pub(crate) struct Rma {
    pub peer: SocketAddrV4,
    pub addr: u64,
    pub key: u64,
}

/// What a receive post is (`fi_trecvmsg`'s `FI_PEEK`, `FI_CLAIM`, `FI_DISCARD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecvMode {
    /// An ordinary receive.
    Post,
    /// `FI_PEEK` (with `FI_CLAIM` or `FI_DISCARD`): look at a waiting message.
    Probe(ProbeAction),
    /// `FI_CLAIM`: receive (or with `FI_DISCARD` drop) the message an earlier
    /// `FI_PEEK | FI_CLAIM` with the same context claimed.
    Claimed { discard: bool },
    /// `FI_MULTI_RECV`: messages fill the buffer until fewer than this many bytes
    /// are left (`FI_OPT_MIN_MULTI_RECV`).
    Multi(usize),
}

/// Requests from application threads.
pub(crate) enum Cmd {
    OpenEp {
        id: u64,
        setup: EpSetup,
        reply: SyncSender<Result<SocketAddrV4, String>>,
    },
    Post {
        ep: u64,
        post: Post,
    },
    /// Cancels the oldest unmatched receive posted with `context`.
    Cancel {
        ep: u64,
        context: usize,
    },
    CloseEp {
        ep: u64,
        reply: SyncSender<()>,
    },
    /// Registers application memory for remote access under the application's key.
    RegMr {
        ptr: usize,
        len: usize,
        access: Access,
        key: u64,
        reply: SyncSender<Result<(), String>>,
    },
    /// Deregisters the memory registered under `key` (its key stops working).
    CloseMr {
        key: u64,
        reply: SyncSender<()>,
    },
}

impl Cmd {
    /// Whether carrying it out gives the kernel work to start at once (a send, an
    /// RMA, opening or closing): receives and cancels only change the endpoint's
    /// own tables.
    pub(crate) fn needs_turn(&self) -> bool {
        !matches!(
            self,
            Cmd::Post {
                post: Post {
                    kind: PostKind::Recv { .. },
                    ..
                },
                ..
            } | Cmd::Cancel { .. }
        )
    }
}

/// An operation the worker started, until its completion.
struct OpState {
    context: usize,
    flags: u64,
    buf: usize,
    completion: bool,
    rx: bool,
    /// A multi-receive: entries per message, `FI_MULTI_RECV` on the last.
    multi: bool,
    /// zerorx-fabric's id of it, once posted (for `fi_cancel`).
    id: Option<OpId>,
    /// Keeps an injected send's bytes alive until the send is done with them.
    _owned: Option<Box<[u8]>>,
}

/// One endpoint, on the worker. Its tables are looked up on every operation, so
/// they hash with Fx rather than SipHash: their keys are ids and addresses of the
/// application's own posts, not values a peer can choose to make collide.
struct WorkerEp {
    ep: Endpoint,
    space: Rc<MemoryRegion>,
    peers: RefCell<FxHashMap<SocketAddrV4, PeerId>>,
    /// Claims by the application context of the `FI_PEEK | FI_CLAIM` that made them.
    claims: RefCell<FxHashMap<usize, OpId>>,
    /// Where each peer that sent something listens (`None`: not a uring-tcp IPv4
    /// address), so a receive's source becomes an `fi_addr_t`.
    sources: RefCell<FxHashMap<PeerId, Option<SocketAddrV4>>>,
    ops: RefCell<Slab<OpState>>,
    setup: EpSetup,
}

/// The worker thread's body: builds the runtime and runs [`serve`] on it.
pub(crate) fn run(cmds: UnboundedReceiver<Cmd>, ready: SyncSender<Result<(), String>>) {
    let rt = match zerorx::Runtime::builder().threads(1).build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("starting the domain's zerorx runtime: {e}")));
            return;
        }
    };
    rt.block_on(serve(cmds, ready));
}

/// Opens the domain, reports readiness on `ready`, then serves commands until the
/// channel closes (`fi_close` of the domain). Each endpoint's completions reach the
/// application's queues through a pump task.
async fn serve(mut cmds: UnboundedReceiver<Cmd>, ready: SyncSender<Result<(), String>>) {
    let state = match DomainState::open(Reaping::Pump) {
        Ok(s) => {
            let _ = ready.send(Ok(()));
            s
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    while let Some(cmd) = cmds.next().await {
        state.handle(cmd);
    }
    state.close();
}

/// How an endpoint's completions reach the application's queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reaping {
    /// A task per endpoint waits for them (a domain with a worker thread).
    Pump,
    /// [`DomainState::reap`] takes them after each turn (a caller-driven domain:
    /// no task wake-up per completion).
    Turn,
}

struct OpenEp {
    w: Rc<WorkerEp>,
    pump: Option<zerorx::JoinHandle<()>>,
}

/// Everything of a domain that lives on the thread running its runtime: the
/// zerorx-fabric domain, the application's address space as a region, open
/// endpoints and remote-access registrations. Its methods run inside the runtime
/// (`block_on`, or `Runtime::enter`).
pub(crate) struct DomainState {
    _fabric: Fabric,
    domain: zerorx_fabric::Domain,
    space: Rc<MemoryRegion>,
    eps: RefCell<FxHashMap<u64, OpenEp>>,
    mrs: RefCell<FxHashMap<u64, MemoryRegion>>,
    reaping: Reaping,
}

impl DomainState {
    /// Opens the zerorx-fabric domain.
    pub(crate) fn open(reaping: Reaping) -> Result<DomainState, String> {
        let req = Requirements::new().caps([
            Cap::Msg,
            Cap::Tagged,
            Cap::SendImm,
            Cap::Cancel,
            Cap::SourceFilter,
        ]);
        let fabric = Fabric::open("uring-tcp", &req).map_err(|e| e.to_string())?;
        let domain = fabric
            .domain(Default::default())
            .map_err(|e| e.to_string())?;
        let space = memory::address_space(&domain).map_err(|e| e.to_string())?;
        Ok(DomainState {
            _fabric: fabric,
            domain,
            space: Rc::new(space),
            eps: RefCell::new(FxHashMap::default()),
            mrs: RefCell::new(FxHashMap::default()),
            reaping,
        })
    }

    /// Carries out one command.
    pub(crate) fn handle(&self, cmd: Cmd) {
        match cmd {
            Cmd::OpenEp { id, setup, reply } => {
                let _ = reply.send(self.open_ep(id, setup));
            }
            Cmd::Post { ep, post } => {
                if let Some(w) = self.ep(ep) {
                    w.start(post);
                }
            }
            Cmd::Cancel { ep, context } => {
                if let Some(w) = self.ep(ep) {
                    w.cancel(context);
                }
            }
            Cmd::RegMr {
                ptr,
                len,
                access,
                key,
                reply,
            } => {
                let local = access | Access::LOCAL;
                let r = memory::application_region(&self.domain, ptr, len, local)
                    .and_then(|mr| {
                        mr.remote_keyed(0..len, access.remote_part(), key)?;
                        Ok(mr)
                    })
                    .map(|mr| {
                        self.mrs.borrow_mut().insert(key, mr);
                    })
                    .map_err(|e| e.to_string());
                let _ = reply.send(r);
            }
            Cmd::CloseMr { key, reply } => {
                let mr = self.mrs.borrow_mut().remove(&key);
                drop(mr);
                let _ = reply.send(());
            }
            Cmd::CloseEp { ep, reply } => {
                let open = self.eps.borrow_mut().remove(&ep);
                if let Some(o) = open {
                    close(o);
                }
                let _ = reply.send(());
            }
        }
    }

    /// Endpoint `id`, out of the table (so starting an operation on it holds no
    /// borrow of the table).
    fn ep(&self, id: u64) -> Option<Rc<WorkerEp>> {
        self.eps.borrow().get(&id).map(|o| o.w.clone())
    }

    fn open_ep(&self, id: u64, setup: EpSetup) -> Result<SocketAddrV4, String> {
        let cfg = EndpointConfig {
            tx_depth: setup.tx_size,
            rx_depth: setup.rx_size,
            max_msg_size: Some(setup.max_msg),
            bind: Some(SocketAddr::V4(setup.bind)),
            ..EndpointConfig::default()
        };
        let ep = self
            .domain
            .completion_queue(setup.tx_size + setup.rx_size)
            .and_then(|cq| self.domain.endpoint(&cq, cfg))
            .map_err(|e| e.to_string())?;
        let local = match ep.address().uring_tcp_socket() {
            Some(SocketAddr::V4(a)) => a,
            other => return Err(format!("endpoint address {other:?} is not IPv4")),
        };
        let w = Rc::new(WorkerEp {
            ep,
            space: self.space.clone(),
            peers: RefCell::new(FxHashMap::default()),
            sources: RefCell::new(FxHashMap::default()),
            claims: RefCell::new(FxHashMap::default()),
            ops: RefCell::new(Slab::new()),
            setup,
        });
        let pump = (self.reaping == Reaping::Pump)
            .then(|| zerorx::spawn(pump(Rc::downgrade(&w), w.ep.completion_queue().clone())));
        self.eps.borrow_mut().insert(id, OpenEp { w, pump });
        Ok(local)
    }

    /// Moves every endpoint's completions into the application's queues
    /// ([`Reaping::Turn`]).
    pub(crate) fn reap(&self) {
        for o in self.eps.borrow().values() {
            while let Some(c) = o.w.ep.completion_queue().try_next() {
                o.w.report(c);
            }
        }
    }

    /// Closes every endpoint left (the domain's `fi_close`).
    pub(crate) fn close(&self) {
        let open: Vec<OpenEp> = self.eps.borrow_mut().drain().map(|(_, o)| o).collect();
        for o in open {
            close(o);
        }
    }
}

/// Closes the endpoint and lets go of its queues, so the application can close
/// them as soon as its `fi_close` of the endpoint returns.
/// Only the domain's table holds it strongly (the pump's reference is weak, and
/// posts and reports borrow it for one call), so this is the endpoint's end.
fn close(o: OpenEp) {
    if let Some(p) = o.pump {
        p.abort();
    }
    if let Ok(w) = Rc::try_unwrap(o.w) {
        w.ep.close();
    }
}

/// Moves the endpoint's completions into the application's queues. It holds the
/// endpoint weakly: the domain's table owns it, and dropping it there ends this.
async fn pump(w: Weak<WorkerEp>, cq: CompletionQueue) {
    loop {
        let c = cq.next().await;
        match w.upgrade() {
            Some(w) => w.report(c),
            None => return,
        }
    }
}

impl WorkerEp {
    fn peer(&self, to: SocketAddrV4) -> Result<PeerId, String> {
        if let Some(p) = self.peers.borrow().get(&to) {
            return Ok(*p);
        }
        let p = self
            .ep
            .insert_peer(&EpAddr::uring_tcp(SocketAddr::V4(to)))
            .map_err(|e| e.to_string())?;
        self.peers.borrow_mut().insert(to, p);
        Ok(p)
    }

    fn start(&self, post: Post) {
        let rx = matches!(post.kind, PostKind::Recv { .. });
        let flags = match &post.kind {
            PostKind::Write { .. } => fi::FI_RMA | fi::FI_WRITE,
            PostKind::Read { .. } => fi::FI_RMA | fi::FI_READ,
            PostKind::Send { tag, .. } => {
                fi::FI_SEND
                    | if tag.is_some() {
                        fi::FI_TAGGED
                    } else {
                        fi::FI_MSG
                    }
            }
            PostKind::Recv { tag, .. } => {
                fi::FI_RECV
                    | if tag.is_some() {
                        fi::FI_TAGGED
                    } else {
                        fi::FI_MSG
                    }
            }
        };
        let slot = self.ops.borrow_mut().insert(OpState {
            context: post.context,
            flags,
            buf: post.ptr,
            completion: post.completion,
            rx,
            multi: matches!(
                post.kind,
                PostKind::Recv {
                    mode: RecvMode::Multi(_),
                    ..
                }
            ),
            id: None,
            _owned: post.owned,
        });
        let offset = post.ptr.saturating_sub(SPACE_BASE);
        let started = self
            .space
            .slice(offset..offset + post.len)
            .map_err(|e| e.to_string())
            .and_then(|slice| match post.kind {
                PostKind::Send {
                    to,
                    tag,
                    data,
                    level,
                } => {
                    let peer = self.peer(to)?;
                    let mut p = self.ep.send(peer, &slice).level(level).context(slot as u64);
                    if let Some(t) = tag {
                        p = p.tag(t);
                    }
                    if let Some(d) = data {
                        p = p.imm(d);
                    }
                    p.post().map_err(|e| e.to_string())
                }
                PostKind::Write { rma, data, level } => {
                    let peer = self.peer(rma.peer)?;
                    let key = RemoteKey::raw(rma.key);
                    let mut p = self
                        .ep
                        .write(peer, &slice, &key, rma.addr)
                        .level(level)
                        .context(slot as u64);
                    if let Some(d) = data {
                        p = p.imm(d);
                    }
                    p.post().map_err(|e| e.to_string())
                }
                PostKind::Read { rma } => {
                    let peer = self.peer(rma.peer)?;
                    let key = RemoteKey::raw(rma.key);
                    self.ep
                        .read(peer, &slice, &key, rma.addr)
                        .context(slot as u64)
                        .post()
                        .map_err(|e| e.to_string())
                }
                PostKind::Recv {
                    tag,
                    from,
                    mode: mode @ (RecvMode::Post | RecvMode::Multi(_)),
                } => {
                    let mut p = self.ep.recv(&slice).context(slot as u64);
                    if let RecvMode::Multi(min_free) = mode {
                        p = p.multi(min_free);
                    }
                    if let Some((t, ignore)) = tag {
                        p = p.tagged(t, ignore);
                    }
                    if let Some(f) = from {
                        p = p.from(self.peer(f)?);
                    }
                    p.post().map_err(|e| e.to_string())
                }
                PostKind::Recv {
                    tag,
                    from,
                    mode: RecvMode::Probe(action),
                } => {
                    let (t, ignore) = tag.unwrap_or((0, 0));
                    let mut p = self.ep.probe(t, ignore).context(slot as u64);
                    if let Some(f) = from {
                        p = p.from(self.peer(f)?);
                    }
                    p = match action {
                        ProbeAction::Peek => p,
                        ProbeAction::Claim => p.claim(),
                        ProbeAction::Discard => p.discard(),
                    };
                    let id = p.post().map_err(|e| e.to_string())?;
                    if action == ProbeAction::Claim {
                        self.claims.borrow_mut().insert(post.context, id);
                    }
                    Ok(id)
                }
                PostKind::Recv {
                    mode: RecvMode::Claimed { discard },
                    ..
                } => {
                    // No claim under this context: zerorx-fabric answers NoMessage
                    // for an id that claimed nothing, which a fresh one is.
                    let claim = self
                        .claims
                        .borrow_mut()
                        .remove(&post.context)
                        .unwrap_or(OpId(0));
                    let dst = (!discard).then_some(&slice);
                    self.ep
                        .recv_claimed(claim, dst, slot as u64)
                        .map_err(|e| e.to_string())
                }
            });
        match started {
            Ok(id) => {
                if let Some(op) = self.ops.borrow_mut().get_mut(slot) {
                    op.id = Some(id);
                }
            }
            Err(text) => {
                let op = self.ops.borrow_mut().remove(slot);
                let entry = op.entry(0);
                self.push_err(
                    &op,
                    entry,
                    fi::FI_EIO,
                    errors::POST_REFUSED,
                    0,
                    format!("zerorx could not start the operation: {text}"),
                );
            }
        }
    }

    /// Cancels the oldest unmatched receive posted with `context`; its error entry
    /// (`FI_ECANCELED`) comes through the pump like any completion.
    fn cancel(&self, context: usize) {
        let mut ids: Vec<OpId> = self
            .ops
            .borrow()
            .iter()
            .filter(|(_, o)| o.rx && o.context == context)
            .filter_map(|(_, o)| o.id)
            .collect();
        ids.sort();
        for id in ids {
            if self.ep.cancel(id) {
                return;
            }
        }
    }

    /// Where `peer` listens, learned once per peer.
    fn source(&self, peer: PeerId) -> Option<SocketAddrV4> {
        if let Some(s) = self.sources.borrow().get(&peer) {
            return *s;
        }
        let s = match self
            .ep
            .peer_address(peer)
            .and_then(|a| a.uring_tcp_socket())
        {
            Some(SocketAddr::V4(a)) => Some(a),
            _ => None,
        };
        self.sources.borrow_mut().insert(peer, s);
        s
    }

    /// Where `op` reports: its direction's CQ, counter and credits.
    fn reports_of(
        &self,
        op: &OpState,
    ) -> (Option<&Arc<CqStore>>, Option<&Arc<Counter>>, &Arc<Credits>) {
        let (r, credits) = if op.rx {
            (&self.setup.rx, &self.setup.rx_credits)
        } else {
            (&self.setup.tx, &self.setup.tx_credits)
        };
        (r.cq.as_ref().map(|c| &c.0), r.cntr.as_ref(), credits)
    }

    fn push_err(
        &self,
        op: &OpState,
        entry: Entry,
        err: i32,
        prov_errno: i32,
        olen: usize,
        text: String,
    ) {
        let (cq, cntr, credits) = self.reports_of(op);
        if let Some(c) = cntr {
            c.add_err(1);
        }
        match cq {
            Some(cq) => cq.push(
                Item::Err(ErrEntry {
                    entry,
                    err,
                    prov_errno,
                    olen,
                    text: errors::c_text(text),
                }),
                Some(credits.clone()),
            ),
            None => credits.give(),
        }
    }

    fn report(&self, c: Completion) {
        let slot = c.context as usize;
        if c.more {
            // A message of a multi-receive whose buffer goes on: its own entry, no
            // credit (the buffer's comes back with its last message).
            let ops = self.ops.borrow();
            if let Some(op) = ops.get(slot) {
                let entry = self.entry_of(op, &c);
                let (cq, cntr, _) = self.reports_of(op);
                if let Some(k) = cntr {
                    k.add(1);
                }
                if let Some(cq) = cq.filter(|_| op.completion) {
                    cq.push(Item::Ok(entry), None);
                }
            }
            return;
        }
        let Some(op) = self.ops.borrow_mut().try_remove(slot) else {
            return;
        };
        let mut entry = self.entry_of(&op, &c);
        if op.multi {
            entry.flags |= fi::FI_MULTI_RECV;
        }
        match c.status {
            Ok(()) => {
                let (cq, cntr, credits) = self.reports_of(&op);
                if let Some(c) = cntr {
                    c.add(1);
                }
                match cq {
                    Some(cq) if op.completion => cq.push(Item::Ok(entry), Some(credits.clone())),
                    _ => credits.give(),
                }
            }
            Err(e) => {
                let (err, prov_errno, olen) = errors::of_op(&e);
                entry.len = c.len;
                self.push_err(&op, entry, err, prov_errno, olen, e.to_string());
            }
        }
    }

    /// The entry completion `c` of `op` makes.
    fn entry_of(&self, op: &OpState, c: &Completion) -> Entry {
        let mut entry = op.entry(if op.rx { c.len } else { 0 });
        entry.data = c.imm.unwrap_or(0);
        entry.tag = c.tag.unwrap_or(0);
        if op.rx {
            entry.buf += c.offset;
        }
        if c.remote_write {
            // A receive consumed by a write with immediate data (FI_RX_CQ_DATA).
            entry.flags = fi::FI_RMA | fi::FI_REMOTE_WRITE;
            entry.buf = 0;
        }
        if op.rx {
            if let Some(src) = c.peer.and_then(|p| self.source(p)) {
                entry.src = self.setup.av.reverse(src).unwrap_or(fi::FI_ADDR_NOTAVAIL);
            }
        }
        if c.imm.is_some() {
            entry.flags |= fi::FI_REMOTE_CQ_DATA;
        }
        entry
    }
}

impl OpState {
    /// Its completion entry, before the transfer's details are filled in.
    fn entry(&self, len: usize) -> Entry {
        Entry {
            context: self.context,
            flags: self.flags,
            len,
            buf: if self.rx { self.buf } else { 0 },
            ..Entry::default()
        }
    }
}
