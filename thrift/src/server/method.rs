//! Handlers behind one object-safe face: a method decodes its arguments with the
//! connection's protocol and returns a future that encodes its own reply.

use super::future_slot::FutureSlot;
use crate::exception::ApplicationException;
use crate::message::{encode_framed, MessageReader};
use crate::out::{Framing, Segments};
use crate::protocol::{MessageType, Protocol};
use crate::{DecodeError, EncodeError, ThriftDecode, ThriftEncode};
use bytes::Bytes;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Where and how a reply goes.
#[derive(Clone)]
pub(crate) struct ReplyTo {
    pub(crate) protocol: Protocol,
    pub(crate) framing: Framing,
    pub(crate) max_frame: usize,
    pub(crate) name: Bytes,
    pub(crate) seqid: i32,
}

impl ReplyTo {
    pub(crate) fn encode<T: ThriftEncode>(
        &self,
        kind: MessageType,
        body: &T,
    ) -> Result<Segments, EncodeError> {
        encode_framed(
            self.framing,
            self.protocol,
            self.max_frame,
            &self.name,
            kind,
            self.seqid,
            body,
        )
    }
}

/// What a handler's future ends with.
pub(crate) enum Outcome {
    /// The encoded reply.
    Reply(Segments),
    /// A oneway handler finished.
    Done,
    /// The handler failed; answer with this exception.
    Failed(ApplicationException),
    /// The result could not be encoded (too large for the frame limit).
    Unencodable(EncodeError),
}

pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Outcome>>>;

/// A registered method.
pub(crate) trait Method: Send + Sync {
    /// Oneway methods never reply.
    fn is_oneway(&self) -> bool;
    /// Decodes the arguments and starts the handler. A panic while the handler makes
    /// its future is re-raised when the future is first polled, so it is caught with
    /// the future's. Takes `&self`: no reference count shared by every worker is
    /// touched per call.
    fn start(
        &self,
        r: &mut MessageReader,
        to: ReplyTo,
        slot: &FutureSlot,
    ) -> Result<HandlerFuture, DecodeError>;
}

pub(crate) struct TwoWay<A, F> {
    pub(crate) f: F,
    pub(crate) _args: PhantomData<fn(A)>,
}

impl<A, R, F, Fut> Method for TwoWay<A, F>
where
    A: ThriftDecode + 'static,
    R: ThriftEncode + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ApplicationException>> + 'static,
{
    fn is_oneway(&self) -> bool {
        false
    }

    fn start(
        &self,
        r: &mut MessageReader,
        to: ReplyTo,
        slot: &FutureSlot,
    ) -> Result<HandlerFuture, DecodeError> {
        let args: A = r.decode()?;
        let call = match catch_unwind(AssertUnwindSafe(|| (self.f)(args))) {
            Ok(call) => call,
            Err(panic) => return Ok(Box::pin(async move { resume_unwind(panic) })),
        };
        Ok(slot.boxed(async move {
            match call.await {
                Ok(result) => match to.encode(MessageType::Reply, &result) {
                    Ok(segs) => Outcome::Reply(segs),
                    Err(e) => Outcome::Unencodable(e),
                },
                Err(e) => Outcome::Failed(e),
            }
        }))
    }
}

pub(crate) struct OneWay<A, F> {
    pub(crate) f: F,
    pub(crate) _args: PhantomData<fn(A)>,
}

impl<A, F, Fut> Method for OneWay<A, F>
where
    A: ThriftDecode + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    fn is_oneway(&self) -> bool {
        true
    }

    fn start(
        &self,
        r: &mut MessageReader,
        _to: ReplyTo,
        slot: &FutureSlot,
    ) -> Result<HandlerFuture, DecodeError> {
        let args: A = r.decode()?;
        let call = match catch_unwind(AssertUnwindSafe(|| (self.f)(args))) {
            Ok(call) => call,
            Err(panic) => return Ok(Box::pin(async move { resume_unwind(panic) })),
        };
        Ok(slot.boxed(async move {
            call.await;
            Outcome::Done
        }))
    }
}

/// Polls a handler future, turning a panic into `Err(message)`.
pub(crate) struct CatchUnwind(pub(crate) HandlerFuture);

impl Future for CatchUnwind {
    type Output = Result<Outcome, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(o)) => Poll::Ready(Ok(o)),
            Err(p) => Poll::Ready(Err(p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "handler panicked".to_owned()))),
        }
    }
}
