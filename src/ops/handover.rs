//! Receives served by another worker and handed over.
//!
//! When the kernel cannot import a zero-copy instance into a second ring (before Linux
//! 6.19), a worker without its own pool has its streams' receives run on the ring of
//! the worker that owns the pool: a server task there arms the receive on a duplicate
//! of the socket fd and passes each buffer over a shared queue. Buffers are `Send`;
//! dropped here, they go back to the owner's pool through its return queue.
//!
//! Either side may go first: dropping the stream closes the queue and wakes the server,
//! which cancels its receive and closes its fd; a server that ends (end of stream,
//! error, runtime shutdown) leaves its last word in the queue.

use super::tcp_recv::Receiver;
use crate::driver::peek_waker::is_peek;
use crate::ops::SharedFd;
use crate::runtime::worker::Core;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use zcrx::RxBuf;

/// What the server passes over.
enum Item {
    Data(RxBuf),
    /// End of stream.
    Eof,
    Failed(io::Error),
}

#[derive(Default)]
struct State {
    items: VecDeque<Item>,
    /// The consumer's waker (on the stream's worker).
    consumer: Option<Waker>,
    /// The server's waker (on the owner).
    server: Option<Waker>,
    /// The consumer is gone.
    closed: bool,
    /// The server has said its last word.
    ended: bool,
}

#[derive(Default)]
struct Channel(Mutex<State>);

impl Channel {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The consumer side, held by the stream.
pub(crate) struct HandoverRx {
    chan: Arc<Channel>,
}

impl HandoverRx {
    /// Starts serving `fd`'s receives on worker `owner`.
    pub(crate) fn start(core: &Core, owner: usize, fd: &SharedFd) -> io::Result<HandoverRx> {
        // The server gets its own fd for the same socket, so neither side's close can
        // pull the socket from under the other's op.
        let dup = fd.try_clone()?;
        let chan = Arc::new(Channel::default());
        // Made here, so that a server that never starts (the owner already stopped)
        // still ends the stream when its closure is dropped.
        let guard = ServerGuard(chan.clone());
        drop(core.handle.spawn_on_with(owner, move || {
            serve(crate::ops::SocketFd::shared(dup), guard)
        }));
        Ok(HandoverRx { chan })
    }

    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<RxBuf>>> {
        let mut st = self.chan.lock();
        match st.items.pop_front() {
            Some(Item::Data(buf)) => Poll::Ready(Ok(Some(buf))),
            Some(Item::Eof) => {
                st.items.push_front(Item::Eof);
                Poll::Ready(Ok(None))
            }
            Some(Item::Failed(e)) => Poll::Ready(Err(e)),
            None if st.ended => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the worker serving this stream's receives has stopped",
            ))),
            // A peek registers nothing and leaves the consumer's waker.
            None if is_peek(cx.waker()) => Poll::Pending,
            None => {
                match &st.consumer {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => st.consumer = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for HandoverRx {
    fn drop(&mut self) {
        let (server, items) = {
            let mut st = self.chan.lock();
            st.closed = true;
            (st.server.take(), std::mem::take(&mut st.items))
        };
        // Buffers go back to their pool outside the lock.
        drop(items);
        if let Some(w) = server {
            w.wake();
        }
    }
}

/// Leaves the server's last word if it stops without one (shutdown dropped it).
struct ServerGuard(Arc<Channel>);

impl ServerGuard {
    fn push(&self, item: Item) {
        let consumer = {
            let mut st = self.0.lock();
            if st.closed {
                return;
            }
            if matches!(item, Item::Eof | Item::Failed(_)) {
                st.ended = true;
            }
            st.items.push_back(item);
            st.consumer.take()
        };
        if let Some(w) = consumer {
            w.wake();
        }
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let consumer = {
            let mut st = self.0.lock();
            st.ended = true;
            st.consumer.take()
        };
        if let Some(w) = consumer {
            w.wake();
        }
    }
}

/// Runs on the owner: receives `fd` with the owner's pool until the stream ends or the
/// consumer goes away.
async fn serve(fd: SharedFd, guard: ServerGuard) {
    let Some(core) = crate::runtime::context::current() else {
        guard.push(Item::Failed(crate::runtime::op::not_in_runtime()));
        return;
    };
    let mut rx = Receiver::serving(&core);
    drop(core);
    poll_fn(|cx| loop {
        {
            let mut st = guard.0.lock();
            if st.closed {
                return Poll::Ready(());
            }
            match &st.server {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => st.server = Some(cx.waker().clone()),
            }
        }
        match rx.poll_recv(&fd, cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(Some(buf))) => guard.push(Item::Data(buf)),
            Poll::Ready(Ok(None)) => {
                guard.push(Item::Eof);
                return Poll::Ready(());
            }
            Poll::Ready(Err(e)) => {
                guard.push(Item::Failed(e));
                return Poll::Ready(());
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_server_that_never_ran_ends_the_stream_instead_of_hanging() {
        use super::{Channel, HandoverRx, Item, ServerGuard};
        use std::sync::Arc;
        use std::task::{Context, Poll, Waker};
        let chan = Arc::new(Channel::default());
        let mut rx = HandoverRx { chan: chan.clone() };
        let guard = ServerGuard(chan.clone());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(rx.poll_recv(&mut cx).is_pending());
        // The owner dropped the server's closure without running it.
        drop(guard);
        match rx.poll_recv(&mut cx) {
            Poll::Ready(Err(e)) => assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe),
            other => panic!("expected an error, got {other:?}"),
        }
        // A server that said its last word is heard first.
        let chan = Arc::new(Channel::default());
        let mut rx = HandoverRx { chan: chan.clone() };
        let guard = ServerGuard(chan);
        guard.push(Item::Eof);
        drop(guard);
        assert!(matches!(rx.poll_recv(&mut cx), Poll::Ready(Ok(None))));
        assert!(matches!(rx.poll_recv(&mut cx), Poll::Ready(Ok(None))));
    }
}
