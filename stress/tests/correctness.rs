//! The correctness machinery end to end: a deliberately broken server (in this test,
//! plain std threads) flips a byte, repeats a reply, drops one and sends one to the
//! wrong connection; the harness must name each one by its request id and fail.

use bytes::Bytes;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zerorx_stress::framer::Framer;
use zerorx_stress::report::Report;

const BIN: &str = env!("CARGO_BIN_EXE_zerorx-stress");

/// What the broken server did, by request id.
#[derive(Default, Debug)]
struct Sabotage {
    flipped: Option<u64>,
    doubled: Option<u64>,
    dropped: Option<u64>,
    misrouted: Option<u64>,
}

struct Conn {
    writer: Mutex<TcpStream>,
}

fn broken_server(listener: TcpListener, log: Arc<Mutex<Sabotage>>) {
    let conns: Arc<Mutex<Vec<Arc<Conn>>>> = Arc::default();
    let frames = Arc::new(AtomicU64::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { return };
        let me = Arc::new(Conn {
            writer: Mutex::new(stream.try_clone().expect("clone")),
        });
        conns.lock().expect("conns").push(me.clone());
        let (conns, frames, log) = (conns.clone(), frames.clone(), log.clone());
        std::thread::spawn(move || serve(stream, &me, &conns, &frames, &log));
    }
}

fn serve(
    mut rd: TcpStream,
    me: &Arc<Conn>,
    conns: &Mutex<Vec<Arc<Conn>>>,
    frames: &AtomicU64,
    log: &Mutex<Sabotage>,
) {
    let mut framer = Framer::new(1 << 24);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match rd.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        framer.push(Bytes::copy_from_slice(&buf[..n]));
        while let Ok(Some(frame)) = framer.next_frame() {
            let k = frames.fetch_add(1, Ordering::SeqCst);
            let id = frame.header.id;
            let mut bytes = frame.bytes.to_vec();
            let mut target = me.clone();
            let mut copies = 1;
            let mut l = log.lock().expect("log");
            match k {
                10 => {
                    let last = bytes.len() - 1;
                    bytes[last] ^= 0x20;
                    l.flipped = Some(id);
                }
                20 => {
                    copies = 2;
                    l.doubled = Some(id);
                }
                30 => {
                    copies = 0;
                    l.dropped = Some(id);
                }
                40 => {
                    let all = conns.lock().expect("conns");
                    if let Some(other) = all.iter().find(|c| !Arc::ptr_eq(c, me)) {
                        target = other.clone();
                        l.misrouted = Some(id);
                    }
                }
                _ => {}
            }
            drop(l);
            for _ in 0..copies {
                let _ = target.writer.lock().expect("writer").write_all(&bytes);
            }
        }
    }
    let _ = me
        .writer
        .lock()
        .expect("writer")
        .shutdown(std::net::Shutdown::Write);
}

#[test]
fn each_broken_reply_is_named_by_its_id() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let log = Arc::new(Mutex::new(Sabotage::default()));
    let l2 = log.clone();
    std::thread::spawn(move || broken_server(listener, l2));

    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("broken.json");
    let t0 = Instant::now();
    let out = Command::new(BIN)
        .args([
            "-s",
            "stream",
            "--connect",
            &addr,
            "-n",
            "400",
            "-c",
            "2",
            "--client-threads",
            "1",
        ])
        .args([
            "--depth",
            "4",
            "--sizes",
            "100",
            "--timeout",
            "2s",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run harness");
    assert!(t0.elapsed() < Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let r: Report =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("report");
    let s = log.lock().expect("log");
    let named = |kind: &str, id: Option<u64>| {
        let id = id.unwrap_or_else(|| panic!("the server did not do {kind}: {s:?}"));
        assert!(
            r.error_samples
                .iter()
                .any(|e| e.kind.name() == kind && e.id == Some(id)),
            "{kind} of id {id:#x} not reported; samples: {:#?}",
            r.error_samples
        );
    };
    named("corrupted", s.flipped);
    named("duplicate", s.doubled);
    named("lost", s.dropped);
    named("misrouted", s.misrouted);
    // The misrouted request never came back on its own connection either.
    named("lost", s.misrouted);
    assert_eq!(r.errors.get("corrupted"), Some(&1), "{:?}", r.errors);
    assert_eq!(r.errors.get("duplicate"), Some(&1), "{:?}", r.errors);
    assert_eq!(r.errors.get("misrouted"), Some(&1), "{:?}", r.errors);
    assert!(!r.verdict.pass);
    assert!(stdout.contains("requests wrong or missing"), "{stdout}");
    assert!(
        stdout.contains(&format!("corrupted id {:#x}", s.flipped.unwrap_or(0))),
        "{stdout}"
    );
}
