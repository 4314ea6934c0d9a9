//! Helpers shared by the RPC tests: the `thrift` crate (Apache Thrift's Rust library)
//! as the reference reader and writer of dynamic values.
#![allow(dead_code)]

use bytes::Bytes;
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol,
    TFieldIdentifier, TInputProtocol, TListIdentifier, TMapIdentifier, TMessageIdentifier,
    TMessageType, TOutputProtocol, TSetIdentifier, TStructIdentifier, TType as RefType,
};
use zerorx_thrift::{MessageType, Protocol, TType, Value};

pub fn to_ref(t: TType) -> RefType {
    match t {
        TType::Bool => RefType::Bool,
        TType::I8 => RefType::I08,
        TType::Double => RefType::Double,
        TType::I16 => RefType::I16,
        TType::I32 => RefType::I32,
        TType::I64 => RefType::I64,
        TType::Binary => RefType::String,
        TType::Struct => RefType::Struct,
        TType::Map => RefType::Map,
        TType::Set => RefType::Set,
        TType::List => RefType::List,
        TType::Uuid => panic!("the thrift crate 0.17 has no uuid type"),
    }
}

pub fn from_ref(t: RefType) -> TType {
    match t {
        RefType::Bool => TType::Bool,
        RefType::I08 => TType::I8,
        RefType::Double => TType::Double,
        RefType::I16 => TType::I16,
        RefType::I32 => TType::I32,
        RefType::I64 => TType::I64,
        RefType::String => TType::Binary,
        RefType::Struct => TType::Struct,
        RefType::Map => TType::Map,
        RefType::Set => TType::Set,
        RefType::List => TType::List,
        other => panic!("unexpected reference type {other:?}"),
    }
}

pub fn to_ref_kind(k: MessageType) -> TMessageType {
    match k {
        MessageType::Call => TMessageType::Call,
        MessageType::Reply => TMessageType::Reply,
        MessageType::Exception => TMessageType::Exception,
        MessageType::Oneway => TMessageType::OneWay,
    }
}

/// Reads one value of type `t` with the reference implementation.
pub fn ref_read(p: &mut dyn TInputProtocol, t: TType) -> thrift::Result<Value> {
    Ok(match t {
        TType::Bool => Value::Bool(p.read_bool()?),
        TType::I8 => Value::I8(p.read_i8()?),
        TType::I16 => Value::I16(p.read_i16()?),
        TType::I32 => Value::I32(p.read_i32()?),
        TType::I64 => Value::I64(p.read_i64()?),
        TType::Double => Value::Double(p.read_double()?),
        TType::Binary => Value::Binary(Bytes::from(p.read_bytes()?)),
        TType::Uuid => panic!("no uuid in the reference"),
        TType::Struct => {
            p.read_struct_begin()?;
            let mut fields = Vec::new();
            loop {
                let f = p.read_field_begin()?;
                if f.field_type == RefType::Stop {
                    break;
                }
                let id = f.id.expect("field id");
                fields.push((id, ref_read(p, from_ref(f.field_type))?));
                p.read_field_end()?;
            }
            p.read_struct_end()?;
            Value::Struct(fields)
        }
        TType::List => {
            let h = p.read_list_begin()?;
            let elem = from_ref(h.element_type);
            let items = (0..h.size)
                .map(|_| ref_read(p, elem))
                .collect::<thrift::Result<Vec<_>>>()?;
            p.read_list_end()?;
            Value::List { elem, items }
        }
        TType::Set => {
            let h = p.read_set_begin()?;
            let elem = from_ref(h.element_type);
            let items = (0..h.size)
                .map(|_| ref_read(p, elem))
                .collect::<thrift::Result<Vec<_>>>()?;
            p.read_set_end()?;
            Value::Set { elem, items }
        }
        TType::Map => {
            let h = p.read_map_begin()?;
            let types = match (h.key_type, h.value_type) {
                (Some(k), Some(v)) => Some((from_ref(k), from_ref(v))),
                _ => None,
            };
            let mut entries = Vec::new();
            if let Some((k, v)) = types {
                for _ in 0..h.size {
                    let key = ref_read(p, k)?;
                    entries.push((key, ref_read(p, v)?));
                }
            }
            p.read_map_end()?;
            Value::Map { types, entries }
        }
    })
}

/// Writes `v` with the reference implementation.
pub fn ref_write(p: &mut dyn TOutputProtocol, v: &Value) -> thrift::Result<()> {
    match v {
        Value::Bool(b) => p.write_bool(*b),
        Value::I8(n) => p.write_i8(*n),
        Value::I16(n) => p.write_i16(*n),
        Value::I32(n) => p.write_i32(*n),
        Value::I64(n) => p.write_i64(*n),
        Value::Double(d) => p.write_double(*d),
        Value::Binary(b) => p.write_bytes(b),
        Value::Uuid(_) => panic!("no uuid in the reference"),
        Value::Struct(fields) => {
            p.write_struct_begin(&TStructIdentifier::new("S"))?;
            for (id, f) in fields {
                p.write_field_begin(&TFieldIdentifier::new("f", to_ref(f.ttype()), *id))?;
                ref_write(p, f)?;
                p.write_field_end()?;
            }
            p.write_field_stop()?;
            p.write_struct_end()
        }
        Value::List { elem, items } => {
            p.write_list_begin(&TListIdentifier::new(to_ref(*elem), items.len() as i32))?;
            for i in items {
                ref_write(p, i)?;
            }
            p.write_list_end()
        }
        Value::Set { elem, items } => {
            p.write_set_begin(&TSetIdentifier::new(to_ref(*elem), items.len() as i32))?;
            for i in items {
                ref_write(p, i)?;
            }
            p.write_set_end()
        }
        Value::Map { types, entries } => {
            let (k, v) = types.unwrap_or((TType::Binary, TType::Binary));
            p.write_map_begin(&TMapIdentifier::new(
                Some(to_ref(k)),
                Some(to_ref(v)),
                entries.len() as i32,
            ))?;
            for (key, value) in entries {
                ref_write(p, key)?;
                ref_write(p, value)?;
            }
            p.write_map_end()
        }
    }
}

/// Decodes `bytes` (header + struct body) with the reference implementation.
pub fn ref_decode_message(
    protocol: Protocol,
    bytes: &[u8],
) -> thrift::Result<(TMessageIdentifier, Value)> {
    let mut input = bytes;
    let mut p: Box<dyn TInputProtocol + '_> = match protocol {
        Protocol::Binary => Box::new(TBinaryInputProtocol::new(&mut input, true)),
        Protocol::BinaryNonStrict => Box::new(TBinaryInputProtocol::new(&mut input, false)),
        Protocol::Compact => Box::new(TCompactInputProtocol::new(&mut input)),
    };
    let id = p.read_message_begin()?;
    let v = ref_read(&mut *p, TType::Struct)?;
    p.read_message_end()?;
    Ok((id, v))
}

/// Encodes a message with the reference implementation.
pub fn ref_encode_message(
    protocol: Protocol,
    name: &str,
    kind: MessageType,
    seqid: i32,
    body: &Value,
) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut p: Box<dyn TOutputProtocol + '_> = match protocol {
            Protocol::Binary => Box::new(TBinaryOutputProtocol::new(&mut out, true)),
            Protocol::BinaryNonStrict => Box::new(TBinaryOutputProtocol::new(&mut out, false)),
            Protocol::Compact => Box::new(TCompactOutputProtocol::new(&mut out)),
        };
        p.write_message_begin(&TMessageIdentifier::new(name, to_ref_kind(kind), seqid))
            .expect("header");
        ref_write(&mut *p, body).expect("body");
        p.write_message_end().expect("end");
        p.flush().expect("flush");
    }
    out
}

/// Value equality that compares doubles by bit pattern (NaN equals itself) and
/// ignores the key/value types of empty maps (the compact protocol drops them).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((i, v), (j, w))| i == j && same(v, w))
        }
        (Value::List { elem: e, items: x }, Value::List { elem: f, items: y })
        | (Value::Set { elem: e, items: x }, Value::Set { elem: f, items: y }) => {
            e == f && x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (
            Value::Map {
                types: t,
                entries: x,
            },
            Value::Map {
                types: u,
                entries: y,
            },
        ) => {
            (x.is_empty() || t == u)
                && x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, v), (l, w))| same(k, l) && same(v, w))
        }
        _ => a == b,
    }
}

/// A server on its own runtime and thread, so the test thread is free to block (std
/// sockets, the `thrift` crate's blocking client, subprocesses).
pub struct Harness {
    pub addr: std::net::SocketAddr,
    /// Where a server on a Unix socket listens.
    pub unix: Option<std::os::unix::net::SocketAddr>,
    pub shutdown: zerorx_thrift::server::ShutdownHandle,
    pub stats: zerorx_thrift::server::StatsHandle,
    pub state: std::sync::Arc<zerorx_cli::bench::BenchState>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Harness {
    /// The Bench service on `threads` workers, with `configure` applied to the builder.
    pub fn start(
        threads: usize,
        configure: impl FnOnce(zerorx_thrift::ServerBuilder) -> zerorx_thrift::ServerBuilder
            + Send
            + 'static,
    ) -> Harness {
        use zerorx_cli::bench::{register, BenchState};
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = zerorx::Runtime::builder()
                .threads(threads)
                .shutdown_timeout(std::time::Duration::from_secs(5))
                .build()?;
            let state = std::sync::Arc::new(BenchState::default());
            let builder = register(zerorx_thrift::Server::builder(), state.clone());
            let server = configure(builder).start(rt.handle())?;
            let _ = tx.send((
                server.local_addr(),
                server.local_unix_addr().cloned(),
                server.shutdown_handle(),
                server.stats_handle(),
                state,
            ));
            rt.block_on(server.stopped())
        });
        let (addr, unix, shutdown, stats, state) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("server started");
        Harness {
            addr,
            unix,
            shutdown,
            stats,
            state,
            thread: Some(thread),
        }
    }

    /// Drains with `grace` and waits for the server thread.
    pub fn stop(mut self, grace: std::time::Duration) -> std::io::Result<()> {
        self.shutdown.shutdown(grace);
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("server thread panicked")
    }

    pub fn stats(&self) -> zerorx_thrift::ServerStats {
        self.stats.snapshot()
    }

    /// Waits (bounded) until `pred` holds for the server's counters.
    pub fn wait_stats(&self, what: &str, pred: impl Fn(&zerorx_thrift::ServerStats) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let s = self.stats();
            if pred(&s) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}: {s:#?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.shutdown.shutdown(std::time::Duration::ZERO);
            let _ = t.join();
        }
    }
}

/// A one-worker runtime for clients.
pub fn client_rt() -> zerorx::Runtime {
    zerorx::Runtime::builder()
        .threads(1)
        .shutdown_timeout(std::time::Duration::from_secs(5))
        .build()
        .expect("client runtime")
}

/// Client settings for tests: bounded calls.
pub fn client_config(
    protocol: Protocol,
    transport: zerorx_thrift::transport::Transport,
) -> zerorx_thrift::ClientConfig {
    zerorx_thrift::ClientConfig {
        protocol,
        transport,
        call_timeout: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    }
}
