//! [`JoinHandle`]: awaiting, aborting and inspecting a spawned task.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Why a task produced no value.
pub enum JoinError {
    /// The task was aborted, or its runtime shut down before it finished.
    Cancelled,
    /// The task panicked; the payload is the panic's.
    Panic(Box<dyn Any + Send + 'static>),
}

impl JoinError {
    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panic(_))
    }

    /// The panic message, when the payload is a string.
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            JoinError::Panic(p) => p
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str)),
            JoinError::Cancelled => None,
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => f.write_str("JoinError::Cancelled"),
            JoinError::Panic(_) => write!(f, "JoinError::Panic({:?})", self.panic_message()),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => f.write_str("task was cancelled"),
            JoinError::Panic(_) => match self.panic_message() {
                Some(m) => write!(f, "task panicked: {m}"),
                None => f.write_str("task panicked"),
            },
        }
    }
}

impl std::error::Error for JoinError {}

/// The result slot shared by a task and its handle.
pub(crate) struct JoinState<T> {
    pub(crate) output: Option<Result<T, JoinError>>,
    pub(crate) waker: Option<Waker>,
    /// Set when the handle is dropped: the task then drops its output itself, on its
    /// owner thread, instead of storing it.
    pub(crate) handle_dropped: bool,
}

impl<T> Default for JoinState<T> {
    fn default() -> Self {
        JoinState {
            output: None,
            waker: None,
            handle_dropped: false,
        }
    }
}

/// What a [`JoinHandle`] needs from its task, whatever the future's type.
pub(crate) trait Join<T>: Send + Sync {
    fn join_state(&self) -> MutexGuard<'_, JoinState<T>>;
    fn abort(self: Arc<Self>);
    fn is_complete(&self) -> bool;
}

/// Locks a join state, ignoring poisoning: the state is updated in single assignments
/// that a panic cannot leave half done.
pub(crate) fn lock<T>(m: &Mutex<JoinState<T>>) -> MutexGuard<'_, JoinState<T>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An owned permission to await a task's result.
///
/// Awaiting it yields `Ok(value)`, or a [`JoinError`] if the task panicked or was
/// cancelled. Dropping it detaches the task (it keeps running). A handle of a task
/// spawned with [`Handle::spawn_on`](crate::Handle::spawn_on) is `Send` and can be
/// awaited on any thread, inside or outside the runtime.
pub struct JoinHandle<T> {
    task: Arc<dyn Join<T>>,
    /// `Send`/`Sync` only when the output is: a `!Send` output must be taken (or
    /// dropped) on the thread that produced it.
    _output: PhantomData<T>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(task: Arc<dyn Join<T>>) -> Self {
        JoinHandle {
            task,
            _output: PhantomData,
        }
    }

    /// Requests cancellation: the task's future is dropped on its worker at the next
    /// scheduling point, and the handle then yields [`JoinError::Cancelled`]. No effect
    /// on a task that already finished.
    pub fn abort(&self) {
        self.task.clone().abort();
    }

    /// Whether the task has finished (value, panic or cancellation).
    pub fn is_finished(&self) -> bool {
        self.task.is_complete()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self.task.join_state();
        if let Some(out) = st.output.take() {
            return Poll::Ready(out);
        }
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        let out = {
            let mut st = self.task.join_state();
            st.handle_dropped = true;
            st.waker = None;
            st.output.take()
        };
        // Dropped here, outside the lock and on the handle's thread (the owner thread
        // when `T: !Send`).
        drop(out);
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
