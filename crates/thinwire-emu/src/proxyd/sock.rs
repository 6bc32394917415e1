//! Kernel TCP sockets toward the servers: transparent (bound to the mobile's
//! address with IP_TRANSPARENT / IPV6_TRANSPARENT, so the server sees the mobile,
//! not the proxy), non-blocking, with a small receive buffer so that the proxy's
//! allowance, not the kernel, decides how much a server may send ahead.
use crate::sys::cvt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn setopt(fd: &OwnedFd, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
    // SAFETY: setsockopt reads an int we own.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as u32,
        )
    })
    .map(|_| ())
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid; we fill one family's fields.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let sin = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// Starts a connection from `local` (a mobile's address, not this host's) to
/// `remote`; completion is reported as writability (then [`take_error`]).
pub fn connect_transparent(local: SocketAddr, remote: SocketAddr, rcvbuf: usize) -> io::Result<OwnedFd> {
    let family = if local.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: socket returns a new descriptor we own.
    let fd = cvt(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fresh descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if local.is_ipv4() {
        setopt(&fd, libc::SOL_IP, libc::IP_TRANSPARENT, 1)?;
    } else {
        setopt(&fd, libc::SOL_IPV6, libc::IPV6_TRANSPARENT, 1)?;
    }
    setopt(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    setopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, rcvbuf as libc::c_int)?;
    let (sa, len) = sockaddr(local);
    // SAFETY: bind reads the address we own.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&sa as *const libc::sockaddr_storage).cast(), len) })?;
    let (sa, len) = sockaddr(remote);
    // SAFETY: connect reads the address we own.
    let r = unsafe { libc::connect(fd.as_raw_fd(), (&sa as *const libc::sockaddr_storage).cast(), len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(fd)
}

/// The socket's pending error (SO_ERROR): None when the connection succeeded.
pub fn take_error(fd: &OwnedFd) -> Option<io::Error> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes an int we own.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Some(io::Error::last_os_error());
    }
    (v != 0).then(|| io::Error::from_raw_os_error(v))
}

/// What a read found.
pub enum Read {
    Data(usize),
    Eof,
    WouldBlock,
    Reset,
}

pub fn read(fd: &OwnedFd, buf: &mut [u8]) -> Read {
    // SAFETY: read into a buffer we own, of its length.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    match n {
        0 => Read::Eof,
        n if n > 0 => Read::Data(n as usize),
        _ => match io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Read::WouldBlock,
            _ => Read::Reset,
        },
    }
}

/// Writes what the socket takes; Err for a broken connection.
pub fn write(fd: &OwnedFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: send from a buffer we own; MSG_NOSIGNAL: no SIGPIPE.
    let n = unsafe { libc::send(fd.as_raw_fd(), data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
            _ => Err(e),
        };
    }
    Ok(n as usize)
}

/// Sends a FIN (shutdown for writing).
pub fn shutdown_write(fd: &OwnedFd) {
    // SAFETY: shutdown on our descriptor.
    unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) };
}

/// Makes the next close send a RST instead of a FIN (SO_LINGER 0).
pub fn abort_on_close(fd: &OwnedFd) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: setsockopt reads the linger we own.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            size_of::<libc::linger>() as u32,
        )
    };
}

/// Whether our FIN has been acknowledged: the TCP state (TCP_INFO) is
/// FIN_WAIT2, TIME_WAIT or CLOSE.
pub fn fin_acknowledged(fd: &OwnedFd) -> bool {
    // SAFETY: an all-zero tcp_info is valid; getsockopt writes at most len bytes.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    // Linux TCP states: 5 FIN_WAIT2, 6 TIME_WAIT, 7 CLOSE.
    r == 0 && matches!(info.tcpi_state, 5..=7)
}

/// A random 32-bit number (initial sequence numbers toward the mobiles).
pub fn random_u32() -> u32 {
    let mut v = 0u32;
    // SAFETY: getrandom writes 4 bytes into a u32 we own.
    let n = unsafe { libc::getrandom((&mut v as *mut u32).cast(), 4, 0) };
    if n != 4 {
        return (crate::sys::monotonic_ns() as u32).wrapping_mul(2_654_435_761);
    }
    v
}

/// This host's addresses (every interface, up or not).
pub fn local_addresses() -> Vec<IpAddr> {
    let mut out = vec![];
    let mut ifa: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we walk and free.
    unsafe {
        if libc::getifaddrs(&mut ifa) != 0 {
            return out;
        }
        let mut p = ifa;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() {
                match (*a).sa_family as i32 {
                    libc::AF_INET => {
                        let sin = &*(a as *const libc::sockaddr_in);
                        out.push(IpAddr::from(sin.sin_addr.s_addr.to_ne_bytes()));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(a as *const libc::sockaddr_in6);
                        out.push(IpAddr::from(sin6.sin6_addr.s6_addr));
                    }
                    _ => {}
                }
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(ifa);
    }
    out
}
