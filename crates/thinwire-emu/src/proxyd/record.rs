//! `thinwire proxy --out DIR`: what the daemon saw, in the simulator's formats.
//!
//! - `capture.pcapng`: interface 0 is the wireless leg (every packet read from or
//!   written into the TUN device, i.e. at the mobiles' hop), interface 1 the wired
//!   leg (the proxied connections' packets on the host's other interfaces, taken
//!   from an `AF_PACKET` socket; outgoing packets before segmentation offload, so a
//!   record may be larger than the MTU).
//! - `trace.rows`: trace rows (crates/thinwire/src/trace) streamed as they happen,
//!   48 bytes each, little-endian: time_ns, value, seq, ack, len (i64), flow (i32),
//!   layer, event, node, dir (u8). The Python side turns them into
//!   `trace.parquet` when the daemon stops. Layers: `proxy` (the proxy's
//!   decisions, as in the simulator) and `tcp` (segments as seen at the proxy:
//!   node `mobile` for the wireless leg, `server` for the wired leg; `send` /
//!   `retransmit` for segments from that host, `recv` for segments to it;
//!   sequence numbers relative to the sender's ISN on that leg).
//!
//! The packet socket copies every packet of the host's other interfaces to the
//! daemon before filtering: `--out` is for experiments, not a busy router.
//! Sequence numbers are 32-bit offsets (a connection past 4 GB wraps in the rows).
//!
//! Times are nanoseconds since the daemon started (CLOCK_MONOTONIC). Flow ids are
//! numbered from 0 in the order the mobiles' SYNs arrive (modulo 65,536: the
//! proxy's flow field is 16 bits).
use super::Key;
use crate::sys;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use thinwire::pcap::write::{Direction, PcapngWriter};
use thinwire::time::Instant;
use thinwire::trace::recorder::SegKind;
use thinwire::trace::{Layer, LayerMask, Recorder, SegEvent};
use thinwire::wire::{Meta, Packet, TcpFlags, L4};

/// Rows written to the file as they come (trace/rows.rs); a failed write is
/// remembered and reported by the next flush (the daemon logs it: nothing is
/// lost silently).
type RowFile = thinwire::trace::rows::RowWriter<BufWriter<File>>;

/// One proxied connection: its flow id, and per leg (0 wireless, 1 wired) and
/// direction (0 down, 1 up) the sender's ISN and the highest sequence seen.
struct Flow {
    id: i32,
    isn: [[Option<u32>; 2]; 2],
    top: [[u64; 2]; 2],
}

pub struct Recording {
    pcap: PcapngWriter<BufWriter<File>>,
    rec: Recorder<RowFile>,
    wired: OwnedFd,
    skip: HashSet<i32>,
    flows: HashMap<Key, Flow>,
    ended: std::collections::VecDeque<(Key, i32, Instant)>,
    next: u32,
    buf: Vec<u8>,
    pub rows_file: std::path::PathBuf,
    failed: bool,
}

impl Recording {
    /// Opens the output files in `dir` and the wired leg's packet socket; the
    /// interfaces named in `skip` (the TUN device, the mobile side) and loopback
    /// are not captured on the wired leg.
    pub fn open(dir: &Path, skip: &[&str]) -> io::Result<Recording> {
        std::fs::create_dir_all(dir)?;
        let mut pcap = PcapngWriter::new(BufWriter::with_capacity(1 << 16, File::create(dir.join("capture.pcapng"))?))?;
        pcap.interface("wireless leg (TUN)")?;
        pcap.interface("wired leg")?;
        let rows_file = dir.join("trace.rows");
        let rows = RowFile::new(BufWriter::with_capacity(1 << 16, File::create(&rows_file)?));
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        // SAFETY: plain socket(2); the descriptor is owned below.
        let fd = sys::cvt(unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto)
        })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let wired = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut set = HashSet::new();
        for name in skip.iter().chain(&["lo"]) {
            let c = std::ffi::CString::new(*name).unwrap_or_default();
            // SAFETY: `c` is a NUL-terminated string that outlives the call.
            let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
            if i > 0 {
                set.insert(i as i32);
            }
        }
        Ok(Recording {
            pcap,
            rec: Recorder::new(LayerMask((1 << Layer::Tcp as u8) | (1 << Layer::Proxy as u8)), rows),
            wired,
            skip: set,
            flows: HashMap::new(),
            ended: Default::default(),
            next: 0,
            buf: vec![0u8; 1 << 16],
            rows_file,
            failed: false,
        })
    }

    pub fn wired_fd(&self) -> i32 {
        self.wired.as_raw_fd()
    }

    /// A mobile's SYN opening a connection the proxy carries: its flow id.
    pub fn new_flow(&mut self, key: Key) -> u16 {
        let id = self.next as u16;
        self.next += 1;
        self.flows.insert(key, Flow { id: id as i32, isn: [[None; 2]; 2], top: [[0; 2]; 2] });
        id
    }

    /// A connection is over: its flow is forgotten after the proxy's linger
    /// time (late FINs and ACKs are still traced until then).
    pub fn end_flow(&mut self, key: Key, now: Instant) {
        if let Some(f) = self.flows.get(&key) {
            self.ended.push_back((key, f.id, now));
        }
    }

    /// Forgets flows ended more than the linger time ago.
    pub fn forget_ended(&mut self, now: Instant) {
        while let Some(&(key, id, at)) = self.ended.front() {
            if now - at < thinwire::proxy::LINGER {
                break;
            }
            self.ended.pop_front();
            if self.flows.get(&key).is_some_and(|f| f.id == id) {
                self.flows.remove(&key);
            }
        }
    }

    /// A packet at the TUN device: from a mobile (`inbound`) or to one.
    pub fn wireless(&mut self, now: Instant, p: &Packet, bytes: &[u8], inbound: bool) {
        let dir = if inbound { Direction::Inbound } else { Direction::Outbound };
        if self.pcap.packet(0, now.nanos(), dir, bytes).is_err() {
            self.failed = true;
        }
        self.segment(now, p, 0, inbound);
    }

    /// Reads what the wired leg's packet socket has.
    pub fn poll_wired(&mut self, now: Instant) {
        for _ in 0..1024 {
            // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
            let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut sl = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: the buffer and address outlive the call, with their lengths.
            let n = unsafe {
                libc::recvfrom(
                    self.wired.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                    (&mut sa as *mut libc::sockaddr_ll).cast(),
                    &mut sl,
                )
            };
            if n <= 0 {
                return;
            }
            if self.skip.contains(&sa.sll_ifindex) {
                continue;
            }
            let bytes = self.buf[..n as usize].to_vec();
            let Ok(p) = Packet::from_bytes(bytes, Meta::new(0, now)) else { continue };
            let L4::Tcp(r) = &p.l4 else { continue };
            // The proxied connection's 4-tuple, seen from the mobile's side.
            let (fwd, rev) =
                ((p.ip.src(), r.src_port, p.ip.dst(), r.dst_port), (p.ip.dst(), r.dst_port, p.ip.src(), r.src_port));
            if !self.flows.contains_key(&fwd) && !self.flows.contains_key(&rev) {
                continue;
            }
            let outgoing = sa.sll_pkttype == libc::PACKET_OUTGOING;
            let d = if outgoing { Direction::Outbound } else { Direction::Inbound };
            if self.pcap.packet(1, now.nanos(), d, &self.buf[..n as usize]).is_err() {
                self.failed = true;
            }
            // Outgoing on the wired leg: the proxy (as the mobile) to the server.
            self.segment(now, &p, 1, !outgoing);
        }
    }

    /// TCP rows for a packet of a known flow on `leg` (0 wireless, 1 wired);
    /// `from_far` = sent by the far host of that leg (the mobile or the server).
    fn segment(&mut self, now: Instant, p: &Packet, leg: usize, from_far: bool) {
        let L4::Tcp(r) = &p.l4 else { return };
        // Wireless leg: the far host is the mobile (source when inbound).
        // Wired leg: the far host is the server (source when incoming).
        let mobile_is_src = (leg == 0) == from_far;
        let key = if mobile_is_src {
            (p.ip.src(), r.src_port, p.ip.dst(), r.dst_port)
        } else {
            (p.ip.dst(), r.dst_port, p.ip.src(), r.src_port)
        };
        let Some(f) = self.flows.get_mut(&key) else { return };
        let dir = usize::from(mobile_is_src); // 1 = up (mobile to server)
        if r.flags.has(TcpFlags::SYN) {
            f.isn[leg][dir] = Some(r.seq);
        }
        let rel = |isn: Option<u32>, v: u32| isn.map_or(-1, |i| v.wrapping_sub(i) as i64);
        let seq = rel(f.isn[leg][dir], r.seq);
        let ack = if r.flags.has(TcpFlags::ACK) { Some(rel(f.isn[leg][1 - dir], r.ack)) } else { None };
        let len = p.payload_len;
        let end = seq.max(0) as u64 + len as u64;
        let kind = if !from_far {
            SegKind::Recv
        } else if len > 0 && end <= f.top[leg][dir] {
            SegKind::Retransmit
        } else {
            SegKind::Send
        };
        if from_far {
            f.top[leg][dir] = f.top[leg][dir].max(end);
        }
        let e = SegEvent {
            at: now,
            kind,
            mobile: leg == 0,
            dir: dir as u8,
            flow: f.id,
            seq,
            ack: ack.filter(|&a| a >= 0),
            len,
            flags: r.flags.0,
        };
        self.rec.segment(&e);
    }

    /// The proxy's decisions since the last call.
    pub fn proxy_event(&mut self, e: &thinwire::proxy::Event) {
        self.rec.proxy(e);
    }

    /// Writes what is buffered to the files; an error if this or any earlier
    /// write failed (e.g. a full disk).
    pub fn flush(&mut self) -> io::Result<()> {
        self.pcap.flush()?;
        if let Err(e) = self.rec.sink.flush() {
            self.failed = true;
            return Err(e);
        }
        if self.failed {
            return Err(io::Error::other("a capture record or trace row could not be written"));
        }
        Ok(())
    }
}
