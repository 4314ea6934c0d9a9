//! The no-Thrift reference for `echo`: a tokio server that does only what every server
//! must.
//!
//! It reads each framed binary `echo` call into one buffer, turns it into its reply in
//! place (the reply is the call with the message type byte and the argument's field id
//! changed, the same length), and writes the bytes back; no decoding, no dispatch, no
//! allocation per call. What is left per call is the kernel's work (copy in, copy
//! out, TCP on loopback) and the epoll loop's, so the gap between it and a Thrift
//! server on the same runtime is what the Thrift layer costs. It answers `echo` only
//! (anything else closes the connection), so it is not one of the compared servers:
//! the RPC benchmark runs it on request (`--servers …,frame-echo`).

use bytes::{Buf, BytesMut};
use std::io;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest frame accepted (zerorx's default).
const MAX_FRAME: usize = 16 << 20;
/// Strict binary header of a call named `echo`: version 1, type CALL, name length 4.
const CALL_HEAD: [u8; 12] = [0x80, 1, 0, 1, 0, 0, 0, 4, b'e', b'c', b'h', b'o'];
/// Frame offsets (after the 4-byte length) of the type byte and of the argument
/// struct's first field id (header 12, seqid 4, field type 1, then the i16 id).
const TYPE_AT: usize = 3;
const FIELD_ID_AT: usize = 12 + 4 + 1;
/// `T_STRING` field 1: `echo`'s only argument, and what the reply's field 0 replaces.
const ARG_FIELD: [u8; 3] = [11, 0, 1];

/// Serves until killed, on `threads` event-loop threads (one: a current-thread
/// runtime, as the other single-threaded servers).
pub fn serve(addr: SocketAddr, threads: usize) -> io::Result<()> {
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_io()
            .build()?
    };
    rt.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            tokio::spawn(async move {
                // A bad frame ends that connection only.
                let _ = connection(stream).await;
            });
        }
    })
}

async fn connection(mut stream: TcpStream) -> io::Result<()> {
    let mut input = BytesMut::with_capacity(128 * 1024);
    loop {
        let ready = reply_in_place(&mut input)?;
        if ready > 0 {
            stream.write_all(&input[..ready]).await?;
            input.advance(ready);
        }
        if input.capacity() - input.len() < 4096 {
            input.reserve(128 * 1024);
        }
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    }
}

/// Turns every whole call at the front of `input` into its reply; returns how many
/// bytes are replies ready to send.
fn reply_in_place(input: &mut BytesMut) -> io::Result<usize> {
    let mut at = 0;
    while input.len() - at >= 4 {
        let len =
            u32::from_be_bytes([input[at], input[at + 1], input[at + 2], input[at + 3]]) as usize;
        if len > MAX_FRAME {
            return Err(bad("frame too large"));
        }
        if input.len() - at < 4 + len {
            input.reserve(4 + len - (input.len() - at));
            break;
        }
        let frame = &mut input[at + 4..at + 4 + len];
        if len < FIELD_ID_AT + 2 || frame[..12] != CALL_HEAD || frame[16..19] != ARG_FIELD {
            return Err(bad("not a strict binary echo call"));
        }
        frame[TYPE_AT] = 2; // REPLY
        frame[FIELD_ID_AT + 1] = 0; // the result's field 0 (success)
        at += 4 + len;
    }
    Ok(at)
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use zerorx_cli::bench::EchoArgs;
    use zerorx_thrift::{encode_message, MessageBody, MessageType, Protocol, Returns};

    fn encode<T: MessageBody>(kind: MessageType, seqid: i32, body: &T) -> Vec<u8> {
        let segs = encode_message(
            Protocol::Binary,
            true,
            usize::MAX,
            b"echo",
            kind,
            seqid,
            body,
        )
        .expect("encodes");
        segs.iter().flat_map(|s| s.iter().copied()).collect()
    }

    fn call(data: &[u8], seqid: i32) -> Vec<u8> {
        let data = Bytes::copy_from_slice(data);
        encode(MessageType::Call, seqid, &EchoArgs { data })
    }

    fn reply(data: &[u8], seqid: i32) -> Vec<u8> {
        let data = Bytes::copy_from_slice(data);
        encode(MessageType::Reply, seqid, &Returns(data))
    }

    #[test]
    fn calls_become_the_replies_zerorx_would_send() {
        let mut input = BytesMut::new();
        input.extend_from_slice(&call(b"hello", 7));
        input.extend_from_slice(&call(&[9; 300], 8));
        let half = call(b"later", 9);
        input.extend_from_slice(&half[..10]);
        let ready = reply_in_place(&mut input).expect("two whole calls");
        let mut want = reply(b"hello", 7);
        want.extend(reply(&[9; 300], 8));
        assert_eq!(ready, want.len());
        assert_eq!(&input[..ready], &want[..]);
    }

    #[test]
    fn anything_but_an_echo_call_is_refused() {
        let mut other = BytesMut::from(&reply(b"x", 1)[..]);
        assert!(reply_in_place(&mut other).is_err());
        let mut huge = BytesMut::from(&(MAX_FRAME as u32 + 1).to_be_bytes()[..]);
        assert!(reply_in_place(&mut huge).is_err());
        let mut short = BytesMut::from(&[0, 0, 0, 2, 0x80, 1][..]);
        assert!(reply_in_place(&mut short).is_err());
    }
}
