//! `zerorx::signal`: deliveries reach every listener on the worker that awaits them,
//! coalesce while nobody looks, listening works from any worker, and a signal no
//! handler may take is refused with its number.

use std::time::Duration;
use zerorx::signal::{signal, SignalKind};
use zerorx::{timeout, Runtime};

fn raise(kind: SignalKind) {
    // SAFETY: raising a signal this process handles.
    assert_eq!(unsafe { libc::raise(kind.as_raw()) }, 0);
}

#[test]
fn every_listener_gets_each_delivery_and_bursts_coalesce() {
    let rt = Runtime::builder().threads(2).build().expect("runtime");
    let h = rt.handle().clone();
    rt.block_on(async move {
        let kind = SignalKind::user_defined1();
        let mut here = signal(kind).expect("listen");
        // A listener on the other worker, awaiting on that worker's ring.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let other = h.spawn_on_with(1, move || async move {
            let mut s = signal(kind).expect("listen");
            ready_tx.send(()).expect("ready");
            timeout(Duration::from_secs(10), s.recv()).await.is_ok()
        });
        ready_rx.recv().expect("the other listener is ready");
        for _ in 0..3 {
            raise(kind);
        }
        timeout(Duration::from_secs(10), here.recv())
            .await
            .expect("delivered")
            .expect("recv");
        assert!(
            other.await.expect("task"),
            "the other worker's listener woke"
        );
        // The burst of three was one wake-up: nothing more is pending.
        assert!(
            timeout(Duration::from_millis(50), here.recv())
                .await
                .is_err(),
            "coalesced"
        );
        raise(kind);
        timeout(Duration::from_secs(10), here.recv())
            .await
            .expect("the next delivery")
            .expect("recv");
    });
}

#[test]
fn a_dropped_listener_stops_listening_and_the_others_go_on() {
    let rt = Runtime::builder().threads(1).build().expect("runtime");
    rt.block_on(async {
        let kind = SignalKind::user_defined2();
        let gone = signal(kind).expect("listen");
        let mut stays = signal(kind).expect("listen");
        drop(gone);
        raise(kind);
        timeout(Duration::from_secs(10), stays.recv())
            .await
            .expect("delivered")
            .expect("recv");
    });
}

#[test]
fn ctrl_c_listens_from_the_call() {
    let rt = Runtime::builder().threads(1).build().expect("runtime");
    rt.block_on(async {
        let interrupted = zerorx::signal::ctrl_c();
        raise(SignalKind::interrupt());
        timeout(Duration::from_secs(10), interrupted)
            .await
            .expect("seen, though raised before the first poll")
            .expect("recv");
    });
}

#[test]
fn signals_no_handler_may_take_are_refused() {
    for forbidden in [libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV] {
        let err = signal(SignalKind::from_raw(forbidden)).expect_err("forbidden");
        assert!(err.to_string().contains(&forbidden.to_string()), "{err}");
    }
}

#[test]
fn a_handler_a_shared_library_installed_does_not_run_after_a_listener() {
    // What libpsm_infinipath (loaded with libfabric) does at load time: a handler in
    // another object that ends the process. Here it is libc's `_exit`, which the
    // kernel calls with the signal's number: had it stayed chained after the
    // listener's, this test binary would exit with status 1 at the delivery.
    // SAFETY: `sigaction` is plain data; zeroed is a valid starting value.
    let mut foreign: libc::sigaction = unsafe { std::mem::zeroed() };
    foreign.sa_sigaction = libc::_exit as *const () as libc::sighandler_t;
    // SAFETY: installs a valid function address as SIGHUP's handler; nothing raises
    // SIGHUP before the listener below replaces it.
    let rc = unsafe { libc::sigaction(libc::SIGHUP, &foreign, std::ptr::null_mut()) };
    assert_eq!(rc, 0);
    let rt = Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut s = signal(SignalKind::hangup()).expect("listen");
        raise(SignalKind::hangup());
        timeout(Duration::from_secs(10), s.recv())
            .await
            .expect("delivered")
            .expect("recv");
    });
}
