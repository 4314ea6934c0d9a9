//! The state dump: a stalled connection is named with the op it waits on (opcode, fd,
//! addresses, age, task), timers and channels are told apart, a busy or shut-down
//! worker is reported as such (`zerorx serve`'s SIGUSR2 dump is tested in the
//! zerorx-cli crate).

use std::net::SocketAddr;
use std::time::Duration;
use zerorx::net::TcpListener;
use zerorx::runtime::{RuntimeDump, WorkerDump};
use zerorx::Runtime;

/// Two workers; on worker 1 a connection task waiting in `recv` for a client that
/// sends nothing, a task asleep for a minute and a task waiting on a channel nobody
/// sends on. Returns the dump taken from a thread outside the runtime, the client's
/// address and the server-side socket's fd.
fn stalled_connection_dump() -> (RuntimeDump, SocketAddr, i32) {
    let rt = Runtime::builder()
        .threads(2)
        .receive_mode(zerorx::ReceiveMode::Copy)
        .build()
        .expect("runtime");
    let handle = rt.handle().clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let _server = handle.spawn_on_with(1, move || async move {
        let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).expect("bind");
        tx.send(listener.local_addr().expect("addr"))
            .expect("send addr");
        let (conn, _) = listener.accept().await.expect("accept");
        let _nap = zerorx::spawn(zerorx::time::sleep(Duration::from_secs(60)));
        let _chan = zerorx::spawn(std::future::pending::<()>());
        use std::os::fd::AsRawFd;
        let fd = conn.socket().as_raw_fd();
        let _ = FD.set(fd);
        let _ = conn.recv().await;
    });
    let addr = rx.recv_timeout(Duration::from_secs(5)).expect("listening");
    let client = std::net::TcpStream::connect(addr).expect("connect");
    let client_addr = client.local_addr().expect("client addr");
    let dump = rt.block_on(async {
        // Let the receive age a little, then dump from a plain thread while worker 0
        // keeps turning here.
        zerorx::sleep(Duration::from_millis(300)).await;
        let h = zerorx::Handle::try_current().expect("worker");
        let taker = std::thread::spawn(move || h.dump());
        while !taker.is_finished() {
            zerorx::sleep(Duration::from_millis(5)).await;
        }
        taker.join().expect("dump thread")
    });
    let fd = *FD.get().expect("the connection task ran");
    drop(client);
    rt.shutdown(Duration::from_secs(2)).expect("shutdown");
    (dump, client_addr, fd)
}

static FD: std::sync::OnceLock<i32> = std::sync::OnceLock::new();

fn worker(dump: &RuntimeDump, i: usize) -> &WorkerDump {
    &dump.workers[i]
}

#[test]
fn a_stalled_connection_is_named_with_the_op_it_waits_on() {
    let (dump, client, fd) = stalled_connection_dump();
    assert_eq!(dump.workers.len(), 2);
    for w in &dump.workers {
        assert_eq!(w.missing, None, "worker {} answered: {dump}", w.index);
    }
    let w1 = worker(&dump, 1);
    let (i, recv) = w1
        .ops
        .iter()
        .enumerate()
        .find(|(_, o)| o.fd == Some(fd))
        .unwrap_or_else(|| panic!("an op on fd {fd}: {dump}"));
    assert_eq!(recv.opcode, "RECV", "{dump}");
    assert!(recv.multishot, "{dump}");
    assert_eq!(recv.state, "streaming", "{dump}");
    let socket = recv.socket.as_deref().expect("socket addresses");
    assert!(socket.ends_with(&format!("-> {client}")), "{socket}");
    assert!(recv.age_ms >= 200, "submitted ≥ 300 ms ago: {dump}");
    let task = recv.task.as_deref().expect("a task waits on it");
    assert!(task.starts_with("w1#"), "{task}");
    let waiting = w1
        .waiting
        .iter()
        .find(|t| t.name == task)
        .unwrap_or_else(|| panic!("{task} among the waiting tasks: {dump}"));
    assert_eq!(waiting.ops, vec![i]);
    assert!(waiting.timers_ms.is_empty());

    // The sleeper waits on a timer due in about a minute, the channel task on nothing
    // the worker knows of.
    let sleeper = w1
        .waiting
        .iter()
        .find(|t| !t.timers_ms.is_empty())
        .unwrap_or_else(|| panic!("a sleeping task: {dump}"));
    assert!(sleeper.ops.is_empty());
    assert!(
        (50_000..=60_000).contains(&sleeper.timers_ms[0]),
        "{sleeper:?}"
    );
    assert!(
        w1.waiting
            .iter()
            .any(|t| t.ops.is_empty() && t.timers_ms.is_empty()),
        "{dump}"
    );
    assert!(w1.timers.pending >= 1);
    assert!(w1.timers.next_ms.is_some_and(|ms| ms <= 60_000));
    assert!(
        w1.tasks >= 3,
        "the connection's, the sleeper, the channel's: {dump}"
    );

    // The rings, the user side's view and the kernel's.
    for w in &dump.workers {
        let ring = w.ring.as_ref().expect("ring");
        assert!(
            ring.sq_entries > 0 && ring.cq_entries >= ring.sq_entries,
            "{ring:?}"
        );
        assert!(ring.loop_turns > 0);
        assert!(
            ring.kernel.iter().any(|(k, _)| k == "CqTail"),
            "fdinfo read: {ring:?}"
        );
        assert!(!w.pools.is_empty(), "the copy pool: {w:?}");
        let p = &w.pools[0];
        assert_eq!(p.kind, "copy");
        assert_eq!(p.kernel + p.user + p.returns_pending, p.chunks, "{p:?}");
    }
    assert!(dump.process.sockets >= 2, "{:?}", dump.process);
    assert_eq!(dump.nic_queues, Vec::new());
    assert_eq!(
        dump.nic_note.as_deref(),
        Some("no ZCRX queue bound (copy mode)")
    );

    // Text and JSON carry the same facts.
    let text = dump.to_string();
    assert!(text.contains(socket), "{text}");
    assert!(
        text.contains("NIC queues: no ZCRX queue bound (copy mode)"),
        "{text}"
    );
    assert!(text.contains(&format!("task {task} waits on it")), "{text}");
    let json = serde_json::to_string(&dump).expect("json");
    let back: RuntimeDump = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, dump);
}

#[test]
fn a_worker_that_does_not_yield_and_a_shut_down_runtime_are_reported() {
    let rt = Runtime::builder().threads(2).build().expect("runtime");
    let handle = rt.handle().clone();
    let (started_tx, started) = std::sync::mpsc::channel();
    // Worker 1 is stuck in a task that blocks its thread.
    let stuck = handle.spawn_on(1, async move {
        started_tx.send(()).expect("started");
        std::thread::sleep(Duration::from_millis(1500));
    });
    started
        .recv_timeout(Duration::from_secs(5))
        .expect("stuck task ran");
    let h = handle.clone();
    let dump = rt.block_on(async move {
        let taker = std::thread::spawn(move || h.dump_within(Duration::from_millis(300)));
        while !taker.is_finished() {
            zerorx::sleep(Duration::from_millis(5)).await;
        }
        taker.join().expect("dump thread")
    });
    assert_eq!(dump.workers[0].missing, None, "{dump}");
    let why = dump.workers[1]
        .missing
        .as_deref()
        .expect("worker 1 is missing");
    assert!(why.contains("no answer within 0.3 s"), "{why}");
    assert!(dump.workers[1].ring.is_none());
    rt.block_on(stuck).expect("stuck task ends");
    // Once worker 1 is free again, it answers.
    let h = handle.clone();
    let again = rt.block_on(async move {
        let taker = std::thread::spawn(move || h.dump());
        while !taker.is_finished() {
            zerorx::sleep(Duration::from_millis(5)).await;
        }
        taker.join().expect("dump thread")
    });
    assert_eq!(again.workers[1].missing, None, "{again}");

    rt.shutdown(Duration::from_secs(2)).expect("shutdown");
    let after = handle.dump_within(Duration::from_millis(100));
    for w in &after.workers {
        assert_eq!(
            w.missing.as_deref(),
            Some("the worker has shut down"),
            "{after}"
        );
    }
}
