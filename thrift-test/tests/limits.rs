//! The limits Apache's feature tests (`limit_string_length`,
//! `limit_container_length`) set with `--string-limit=50 --container-limit=50`:
//! 50 passes, 51 is refused (the connection closes), and the server keeps serving.

mod support;

use std::process::Command;
use std::time::Duration;
use support::spawn_listening;
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{ClientConfig, Protocol};
use zerorx_thrift_test::generated::thrift_test::ThriftTestClient;

#[test]
fn strings_and_containers_past_the_limits_are_refused() {
    let (mut server, port) = spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_zerorx-thrift-test-server")).args([
            "--port=0",
            "--protocol=compact",
            "--transport=buffered",
            "--string-limit=50",
            "--container-limit=50",
        ]),
    );
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let config = ClientConfig {
        protocol: Protocol::Compact,
        transport: Transport::Unframed,
        call_timeout: Some(Duration::from_secs(10)),
        ..ClientConfig::default()
    };
    let rt = zerorx::Runtime::builder().threads(1).build().unwrap();
    let outcome = rt.block_on(async {
        let connect = || async {
            ThriftTestClient::connect(addr, config.clone())
                .await
                .map_err(|e| format!("connect: {e}"))
        };
        for n in [49usize, 50] {
            let c = connect().await?;
            let s = "x".repeat(n);
            let got = c.test_string(s.as_str().into()).await;
            if got.as_ref().map(|g| g.len()).ok() != Some(n) {
                return Err(format!("a string of {n}: {got:?}"));
            }
            let list: Vec<i32> = (0..n as i32).collect();
            let got = c.test_list(list.clone()).await;
            if got.as_ref().ok() != Some(&list) {
                return Err(format!("a list of {n}: {got:?}"));
            }
        }
        let c = connect().await?;
        if c.test_string("x".repeat(51).as_str().into()).await.is_ok() {
            return Err("a string of 51 was accepted".into());
        }
        let c = connect().await?;
        if c.test_list((0..51).collect()).await.is_ok() {
            return Err("a list of 51 was accepted".into());
        }
        // Still serving.
        let c = connect().await?;
        c.test_i32(7)
            .await
            .map_err(|e| format!("after the refusals: {e}"))
    });
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(outcome, Ok(7));
}
