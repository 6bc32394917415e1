//! What the emulator's loop writes to the hosts' TUN devices: the packets the
//! paths give back, in the order they were due, each written at once — with
//! offload (`gso.rs`), the consecutive segments of one flow that fall due at one
//! wake-up as one super-packet. The loop pushes every output as it polls it and
//! flushes when it has polled all that is due. Each packet's lateness (write time
//! − due time) is recorded when it is written.
use crate::fabric::To;
use crate::gso::{Coalescer, HDR};
use crate::latency::Histogram;
use crate::sys;
use std::os::fd::OwnedFd;
use thinwire::realtime::Output;
use thinwire::time::Instant;

pub(crate) struct Writer<'a> {
    mobiles: &'a [&'a OwnedFd],
    /// The server's (or gateway's) device, as a slice of one.
    server: &'a [&'a OwnedFd],
    offload: bool,
    /// Monotonic ns at the emulation's time zero.
    start: i64,
    co: Coalescer,
    /// Where the packets in `co` go, and when each was due (oldest first).
    dest: Option<To>,
    due: Vec<Instant>,
    /// Scratch for a packet with no bytes of its own, and for a header + packet.
    scratch: Vec<u8>,
    single: Vec<u8>,
    /// Packets a device would not take (its queue full).
    pub drops: u64,
}

impl<'a> Writer<'a> {
    pub fn new(mobiles: &'a [&'a OwnedFd], server: &'a [&'a OwnedFd], offload: bool, start: i64) -> Writer<'a> {
        Writer {
            mobiles,
            server,
            offload,
            start,
            co: Coalescer::default(),
            dest: None,
            due: vec![],
            scratch: vec![],
            single: vec![],
            drops: 0,
        }
    }

    fn now(&self) -> Instant {
        Instant(sys::monotonic_ns() - self.start)
    }

    fn fds(&self, to: To) -> &'a [&'a OwnedFd] {
        match to {
            To::Mobile(k) => &self.mobiles[k..k + 1],
            To::Mobiles => self.mobiles,
            To::Server => self.server,
        }
    }

    /// Writes (or, with offload, queues for merging) an output; `log` sees its
    /// bytes.
    pub fn push(&mut self, to: To, o: &Output, lateness: &mut Histogram, log: impl FnOnce(&[u8])) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let bytes: &[u8] = match &o.packet.bytes {
            Some(b) => b,
            None => {
                o.packet.emit_into(&mut scratch);
                &scratch
            }
        };
        log(bytes);
        if self.dest.is_some_and(|d| d != to) {
            self.flush(lateness);
        }
        if self.offload && to != To::Mobiles {
            self.merge(to, bytes, o.at, lateness);
        } else {
            self.write_each(to, bytes, o.at, lateness);
        }
        self.scratch = scratch;
    }

    fn merge(&mut self, to: To, bytes: &[u8], at: Instant, lateness: &mut Histogram) {
        self.dest = Some(to);
        self.due.push(at);
        self.through(to, Some(bytes), lateness);
    }

    /// `bytes` pushed into the coalescer (None: what it holds flushed), and what
    /// it gives back written to `to`'s device.
    fn through(&mut self, to: To, bytes: Option<&[u8]>, lateness: &mut Histogram) {
        let fd = self.fds(to)[0];
        let mut written = 0;
        let drops = &mut self.drops;
        let mut emit = |b: &[u8], n: usize| {
            sys::write_counted(fd, b, n, drops);
            written += n;
        };
        match bytes {
            Some(p) => self.co.push(p, &mut emit),
            None => self.co.flush(&mut emit),
        }
        self.record(written, lateness);
    }

    /// Lateness of the `n` oldest packets queued, written just now.
    fn record(&mut self, n: usize, lateness: &mut Histogram) {
        if n == 0 {
            return;
        }
        let t = self.now();
        for at in self.due.drain(..n) {
            lateness.record((t - at).nanos());
        }
    }

    /// One packet to each of `to`'s devices, at once.
    fn write_each(&mut self, to: To, bytes: &[u8], at: Instant, lateness: &mut Histogram) {
        let data = if self.offload {
            self.single.clear();
            self.single.extend_from_slice(&[0; HDR]);
            self.single.extend_from_slice(bytes);
            &self.single[..]
        } else {
            bytes
        };
        for fd in self.fds(to) {
            sys::write_counted(fd, data, 1, &mut self.drops);
        }
        lateness.record((self.now() - at).nanos());
    }

    /// Writes what is queued for merging.
    pub fn flush(&mut self, lateness: &mut Histogram) {
        if let Some(to) = self.dest.take() {
            self.through(to, None, lateness);
        }
    }

    /// Super-packets written and the packets merged into them.
    pub fn merged(&self) -> (u64, u64) {
        (self.co.merged_writes, self.co.merged_packets)
    }
}
