//! `Runtime::turn`: a loop the program owns drives the runtime (tasks, timers, I/O,
//! wake-ups from other threads) without `block_on`.

mod common;

use bytes::Bytes;
use common::rt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::net::{TcpListener, TcpStream};

/// Turns `rt` without blocking until `done`, at most `limit` turns.
fn turn_until(rt: &zerorx::Runtime, limit: usize, done: impl Fn() -> bool) -> usize {
    for n in 0..limit {
        if done() {
            return n;
        }
        rt.turn(None).expect("turn");
    }
    panic!("not done after {limit} non-blocking turns");
}

#[test]
fn non_blocking_turns_run_spawned_tasks_and_an_echo_over_loopback() {
    let rt = rt(1, Default::default());
    let done = rt.handle().spawn_on_with(0, || async { 6 * 7 });
    turn_until(&rt, 4, || done.is_finished());

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let echoed = Arc::new(AtomicBool::new(false));
    let flag = echoed.clone();
    rt.handle().spawn_on_with(0, move || async move {
        let l = TcpListener::from_std(listener).expect("listener");
        let (s, _) = l.accept().await.expect("accept");
        let b = s.recv().await.expect("recv").expect("data");
        s.send(b.into_bytes()).await.expect("echo");
    });
    rt.handle().spawn_on_with(0, move || async move {
        let c = TcpStream::connect(addr).await.expect("connect");
        c.send(Bytes::from_static(b"turned")).await.expect("send");
        let b = c.recv().await.expect("recv").expect("echo");
        assert_eq!(&b[..], b"turned");
        flag.store(true, Ordering::SeqCst);
    });
    // Busy turns, as a program polling a completion queue makes: the kernel's work
    // reaches the tasks without any blocking wait.
    turn_until(&rt, 1_000_000, || echoed.load(Ordering::SeqCst));
}

#[test]
fn a_blocking_turn_ends_at_a_timer_at_its_bound_and_at_a_wake_from_another_thread() {
    let rt = rt(1, Default::default());
    let slept = rt.handle().spawn_on_with(0, || async {
        zerorx::time::sleep(Duration::from_millis(20)).await;
    });
    let start = Instant::now();
    while !slept.is_finished() {
        rt.turn(Some(Duration::from_secs(30))).expect("turn");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the timer did not end the wait"
        );
    }
    assert!(
        start.elapsed() >= Duration::from_millis(20),
        "woke before the timer was due"
    );

    // Nothing to do: the bound ends it.
    let start = Instant::now();
    rt.turn(Some(Duration::from_millis(30))).expect("turn");
    assert!(
        start.elapsed() >= Duration::from_millis(30),
        "returned before its bound"
    );

    // Another thread hands the worker a task: the wait ends and the task runs.
    let handle = rt.handle().clone();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        handle.spawn_on(0, async move { flag.store(true, Ordering::SeqCst) });
    });
    let start = Instant::now();
    while !ran.load(Ordering::SeqCst) {
        rt.turn(Some(Duration::from_secs(60))).expect("turn");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the remote spawn did not end the wait"
        );
    }
    other.join().unwrap();
}

#[test]
fn work_started_in_enter_runs_at_the_next_turn() {
    let rt = rt(1, Default::default());
    let ran = std::rc::Rc::new(std::cell::Cell::new(false));
    let flag = ran.clone();
    let task = rt
        .enter(|| zerorx::spawn(async move { flag.set(true) }))
        .expect("enter");
    assert!(!ran.get(), "spawned, not yet run");
    turn_until(&rt, 4, || task.is_finished());
    assert!(ran.get());
}

#[test]
fn a_turn_or_enter_inside_the_runtime_is_an_error_not_a_panic() {
    let rt = rt(1, Default::default());
    let err = rt
        .block_on(async { rt.turn(None) })
        .expect_err("nested turn");
    assert!(err.to_string().contains("inside a runtime worker"), "{err}");
    let err = rt
        .block_on(async { rt.enter(|| ()) })
        .expect_err("nested enter");
    assert!(err.to_string().contains("inside a runtime worker"), "{err}");
    rt.turn(None).expect("a turn outside it still works");
}

/// Whether `fd` turns readable within `ms`.
fn readable(fd: std::os::fd::RawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    unsafe { libc::poll(&mut p, 1, ms) == 1 }
}

/// Reads the eventfd's count; false when it was zero.
fn drain(fd: std::os::fd::RawFd) -> bool {
    let mut n = 0u64;
    // SAFETY: reads 8 bytes into a live local from an open non-blocking eventfd.
    unsafe { libc::read(fd, (&mut n as *mut u64).cast(), 8) == 8 }
}

#[test]
fn the_readiness_fd_wakes_a_sleeping_loop_when_data_arrives_for_a_receive() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let rt = rt(1, Default::default());
    let fd = rt.readiness_fd().expect("readiness fd").as_raw_fd();
    assert_eq!(
        rt.readiness_fd().unwrap().as_raw_fd(),
        fd,
        "one fd per runtime"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(AtomicBool::new(false));
    let flag = got.clone();
    rt.handle().spawn_on_with(0, move || async move {
        let l = TcpListener::from_std(listener).expect("listener");
        let (s, _) = l.accept().await.expect("accept");
        let b = s.recv().await.expect("recv").expect("data");
        assert_eq!(&b[..], b"wake");
        flag.store(true, Ordering::SeqCst);
    });
    let mut peer = std::net::TcpStream::connect(addr).unwrap();
    // Turn until the receive waits and nothing is left to signal the fd.
    let start = Instant::now();
    loop {
        let signalled = drain(fd);
        rt.turn(Some(Duration::from_millis(10))).expect("turn");
        if !signalled && !drain(fd) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never quiet");
    }
    assert!(!readable(fd, 50), "nothing arrived, nothing to do");
    peer.write_all(b"wake").unwrap();
    assert!(
        readable(fd, 10_000),
        "data for the waiting receive signals the fd"
    );
    turn_until(&rt, 1000, || got.load(Ordering::SeqCst));
}
