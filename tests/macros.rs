//! `#[zerorx::test]` (and so `#[zerorx::main]`, the same expansion): the function runs
//! on a runtime built from the attribute's arguments, returns what it returns, and a
//! failure inside it fails the test.

use zerorx::runtime::ResolvedMode;
use zerorx::Handle;

#[zerorx::test]
async fn a_test_runs_on_a_runtime_of_one_worker() {
    let h = Handle::try_current().expect("inside a runtime");
    assert_eq!(h.threads(), 1);
    assert_eq!(zerorx::spawn(async { 6 * 7 }).await.expect("task"), 42);
}

#[zerorx::test(threads = 2, receive_mode = "copy")]
async fn the_arguments_set_workers_and_receive_mode() {
    let h = Handle::try_current().expect("inside a runtime");
    assert_eq!(h.threads(), 2);
    assert_eq!(h.receive_mode().mode, ResolvedMode::Copy);
}

#[zerorx::test]
async fn a_test_may_return_a_result() -> std::io::Result<()> {
    let (l, addr) = {
        let l = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr"))?;
        let a = l.local_addr()?;
        (l, a)
    };
    let accept = zerorx::spawn(async move { l.accept().await.map(drop) });
    zerorx::net::TcpStream::connect(addr).await?;
    accept.await.expect("task")
}

#[zerorx::test]
#[should_panic(expected = "inside the test")]
async fn a_panic_inside_fails_the_test() {
    panic!("inside the test");
}
