//! How long a packet waited in a TUN device's queue before the emulator read it,
//! as the kernel tells it: a packet socket on the device, in its host's
//! namespace, sees each packet the host sends when the kernel hands it to the
//! device (`dev_queue_xmit_nit`, before `tun_net_xmit` queues it), stamped by the
//! kernel (`SO_TIMESTAMPNS`, real-time clock). The emulator drains it just before
//! it reads the device (and again when a packet read has no copy yet), matches each packet read to its copy (the first 64 bytes,
//! in order: both queues are FIFO; a copy whose packet the full TUN queue dropped
//! is skipped), and records the difference. The path itself still takes the time
//! the packet was read (the model cannot act in the past); this measures what that
//! costs.
//!
//! The socket keeps only outgoing packets (a BPF filter on the packet type) and
//! 64 bytes of each; its buffer is 4 MB (`SO_RCVBUFFORCE`), past the TUN queue's
//! 500 packets. Copies the socket dropped (its buffer full) only cost samples.
use crate::sys::cvt;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Bytes of each packet compared.
const SNAP: usize = 64;
/// How far ahead among the pending copies a packet read is looked for.
const SCAN: usize = 256;

pub struct Tap {
    fd: OwnedFd,
    /// (hash of the first SNAP bytes, kernel time in real-time ns), oldest first.
    pending: VecDeque<(u64, i64)>,
    /// Copies the queue let go unmatched (the bound on `pending`).
    pub unmatched: u64,
}

fn hash(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in &b[..b.len().min(SNAP)] {
        h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Runs `f` in network namespace `ns` (`/run/netns/NS`) on a thread of its own,
/// so the caller's namespace is never changed.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> io::Result<T> + Send + 'static) -> io::Result<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path)?;
        // SAFETY: setns on this thread only, with a namespace descriptor we hold.
        cvt(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) })?;
        f()
    })
    .join()
    .map_err(|_| io::Error::other("namespace thread panicked"))?
}

impl Tap {
    /// A tap on device `dev` of namespace `ns`.
    pub fn open(ns: &str, dev: &str) -> io::Result<Tap> {
        let dev = std::ffi::CString::new(dev).map_err(|_| io::Error::other("device name"))?;
        let fd = in_netns(ns, move || {
            let proto = (libc::ETH_P_ALL as u16).to_be();
            // SAFETY: socket returns a new descriptor we own.
            let fd = cvt(unsafe {
                libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto as i32)
            })?;
            // SAFETY: fresh owned descriptor.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: reads a NUL-terminated name.
            let ifindex = unsafe { libc::if_nametoindex(dev.as_ptr()) };
            if ifindex == 0 {
                return Err(io::Error::last_os_error());
            }
            // Outgoing packets only, SNAP bytes each: ld pkttype; jeq OUTGOING; ret SNAP; ret 0.
            let code = [
                libc::sock_filter { code: 0x28, jt: 0, jf: 0, k: (-0x1000i32 + 4) as u32 },
                libc::sock_filter { code: 0x15, jt: 0, jf: 1, k: libc::PACKET_OUTGOING as u32 },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: SNAP as u32 },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0 },
            ];
            let prog = libc::sock_fprog { len: code.len() as u16, filter: code.as_ptr() as *mut _ };
            let set = |level, name, val: *const libc::c_void, len| {
                // SAFETY: setsockopt reads `len` bytes at `val`, which we own.
                cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, val, len) }).map(|_| ())
            };
            let size = std::mem::size_of::<libc::sock_fprog>() as u32;
            set(libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, (&prog as *const libc::sock_fprog).cast(), size)?;
            let one: libc::c_int = 1;
            let int = std::mem::size_of::<libc::c_int>() as u32;
            set(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&one as *const libc::c_int).cast(), int)?;
            let buf: libc::c_int = 4 << 20;
            // Past the default limit (root); without, the default buffer.
            let _ = set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&buf as *const libc::c_int).cast(), int);
            // SAFETY: a zeroed sockaddr_ll is valid; we fill in what bind needs.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = ifindex as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: bind reads the sockaddr_ll we own.
            cvt(unsafe { libc::bind(fd.as_raw_fd(), (&sll as *const libc::sockaddr_ll).cast(), len) })?;
            Ok(fd)
        })?;
        Ok(Tap { fd, pending: VecDeque::new(), unmatched: 0 })
    }

    /// Takes every copy the socket holds.
    pub fn drain(&mut self) {
        let mut data = [0u8; SNAP];
        let mut ctl = [0u64; 16];
        loop {
            let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: SNAP };
            // SAFETY: a zeroed msghdr is valid; we point it at buffers we own.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = ctl.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&ctl);
            // SAFETY: recvmsg writes into the buffers described by msg.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if n < 0 {
                return;
            }
            let mut at = None;
            // SAFETY: walks the control messages recvmsg wrote into `ctl`.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        at = Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            if let Some(at) = at {
                self.pending.push_back((hash(&data[..(n as usize).min(SNAP)]), at));
            }
            // Copies whose packets will never be read (dropped by the full TUN
            // queue) must not pile up.
            while self.pending.len() > 4 * SCAN {
                self.pending.pop_front();
                self.unmatched += 1;
            }
        }
    }

    /// The kernel's real time at which packet `bytes` (just read) was handed to
    /// the device, if its copy is among the next SCAN pending ones.
    pub fn sent_at(&mut self, bytes: &[u8]) -> Option<i64> {
        let h = hash(bytes);
        let find = |p: &VecDeque<(u64, i64)>| p.iter().take(SCAN).position(|&(x, _)| x == h);
        // A packet that came after the last drain has its copy in the socket still.
        let i = match find(&self.pending) {
            Some(i) => i,
            None => {
                self.drain();
                find(&self.pending)?
            }
        };
        self.unmatched += i as u64;
        let at = self.pending[i].1;
        self.pending.drain(..=i);
        Some(at)
    }
}
