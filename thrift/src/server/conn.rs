//! One server connection: detect, read requests, run handlers, queue replies.

use super::method::{CatchUnwind, Outcome, ReplyTo};
use super::stats::{bump, drop_gauge};
use super::{ProtocolChoice, TransportChoice, WorkerCtx};
use crate::exception::{ApplicationException, ApplicationExceptionKind};
use crate::message::MessageReader;
use crate::out::{Framing, Segments};
use crate::protocol::{MessageType, Protocol};
use crate::signal::LocalSignal;
use crate::transport::{detect_stream, Incoming, MessageStream, ReadError, Transport};
use crate::writer::poll_due;
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use zerorx::net::{Connection, FrameReader, SendBuf, SendProgress};
use zerorx::time::Sleep;
use zerorx::JoinHandle;

/// State the connection's tasks share.
struct Conn {
    /// Replies are queued on it as they are made (`Connection::queue_send`): no
    /// writer task, and no wake-up per reply.
    stream: Rc<Connection>,
    /// Requests read and not yet answered (reply not yet sent, or oneway handler
    /// still running): bounded by `max_in_flight`.
    in_flight: Cell<usize>,
    /// Replies queued and not yet known to be sent: released from `in_flight` once
    /// the connection's send queue is empty ([`settle`](Self::settle)).
    unsent: Cell<usize>,
    /// Handler tasks still running.
    running: Cell<usize>,
    /// Set while a request is handled that further received requests follow (pipelined
    /// calls): its reply waits for the turn's end and those that follow join it in one
    /// send (`Connection::queue_send_more`).
    more_follow: Cell<bool>,
    /// Set when the writer failed: stop everything. Apart from `changed` so a reader
    /// waiting for requests is not woken by every reply sent.
    failed: Rc<LocalSignal>,
    /// Notified when `in_flight` or `running` change, and on failure.
    changed: Rc<LocalSignal>,
    handlers: RefCell<slab::Slab<JoinHandle<()>>>,
}

/// Why the connection's sending failed.
enum SendFailure {
    /// A send failed (the peer reset, ...).
    Io,
    /// The queued replies made no progress for the write timeout (the peer does not
    /// read).
    TimedOut,
}

impl Conn {
    fn release(&self, n: usize) {
        self.in_flight.set(self.in_flight.get().saturating_sub(n));
        self.changed.notify();
    }

    /// Queues a reply, sent with no task waiting; its slot is released once the send
    /// queue has emptied ([`settle`](Self::settle)).
    fn push(&self, segs: Segments, w: &WorkerCtx) {
        let queued = match segs {
            Segments::One(b) if self.more_follow.get() => self.stream.queue_send_more(b),
            Segments::One(b) => self.stream.queue_send(b),
            Segments::Many(v) => self
                .stream
                .queue_send_vectored(v.into_iter().map(SendBuf::from)),
        };
        match queued {
            Ok(()) => {
                self.unsent.set(self.unsent.get() + 1);
                bump(&w.stats.replies, 1);
            }
            Err(_) => self.fail(w, SendFailure::Io),
        }
    }

    /// Releases the slots of the replies queued so far once all of them are sent;
    /// fails the connection if a send failed.
    fn settle(&self, w: &WorkerCtx) {
        let n = self.unsent.get();
        if n == 0 {
            return;
        }
        match self.stream.sends_done() {
            None => {}
            Some(Ok(())) => {
                self.unsent.set(0);
                self.release(n);
            }
            Some(Err(_)) => self.fail(w, SendFailure::Io),
        }
    }

    /// Stops the connection: its sending failed (counted once).
    fn fail(&self, w: &WorkerCtx, why: SendFailure) {
        if self.failed.is_set() {
            return;
        }
        bump(
            match why {
                SendFailure::TimedOut => &w.stats.write_timeouts,
                SendFailure::Io => &w.stats.io_errors,
            },
            1,
        );
        self.failed.set();
        self.changed.notify();
    }

    fn abort_tasks(&self) {
        let handlers: Vec<JoinHandle<()>> = self.handlers.borrow_mut().drain().collect();
        for h in handlers {
            h.abort();
        }
    }
}

/// The write timeout: ready when the connection's queued replies made no progress
/// for the limit (a peer that does not read).
///
/// One timer for the connection's life, moved only when it fires ([`poll_due`]); when
/// it fires, the stall is checked against when it began.
struct WriteWatch {
    limit: Option<std::time::Duration>,
    timer: Option<Pin<Box<Sleep>>>,
    /// The progress seen when the current stall began, and when.
    stall: Option<(SendProgress, Instant)>,
}

impl WriteWatch {
    fn new(limit: Option<std::time::Duration>) -> WriteWatch {
        WriteWatch {
            limit,
            timer: None,
            stall: None,
        }
    }

    fn poll(&mut self, stream: &Connection, cx: &mut Context<'_>) -> Poll<()> {
        let Some(limit) = self.limit else {
            return Poll::Pending;
        };
        let Some(now_at) = stream.send_progress() else {
            // Nothing on its way: no stall.
            self.stall = None;
            return Poll::Pending;
        };
        let since = match self.stall {
            Some((at, since)) if at == now_at => since,
            _ => {
                let since = zerorx::time::turn_time();
                self.stall = Some((now_at, since));
                since
            }
        };
        poll_due(&mut self.timer, since + limit, cx)
    }
}

/// Unregisters the connection from its worker and stops its tasks, however the
/// connection task ends (including being aborted at the drain deadline).
struct Guard {
    w: Rc<WorkerCtx>,
    key: usize,
    conn: Rc<Conn>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.conn.abort_tasks();
        // Replies stuck behind a peer that does not read (the write timeout, an abort)
        // would keep the socket and their buffers; after a graceful end nothing is
        // queued.
        self.conn.stream.cancel_sends();
        if let Ok(mut conns) = self.w.conns.try_borrow_mut() {
            conns.try_remove(self.key);
        }
        drop_gauge(&self.w.stats.connections_active);
        self.w.conn_closed.notify();
    }
}

/// How reading ended.
enum End {
    /// Finish the calls in progress, send their replies, close.
    Graceful,
    /// Close now.
    Abort,
}

pub(super) async fn serve(stream: Connection, w: Rc<WorkerCtx>, key: usize) {
    let stream = Rc::new(stream);
    let conn = Rc::new(Conn {
        stream: stream.clone(),
        in_flight: Cell::new(0),
        unsent: Cell::new(0),
        running: Cell::new(0),
        more_follow: Cell::new(false),
        failed: Rc::new(LocalSignal::default()),
        changed: Rc::new(LocalSignal::default()),
        handlers: RefCell::new(slab::Slab::new()),
    });
    let _guard = Guard {
        w: w.clone(),
        key,
        conn: conn.clone(),
    };
    match read_loop(&stream, &conn, &w).await {
        End::Abort => {}
        End::Graceful => {
            // Every running handler queues its reply; then the replies go out.
            let mut changed = conn.changed.wait();
            poll_fn(|cx| {
                if conn.running.get() == 0 || conn.failed.is_set() {
                    return Poll::Ready(());
                }
                let _ = changed.poll_set(cx);
                Poll::Pending
            })
            .await;
            let mut watch = WriteWatch::new(w.shared.config.write_timeout);
            let flushed = poll_fn(|cx| {
                if let Poll::Ready(r) = stream.poll_flush_sends(cx) {
                    return Poll::Ready(r.is_ok());
                }
                if watch.poll(&stream, cx).is_ready() {
                    conn.fail(&w, SendFailure::TimedOut);
                    return Poll::Ready(false);
                }
                Poll::Pending
            })
            .await;
            conn.settle(&w);
            if flushed && !conn.failed.is_set() {
                linger(&stream).await;
            }
        }
    }
}

/// Longest a drained connection waits for its peer to close after the last reply.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);

/// After the last reply: sends end of stream, then reads (and drops) what the peer
/// still sends until it closes, for at most [`LINGER`] (and never past the drain
/// deadline, which aborts this task). Closing at once would leave the calls the peer
/// sent after the drain began unread, and a socket closed with unread data sends a
/// reset, which can destroy the replies still on their way to the peer: a client
/// under load lost 2 of 2,516 answered calls at SIGTERM that way
/// (`thrift-test/tests/app.rs`).
async fn linger(stream: &Connection) {
    if stream.shutdown(std::net::Shutdown::Write).await.is_err() {
        return;
    }
    let _ = zerorx::time::timeout(LINGER, async {
        while let Ok(Some(_)) = stream.recv().await {}
    })
    .await;
}

enum Event {
    Message(Result<Option<Incoming>, ReadError>),
    Idle,
    Drain,
    Failed,
}

async fn read_loop(stream: &Rc<Connection>, conn: &Rc<Conn>, w: &Rc<WorkerCtx>) -> End {
    let cfg = &w.shared.config;
    let stats = &w.stats;
    let mut reader = FrameReader::new(stream.clone());
    let mut drain = w.drain.wait();
    let mut changed = conn.changed.wait();
    let mut failed = conn.failed.wait();
    let mut last_activity = zerorx::time::turn_time();
    let mut idle = cfg
        .idle_timeout
        .map(|d| zerorx::time::sleep_until(last_activity + d));

    // Transport and protocol from the first bytes (or checked against the settings).
    let detected = {
        let detect = pin!(detect_stream(&mut reader, cfg.max_frame));
        let mut detect = detect;
        poll_fn(|cx| {
            if let Poll::Ready(r) = detect.as_mut().poll(cx) {
                return Poll::Ready(Ok(r));
            }
            if drain.poll_set(cx).is_ready() {
                return Poll::Ready(Err(Event::Drain));
            }
            if let Some(s) = idle.as_mut() {
                if Pin::new(s).poll(cx).is_ready() {
                    return Poll::Ready(Err(Event::Idle));
                }
            }
            Poll::Pending
        })
        .await
    };
    let (transport, protocol) = match detected {
        Err(Event::Drain) => {
            bump(&stats.drained, 1);
            return End::Abort;
        }
        Err(_) => {
            bump(&stats.idle_timeouts, 1);
            return End::Abort;
        }
        Ok(Ok(None)) => return End::Abort,
        Ok(Ok(Some(found))) => found,
        Ok(Err(e)) => {
            count_read_error(w, &e);
            return End::Abort;
        }
    };
    // THeader names its protocol per message: only a server that accepts any
    // protocol and transport (the default) takes it.
    let header = matches!(transport, Transport::Header | Transport::FramedHeader);
    let allowed_transport = match (cfg.transport, transport) {
        (TransportChoice::Auto, _) => !header || cfg.protocol == ProtocolChoice::Auto,
        (TransportChoice::Framed, t) => t == Transport::Framed,
        (TransportChoice::Unframed, t) => t == Transport::Unframed,
    };
    let allowed_protocol = matches!(
        (cfg.protocol, protocol),
        (ProtocolChoice::Auto, _)
            | (ProtocolChoice::Compact, Protocol::Compact)
            | (
                ProtocolChoice::Binary,
                Protocol::Binary | Protocol::BinaryNonStrict
            )
    );
    if !allowed_transport || !allowed_protocol {
        bump(&stats.protocol_errors, 1);
        return End::Abort;
    }
    let mut messages = MessageStream::new(reader, transport, protocol, cfg.max_frame, cfg.limits);
    // A spill makes the message it was for a copied one, so spills are counted with
    // copied messages (one never completed is not counted).
    let mut spills_counted = 0;
    let mut watch = WriteWatch::new(cfg.write_timeout);

    loop {
        // Replies sent since the last look free their slots (and count as replies).
        conn.settle(w);
        if conn.in_flight.get() >= cfg.max_in_flight {
            bump(&stats.in_flight_waits, 1);
            let ev = poll_fn(|cx| {
                // Woken when a handler finishes (`changed`) or the queued replies
                // are all sent (the flush).
                if conn.unsent.get() > 0 && stream.poll_flush_sends(cx).is_ready() {
                    conn.settle(w);
                }
                if conn.failed.is_set() {
                    return Poll::Ready(Event::Failed);
                }
                if conn.in_flight.get() < cfg.max_in_flight {
                    return Poll::Ready(Event::Idle);
                }
                if watch.poll(stream, cx).is_ready() {
                    conn.fail(w, SendFailure::TimedOut);
                    return Poll::Ready(Event::Failed);
                }
                if drain.poll_set(cx).is_ready() {
                    return Poll::Ready(Event::Drain);
                }
                let _ = changed.poll_set(cx);
                Poll::Pending
            })
            .await;
            match ev {
                Event::Failed => return End::Abort,
                Event::Drain => {
                    bump(&stats.drained, 1);
                    return End::Graceful;
                }
                _ => last_activity = Instant::now(),
            }
        }
        let ev = {
            let next = pin!(messages.next());
            let mut next = next;
            poll_fn(|cx| {
                if failed.poll_set(cx).is_ready() {
                    return Poll::Ready(Event::Failed);
                }
                if let Poll::Ready(r) = next.as_mut().poll(cx) {
                    return Poll::Ready(Event::Message(r));
                }
                if conn.unsent.get() > 0 && watch.poll(stream, cx).is_ready() {
                    conn.fail(w, SendFailure::TimedOut);
                    return Poll::Ready(Event::Failed);
                }
                if drain.poll_set(cx).is_ready() {
                    return Poll::Ready(Event::Drain);
                }
                if let Some(s) = idle.as_mut() {
                    if Pin::new(s).poll(cx).is_ready() {
                        return Poll::Ready(Event::Idle);
                    }
                }
                Poll::Pending
            })
            .await
        };
        match ev {
            Event::Failed => return End::Abort,
            Event::Drain => {
                bump(&stats.drained, 1);
                return End::Graceful;
            }
            Event::Idle => {
                let Some(limit) = cfg.idle_timeout else {
                    continue;
                };
                let due = last_activity + limit;
                conn.settle(w);
                let busy = conn.in_flight.get() > 0 || conn.running.get() > 0;
                if busy || Instant::now() < due {
                    // Activity since the timer was set, or calls in progress.
                    let next = if busy { Instant::now() + limit } else { due };
                    if let Some(s) = idle.as_mut() {
                        s.reset(next);
                    }
                    continue;
                }
                bump(&stats.idle_timeouts, 1);
                return End::Abort;
            }
            Event::Message(Ok(None)) => return End::Graceful,
            Event::Message(Err(e)) => {
                count_read_error(w, &e);
                return match e {
                    // The worker's receive memory is used up, the socket is fine: the
                    // calls already received are answered before the close.
                    ReadError::Io(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
                        End::Graceful
                    }
                    ReadError::Io(_) => End::Abort,
                    _ => End::Graceful,
                };
            }
            Event::Message(Ok(Some(incoming))) => {
                last_activity = zerorx::time::turn_time();
                if incoming.copied {
                    bump(&stats.frames_copied, 1);
                    bump(&stats.bytes_copied, incoming.bytes.len() as u64);
                    let spills = messages.copy_stats().pressure_spills;
                    bump(&stats.pressure_spills, spills - spills_counted);
                    spills_counted = spills;
                }
                conn.more_follow.set(messages.buffered() > 0);
                let go_on = dispatch(incoming, transport, protocol, conn, w);
                conn.more_follow.set(false);
                if !go_on {
                    return End::Graceful;
                }
            }
        }
    }
}

fn count_read_error(w: &WorkerCtx, e: &ReadError) {
    let s = &w.stats;
    match e {
        ReadError::Io(e) => {
            bump(&s.io_errors, 1);
            if e.kind() == std::io::ErrorKind::OutOfMemory {
                bump(&s.receive_memory_closes, 1);
            }
        }
        ReadError::TooLarge { .. } => bump(&s.frames_too_large, 1),
        ReadError::Truncated => bump(&s.truncated, 1),
        ReadError::Protocol(_) => bump(&s.protocol_errors, 1),
    }
}

/// Handles one request; `false` when the connection must close (after the replies in
/// progress).
fn dispatch(
    incoming: Incoming,
    transport: Transport,
    protocol: Protocol,
    conn: &Rc<Conn>,
    w: &Rc<WorkerCtx>,
) -> bool {
    let cfg = &w.shared.config;
    let stats = &w.stats;
    // A THeader message names its own protocol; its reply goes back in a header
    // frame with the request's protocol and flags.
    let protocol = incoming.header.map_or(protocol, |h| h.protocol);
    let framing = Framing::of(transport, protocol, incoming.header);
    let mut r = MessageReader::new(protocol, incoming.bytes, cfg.limits);
    let header = match r.read_header() {
        Ok(h) => h,
        Err(_) => {
            // No sequence id to answer with.
            bump(&stats.protocol_errors, 1);
            return false;
        }
    };
    // The method's name as this worker keeps it (a reply echoes it without a copy);
    // an unknown name is copied, since the request's receive buffer would otherwise
    // stay busy for as long as the reply is in flight.
    let (name, method) = match w.methods.get(&header.name[..]) {
        Some((reply_name, method)) => (reply_name.clone(), Some(method)),
        None => (bytes::Bytes::copy_from_slice(&header.name), None),
    };
    let to = ReplyTo {
        protocol: r.protocol(),
        framing,
        max_frame: cfg.max_frame,
        name,
        seqid: header.seqid,
    };
    let exception = |to: &ReplyTo, kind, message: String| -> bool {
        match to.encode(
            MessageType::Exception,
            &ApplicationException::new(kind, message),
        ) {
            Ok(segs) => {
                conn.in_flight.set(conn.in_flight.get() + 1);
                conn.push(segs, w);
                true
            }
            Err(_) => false,
        }
    };
    let name = || String::from_utf8_lossy(&header.name).into_owned();
    match header.kind {
        MessageType::Call | MessageType::Oneway => {}
        other => {
            bump(&stats.invalid_message_type, 1);
            return exception(
                &to,
                ApplicationExceptionKind::InvalidMessageType,
                format!("{}: a server accepts calls, not {other:?} messages", name()),
            );
        }
    }
    bump(&stats.requests, 1);
    let call = header.kind == MessageType::Call;
    if !call {
        bump(&stats.oneway_requests, 1);
    }
    let Some(method) = method else {
        bump(&stats.unknown_method, 1);
        if !call {
            return true;
        }
        return exception(
            &to,
            ApplicationExceptionKind::UnknownMethod,
            format!("unknown method {}", name()),
        );
    };
    let expects_reply = call && !method.is_oneway();
    let future = match method.start(&mut r, to.clone(), &w.future_slot) {
        Ok(f) => f,
        Err(e) => {
            let bad_args = e.is_bad_content();
            bump(
                if bad_args {
                    &stats.bad_args
                } else {
                    &stats.protocol_errors
                },
                1,
            );
            let replied = !expects_reply
                || exception(
                    &to,
                    ApplicationExceptionKind::ProtocolError,
                    format!("{}: bad arguments: {e}", name()),
                );
            return bad_args && replied;
        }
    };
    conn.in_flight.set(conn.in_flight.get() + 1);
    let mut future = CatchUnwind(future);
    // Most handlers finish without waiting: run the call here, once, and spawn a task
    // only for one that waits (a task allocation and a scheduling round saved per
    // call). The task's first poll registers its own waker, so nothing the call
    // waits for can be missed.
    if let Poll::Ready(outcome) =
        Pin::new(&mut future).poll(&mut Context::from_waker(Waker::noop()))
    {
        // Its memory holds the next call's future (`future_slot`).
        w.future_slot.recycle(future.0);
        finish_call(outcome, expects_reply, &to, conn, w);
        return true;
    }
    conn.running.set(conn.running.get() + 1);
    let key = conn.handlers.borrow().vacant_key();
    let task = {
        let (conn, w) = (conn.clone(), w.clone());
        zerorx::spawn(async move {
            let outcome = future.await;
            finish_call(outcome, expects_reply, &to, &conn, &w);
            conn.running.set(conn.running.get() - 1);
            conn.handlers.borrow_mut().try_remove(key);
            conn.changed.notify();
        })
    };
    conn.handlers.borrow_mut().insert(task);
    true
}

/// Queues the reply (or the exception) a finished call ends with, or releases its
/// in-flight slot when nothing is sent.
fn finish_call(
    outcome: Result<Outcome, String>,
    expects_reply: bool,
    to: &ReplyTo,
    conn: &Conn,
    w: &WorkerCtx,
) {
    let stats = &w.stats;
    let failure = match outcome {
        Ok(Outcome::Reply(segs)) if expects_reply => {
            conn.push(segs, w);
            None
        }
        Ok(Outcome::Reply(_)) | Ok(Outcome::Done) => None,
        Ok(Outcome::Failed(e)) => {
            bump(&stats.handler_errors, 1);
            Some(e)
        }
        Ok(Outcome::Unencodable(e)) => {
            bump(&stats.reply_too_large, 1);
            Some(ApplicationException::internal(format!(
                "the result could not be sent: {e}"
            )))
        }
        Err(panic) => {
            bump(&stats.handler_panics, 1);
            Some(ApplicationException::internal(format!(
                "handler panicked: {panic}"
            )))
        }
    };
    let queued = match failure {
        Some(e) if expects_reply => match to.encode(MessageType::Exception, &e) {
            Ok(segs) => {
                conn.push(segs, w);
                true
            }
            Err(_) => false,
        },
        _ => expects_reply,
    };
    if !queued {
        conn.release(1);
    }
}
