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

/// A task's result as its join slot keeps it: one word plus the value for a `()`
/// task (an `Option<Result<T, JoinError>>` with a `bool` beside it takes three), since
/// every spawned task, idle or not, carries one.
enum Output<T> {
    /// Not finished, and the handle may still want the result.
    Empty,
    /// The handle is gone: the task drops its result itself, on its owner thread,
    /// instead of storing it.
    Detached,
    Value(T),
    Cancelled,
    /// Boxed twice so the slot needs one word for it, not two; only a panic pays for
    /// the extra allocation.
    Panicked(Box<Box<dyn Any + Send + 'static>>),
}

/// The result slot shared by a task and its handle.
pub(crate) struct JoinState<T> {
    output: Output<T>,
    pub(crate) waker: Option<Waker>,
}

impl<T> Default for JoinState<T> {
    fn default() -> Self {
        JoinState {
            output: Output::Empty,
            waker: None,
        }
    }
}

impl<T> JoinState<T> {
    /// Stores the task's result for the handle; gives it back when the handle is gone
    /// (the caller drops it outside the lock).
    pub(crate) fn store(&mut self, result: Result<T, JoinError>) -> Option<Result<T, JoinError>> {
        if matches!(self.output, Output::Detached) {
            return Some(result);
        }
        self.output = match result {
            Ok(v) => Output::Value(v),
            Err(JoinError::Cancelled) => Output::Cancelled,
            Err(JoinError::Panic(p)) => Output::Panicked(Box::new(p)),
        };
        None
    }

    /// Whether the result is still to come and the handle waits for it.
    pub(crate) fn awaited(&self) -> bool {
        matches!(self.output, Output::Empty)
    }

    /// Takes the stored result.
    fn take(&mut self) -> Option<Result<T, JoinError>> {
        self.take_leaving(Output::Empty)
    }

    /// Marks the handle gone and takes whatever result was stored.
    fn detach(&mut self) -> Option<Result<T, JoinError>> {
        self.waker = None;
        self.take_leaving(Output::Detached)
    }

    fn take_leaving(&mut self, rest: Output<T>) -> Option<Result<T, JoinError>> {
        match &self.output {
            Output::Empty | Output::Detached => return None,
            Output::Value(_) | Output::Cancelled | Output::Panicked(_) => {}
        }
        match std::mem::replace(&mut self.output, rest) {
            Output::Value(v) => Some(Ok(v)),
            Output::Cancelled => Some(Err(JoinError::Cancelled)),
            Output::Panicked(p) => Some(Err(JoinError::Panic(*p))),
            Output::Empty | Output::Detached => None,
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
        if let Some(out) = st.take() {
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
        let out = self.task.join_state().detach();
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
