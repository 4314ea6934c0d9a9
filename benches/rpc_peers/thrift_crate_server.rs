//! The `thrift` crate peer: the Bench service on the crate's transports, protocols
//! and processor API, served the way its threaded `TServer` serves (one thread per
//! connection), framed binary protocol, with a hand-written processor (what its
//! generated code does).
//!
//! The accept loop is `TServer::listen`'s, re-created for one difference: accepted
//! sockets get `TCP_NODELAY`. `TServer` leaves Nagle on and its framed transport
//! writes the frame length and the body separately, so every small reply waits for
//! the client's delayed ACK (~40 ms: about 130 req/s over 4 connections): that
//! would measure Nagle, not the server.
//!
//! It serves `echo`, `add`, `sum`, `sleep_ms`, `fire`, `fired` and `fail`;
//! `roundtrip` (nested containers) is not written for this peer and is answered with
//! an unknown-method `TApplicationException`. The benchmark measures `echo`.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TFieldIdentifier, TInputProtocol,
    TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier, TType,
};
use thrift::server::TProcessor;
use thrift::transport::{TFramedReadTransport, TFramedWriteTransport, TIoChannel, TTcpChannel};
use thrift::{ApplicationError, ApplicationErrorKind, TransportErrorKind};

/// Serves until killed, a thread per connection.
pub fn serve(addr: SocketAddr) -> thrift::Result<()> {
    let listener = TcpListener::bind(addr)?;
    let processor = Arc::new(BenchProcessor::default());
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        stream.set_nodelay(true)?;
        let (r, w) = TTcpChannel::with_stream(stream).split()?;
        let mut i = TBinaryInputProtocol::new(TFramedReadTransport::new(r), true);
        let mut o = TBinaryOutputProtocol::new(TFramedWriteTransport::new(w), true);
        let processor = processor.clone();
        std::thread::spawn(move || loop {
            match processor.process(&mut i, &mut o) {
                Ok(()) => {}
                Err(thrift::Error::Transport(e)) if e.kind == TransportErrorKind::EndOfFile => {
                    break
                }
                Err(e) => {
                    eprintln!("thrift-crate server: connection ends: {e}");
                    break;
                }
            }
        });
    }
    Ok(())
}

#[derive(Default)]
struct BenchProcessor {
    fired: AtomicI64,
}

/// An argument's value as read off the wire.
enum Arg {
    Bytes(Vec<u8>),
    I32(i32),
    I64(i64),
    I64s(Vec<i64>),
}

/// Reads an argument struct, keeping the fields whose id and type `want` accepts.
fn read_args(i: &mut dyn TInputProtocol, want: &[(i16, TType)]) -> thrift::Result<Vec<(i16, Arg)>> {
    let mut out = Vec::new();
    i.read_struct_begin()?;
    loop {
        let f = i.read_field_begin()?;
        if f.field_type == TType::Stop {
            break;
        }
        let id = f.id.unwrap_or(0);
        if !want.contains(&(id, f.field_type)) {
            i.skip(f.field_type)?;
        } else {
            let v = match f.field_type {
                TType::String => Arg::Bytes(i.read_bytes()?),
                TType::I32 => Arg::I32(i.read_i32()?),
                TType::I64 => Arg::I64(i.read_i64()?),
                _ => {
                    let l = i.read_list_begin()?;
                    let mut v = Vec::with_capacity(l.size.clamp(0, 1024) as usize);
                    for _ in 0..l.size {
                        v.push(i.read_i64()?);
                    }
                    i.read_list_end()?;
                    Arg::I64s(v)
                }
            };
            out.push((id, v));
        }
        i.read_field_end()?;
    }
    i.read_struct_end()?;
    i.read_message_end()?;
    Ok(out)
}

fn missing(what: &str) -> thrift::Error {
    thrift::Error::Application(ApplicationError::new(
        ApplicationErrorKind::ProtocolError,
        format!("missing argument {what}"),
    ))
}

fn take_bytes(args: &mut Vec<(i16, Arg)>, id: i16) -> thrift::Result<Vec<u8>> {
    match args
        .iter()
        .position(|(i, a)| *i == id && matches!(a, Arg::Bytes(_)))
    {
        Some(p) => match args.swap_remove(p).1 {
            Arg::Bytes(b) => Ok(b),
            _ => Err(missing("binary")),
        },
        None => Err(missing("binary")),
    }
}

fn find_i64(args: &[(i16, Arg)], id: i16) -> thrift::Result<i64> {
    args.iter()
        .find_map(|(i, a)| match a {
            Arg::I64(v) if *i == id => Some(*v),
            _ => None,
        })
        .ok_or_else(|| missing("i64"))
}

/// Writes a reply whose result struct `fields` fills.
fn reply(
    o: &mut dyn TOutputProtocol,
    name: &str,
    seqid: i32,
    fields: impl FnOnce(&mut dyn TOutputProtocol) -> thrift::Result<()>,
) -> thrift::Result<()> {
    o.write_message_begin(&TMessageIdentifier::new(name, TMessageType::Reply, seqid))?;
    o.write_struct_begin(&TStructIdentifier::new(format!("{name}_result")))?;
    fields(o)?;
    o.write_field_stop()?;
    o.write_struct_end()?;
    o.write_message_end()?;
    o.flush()
}

fn field(o: &mut dyn TOutputProtocol, name: &str, ttype: TType, id: i16) -> thrift::Result<()> {
    o.write_field_begin(&TFieldIdentifier::new(name, ttype, id))
}

impl TProcessor for BenchProcessor {
    fn process(
        &self,
        i: &mut dyn TInputProtocol,
        o: &mut dyn TOutputProtocol,
    ) -> thrift::Result<()> {
        let m = i.read_message_begin()?;
        let (name, seqid) = (m.name.as_str(), m.sequence_number);
        let want: &[(i16, TType)] = match name {
            "echo" | "fire" | "fail" => &[(1, TType::String)],
            "add" => &[(1, TType::I64), (2, TType::I64)],
            "sum" => &[(1, TType::List)],
            "sleep_ms" => &[(1, TType::I32)],
            _ => &[],
        };
        let mut args = read_args(i, want)?;
        match name {
            "echo" => {
                let data = take_bytes(&mut args, 1)?;
                reply(o, name, seqid, |o| {
                    field(o, "success", TType::String, 0)?;
                    o.write_bytes(&data)?;
                    o.write_field_end()
                })
            }
            "add" => {
                let s = find_i64(&args, 1)?.wrapping_add(find_i64(&args, 2)?);
                reply(o, name, seqid, |o| {
                    field(o, "success", TType::I64, 0)?;
                    o.write_i64(s)?;
                    o.write_field_end()
                })
            }
            "sum" => {
                let s = args
                    .iter()
                    .filter_map(|(_, a)| match a {
                        Arg::I64s(v) => Some(v.iter().fold(0i64, |s, x| s.wrapping_add(*x))),
                        _ => None,
                    })
                    .next()
                    .ok_or_else(|| missing("values"))?;
                reply(o, name, seqid, |o| {
                    field(o, "success", TType::I64, 0)?;
                    o.write_i64(s)?;
                    o.write_field_end()
                })
            }
            "sleep_ms" => {
                let ms = args
                    .iter()
                    .find_map(|(_, a)| match a {
                        Arg::I32(v) => Some(*v),
                        _ => None,
                    })
                    .ok_or_else(|| missing("ms"))?;
                // A thread per connection: sleeping blocks only this connection.
                std::thread::sleep(Duration::from_millis(ms.max(0) as u64));
                reply(o, name, seqid, |_| Ok(()))
            }
            "fire" => {
                self.fired.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            "fired" => {
                let n = self.fired.load(Ordering::Relaxed);
                reply(o, name, seqid, |o| {
                    field(o, "success", TType::I64, 0)?;
                    o.write_i64(n)?;
                    o.write_field_end()
                })
            }
            "fail" => {
                let reason = take_bytes(&mut args, 1)?;
                reply(o, name, seqid, |o| {
                    field(o, "o", TType::Struct, 1)?;
                    o.write_struct_begin(&TStructIdentifier::new("Overloaded"))?;
                    field(o, "reason", TType::String, 1)?;
                    o.write_bytes(&reason)?;
                    o.write_field_end()?;
                    field(o, "retry_after_ms", TType::I32, 2)?;
                    o.write_i32(zerorx_cli::bench::RETRY_AFTER_MS)?;
                    o.write_field_end()?;
                    o.write_field_stop()?;
                    o.write_struct_end()?;
                    o.write_field_end()
                })
            }
            _ => {
                let e = ApplicationError::new(
                    ApplicationErrorKind::UnknownMethod,
                    format!("unknown method {name}"),
                );
                o.write_message_begin(&TMessageIdentifier::new(
                    name,
                    TMessageType::Exception,
                    seqid,
                ))?;
                thrift::Error::write_application_error_to_out_protocol(&e, o)?;
                o.write_message_end()?;
                o.flush()
            }
        }
    }
}
