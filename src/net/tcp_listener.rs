//! [`TcpListener`]: `SO_REUSEPORT` listener with one multishot accept kept armed.

use super::accepting::{count_reset, Acceptor};
use super::{new_socket, shared, sock_addr, to_std, TcpStream};
use socket2::{Protocol, SockRef, Type};
use std::future::Future;
use std::io;
use std::net::SocketAddr;

/// A TCP listening socket.
///
/// Bound with `SO_REUSEADDR` and `SO_REUSEPORT`, so every worker can bind the same
/// port and the kernel spreads connections across them. One multishot accept is armed
/// at the first [`accept`](Self::accept) and re-armed whenever the kernel ends it (a
/// completion without `F_MORE`). Connections accepted while nobody awaits `accept`
/// queue up; dropping the listener cancels the accept and closes those queued fds.
pub struct TcpListener {
    acceptor: Acceptor,
}

impl TcpListener {
    /// Binds and listens (backlog 1024) on `addr`.
    pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
        let socket = new_socket(&addr, Type::STREAM, Protocol::TCP)?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&sock_addr(addr))?;
        socket.listen(1024)?;
        Ok(TcpListener {
            acceptor: Acceptor::new(shared(socket)),
        })
    }

    /// Wraps a listening std socket on the current worker (switched to blocking mode,
    /// which io_uring needs to wait for connections itself).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(false)?;
        Ok(TcpListener {
            acceptor: Acceptor::new(crate::ops::SocketFd::shared(std::os::fd::OwnedFd::from(
                listener,
            ))),
        })
    }

    /// The bound address (with the real port after binding port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std(SockRef::from(&*self.acceptor.fd).local_addr()?)
    }

    /// Times the multishot accept was armed again after the kernel ended it.
    pub fn rearms(&self) -> u64 {
        self.acceptor.rearms()
    }

    /// Waits for the next connection and its peer's address. One task should accept at
    /// a time: the armed accept remembers only the last waiter.
    ///
    /// The address costs a `getpeername` per connection (the multishot accept has one
    /// address buffer for all its completions, so it cannot carry each one's);
    /// [`accept_stream`](Self::accept_stream) skips it.
    ///
    /// A connection its peer reset while it waited in the accept queue is not
    /// returned: it has no peer address any more (`ENOTCONN`), or the kernel reports
    /// it aborted (`ECONNABORTED`). It is closed, counted in
    /// [`WorkerMetricsSnapshot::accept_reset`](crate::WorkerMetricsSnapshot::accept_reset),
    /// and the accept goes on with the next connection.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        loop {
            let stream = self.accept_stream().await?;
            match stream.peer_addr() {
                Ok(peer) => return Ok((stream, peer)),
                Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
                    // Reset before we got to it: nothing to serve. Dropping the stream
                    // closes the fd (no op holds it yet).
                    drop(stream);
                    count_reset();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits for the next connection, without asking for its peer's address (one
    /// syscall fewer per connection than [`accept`](Self::accept); the address is
    /// still there through [`TcpStream::peer_addr`]). One task should accept at a time.
    ///
    /// A connection the kernel reports aborted (`ECONNABORTED`) is skipped and counted
    /// as in `accept`; one reset after the kernel accepted it is returned, and its
    /// first receive or send reports the reset.
    pub async fn accept_stream(&self) -> io::Result<TcpStream> {
        self.acceptor.next().await.map(TcpStream::from_fd)
    }

    /// Accepts the next connection and runs `serve` with it on the worker that owns
    /// the zero-copy NIC queue its packets arrive on ([`Handle::worker_for`]: device
    /// queues bound to several workers, and a NAPI id the kernel reports), or on this
    /// worker when the runtime does not know one. A connection bound elsewhere moves
    /// before any byte of it was received here, as a std socket wrapped again on its
    /// worker, so its receives run on the ring whose pool the NIC fills. Returns the
    /// worker `serve` runs on. Outside a runtime: an error.
    ///
    /// [`Handle::worker_for`]: crate::Handle::worker_for
    pub async fn accept_placed<F, Fut>(&self, serve: F) -> io::Result<usize>
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let handle = crate::Handle::try_current()
            .ok_or_else(|| io::Error::other("accept_placed needs a zerorx worker"))?;
        self.accept_placed_by(|s| handle.worker_for(&**s), serve)
            .await
    }

    /// [`accept_placed`](Self::accept_placed) with the choice of worker given.
    pub(crate) async fn accept_placed_by<F, Fut>(
        &self,
        choose: impl FnOnce(&SockRef<'_>) -> Option<usize>,
        serve: F,
    ) -> io::Result<usize>
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let handle = crate::Handle::try_current()
            .ok_or_else(|| io::Error::other("accept_placed needs a zerorx worker"))?;
        let here = handle
            .current_worker()
            .ok_or_else(|| io::Error::other("accept_placed needs a zerorx worker"))?;
        let stream = self.accept_stream().await?;
        match choose(&stream.socket()).filter(|&w| w != here && w < handle.threads()) {
            None => {
                drop(crate::spawn(serve(stream)));
                Ok(here)
            }
            Some(worker) => {
                let moving = stream.into_std().await?;
                drop(handle.spawn_on_with(worker, move || async move {
                    match TcpStream::from_std(moving) {
                        Ok(stream) => serve(stream).await,
                        Err(e) => tracing::warn!(worker, error = %e, "a placed connection could not be wrapped; closed"),
                    }
                }));
                Ok(worker)
            }
        }
    }
}

impl Drop for TcpListener {
    fn drop(&mut self) {
        // The abandoned accept keeps the fd open until its final CQE; shutting the
        // listening socket down now stops new connections at once instead of after
        // the cancel round trip. Best effort: the close that follows does the same.
        let _ = SockRef::from(&*self.acceptor.fd).shutdown(std::net::Shutdown::Read);
    }
}

#[cfg(test)]
mod tests {
    use super::TcpListener;
    use crate::net::TcpStream;
    use crate::{ReceiveMode, Runtime};
    use std::io::{Read, Write};
    use std::sync::mpsc;

    /// Echoes one message and reports the worker it ran on.
    async fn echo_once(stream: TcpStream, ran_on: mpsc::Sender<Option<usize>>) {
        let worker = crate::Handle::try_current().and_then(|h| h.current_worker());
        let _ = ran_on.send(worker);
        if let Ok(Some(buf)) = stream.recv().await {
            let _ = stream.send(buf.into_bytes()).await;
        }
    }

    /// Accepts one connection through `accept` and checks where it was served and
    /// that its bytes came back.
    fn placed(
        accept: impl for<'a> FnOnce(
            &'a TcpListener,
            mpsc::Sender<Option<usize>>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = std::io::Result<usize>> + 'a>,
        >,
    ) -> (usize, Option<usize>) {
        let rt = Runtime::builder()
            .threads(2)
            .receive_mode(ReceiveMode::Copy)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
            let addr = l.local_addr().expect("addr");
            let client = std::thread::spawn(move || {
                let mut c = std::net::TcpStream::connect(addr).expect("connect");
                c.write_all(b"placed").expect("write");
                let mut back = [0u8; 6];
                c.read_exact(&mut back).expect("echo");
                assert_eq!(&back, b"placed");
            });
            let (tx, rx) = mpsc::channel();
            let went = accept(&l, tx).await.expect("accept");
            // The echo may run on this worker: wait without blocking it.
            for _ in 0..2000 {
                if client.is_finished() {
                    break;
                }
                crate::sleep(std::time::Duration::from_millis(5)).await;
            }
            client.join().expect("the client got its bytes back");
            (went, rx.try_recv().expect("served"))
        })
    }

    #[test]
    fn without_a_known_queue_a_connection_is_served_where_it_was_accepted() {
        let (went, ran_on) = placed(|l, tx| Box::pin(l.accept_placed(move |s| echo_once(s, tx))));
        assert_eq!((went, ran_on), (0, Some(0)));
    }

    #[test]
    fn a_connection_moves_to_the_worker_chosen_for_its_queue() {
        let (went, ran_on) =
            placed(|l, tx| Box::pin(l.accept_placed_by(|_| Some(1), move |s| echo_once(s, tx))));
        assert_eq!(
            (went, ran_on),
            (1, Some(1)),
            "served on worker 1, every byte echoed"
        );
        let (went, ran_on) =
            placed(|l, tx| Box::pin(l.accept_placed_by(|_| Some(7), move |s| echo_once(s, tx))));
        assert_eq!((went, ran_on), (0, Some(0)), "no worker 7: served here");
    }

    #[test]
    fn accept_placed_off_a_worker_is_an_error() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let rt = Runtime::builder().threads(1).build().expect("runtime");
        let listener = rt
            .block_on(async { TcpListener::from_std(l) })
            .expect("listener");
        let err = futures_executor::block_on(listener.accept_placed(|_s| async {}))
            .expect_err("no worker");
        assert!(err.to_string().contains("zerorx worker"), "{err}");
    }
}
