//! [`JoinHandle`]: awaiting, aborting and inspecting a spawned task.

use super::task::TaskRef;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

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

/// An owned permission to await a task's result.
///
/// Awaiting it yields `Ok(value)`, or a [`JoinError`] if the task panicked or was
/// cancelled. Dropping it detaches the task (it keeps running). A handle of a task
/// spawned with [`Handle::spawn_on`](crate::Handle::spawn_on) is `Send` and can be
/// awaited on any thread, inside or outside the runtime.
pub struct JoinHandle<T> {
    /// The task, whose future's output is `T`.
    task: TaskRef,
    /// `Send`/`Sync` only when the output is: a `!Send` output must be taken (or
    /// dropped) on the thread that produced it.
    _output: PhantomData<T>,
}

impl<T> JoinHandle<T> {
    /// The handle of `task`, whose future's output is `T` (the handle's own
    /// reference, made with the task).
    pub(crate) fn new(task: TaskRef) -> Self {
        JoinHandle {
            task,
            _output: PhantomData,
        }
    }

    /// Requests cancellation: the task's future is dropped on its worker at the next
    /// scheduling point, and the handle then yields [`JoinError::Cancelled`]. No effect
    /// on a task that already finished.
    pub fn abort(&self) {
        self.task.abort();
    }

    /// Whether the task has finished (value, panic or cancellation).
    pub fn is_finished(&self) -> bool {
        self.task.is_complete()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: this is the task's handle, and `new`'s caller vouched for `T`.
        unsafe { self.task.poll_join(cx) }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: this is the task's handle, going away.
        unsafe { self.task.drop_handle() }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
