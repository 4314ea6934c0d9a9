//! tokio's IO traits on zerorx (feature `tokio-io`): tokio-util's `Framed` with a
//! `LengthDelimitedCodec`, written for tokio, runs over a zerorx connection: frames
//! of every size go both ways with every byte checked, and a frame longer than the
//! codec allows is an error, not an allocation.

mod common;

use bytes::Bytes;
use common::{connected_pair, rt};
use futures_util::{SinkExt, StreamExt};
use tokio_util::codec::{Framed, LengthDelimitedCodec};
use zerorx::WakeMode;

fn frame(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn tokio_util_framed_echoes_every_frame_size() {
    rt(1, WakeMode::EventFd).block_on(async {
        let (client, server) = connected_pair().await;
        let echo = zerorx::spawn(async move {
            let mut f = Framed::new(server.compat(), LengthDelimitedCodec::new());
            let mut n = 0;
            while let Some(got) = f.next().await {
                f.send(got.expect("frame").freeze()).await.expect("echo");
                n += 1;
            }
            n
        });
        let mut f = Framed::new(
            client.compat(),
            LengthDelimitedCodec::builder()
                .max_frame_length(4 << 20)
                .new_codec(),
        );
        let sizes = [0usize, 1, 100, 4095, 65_536, (1 << 20) + 7, 3 << 20];
        for (i, &len) in sizes.iter().enumerate() {
            let sent = frame(len, i as u8);
            f.send(sent.clone()).await.expect("send");
            let back = f.next().await.expect("a frame").expect("frame");
            assert!(back == sent, "frame {i} of {len} bytes came back different");
        }
        // Many small frames in one flush, read back in order.
        for i in 0..200u8 {
            f.feed(frame(37, i)).await.expect("feed");
        }
        SinkExt::<Bytes>::flush(&mut f).await.expect("flush");
        for i in 0..200u8 {
            let back = f.next().await.expect("a frame").expect("frame");
            assert_eq!(back, frame(37, i), "small frame {i}");
        }
        SinkExt::<Bytes>::close(&mut f).await.expect("close");
        drop(f);
        assert_eq!(echo.await.expect("echo task"), sizes.len() + 200);
    });
}

#[test]
fn a_frame_longer_than_the_codec_allows_is_an_error() {
    rt(1, WakeMode::EventFd).block_on(async {
        let (client, server) = connected_pair().await;
        let reader = zerorx::spawn(async move {
            let mut f = Framed::new(
                server.compat(),
                LengthDelimitedCodec::builder()
                    .max_frame_length(1 << 20)
                    .new_codec(),
            );
            f.next().await
        });
        // A header announcing 2 MiB: refused from the header, before any body.
        client
            .send(Bytes::from_static(&[0, 0x20, 0, 0]))
            .await
            .expect("header");
        let got = reader.await.expect("reader task").expect("an item");
        let err = got.expect_err("a 2 MiB frame is over the limit");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
    });
}
