//! Messages that straddle receive buffers, read with `MessageStream` on a real
//! loopback connection: each is assembled once, its bytes stay valid while the next
//! messages arrive, and the assembly memory is reused once a message is dropped.

mod common;

use bytes::{BufMut, Bytes, BytesMut};
use common::connected_pair;
use std::rc::Rc;
use std::time::Duration;
use zerorx::net::{FrameReader, TcpStream};
use zerorx::rpc::transport::{Incoming, MessageStream, Transport, DEFAULT_MAX_FRAME};
use zerorx::rpc::{DecodeLimits, Protocol};
use zerorx::{timeout, WakeMode};

/// A frame of `len` body bytes, each `fill`, with its length prefix.
fn frame(len: usize, fill: u8) -> (Bytes, Bytes) {
    let mut f = BytesMut::with_capacity(4 + len);
    f.put_u32(len as u32);
    f.put_bytes(fill, len);
    let f = f.freeze();
    (f.slice(..4 + len / 2), f.slice(4 + len / 2..))
}

/// Sends a frame in two halves, the second only once the reader holds the first,
/// so the body is always split between two receive buffers.
async fn straddling(c: &TcpStream, m: &mut MessageStream, len: usize, fill: u8) -> Incoming {
    let (first, second) = frame(len, fill);
    c.send(first).await.expect("send");
    // The stream holds the first half before the rest is sent; reading a message
    // times out harmlessly (it is cancel-safe) while the second half is missing.
    assert!(timeout(Duration::from_millis(50), m.next()).await.is_err());
    assert!(m.buffered() > 0, "first half buffered");
    c.send(second).await.expect("send");
    timeout(Duration::from_secs(20), m.next())
        .await
        .expect("message in time")
        .expect("read")
        .expect("a message")
}

#[test]
fn straddling_messages_stay_valid_and_their_memory_is_reused_once_dropped() {
    common::rt(1, WakeMode::EventFd).block_on(async {
        let (c, s) = connected_pair().await;
        c.set_nodelay(true).expect("nodelay");
        let mut m = MessageStream::new(
            FrameReader::new(Rc::new(s)),
            Transport::Framed,
            Protocol::Binary,
            DEFAULT_MAX_FRAME,
            DecodeLimits::default(),
        );
        let len = 40_000;
        let a = straddling(&c, &mut m, len, 0xa1).await;
        assert!(a.copied, "split across two buffers: assembled");
        // A field borrowed from the first message, as a decoder hands it out.
        let field = a.bytes.slice(100..200);
        let b = straddling(&c, &mut m, len, 0xb2).await;
        assert!(b.copied);
        assert_ne!(a.bytes.as_ptr(), b.bytes.as_ptr(), "a is still alive");
        assert!(
            a.bytes.iter().all(|&x| x == 0xa1),
            "a intact after b arrived"
        );
        assert!(b.bytes.iter().all(|&x| x == 0xb2));
        let (pa, pb) = (a.bytes.as_ptr(), b.bytes.as_ptr());
        drop(a);
        // Only a slice of `a` remains: its memory is still busy.
        let c3 = straddling(&c, &mut m, len, 0xc3).await;
        assert_ne!(c3.bytes.as_ptr(), pa, "a's field is still alive");
        assert_ne!(c3.bytes.as_ptr(), pb, "b is still alive");
        assert!(field.iter().all(|&x| x == 0xa1), "field intact");
        drop((field, b));
        // Allocations of the same size in between do not get that memory (a general
        // allocator would hand them the blocks just freed).
        let others = [vec![1u8; len + 4], vec![2u8; len + 4]];
        let d = straddling(&c, &mut m, len, 0xd4).await;
        assert!(
            d.bytes.as_ptr() == pa || d.bytes.as_ptr() == pb,
            "assembled into a's or b's memory once both were dropped"
        );
        assert_eq!(d.bytes.len(), len);
        assert!(d.bytes.iter().all(|&x| x == 0xd4));
        assert!(c3.bytes.iter().all(|&x| x == 0xc3), "c intact after d");
        assert!(others[0].iter().all(|&x| x == 1) && others[1].iter().all(|&x| x == 2));
    });
}
