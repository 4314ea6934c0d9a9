//! The tokio peer: the Bench service on a multi-thread tokio runtime, framed binary
//! protocol, with zerorx's Thrift codecs, so the comparison with `zerorx serve` is
//! about the runtime and the server loop, not the codec.
//!
//! Per connection: read what arrived, answer every whole frame in it (requests slice
//! the receive buffer; big replies reference the request), write the replies with one
//! vectored write, read again. Requests on one connection are handled in order.

use bytes::{Buf, Bytes, BytesMut};
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zerorx_cli::bench::{
    AddArgs, EchoArgs, FailArgs, FailException, FailResult, FireArgs, FiredArgs, Overloaded,
    RoundtripArgs, SleepMsArgs, SumArgs, RETRY_AFTER_MS,
};
use zerorx_thrift::{
    encode_message, ApplicationException, ApplicationExceptionKind, DecodeLimits, MessageBody,
    MessageReader, MessageType, Protocol, Returns, Void,
};

/// The largest frame accepted (zerorx's default).
const MAX_FRAME: usize = 16 << 20;

/// Serves until killed, on `threads` tokio workers.
pub fn serve(addr: SocketAddr, threads: usize) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_io()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        let fired = Arc::new(AtomicI64::new(0));
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let fired = fired.clone();
            tokio::spawn(async move {
                // A connection's failure (reset, bad frame) ends that connection only.
                let _ = connection(stream, fired).await;
            });
        }
    })
}

async fn connection(mut stream: TcpStream, fired: Arc<AtomicI64>) -> io::Result<()> {
    let mut input = BytesMut::with_capacity(64 * 1024);
    let mut replies: Vec<Bytes> = Vec::new();
    loop {
        while input.len() >= 4 {
            let len = u32::from_be_bytes([input[0], input[1], input[2], input[3]]) as usize;
            if len > MAX_FRAME {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "frame too large",
                ));
            }
            if input.len() < 4 + len {
                input.reserve(4 + len - input.len());
                break;
            }
            input.advance(4);
            let frame = input.split_to(len).freeze();
            match handle(frame, &fired).await {
                Reply::Send(segments) => replies.extend(segments),
                Reply::None => {}
                Reply::Close => return Ok(()),
            }
        }
        write_all(&mut stream, &mut replies).await?;
        if input.capacity() - input.len() < 4096 {
            input.reserve(64 * 1024);
        }
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    }
}

async fn write_all(stream: &mut TcpStream, segments: &mut Vec<Bytes>) -> io::Result<()> {
    let mut first = 0;
    while first < segments.len() {
        let slices: Vec<IoSlice<'_>> = segments[first..].iter().map(|s| IoSlice::new(s)).collect();
        let mut n = stream.write_vectored(&slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let seg = &mut segments[first];
            if n >= seg.len() {
                n -= seg.len();
                first += 1;
            } else {
                seg.advance(n);
                n = 0;
            }
        }
    }
    segments.clear();
    Ok(())
}

enum Reply {
    Send(Vec<Bytes>),
    None,
    Close,
}

fn encode<T: MessageBody + ?Sized>(name: &[u8], kind: MessageType, seqid: i32, body: &T) -> Reply {
    match encode_message(Protocol::Binary, true, MAX_FRAME, name, kind, seqid, body) {
        Ok(segments) => Reply::Send(segments),
        Err(_) => Reply::Close,
    }
}

fn exception(name: &[u8], seqid: i32, kind: ApplicationExceptionKind, message: String) -> Reply {
    let e = ApplicationException::new(kind, message);
    encode(name, MessageType::Exception, seqid, &e)
}

async fn handle(frame: Bytes, fired: &AtomicI64) -> Reply {
    let mut r = MessageReader::new(Protocol::Binary, frame, DecodeLimits::default());
    let Ok(h) = r.read_header() else {
        return Reply::Close;
    };
    let name = h.name.clone();
    let seqid = h.seqid;
    macro_rules! args {
        ($t:ty) => {
            match r.decode::<$t>() {
                Ok(a) => a,
                Err(e) if e.is_bad_content() => {
                    return exception(
                        &name,
                        seqid,
                        ApplicationExceptionKind::ProtocolError,
                        e.to_string(),
                    )
                }
                Err(_) => return Reply::Close,
            }
        };
    }
    match &name[..] {
        b"echo" => {
            let a = args!(EchoArgs);
            encode(&name, MessageType::Reply, seqid, &Returns(a.data))
        }
        b"roundtrip" => {
            let a = args!(RoundtripArgs);
            encode(&name, MessageType::Reply, seqid, &Returns(a.p))
        }
        b"add" => {
            let a = args!(AddArgs);
            encode(
                &name,
                MessageType::Reply,
                seqid,
                &Returns(a.a.wrapping_add(a.b)),
            )
        }
        b"sum" => {
            let a = args!(SumArgs);
            let s = a.values.iter().fold(0i64, |s, v| s.wrapping_add(*v));
            encode(&name, MessageType::Reply, seqid, &Returns(s))
        }
        b"sleep_ms" => {
            let a = args!(SleepMsArgs);
            let ms = a.ms.max(0) as u64;
            // The runtime here has no timer (the bench crate builds tokio without
            // `time`); the blocking pool sleeps instead, off the event loop.
            let slept =
                tokio::task::spawn_blocking(move || std::thread::sleep(Duration::from_millis(ms)))
                    .await;
            match slept {
                Ok(()) => encode(&name, MessageType::Reply, seqid, &Void),
                Err(e) => exception(
                    &name,
                    seqid,
                    ApplicationExceptionKind::InternalError,
                    e.to_string(),
                ),
            }
        }
        b"fire" => {
            let _ = args!(FireArgs);
            fired.fetch_add(1, Ordering::Relaxed);
            Reply::None
        }
        b"fired" => {
            let _ = args!(FiredArgs);
            encode(
                &name,
                MessageType::Reply,
                seqid,
                &Returns(fired.load(Ordering::Relaxed)),
            )
        }
        b"fail" => {
            let a = args!(FailArgs);
            let o = Overloaded {
                reason: a.reason,
                retry_after_ms: RETRY_AFTER_MS,
            };
            encode(
                &name,
                MessageType::Reply,
                seqid,
                &FailResult::Thrown(FailException::O(o)),
            )
        }
        _ => {
            if r.skip_body().is_err() {
                return Reply::Close;
            }
            let message = format!("unknown method {}", String::from_utf8_lossy(&name));
            exception(
                &name,
                seqid,
                ApplicationExceptionKind::UnknownMethod,
                message,
            )
        }
    }
}
