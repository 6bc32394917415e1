//! How long a packet waited in a TUN device's queue before the emulator read it,
//! as the kernel tells it: a packet socket on the device, in its host's
//! namespace, sees each packet the host sends when the kernel hands it to the
//! device (`dev_queue_xmit_nit`, before `tun_net_xmit` queues it), stamped by the
//! kernel (real-time clock). The emulator drains it just before
//! it reads the device (and again when a packet read has no copy yet), matches each packet read to its copy (the first 64 bytes,
//! in order: both queues are FIFO; a copy whose packet the full TUN queue dropped
//! is skipped), and records the difference. The path itself still takes the time
//! the packet was read (the model cannot act in the past); this measures what that
//! costs.
//!
//! The socket keeps only outgoing packets (a BPF filter on the packet type) and
//! 64 bytes of each, in a ring shared with the kernel (`PACKET_RX_RING`,
//! TPACKET_V2: 8,192 frames of 256 bytes, far past the TUN queue's 500 packets),
//! so reading a copy costs no system call (with `recvmsg` per copy the emulator
//! used about 30 % more CPU at 900 Mbit/s). Copies the ring dropped (full) only
//! cost samples.
use crate::sys::cvt;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Bytes of each packet compared.
const SNAP: usize = 64;
/// How far ahead among the pending copies a packet read is looked for.
const SCAN: usize = 256;

/// Ring geometry: frames of FRAME bytes (header, address, 64 bytes of data).
const FRAME: usize = 256;
const BLOCK: usize = 4096;
const BLOCKS: usize = 512;
const FRAMES: usize = BLOCKS * BLOCK / FRAME;

pub struct Tap {
    /// The packet socket: the ring lives while it is open (unmapped first, in `drop`).
    _sock: OwnedFd,
    /// The ring (BLOCKS × BLOCK bytes, mapped) and the next frame to look at.
    ring: *mut u8,
    next: usize,
    /// (hash of the first SNAP bytes, kernel time in real-time ns), oldest first.
    pending: VecDeque<(u64, i64)>,
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
            let int = std::mem::size_of::<libc::c_int>() as u32;
            let v2 = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
            set(libc::SOL_PACKET, libc::PACKET_VERSION, (&v2 as *const libc::c_int).cast(), int)?;
            let req = libc::tpacket_req {
                tp_block_size: BLOCK as u32,
                tp_block_nr: BLOCKS as u32,
                tp_frame_size: FRAME as u32,
                tp_frame_nr: FRAMES as u32,
            };
            let rl = std::mem::size_of::<libc::tpacket_req>() as u32;
            set(libc::SOL_PACKET, libc::PACKET_RX_RING, (&req as *const libc::tpacket_req).cast(), rl)?;
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
        // SAFETY: maps the ring the socket set up, BLOCKS × BLOCK bytes, shared.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BLOCKS * BLOCK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Tap { _sock: fd, ring: ring.cast(), next: 0, pending: VecDeque::new() })
    }

    /// Takes every copy the ring holds.
    pub fn drain(&mut self) {
        use std::sync::atomic::{AtomicU32, Ordering};
        loop {
            // SAFETY: frame `next` lies within the mapped ring; its header is
            // the kernel's tpacket2_hdr, whose status word is handed back and
            // forth with atomic loads and stores (the kernel's protocol).
            unsafe {
                let f = self.ring.add(self.next * FRAME);
                let h = f as *mut libc::tpacket2_hdr;
                let status = &*(std::ptr::addr_of_mut!((*h).tp_status) as *const AtomicU32);
                if status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                    return;
                }
                let (mac, len) = ((*h).tp_mac as usize, ((*h).tp_snaplen as usize).min(SNAP));
                let at = (*h).tp_sec as i64 * 1_000_000_000 + (*h).tp_nsec as i64;
                if mac + len <= FRAME {
                    let data = std::slice::from_raw_parts(f.add(mac), len);
                    self.pending.push_back((hash(data), at));
                }
                status.store(libc::TP_STATUS_KERNEL, Ordering::Release);
            }
            self.next = (self.next + 1) % FRAMES;
            // Copies whose packets will never be read (dropped by the full TUN
            // queue) must not pile up.
            if self.pending.len() > 4 * SCAN {
                self.pending.pop_front();
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
        let at = self.pending[i].1;
        self.pending.drain(..=i);
        Some(at)
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        // SAFETY: unmaps the ring mapped in `open`, once.
        unsafe { libc::munmap(self.ring.cast(), BLOCKS * BLOCK) };
    }
}
