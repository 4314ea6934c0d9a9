//! One server connection: split frames, answer each (echo without copying, ack, or
//! reject), and count how the connection ended.

use super::stats::Counters;
use crate::framer::Framer;
use crate::wire::{reply, Frame, FrameError, Kind, Reject};
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use zerorx::net::TcpStream;

/// Most reply pieces gathered into one send (the kernel takes at most 1024 iovecs).
const MAX_IOVECS: usize = 512;

/// How a connection ended.
enum End {
    Eof,
    RecvFailed,
    Frame(FrameError),
    SendFailed,
    Idle,
}

/// Serves `stream` until it ends.
pub async fn serve(stream: TcpStream, c: &Counters, max_frame: u32, idle: Option<Duration>) {
    c.accepted.fetch_add(1, Relaxed);
    c.open.fetch_add(1, Relaxed);
    let _ = stream.set_nodelay(true);
    let mut framer = Framer::new(max_frame);
    let mut out: Vec<Bytes> = Vec::new();
    let mut received = 0u64;
    let end = loop {
        let got = match idle {
            Some(t) => match zerorx::timeout(t, stream.recv()).await {
                Ok(got) => got,
                Err(_) => break End::Idle,
            },
            None => stream.recv().await,
        };
        let buf = match got {
            Ok(Some(buf)) => buf,
            Ok(None) => break End::Eof,
            Err(_) => break End::RecvFailed,
        };
        received += buf.len() as u64;
        c.bytes_in.fetch_add(buf.len() as u64, Relaxed);
        framer.push(buf.into_bytes());
        let mut bad = None;
        let mut send_failed = false;
        loop {
            match framer.next_frame() {
                Ok(Some(frame)) => {
                    answer(frame, c, &mut out);
                    if out.len() >= MAX_IOVECS && !flush(&stream, &mut out, c).await {
                        send_failed = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            }
        }
        if send_failed || !flush(&stream, &mut out, c).await {
            break End::SendFailed;
        }
        if let Some(e) = bad {
            break End::Frame(e);
        }
    };
    match end {
        End::Eof if framer.mid_frame() => c.truncated.fetch_add(1, Relaxed),
        End::Eof if received == 0 => c.silent.fetch_add(1, Relaxed),
        End::Eof => c.clean_closes.fetch_add(1, Relaxed),
        End::RecvFailed if framer.mid_frame() => c.truncated.fetch_add(1, Relaxed),
        End::RecvFailed => c.resets.fetch_add(1, Relaxed),
        End::Frame(FrameError::Oversized { .. }) => c.oversized.fetch_add(1, Relaxed),
        End::Frame(FrameError::Malformed { .. }) => c.malformed.fetch_add(1, Relaxed),
        End::SendFailed => c.send_errors.fetch_add(1, Relaxed),
        End::Idle => c.idle_timeouts.fetch_add(1, Relaxed),
    };
    c.open.fetch_sub(1, Relaxed);
}

/// Queues the reply to one request.
fn answer(frame: Frame, c: &Counters, out: &mut Vec<Bytes>) {
    c.requests.fetch_add(1, Relaxed);
    if frame.assembled {
        c.assembled.fetch_add(1, Relaxed);
    }
    let h = frame.header;
    let computed = frame.computed_crc();
    if computed != h.crc {
        c.bad_checksum.fetch_add(1, Relaxed);
        out.push(reply(
            Kind::Reject,
            h.conn,
            h.id,
            Reject::BadChecksum as u32,
        ));
        return;
    }
    match h.kind {
        // The received bytes go back as they are: a slice of the receive buffer.
        Kind::Echo => out.push(frame.bytes),
        Kind::Sink => out.push(reply(Kind::Ack, h.conn, h.id, computed)),
        Kind::Ack | Kind::Reject => {
            out.push(reply(Kind::Reject, h.conn, h.id, Reject::BadKind as u32));
        }
    }
}

/// Sends the queued replies; `false` if the peer cannot take them.
async fn flush(stream: &TcpStream, out: &mut Vec<Bytes>, c: &Counters) -> bool {
    if out.is_empty() {
        return true;
    }
    let n: usize = out.iter().map(Bytes::len).sum();
    c.sending.fetch_add(1, Relaxed);
    let r = stream.send_vectored(out).await;
    c.sending.fetch_sub(1, Relaxed);
    out.clear();
    match r {
        Ok(()) => {
            c.bytes_out.fetch_add(n as u64, Relaxed);
            true
        }
        Err(_) => false,
    }
}
