//! Termination signals for servers that drain before they exit, over
//! [`zerorx::signal`]: listen first (before the server says it is ready), then act on
//! the first delivery from a task on the worker that awaits it.

use std::io;
use zerorx::signal::{signal, Signal, SignalKind};

/// Starts listening for `kinds`; deliveries from now on are kept until [`on_first`]
/// takes them. Once listened for, these signals no longer terminate the process by
/// themselves.
pub fn listen(kinds: &[SignalKind]) -> io::Result<Vec<Signal>> {
    kinds.iter().map(|&k| signal(k)).collect()
}

/// Runs `then` once, with the kind of the first of `signals` delivered, from tasks on
/// the current worker (call it inside `Runtime::block_on` or a task).
pub fn on_first(signals: Vec<Signal>, then: impl FnOnce(SignalKind) + 'static) {
    let then = std::rc::Rc::new(std::cell::Cell::new(Some(then)));
    for mut s in signals {
        let then = then.clone();
        zerorx::spawn(async move {
            if s.recv().await.is_ok() {
                if let Some(f) = then.take() {
                    f(s.kind());
                }
            }
        });
    }
}
