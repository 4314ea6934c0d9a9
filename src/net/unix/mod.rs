//! Unix domain sockets: [`UnixListener`], [`UnixStream`] (a [`Connection`] like
//! `TcpStream`, receiving into the same pools) and [`UnixDatagram`], on filesystem
//! paths or Linux abstract names.
//!
//! Addresses are `std::os::unix::net::SocketAddr`: a path, an abstract name (made with
//! `std::os::linux::net::SocketAddrExt::from_abstract_name`, or by the `*_abstract`
//! constructors here) or unnamed (an unbound socket, a [`pair`](UnixStream::pair)).
//!
//! ```no_run
//! # zerorx::Runtime::new()?.block_on(async {
//! use zerorx::net::{FrameReader, UnixListener, UnixStream};
//! let listener = UnixListener::bind("/run/app.sock")?; // a file left there: an error naming it
//! zerorx::spawn(async move {
//!     let (conn, _peer) = listener.accept().await?;
//!     let mut frames = FrameReader::new(conn);          // the same pool and reader as TCP
//!     while let Some(frame) = frames.read_frame(1 << 20).await? {
//!         println!("{} bytes", frame.len());
//!     }
//!     Ok::<_, std::io::Error>(())
//! });
//! let client = UnixStream::connect("/run/app.sock").await?; // or connect_abstract("app")
//! client.send(bytes::Bytes::from_static(b"\0\0\0\x04ping")).await?;
//! # Ok::<_, std::io::Error>(()) })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`Connection`]: super::Connection

mod datagram;
mod listener;
mod stream;

pub use datagram::UnixDatagram;
pub use listener::UnixListener;
pub use stream::UnixStream;

use socket2::{Domain, SockAddr, Socket, Type};
use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr;
use std::path::Path;

/// A new blocking, close-on-exec Unix socket (blocking for io_uring: see
/// [`super::new_socket`]).
fn new_unix_socket(ty: Type) -> io::Result<Socket> {
    Socket::new(Domain::UNIX, ty.cloexec(), None)
}

/// The std address of `path`, failing (`InvalidInput`, naming it) when it does not
/// fit a `sockaddr_un` or holds a NUL byte.
fn path_addr(path: &Path) -> io::Result<SocketAddr> {
    SocketAddr::from_pathname(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("Unix socket path {}: {e}", path.display()),
        )
    })
}

/// The std address of the abstract `name` (Linux: no file, gone with the last socket
/// bound to it).
fn abstract_addr(name: &[u8]) -> io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(name).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("abstract Unix socket name {}: {e}", show_name(name)),
        )
    })
}

/// `addr` as the kernel takes it, for bind, connect and sendmsg.
fn sock_addr(addr: &SocketAddr) -> io::Result<SockAddr> {
    if let Some(path) = addr.as_pathname() {
        return SockAddr::unix(path);
    }
    if let Some(name) = addr.as_abstract_name() {
        // socket2 reads a leading NUL as the abstract namespace's mark.
        let mut bytes = Vec::with_capacity(name.len() + 1);
        bytes.push(0);
        bytes.extend_from_slice(name);
        return SockAddr::unix(OsStr::from_bytes(&bytes));
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "an unnamed Unix socket address cannot be bound, connected or sent to",
    ))
}

/// The std address of what the kernel reported (getsockname, getpeername, recvmsg).
fn to_std(addr: &SockAddr) -> io::Result<SocketAddr> {
    if let Some(path) = addr.as_pathname() {
        return SocketAddr::from_pathname(path);
    }
    if let Some(name) = addr.as_abstract_namespace() {
        return SocketAddr::from_abstract_name(name);
    }
    // recvmsg reports a datagram from an unbound sender with no address at all.
    if addr.is_unnamed() || addr.len() == 0 {
        // An empty path is std's spelling of the unnamed address.
        return SocketAddr::from_pathname("");
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "not a Unix socket address",
    ))
}

/// An abstract name as people write it: `@` and the name (bytes that are not UTF-8
/// shown escaped).
fn show_name(name: &[u8]) -> String {
    format!("@{}", name.escape_ascii())
}

/// `addr` for error messages: the path, `@name`, or `(unnamed)`.
pub(crate) fn show(addr: &SocketAddr) -> String {
    if let Some(path) = addr.as_pathname() {
        return path.display().to_string();
    }
    if let Some(name) = addr.as_abstract_name() {
        return show_name(name);
    }
    "(unnamed)".to_owned()
}

/// `e` with what was being done to which address in front, its kind kept (so callers
/// can still match `NotFound`, `AddrInUse`...).
fn context(e: io::Error, what: &str, addr: &SocketAddr) -> io::Error {
    io::Error::new(e.kind(), format!("{what} Unix socket {}: {e}", show(addr)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_go_to_the_kernel_and_back_unchanged() {
        let path = path_addr(Path::new("/tmp/zerorx-a.sock")).expect("path");
        let back = to_std(&sock_addr(&path).expect("to kernel")).expect("back");
        assert_eq!(back.as_pathname(), Some(Path::new("/tmp/zerorx-a.sock")));
        let name = abstract_addr(b"zerorx\0x").expect("abstract");
        let back = to_std(&sock_addr(&name).expect("to kernel")).expect("back");
        assert_eq!(back.as_abstract_name(), Some(&b"zerorx\0x"[..]));
        assert_eq!(show(&back), "@zerorx\\x00x");
        let unnamed = SocketAddr::from_pathname("").expect("unnamed");
        assert!(unnamed.is_unnamed());
        let e = sock_addr(&unnamed).expect_err("unnamed");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(show(&unnamed), "(unnamed)");
    }

    #[test]
    fn a_path_too_long_is_an_error_naming_it() {
        let long = format!("/tmp/{}", "x".repeat(200));
        let e = path_addr(Path::new(&long)).expect_err("too long");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains(&long), "{e}");
    }
}
