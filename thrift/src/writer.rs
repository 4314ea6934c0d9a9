//! [`OutQueue`] and [`write_loop`]: one writer task per connection sends everything
//! queued since its last send in one vectored write, so pipelined replies (or
//! requests) share syscalls and never interleave on the socket.

use super::out::Segments;
use super::signal::LocalSignal;
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};
use zerorx::net::Connection;
use zerorx::time::{sleep_until, Sleep};

/// Most segments in one `sendmsg` (the kernel's `IOV_MAX` is 1024).
const MAX_IOV: usize = 1024;

/// Encoded messages waiting for the writer.
#[derive(Default)]
pub(crate) struct OutQueue {
    segs: RefCell<Vec<Bytes>>,
    /// Messages in `segs` (for the caller's accounting once they are sent).
    messages: Cell<usize>,
    closed: Cell<bool>,
    changed: Rc<LocalSignal>,
}

impl OutQueue {
    /// Queues one message and wakes the writer.
    pub(crate) fn push(&self, segs: Segments) {
        // Appended, never swapped in: the queue keeps its capacity across batches.
        segs.append_to(&mut self.segs.borrow_mut());
        self.messages.set(self.messages.get() + 1);
        self.changed.notify();
    }

    /// No more messages will be queued: the writer exits once the queue is empty.
    pub(crate) fn close(&self) {
        self.closed.set(true);
        self.changed.notify();
    }
}

/// Why the writer stopped early.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// The send failed.
    Io(io::Error),
    /// A send made no progress for the write timeout (the peer does not read).
    TimedOut,
}

/// Sends what `q` holds until it is closed and empty. `on_sent(n)` is told after each
/// write how many queued messages it carried.
pub(crate) async fn write_loop(
    stream: &Connection,
    q: &OutQueue,
    timeout: Option<Duration>,
    mut on_sent: impl FnMut(usize),
) -> Result<(), WriteError> {
    let mut wait = q.changed.wait();
    let mut batch: Vec<Bytes> = Vec::new();
    let mut deadline: Option<Pin<Box<Sleep>>> = None;
    loop {
        std::future::poll_fn(|cx| {
            if !q.segs.borrow().is_empty() || q.closed.get() {
                return Poll::Ready(());
            }
            let _ = wait.poll_set(cx);
            Poll::Pending
        })
        .await;
        std::mem::swap(&mut batch, &mut *q.segs.borrow_mut());
        let messages = q.messages.replace(0);
        if batch.is_empty() {
            return Ok(());
        }
        for chunk in batch.chunks(MAX_IOV) {
            let send = async {
                if let [one] = chunk {
                    stream.send(one.clone()).await
                } else {
                    stream.send_vectored(chunk).await
                }
            };
            let sent = match timeout {
                Some(limit) => {
                    // A send is late only once `limit` has passed since it started.
                    let due = zerorx::time::turn_time() + limit;
                    let mut send = std::pin::pin!(send);
                    std::future::poll_fn(|cx| {
                        if let Poll::Ready(r) = send.as_mut().poll(cx) {
                            return Poll::Ready(Ok(r));
                        }
                        poll_due(&mut deadline, due, cx).map(|()| Err(WriteError::TimedOut))
                    })
                    .await?
                }
                None => send.await,
            };
            sent.map_err(WriteError::Io)?;
        }
        batch.clear();
        on_sent(messages);
    }
}

/// Ready once `due` has passed, on one timer (made at first use) that is moved only
/// when it fires: re-arming a timer for every send cost a clock read and two heap
/// operations per write. The timer may be set for an earlier deadline than `due`
/// (an earlier send's, a stall before this one): firing early, it is moved to `due`.
pub(crate) fn poll_due(
    timer: &mut Option<Pin<Box<Sleep>>>,
    due: Instant,
    cx: &mut std::task::Context<'_>,
) -> Poll<()> {
    let timer = timer.get_or_insert_with(|| Box::pin(sleep_until(due)));
    while timer.as_mut().poll(cx).is_ready() {
        if Instant::now() >= due {
            return Poll::Ready(());
        }
        timer.as_mut().reset(due);
    }
    Poll::Pending
}
