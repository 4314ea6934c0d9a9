//! Large replies go out zero-copy under the runtime's `SendZeroCopy` policy, and a
//! reply whose value is a view of memory registered for sends
//! (`zerorx::runtime::register_send_memory`) names the registration: the encoder
//! references the value instead of copying it, and the send finds its registration by
//! address. On loopback the kernel copies anyway; the `always` policy sends
//! zero-copy regardless, which is what these tests need to see the sends.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use zerorx::runtime::{register_send_memory, SendMemory};
use zerorx::SendZeroCopy;
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{Client, ClientConfig, Protocol, Returns, Server, Void};

/// Memory registered for sends, shared by the handler.
struct Blob(Box<[u8]>);

// SAFETY: the boxed slice neither moves nor changes length while the value lives.
unsafe impl SendMemory for Blob {
    fn range(&self) -> (*const u8, usize) {
        (self.0.as_ptr(), self.0.len())
    }
}

struct View(Arc<Blob>);

impl AsRef<[u8]> for View {
    fn as_ref(&self) -> &[u8] {
        &self.0 .0
    }
}

const LEN: usize = 256 << 10;

#[test]
fn a_large_reply_of_registered_memory_names_it_and_one_of_heap_bytes_goes_unregistered() {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .shutdown_timeout(Duration::from_secs(5))
        .send_zero_copy(SendZeroCopy::Always {
            threshold: 16 << 10,
        })
        .build()
        .expect("runtime");
    let h = rt.handle().clone();
    let blob = Arc::new(Blob((0..LEN).map(|i| (i % 251) as u8).collect()));
    let heap = Bytes::from(vec![9u8; LEN]);
    let served = blob.clone();
    let server = Server::builder()
        .addr("127.0.0.1:0".parse().expect("addr"))
        .method("registered", move |_: Void| {
            let blob = served.clone();
            async move {
                // On the worker that sends the reply; once, then found again.
                register_send_memory(&blob).expect("registers");
                Ok(Returns(Bytes::from_owner(View(blob))))
            }
        })
        .method("heap", move |_: Void| {
            let heap = heap.clone();
            async move { Ok(Returns(heap)) }
        })
        .start(&h)
        .expect("server");
    let addr = server.local_addr();
    rt.block_on(async {
        let config = ClientConfig {
            protocol: Protocol::Binary,
            transport: Transport::Framed,
            call_timeout: Some(Duration::from_secs(10)),
            ..Default::default()
        };
        let c = Client::connect(addr, config).await.expect("connect");
        let Returns(got): Returns<Bytes> = c.call("registered", &Void).await.expect("call");
        assert!(
            got[..] == blob.0[..],
            "the registered reply arrived changed"
        );
        let m = h.metrics()[0];
        // The reply's header and trailer are small and go plain; its value alone,
        // zero-copy, naming the registration.
        assert_eq!((m.send_zc, m.send_zc_registered), (1, 1), "{m:?}");
        let Returns(got): Returns<Bytes> = c.call("heap", &Void).await.expect("call");
        assert!(got.len() == LEN && got.iter().all(|&b| b == 9));
        let m = h.metrics()[0];
        assert_eq!((m.send_zc, m.send_zc_registered), (2, 1), "{m:?}");
    });
}
