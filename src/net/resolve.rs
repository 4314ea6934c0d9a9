//! [`ToSocketAddrs`]: what [`TcpStream::connect`](super::TcpStream::connect) takes — an
//! address, a list of them, or a `"host:port"` name resolved on the blocking pool.
//!
//! Resolution uses the system resolver (`getaddrinfo`, through std), which blocks: it
//! runs on the runtime's blocking pool ([`spawn_blocking`](crate::spawn_blocking)) so
//! the worker goes on serving meanwhile. Text that is already an address is not looked
//! up at all.

use std::io;
use std::net::{IpAddr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What names the peer of a connection: an address (`SocketAddr`, `(IpAddr, u16)`), a
/// list of them (tried in order), or text (`"db.internal:9090"`, `("db.internal",
/// 9090)`, `"[::1]:80"`), resolved on the runtime's blocking pool unless it is an
/// address already.
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    use std::net::SocketAddr;

    /// The peer, as given.
    pub enum Target {
        Addrs(Vec<SocketAddr>),
        /// `host:port` text to resolve.
        Name(String),
    }

    /// Turns what the caller gave into a [`Target`].
    pub trait Sealed {
        fn target(self) -> Target;
    }
}

use sealed::{Sealed, Target};

macro_rules! addrs {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {$(
        impl Sealed for $t {
            fn target(self) -> Target {
                let $v = self;
                Target::Addrs($e)
            }
        }
        impl ToSocketAddrs for $t {}
    )*};
}

addrs! {
    SocketAddr => |a| vec![a],
    SocketAddrV4 => |a| vec![a.into()],
    SocketAddrV6 => |a| vec![a.into()],
    (IpAddr, u16) => |a| vec![a.into()],
    &[SocketAddr] => |a| a.to_vec(),
    Vec<SocketAddr> => |a| a,
}

impl Sealed for &str {
    fn target(self) -> Target {
        Target::Name(self.to_owned())
    }
}
impl ToSocketAddrs for &str {}

impl Sealed for String {
    fn target(self) -> Target {
        Target::Name(self)
    }
}
impl ToSocketAddrs for String {}

impl Sealed for &String {
    fn target(self) -> Target {
        Target::Name(self.clone())
    }
}
impl ToSocketAddrs for &String {}

impl Sealed for (&str, u16) {
    fn target(self) -> Target {
        // A bare IPv6 address needs brackets before its port.
        match self.0.parse::<IpAddr>() {
            Ok(ip) => Target::Addrs(vec![SocketAddr::new(ip, self.1)]),
            Err(_) => Target::Name(format!("{}:{}", self.0, self.1)),
        }
    }
}
impl ToSocketAddrs for (&str, u16) {}

/// What a peer resolved to.
pub(crate) struct Resolved {
    /// In the resolver's order.
    pub(crate) addrs: Vec<SocketAddr>,
    /// The peer as errors name it.
    pub(crate) shown: String,
    /// Given as text.
    pub(crate) named: bool,
}

/// The addresses `peer` stands for; text is resolved on the blocking pool. The error
/// names what was looked up.
pub(crate) async fn resolve(peer: impl ToSocketAddrs) -> io::Result<Resolved> {
    let name = match peer.target() {
        Target::Addrs(addrs) => {
            let shown = describe(&addrs);
            return Ok(Resolved {
                addrs,
                shown,
                named: false,
            });
        }
        Target::Name(name) => name,
    };
    if let Ok(addr) = name.parse::<SocketAddr>() {
        return Ok(Resolved {
            addrs: vec![addr],
            shown: name,
            named: true,
        });
    }
    let lookup = name.clone();
    let found = crate::spawn_blocking(move || {
        std::net::ToSocketAddrs::to_socket_addrs(lookup.as_str()).map(Iterator::collect::<Vec<_>>)
    })
    .await
    .map_err(|e| io::Error::other(format!("resolving {name:?}: the lookup failed: {e:?}")))?;
    match found {
        Ok(addrs) if !addrs.is_empty() => Ok(Resolved {
            addrs,
            shown: name,
            named: true,
        }),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("resolving {name:?}: no addresses"),
        )),
        Err(e) => Err(io::Error::new(e.kind(), format!("resolving {name:?}: {e}"))),
    }
}

/// `a`, or `a (and N more)`.
fn describe(addrs: &[SocketAddr]) -> String {
    match addrs {
        [] => "no address".into(),
        [a] => a.to_string(),
        [a, rest @ ..] => format!("{a} (and {} more)", rest.len()),
    }
}
