//! Thin, safe wrappers over the Linux calls the emulator needs: TUN devices, a
//! nanosecond monotonic clock, absolute `timerfd` timers, `epoll`, `signalfd`,
//! `pidfd`, timer slack. Every descriptor is an `OwnedFd` (closed on drop).
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Nanoseconds of CLOCK_MONOTONIC.
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The real-time clock (Unix time) in ns.
pub fn realtime_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Timer slack of this thread in ns (1 = as precise as the kernel allows).
pub fn set_timer_slack(ns: u64) {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// `TUNSETOFFLOAD` (`_IOW('T', 208, unsigned int)`) and its flags
/// (`include/uapi/linux/if_tun.h`).
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUN_F_CSUM: libc::c_ulong = 0x01;
const TUN_F_TSO4: libc::c_ulong = 0x02;
const TUN_F_TSO6: libc::c_ulong = 0x04;
const IFF_VNET_HDR: libc::c_int = 0x4000;

/// Opens a TUN device `name` (IFF_TUN, no packet information), non-blocking.
/// `offload`: every packet read or written has a `virtio_net_hdr` in front
/// (`IFF_VNET_HDR`, `gso.rs`), and the device takes checksum and TCP
/// segmentation offload, so hosts hand over TCP super-packets.
pub fn tun_open(name: &str, offload: bool) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: open returns a new descriptor we take ownership of.
    let fd = cvt(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: fd is a fresh, owned descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let vnet = if offload { IFF_VNET_HDR } else { 0 };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI | vnet) as libc::c_short,
        _pad: [0; 22],
    };
    let n = name.as_bytes();
    if n.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name too long"));
    }
    req.name[..n.len()].copy_from_slice(n);
    // SAFETY: TUNSETIFF reads an ifreq we own for the duration of the call.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) })?;
    if offload {
        // SAFETY: TUNSETOFFLOAD takes its flags by value.
        cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) })?;
    }
    Ok(fd)
}

/// Reads one packet; `Ok(None)` when none is waiting.
pub fn read_packet(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: read into a buffer we own, of its length.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) };
    }
    Ok(Some(n as usize))
}

/// Writes one packet; false if the device's queue is full (the packet is lost).
pub fn write_packet(fd: &OwnedFd, data: &[u8]) -> io::Result<bool> {
    // SAFETY: write from a buffer we own, of its length.
    let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) => Ok(false),
            _ => Err(e),
        };
    }
    Ok(true)
}

/// Writes what carries `packets` packets (one, or a merged super-packet);
/// counts them in `drops` if the device does not take it.
pub fn write_counted(fd: &OwnedFd, data: &[u8], packets: usize, drops: &mut u64) {
    if !matches!(write_packet(fd, data), Ok(true)) {
        *drops += packets as u64;
    }
}

/// A CLOCK_MONOTONIC timer armed at absolute times.
pub struct Timer(OwnedFd);

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create returns a new descriptor.
        let fd = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        // SAFETY: fresh owned descriptor.
        Ok(Timer(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
    /// Fires at monotonic time `at_ns` (None: disarmed).
    pub fn set(&self, at_ns: Option<i64>) -> io::Result<()> {
        let at = at_ns.map(|t| t.max(1)).unwrap_or(0);
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: at / 1_000_000_000, tv_nsec: at % 1_000_000_000 },
        };
        // SAFETY: timerfd_settime reads the itimerspec we own.
        cvt(unsafe {
            libc::timerfd_settime(self.0.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        })?;
        Ok(())
    }
    /// Clears the expiration count.
    pub fn clear(&self) {
        let mut n = 0u64;
        // SAFETY: read 8 bytes into a u64 we own; EAGAIN is fine.
        unsafe { libc::read(self.0.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    }
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// An epoll set; tokens are the caller's small integers.
pub struct Poll(OwnedFd);

impl Poll {
    pub fn new() -> io::Result<Poll> {
        // SAFETY: epoll_create1 returns a new descriptor.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fresh owned descriptor.
        Ok(Poll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: epoll_ctl reads the event we own.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }
    /// Registers `fd` for `events` (EPOLLIN, EPOLLOUT, ...; level-triggered),
    /// changing or removing an earlier registration (`events` 0: none, so not
    /// even hang-ups are reported). `registered` tracks the state per descriptor.
    pub fn interest(&self, fd: RawFd, token: u64, events: u32, registered: &mut bool) -> io::Result<()> {
        let op = match (events != 0, *registered) {
            (false, false) => return Ok(()),
            (false, true) => {
                self.remove(fd);
                *registered = false;
                return Ok(());
            }
            (true, false) => libc::EPOLL_CTL_ADD,
            (true, true) => libc::EPOLL_CTL_MOD,
        };
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: epoll_ctl reads the event we own.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) })?;
        *registered = true;
        Ok(())
    }
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: EPOLL_CTL_DEL ignores the event pointer; an unknown fd only fails.
        unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }
    /// Waits for readiness (`timeout_ms` −1: forever); returns the ready tokens.
    pub fn wait(&self, out: &mut Vec<u64>, timeout_ms: i32) -> io::Result<()> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        // SAFETY: epoll_wait writes at most evs.len() events into our array.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), evs.as_mut_ptr(), evs.len() as i32, timeout_ms) };
        out.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        out.extend(evs[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// SIGINT, SIGTERM and SIGHUP, blocked for this thread and read from a descriptor
/// instead; the previous mask comes back on drop.
pub struct Signals {
    fd: OwnedFd,
    old: libc::sigset_t,
}

impl Signals {
    pub fn new() -> io::Result<Signals> {
        Signals::of(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
    }
    /// The given signals instead.
    pub fn of(signals: &[i32]) -> io::Result<Signals> {
        // SAFETY: sigset manipulation on values we own; pthread_sigmask and
        // signalfd read them.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            if r != 0 {
                return Err(io::Error::from_raw_os_error(r));
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                let e = io::Error::last_os_error();
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                return Err(e);
            }
            Ok(Signals { fd: OwnedFd::from_raw_fd(fd), old })
        }
    }
    /// The signal received, if any.
    pub fn take(&self) -> Option<i32> {
        // SAFETY: read one signalfd_siginfo into a value we own.
        unsafe {
            let mut info: libc::signalfd_siginfo = std::mem::zeroed();
            let n = libc::read(self.fd.as_raw_fd(), (&mut info as *mut libc::signalfd_siginfo).cast(), 128);
            (n == 128).then_some(info.ssi_signo as i32)
        }
    }
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
    /// Reads away every signal pending, so that restoring the mask (on drop)
    /// does not deliver them.
    pub fn discard_pending(&self) {
        while self.take().is_some() {}
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in new().
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// A descriptor that becomes readable when process `pid` exits.
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: raw syscall returning a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh owned descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Sends `sig` to process group `pgid`.
/// Whether process group `pgid` has a process left.
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only asks whether the group exists.
    unsafe { libc::kill(-(pgid as i32), 0) == 0 }
}

pub fn kill_group(pgid: u32, sig: i32) {
    // SAFETY: kill with a negative pid signals the group; errors are ignored.
    unsafe { libc::kill(-(pgid as libc::pid_t), sig) };
}

/// The capabilities the emulator needs that this process lacks (CAP_NET_ADMIN for
/// TUN devices and addresses, CAP_SYS_ADMIN for network namespaces), read from
/// the effective set in /proc/self/status.
pub fn missing_capabilities() -> Vec<&'static str> {
    const NEED: [(u32, &str); 2] = [(12, "CAP_NET_ADMIN"), (21, "CAP_SYS_ADMIN")];
    let eff = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0);
    NEED.iter().filter(|(bit, _)| eff & (1 << bit) == 0).map(|&(_, name)| name).collect()
}

/// Whether process `pid` exists.
pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}
