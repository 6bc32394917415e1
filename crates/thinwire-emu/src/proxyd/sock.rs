//! Kernel TCP sockets toward the servers: transparent (bound to the mobile's
//! address with IP_TRANSPARENT / IPV6_TRANSPARENT, so the server sees the mobile,
//! not the proxy), non-blocking, with a small receive buffer so that the proxy's
//! allowance, not the kernel, decides how much a server may send ahead.
//!
//! Below the helpers, the daemon's socket driver: a connection's socket opened
//! when the mobile's SYN comes, serviced on readiness (connect completing, data
//! in as far as the allowance goes, data out, FIN, reset), its interest in
//! epoll kept to what the proxy can take, and dropped at the end.
use super::*;
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

// ----- the daemon's side: driving the sockets -----

/// The driver's side of one proxied connection.
pub(super) struct Sock {
    pub(super) fd: OwnedFd,
    pub(super) connecting: bool,
    pub(super) registered: bool,
    /// The events registered (when `registered`): an unchanged interest costs no
    /// system call.
    pub(super) events: u32,
    /// The last write did not take everything: wait for EPOLLOUT.
    pub(super) blocked: bool,
    pub(super) shut: bool,
    pub(super) fin_acked: bool,
    pub(super) opened: Instant,
    pub(super) active: Instant,
    /// When one direction finished while the other is open.
    pub(super) half: Option<Instant>,
    /// The connection's 4-tuple (mobile address, port, server address, port).
    pub(super) key: Key,
}

impl Daemon {
    pub(super) fn connect(&mut self, c: usize, mobile: (IpAddress, u16), server: (IpAddress, u16), now: Instant) {
        let local = SocketAddr::new(mobile.0.into(), mobile.1);
        let remote = SocketAddr::new(server.0.into(), server.1);
        match sock::connect_transparent(local, remote, self.cfg.server_rcvbuf.0 as usize) {
            Ok(fd) => {
                self.n.proxied += 1;
                self.log.event(
                    "connect",
                    &[("conn", c.into()), ("mobile", local.to_string().into()), ("server", remote.to_string().into())],
                );
                let s = Sock {
                    fd,
                    connecting: true,
                    registered: false,
                    events: 0,
                    blocked: false,
                    shut: false,
                    fin_acked: false,
                    opened: now,
                    active: now,
                    half: None,
                    key: (mobile.0, mobile.1, server.0, server.1),
                };
                self.socks.insert(c, s);
                self.interest(c);
            }
            Err(e) => {
                self.log.event(
                    "connect_failed",
                    &[("conn", c.into()), ("server", remote.to_string().into()), ("error", e.to_string().into())],
                );
                self.n.server_refused += 1;
                self.proxy.stream_refused(c, now);
            }
        }
    }

    /// Moves what can move on connection `c`'s socket: completes a connect,
    /// writes the mobile's data, reads the server's within the allowance.
    pub(super) fn service(&mut self, (c, from_poll): (usize, bool), now: Instant) {
        let Some(s) = self.socks.get_mut(&c) else { return };
        if s.connecting {
            if !from_poll {
                return;
            }
            match sock::take_error(&s.fd) {
                None => {
                    s.connecting = false;
                    s.active = now;
                    self.proxy.stream_connected(c, now, sock::random_u32());
                }
                Some(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => return,
                Some(e) => {
                    self.log.event("server_refused", &[("conn", c.into()), ("error", e.to_string().into())]);
                    self.n.server_refused += 1;
                    self.drop_sock(c);
                    self.proxy.stream_refused(c, now);
                    return;
                }
            }
        }
        // Upload.
        loop {
            let data = self.proxy.stream_upload(c, 65536);
            if data.is_empty() {
                break;
            }
            let s = self.socks.get_mut(&c).expect("present");
            match sock::write(&s.fd, &data) {
                Ok(0) => {
                    s.blocked = true;
                    break;
                }
                Ok(n) => {
                    s.blocked = n < data.len();
                    s.active = now;
                    self.n.bytes_up += n as u64;
                    self.proxy.stream_written(c, now, n);
                    if n < data.len() {
                        break;
                    }
                }
                Err(_) => return self.server_reset(c, now),
            }
        }
        let st = self.proxy.stream(c).cloned();
        let s = self.socks.get_mut(&c).expect("present");
        if let Some(st) = &st {
            if st.wants_shutdown() && !s.shut {
                sock::shutdown_write(&s.fd);
                s.shut = true;
                self.proxy.stream_shut(c);
            }
        }
        // Download, within the allowance. A wake (not a readiness report) of a
        // socket already watched for input reads nothing now: the epoll is
        // level-triggered, so data waiting there is reported at the next wait.
        // (The proxy's flow control wakes every connection that may read after
        // each ACK from the mobile; reading each at once cost a `recvmsg` per
        // connection per ACK, most finding nothing.) A socket not watched for
        // input — its allowance was zero — is read now and then watched.
        let watched = s.registered && s.events & libc::EPOLLIN as u32 != 0;
        if !from_poll && watched {
            return self.interest(c);
        }
        loop {
            let room = self.proxy.read_allowance(c) as usize;
            if room == 0 {
                break;
            }
            let Some(s) = self.socks.get_mut(&c) else { return };
            let want = room.min(self.buf.len());
            match sock::read(&s.fd, &mut self.buf[..want]) {
                Read::Data(n) => {
                    s.active = now;
                    self.n.bytes_down += n as u64;
                    let chunk = self.buf[..n].to_vec();
                    self.proxy.stream_data(c, now, &chunk);
                }
                Read::Eof => {
                    self.proxy.stream_eof(c, now);
                    break;
                }
                Read::WouldBlock => break,
                Read::Reset => return self.server_reset(c, now),
            }
        }
        if self.socks.contains_key(&c) {
            self.interest(c);
        }
    }

    pub(super) fn server_reset(&mut self, c: usize, now: Instant) {
        self.n.resets_from_server += 1;
        self.log.event("server_reset", &[("conn", c.into())]);
        self.drop_sock(c);
        self.proxy.stream_reset(c, now);
    }

    pub(super) fn drop_sock(&mut self, c: usize) {
        if let Some(s) = self.socks.remove(&c) {
            self.poll.remove(s.fd.as_raw_fd());
            self.ended(s.key, self.now());
        }
    }

    /// A connection is over: its trace rows stop after the proxy's linger time.
    pub(super) fn ended(&mut self, key: Key, now: Instant) {
        if let Some(r) = &mut self.rec {
            r.end_flow(key, now);
        }
    }

    pub(super) fn interest(&mut self, c: usize) {
        let Some(s) = self.socks.get_mut(&c) else { return };
        let mut ev = 0u32;
        if s.connecting {
            ev |= libc::EPOLLOUT as u32;
        } else {
            if self.proxy.read_allowance(c) > 0 {
                ev |= libc::EPOLLIN as u32;
            }
            if s.blocked {
                ev |= libc::EPOLLOUT as u32;
            }
        }
        if s.registered && s.events == ev {
            return;
        }
        s.events = ev;
        if self.poll.interest(s.fd.as_raw_fd(), TOK_SOCK + c as u64, ev, &mut s.registered).is_err() {
            s.registered = false;
        }
    }
}
