//! The state dump: a stalled connection is named with the op it waits on (opcode, fd,
//! addresses, age, task), timers and channels are told apart, a busy or shut-down
//! worker is reported as such (`zerorx serve`'s SIGUSR2 dump is tested in the
//! zerorx-cli crate).

use std::net::SocketAddr;
use std::time::Duration;
use zerorx::net::TcpListener;
use zerorx::runtime::{
    DumpStatus, FdinfoValue, IoUringOp, NicNote, OpState, PoolKind, RuntimeDump, WorkerDump,
};
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
    // The connection's fd comes back by channel: a static would be shared by the tests
    // of this binary that run at once, each reading the other's fd.
    let (fd_tx, fd_rx) = std::sync::mpsc::channel();
    let _server = handle.spawn_on_with(1, move || async move {
        let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).expect("bind");
        tx.send(listener.local_addr().expect("addr"))
            .expect("send addr");
        let (conn, _) = listener.accept().await.expect("accept");
        let _nap = zerorx::spawn(zerorx::time::sleep(Duration::from_secs(60)));
        let _chan = zerorx::spawn(std::future::pending::<()>());
        use std::os::fd::AsRawFd;
        let _ = fd_tx.send(conn.socket().as_raw_fd());
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
    let fd = fd_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the connection task ran");
    drop(client);
    rt.shutdown(Duration::from_secs(2)).expect("shutdown");
    (dump, client_addr, fd)
}

fn worker(dump: &RuntimeDump, i: usize) -> &WorkerDump {
    &dump.workers[i]
}

#[test]
fn a_stalled_connection_is_named_with_the_op_it_waits_on() {
    let (dump, client, fd) = stalled_connection_dump();
    assert_eq!(dump.workers.len(), 2);
    for w in &dump.workers {
        assert_eq!(
            w.status,
            DumpStatus::Answered,
            "worker {} answered: {dump}",
            w.index
        );
    }
    let w1 = worker(&dump, 1);
    let (i, recv) = w1
        .ops
        .iter()
        .enumerate()
        .find(|(_, o)| o.fd == Some(fd))
        .unwrap_or_else(|| panic!("an op on fd {fd}: {dump}"));
    assert_eq!(recv.opcode, IoUringOp::Recv, "{dump}");
    assert!(recv.multishot, "{dump}");
    assert_eq!(recv.state, OpState::Streaming, "{dump}");
    let socket = recv.socket.expect("socket addresses");
    assert_eq!(socket.peer, Some(client), "{socket}");
    assert!(recv.age_ms >= 200, "submitted ≥ 300 ms ago: {dump}");
    let task = recv.task.expect("a task waits on it");
    assert_eq!(task.worker, 1, "{task}");
    let waiting = w1
        .waiting
        .iter()
        .find(|t| t.id == task)
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
            ring.kernel
                .iter()
                .any(|f| f.key == "CqTail" && matches!(f.value, FdinfoValue::Number(_))),
            "fdinfo read: {ring:?}"
        );
        assert!(!w.pools.is_empty(), "the copy pool: {w:?}");
        let p = &w.pools[0];
        assert_eq!(p.kind, PoolKind::Copy);
        assert_eq!(p.kernel + p.user + p.returns_pending, p.chunks, "{p:?}");
    }
    assert!(dump.process.sockets >= 2, "{:?}", dump.process);
    assert_eq!(dump.nic_queues, Vec::new());
    assert_eq!(dump.nic_note, Some(NicNote::CopyMode));

    // Text and JSON carry the same facts.
    let text = dump.to_string();
    assert!(
        text.contains(&format!("{} -> {client}", socket.local)),
        "{text}"
    );
    assert!(
        text.contains("NIC queues: no ZCRX queue bound (copy mode)"),
        "{text}"
    );
    assert!(text.contains(&format!("task {task} waits on it")), "{text}");
    let json = serde_json::to_string(&dump).expect("json");
    let back: RuntimeDump = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, dump);
}

/// What a tool reading the JSON finds: values it can match on, not words it has to
/// parse (an op's code and state, its socket's addresses, the task by worker and key,
/// the pool's kind, the kernel's counts as numbers, each worker's status).
#[test]
fn the_json_dump_has_typed_fields() {
    let (dump, client, fd) = stalled_connection_dump();
    let json = serde_json::to_value(&dump).expect("json");
    let w1 = &json["workers"][1];
    assert_eq!(w1["status"]["kind"], "answered", "{w1}");
    let op = w1["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .find(|o| o["fd"] == fd)
        .unwrap_or_else(|| panic!("an op on fd {fd}: {w1}"));
    assert_eq!(op["opcode"], "RECV", "{op}");
    assert_eq!(op["state"], "streaming", "{op}");
    assert_eq!(op["socket"]["peer"], client.to_string(), "{op}");
    assert_eq!(op["task"]["worker"], 1, "{op}");
    assert!(op["task"]["key"].is_u64(), "{op}");
    let waiting = w1["waiting"].as_array().expect("waiting");
    assert!(waiting.iter().any(|t| t["id"] == op["task"]), "{w1}");
    assert_eq!(w1["pools"][0]["kind"], "copy", "{w1}");
    let kernel = w1["ring"]["kernel"].as_array().expect("fdinfo");
    let field = |key: &str| kernel.iter().find(|f| f["key"] == key);
    assert!(
        field("CqTail").is_some_and(|f| f["value"]["number"].is_i64()),
        "{kernel:?}"
    );
    assert!(
        field("PollList").is_some_and(|f| f["value"]["entries"].is_u64()),
        "{kernel:?}"
    );
    assert!(
        w1["ring"]["flags"]
            .as_array()
            .expect("flags")
            .iter()
            .all(|f| f.is_string()),
        "{w1}"
    );
    assert_eq!(json["nic_note"]["kind"], "copy_mode", "{json}");
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
    assert_eq!(dump.workers[0].status, DumpStatus::Answered, "{dump}");
    assert_eq!(
        dump.workers[1].status,
        DumpStatus::NoAnswer { waited_ms: 300 },
        "{dump}"
    );
    assert!(
        dump.to_string().contains("no answer within 0.3 s"),
        "{dump}"
    );
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
    assert_eq!(again.workers[1].status, DumpStatus::Answered, "{again}");

    rt.shutdown(Duration::from_secs(2)).expect("shutdown");
    let after = handle.dump_within(Duration::from_millis(100));
    for w in &after.workers {
        assert_eq!(w.status, DumpStatus::ShutDown, "{after}");
    }
}
